//! The AVX-512 micro-kernel: 64 columns (32 bytes of a weight row) by up to 6 rows of `x`.

use super::{BLOCK, Problem, ROWS_V4, TILE, V4, pulp};
use core::arch::x86_64::{__m256i, __m512, __m512i};
use std::ops::Range;

/// Rows `r0..` (at most 6) of `sums` for `tiles` × 64 columns from `c0` over the rows `ks`:
/// 4 tiles (256 columns, two cache lines of each weight row) for one row of `x`, 2 for two,
/// else 1 (up to 6 rows): 16 to 24 registers of sums.
#[inline(always)]
pub(super) fn sums(
    simd: V4,
    p: &Problem<'_>,
    ks: Range<usize>,
    (c0, tiles): (usize, usize),
    r0: usize,
    sums: &mut [f32],
) {
    let at = (c0, r0);
    match ((p.m - r0).min(ROWS_V4), tiles) {
        (1, 4) => rows::<1, 4>(simd, p, ks, at, sums),
        (1, 2) => rows::<1, 2>(simd, p, ks, at, sums),
        (2, 2) => rows::<2, 2>(simd, p, ks, at, sums),
        (1, _) => rows::<1, 1>(simd, p, ks, at, sums),
        (2, _) => rows::<2, 1>(simd, p, ks, at, sums),
        (3, _) => rows::<3, 1>(simd, p, ks, at, sums),
        (4, _) => rows::<4, 1>(simd, p, ks, at, sums),
        (5, _) => rows::<5, 1>(simd, p, ks, at, sums),
        _ => rows::<6, 1>(simd, p, ks, at, sums),
    }
}

#[inline(always)]
fn rows<const R: usize, const T: usize>(
    simd: V4,
    p: &Problem<'_>,
    ks: Range<usize>,
    (c0, r0): (usize, usize),
    sums: &mut [f32],
) {
    let f = simd.avx512f;
    let table: __m512 = pulp::cast(*p.codes);
    let mut acc: [[[__m512; 4]; T]; R] = [[[f._mm512_setzero_ps(); 4]; T]; R];
    let x: [&[f32]; R] =
        core::array::from_fn(|r| &p.xs[(r0 + r) * p.k + ks.start..(r0 + r) * p.k + ks.end]);
    let row_bytes = p.n / 2;
    // The same columns of the next group, needed once the block's other tiles of this
    // group are done: a lead of about a thousand cycles, which the memory's latency needs.
    let ahead = ks.len() * row_bytes;
    for (i, kk) in ks.enumerate() {
        let start = kk * row_bytes + c0 / 2;
        // The rows are `row_bytes` apart, too far for the hardware to see a stream: ask
        // for these columns' bytes in the next group (a hint; an address past the end is
        // not read), a cache line at a time.
        for line in (0..T.div_ceil(2)).map(|l| start + ahead + 64 * l) {
            let next = p.w.as_ptr().wrapping_add(line);
            simd.sse
                ._mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(next.cast());
        }
        let mut q = [[f._mm512_setzero_ps(); 4]; T];
        for (t, q) in q.iter_mut().enumerate() {
            let at = start + 32 * t;
            let Ok(bytes) = <[u8; 32]>::try_from(&p.w[at..at + 32]) else {
                continue; // 32 bytes: a slice of 32 always converts
            };
            // 16 lanes of 32 bits, each two bytes: the codes of columns 4l .. 4l + 3,
            // lowest first; the permute reads a lane's low 4 bits.
            let d: __m512i = f._mm512_cvtepu16_epi32(pulp::cast::<[u8; 32], __m256i>(bytes));
            *q = [
                f._mm512_permutexvar_ps(d, table),
                f._mm512_permutexvar_ps(f._mm512_srli_epi32::<4>(d), table),
                f._mm512_permutexvar_ps(f._mm512_srli_epi32::<8>(d), table),
                f._mm512_permutexvar_ps(f._mm512_srli_epi32::<12>(d), table),
            ];
        }
        for r in 0..R {
            let xv = f._mm512_set1_ps(x[r][i]);
            for t in 0..T {
                for j in 0..4 {
                    acc[r][t][j] = f._mm512_fmadd_ps(q[t][j], xv, acc[r][t][j]);
                }
            }
        }
    }
    // acc[r][t][j] lane l is column 64t + 4l + j: a 4 × 4 transpose in each 128-bit
    // quarter gives u[i] whose quarter q holds columns 16q + 4i .. 16q + 4i + 3 of tile t.
    for (r, acc) in acc.iter().enumerate() {
        for (t, acc) in acc.iter().enumerate() {
            let at = (r0 + r) * BLOCK + t * TILE;
            let out = &mut sums[at..at + TILE];
            let (lo, hi) = (
                [
                    f._mm512_unpacklo_ps(acc[0], acc[1]),
                    f._mm512_unpacklo_ps(acc[2], acc[3]),
                ],
                [
                    f._mm512_unpackhi_ps(acc[0], acc[1]),
                    f._mm512_unpackhi_ps(acc[2], acc[3]),
                ],
            );
            let pairs = |a: __m512, b: __m512| {
                let (a, b) = (f._mm512_castps_pd(a), f._mm512_castps_pd(b));
                [
                    f._mm512_castpd_ps(f._mm512_unpacklo_pd(a, b)),
                    f._mm512_castpd_ps(f._mm512_unpackhi_pd(a, b)),
                ]
            };
            let ([u0, u1], [u2, u3]) = (pairs(lo[0], lo[1]), pairs(hi[0], hi[1]));
            for (i, u) in [u0, u1, u2, u3].into_iter().enumerate() {
                let quarters: [[f32; 4]; 4] = pulp::cast(u);
                for (q, v) in quarters.into_iter().enumerate() {
                    out[16 * q + 4 * i..16 * q + 4 * i + 4].copy_from_slice(&v);
                }
            }
        }
    }
}
