//! The AVX2 micro-kernel: 32 columns (16 bytes of a weight row) by up to 3 rows of `x`.

use super::{BLOCK, Problem, ROWS_V3, TILE, V3, pulp};
use core::arch::x86_64::{__m128i, __m256, __m256i};
use std::ops::Range;

/// Rows `r0..` (at most 3) of `sums` for the 32 columns from `c0 + half` over `ks`.
#[inline(always)]
pub(super) fn sums(simd: V3, p: &Problem<'_>, ks: Range<usize>, at: At3, sums: &mut [f32]) {
    match (p.m - at.2).min(ROWS_V3) {
        1 => rows::<1>(simd, p, ks, at, sums),
        2 => rows::<2>(simd, p, ks, at, sums),
        _ => rows::<3>(simd, p, ks, at, sums),
    }
}

/// The tile's first column, the half of it (0 or 32) and the first row of `x`.
type At3 = (usize, usize, usize);

#[inline(always)]
fn rows<const R: usize>(
    simd: V3,
    p: &Problem<'_>,
    ks: Range<usize>,
    (c0, half, r0): At3,
    sums: &mut [f32],
) {
    let (a, a2, fma) = (simd.avx, simd.avx2, simd.fma);
    let lo: __m256 = pulp::cast::<[f32; 8], _>(p.codes[..8].try_into().unwrap_or([0.0; 8]));
    let hi: __m256 = pulp::cast::<[f32; 8], _>(p.codes[8..].try_into().unwrap_or([0.0; 8]));
    // The value of the code in each lane's low 4 bits: bit 3 picks the table's half.
    let lookup = |d: __m256i| {
        let pick = a._mm256_castsi256_ps(a2._mm256_slli_epi32::<28>(d));
        a._mm256_blendv_ps(
            a2._mm256_permutevar8x32_ps(lo, d),
            a2._mm256_permutevar8x32_ps(hi, d),
            pick,
        )
    };
    let mut acc: [[__m256; 4]; R] = [[a._mm256_setzero_ps(); 4]; R];
    let x: [&[f32]; R] =
        core::array::from_fn(|r| &p.xs[(r0 + r) * p.k + ks.start..(r0 + r) * p.k + ks.end]);
    let row_bytes = p.n / 2;
    // The same columns of the next group, needed once the block's other tiles of this
    // group are done: a lead of about a thousand cycles, which the memory's latency needs.
    let ahead = ks.len() * row_bytes;
    for (i, kk) in ks.enumerate() {
        let start = kk * row_bytes + (c0 + half) / 2;
        let next = p.w.as_ptr().wrapping_add(start + ahead);
        simd.sse
            ._mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(next.cast());
        let Ok(bytes) = <[u8; 16]>::try_from(&p.w[start..start + 16]) else {
            continue; // 16 bytes: a slice of 16 always converts
        };
        let d: __m256i = a2._mm256_cvtepu16_epi32(pulp::cast::<[u8; 16], __m128i>(bytes));
        let q = [
            lookup(d),
            lookup(a2._mm256_srli_epi32::<4>(d)),
            lookup(a2._mm256_srli_epi32::<8>(d)),
            lookup(a2._mm256_srli_epi32::<12>(d)),
        ];
        for r in 0..R {
            let xv = a._mm256_set1_ps(x[r][i]);
            for j in 0..4 {
                acc[r][j] = fma._mm256_fmadd_ps(q[j], xv, acc[r][j]);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        let out = &mut sums[(r0 + r) * BLOCK + half..(r0 + r) * BLOCK + half + TILE / 2];
        for (j, v) in acc.iter().enumerate() {
            let lanes: [f32; 8] = pulp::cast(*v);
            for (l, v) in lanes.into_iter().enumerate() {
                out[4 * l + j] = v;
            }
        }
    }
}
