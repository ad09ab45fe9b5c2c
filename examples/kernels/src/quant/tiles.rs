//! The product `x · dequant(w)` that every 4-bit kernel of `quant` shares: column blocks over
//! the pool, the weights unpacked in registers next to their use (never a full-size copy), on
//! the best vector instructions of the CPU it runs on (`customop::cpu`), chosen at run time.
//!
//! Each 4-bit code is turned into its value by a 16-entry table held in one register (one
//! permute instruction for 16 codes on AVX-512, two and a blend on AVX2), so one loop serves
//! `i4`, `ui4` and `f4E2M1FN`. The sums of a group of rows are kept in registers and scaled
//! once per group.

use customop::cpu::Simd;
use customop::cpu::pulp::NullaryFnOnce;
#[cfg(target_arch = "x86_64")]
use customop::cpu::pulp::{
    self,
    x86::{V3, V4},
};
use customop::{F8E8M0FNU, bf16};
use std::ops::Range;

/// Columns of the output computed by one task.
const BLOCK: usize = 256;
/// The columns of one micro-tile, its sums' row stride.
const TILE: usize = 64;

/// A table of the 16 values of a 4-bit code.
pub(super) type Codes = [f32; 16];

/// The scales of a product, `[k / group, n]`, as given; each is widened where it is used.
#[derive(Clone, Copy, Debug)]
pub enum ScaleData<'a> {
    /// `f32` scales.
    F32(&'a [f32]),
    /// `bf16` scales.
    Bf16(&'a [bf16]),
    /// MXFP4's `f8E8M0FNU` scales, powers of two.
    E8m0(&'a [F8E8M0FNU]),
}

/// What each group's sums are scaled by, per group row and column: `sum · scale − xsum · zs`.
/// `zeros` are the zero points times the scales, subtracted times the group's sum of `x`.
#[derive(Clone, Copy)]
pub(super) struct Scales<'a> {
    /// The scales.
    pub scales: ScaleData<'a>,
    /// Zero points times scales, `[k / group, n]`.
    pub zeros: Option<&'a [f32]>,
}

impl Scales<'_> {
    /// `t[c] += a[c] · scale − xsum · zs` for the columns `range` (`a` a group's sums).
    #[inline(always)]
    fn add(&self, range: Range<usize>, a: &[f32], xsum: f32, t: &mut [f32]) {
        match self.scales {
            ScaleData::F32(s) => {
                for ((t, &a), &s) in t.iter_mut().zip(a).zip(&s[range.clone()]) {
                    *t += a * s;
                }
            }
            ScaleData::Bf16(s) => {
                for ((t, &a), s) in t.iter_mut().zip(a).zip(&s[range.clone()]) {
                    *t += a * s.to_f32();
                }
            }
            ScaleData::E8m0(s) => {
                for ((t, &a), s) in t.iter_mut().zip(a).zip(&s[range.clone()]) {
                    *t += e8m0_times(s.to_bits(), a);
                }
            }
        }
        if let Some(zs) = self.zeros {
            for (t, &z) in t.iter_mut().zip(&zs[range]) {
                *t -= xsum * z;
            }
        }
    }
}

/// `a · 2^(code − 127)`, NaN for code 255. `2^-127` (code 0) is an `f32` subnormal, which XLA's
/// threads read as zero (they flush denormals): it is applied as two normal factors, 0.5 then
/// `2^-126` (32 ones times it gave 0 before, not `2^-122`).
#[inline(always)]
fn e8m0_times(code: u8, a: f32) -> f32 {
    match code {
        0 => (a * 0.5) * f32::MIN_POSITIVE,
        255 => f32::NAN,
        c => a * f32::from_bits(u32::from(c) << 23),
    }
}

/// `x · dequant(w)` for `x: [m, k]` (row-major), weights `[k, n]` packed two a byte along `n`
/// (`w`, low nibble first), `codes` the value of each 4-bit code, and `scales: [k / group, n]`;
/// written into `out: [m, n]`, on the vector instructions `customop::cpu::simd()` gives.
pub(super) fn block_matmul(
    xs: &[f32],
    w: &[u8],
    shape: (usize, usize, usize, usize),
    codes: &Codes,
    scales: Scales<'_>,
    out: &mut [f32],
) {
    product(customop::cpu::simd(), xs, w, shape, codes, scales, out);
}

/// What every task of one product shares.
#[derive(Clone, Copy)]
struct Problem<'a> {
    xs: &'a [f32],
    w: &'a [u8],
    m: usize,
    k: usize,
    n: usize,
    group: usize,
    codes: &'a Codes,
}

/// `block_matmul` on the path of `simd`.
pub(super) fn product(
    simd: Simd,
    xs: &[f32],
    w: &[u8],
    (m, k, n, group): (usize, usize, usize, usize),
    codes: &Codes,
    scales: Scales<'_>,
    out: &mut [f32],
) {
    if m == 0 || n == 0 {
        return; // an empty product: nothing to write
    }
    let p = Problem {
        xs,
        w,
        m,
        k,
        n,
        group,
        codes,
    };
    // Each row's sum over each group of `x`, for the zero points.
    let xsums: Vec<f32> = match scales.zeros {
        Some(_) => xs
            .chunks_exact(k.max(1))
            .flat_map(|row| row.chunks_exact(group.max(1)).map(|g| g.iter().sum()))
            .collect(),
        None => Vec::new(),
    };
    let blocks = n.div_ceil(BLOCK);
    // One [m, BLOCK] tile per column block, computed in parallel, then laid into `out`.
    let mut tiles = vec![0.0f32; blocks * m * BLOCK];
    customop::parallel::par_chunks_mut(&mut tiles, m * BLOCK, 1, |b, tile| {
        // The whole block, scaling included, compiled for the level that runs it: each
        // level's job holds its own micro-kernel only.
        match simd {
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512(v4) => v4.vectorize(BlockJob {
                micro: v4,
                p: &p,
                scales,
                xsums: &xsums,
                b,
                tile,
            }),
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2(v3) => v3.vectorize(BlockJob {
                micro: v3,
                p: &p,
                scales,
                xsums: &xsums,
                b,
                tile,
            }),
            Simd::Portable => BlockJob {
                micro: Portable,
                p: &p,
                scales,
                xsums: &xsums,
                b,
                tile,
            }
            .call(),
        }
    });
    for (b, tile) in tiles.chunks_exact(m * BLOCK).enumerate() {
        let n0 = b * BLOCK;
        let width = BLOCK.min(n - n0);
        for (row, t) in tile.chunks_exact(BLOCK).enumerate() {
            out[row * n + n0..row * n + n0 + width].copy_from_slice(&t[..width]);
        }
    }
}

/// One column block of the product: its `[m, BLOCK]` tile, every group's sums scaled into it.
struct BlockJob<'a, 'p, M> {
    micro: M,
    p: &'a Problem<'p>,
    scales: Scales<'a>,
    xsums: &'a [f32],
    b: usize,
    tile: &'a mut [f32],
}

impl<M: Micro> NullaryFnOnce for BlockJob<'_, '_, M> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let (p, tile) = (self.p, self.tile);
        let n0 = self.b * BLOCK;
        let width = BLOCK.min(p.n - n0);
        let mut sums = vec![0.0f32; p.m * BLOCK];
        let groups = p.k / p.group;
        for g in 0..groups {
            let ks = g * p.group..(g + 1) * p.group;
            let mut c0 = 0;
            while c0 < width {
                let at = At {
                    ks: ks.clone(),
                    c0: n0 + c0,
                    left: width - c0,
                };
                let cols = tile_sums(self.micro, p, at, &mut sums);
                let start = g * p.n + n0 + c0;
                for r in 0..p.m {
                    let xsum = self.xsums.get(r * groups + g).copied().unwrap_or(0.0);
                    self.scales.add(
                        start..start + cols,
                        &sums[r * BLOCK..r * BLOCK + cols],
                        xsum,
                        &mut tile[r * BLOCK + c0..r * BLOCK + c0 + cols],
                    );
                }
                c0 += cols;
            }
        }
    }
}

/// Where a tile's sums are taken: the weight rows `ks`, from column `c0`, `left` columns to the
/// block's end.
struct At {
    ks: Range<usize>,
    c0: usize,
    left: usize,
}

/// A level's micro-kernel: the sums over the rows `ks` of every row of `x` with the columns
/// from `c0` (64 or more, at most `left`: `left >= 64`), into `sums` (`[m, BLOCK]`, each row
/// from its first column); returns how many columns it took, `None` where the level has no
/// micro-kernel.
trait Micro: Copy {
    fn sums(self, p: &Problem<'_>, at: &At, sums: &mut [f32]) -> Option<usize>;
}

/// The level without a micro-kernel: the portable loop does every tile.
#[derive(Clone, Copy)]
struct Portable;

impl Micro for Portable {
    #[inline(always)]
    fn sums(self, _: &Problem<'_>, _: &At, _: &mut [f32]) -> Option<usize> {
        None
    }
}

#[cfg(target_arch = "x86_64")]
impl Micro for V4 {
    #[inline(always)]
    fn sums(self, p: &Problem<'_>, at: &At, sums: &mut [f32]) -> Option<usize> {
        // One or two rows of x: wider tiles, whole cache lines of each weight row at a time.
        let tiles = match p.m {
            1 if at.left >= 4 * TILE => 4,
            1 | 2 if at.left >= 2 * TILE => 2,
            _ => 1,
        };
        for r0 in (0..p.m).step_by(ROWS_V4) {
            avx512::sums(self, p, at.ks.clone(), (at.c0, tiles), r0, sums);
        }
        Some(tiles * TILE)
    }
}

#[cfg(target_arch = "x86_64")]
impl Micro for V3 {
    #[inline(always)]
    fn sums(self, p: &Problem<'_>, at: &At, sums: &mut [f32]) -> Option<usize> {
        for half in [0, TILE / 2] {
            for r0 in (0..p.m).step_by(ROWS_V3) {
                avx2::sums(self, p, at.ks.clone(), (at.c0, half, r0), sums);
            }
        }
        Some(TILE)
    }
}

/// The sums over the rows `ks` of every row of `x` with the columns from `c0` (at most
/// `left` of them), into `sums` (`[m, BLOCK]`); returns how many columns it took.
/// Whole tiles go to the level's micro-kernel, the last columns of an odd width (and every
/// tile, without one) to the portable loop.
#[inline(always)]
fn tile_sums<M: Micro>(micro: M, p: &Problem<'_>, at: At, sums: &mut [f32]) -> usize {
    if at.left >= TILE
        && let Some(cols) = micro.sums(p, &at, sums)
    {
        return cols;
    }
    let cols = TILE.min(at.left);
    portable_sums(p, at.ks, at.c0, cols, sums);
    cols
}

/// `tile_sums` in plain Rust, for any number of columns (even, `TILE` at most): each weight row
/// unpacked once into a buffer, then used for every row of `x`.
#[inline(always)]
fn portable_sums(p: &Problem<'_>, ks: Range<usize>, c0: usize, cols: usize, sums: &mut [f32]) {
    let mut q = [0.0f32; TILE];
    for s in sums.chunks_exact_mut(BLOCK) {
        s[..cols].fill(0.0);
    }
    for kk in ks {
        let start = (kk * p.n + c0) / 2;
        for (j, &byte) in p.w[start..start + cols / 2].iter().enumerate() {
            q[2 * j] = p.codes[usize::from(byte & 0xF)];
            q[2 * j + 1] = p.codes[usize::from(byte >> 4)];
        }
        for (row, s) in sums.chunks_exact_mut(BLOCK).enumerate() {
            let xv = p.xs[row * p.k + kk];
            for (s, &q) in s[..cols].iter_mut().zip(&q[..cols]) {
                *s += xv * q;
            }
        }
    }
}

/// Rows of `x` one AVX-512 micro-kernel call takes (24 of the 32 registers hold sums).
#[cfg(target_arch = "x86_64")]
const ROWS_V4: usize = 6;
/// Rows of `x` one AVX2 micro-kernel call takes (12 of the 16 registers hold sums).
#[cfg(target_arch = "x86_64")]
const ROWS_V3: usize = 3;

/// The AVX-512 micro-kernel: 64 columns (32 bytes of a weight row) by up to 6 rows of `x`.
#[cfg(target_arch = "x86_64")]
mod avx512 {
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
}

/// The AVX2 micro-kernel: 32 columns (16 bytes of a weight row) by up to 3 rows of `x`.
#[cfg(target_arch = "x86_64")]
mod avx2 {
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
}

#[cfg(test)]
mod tests {
    use super::{BLOCK, Codes, ScaleData, Scales, product};
    use customop::cpu::{Level, simd_at};

    /// Every path this CPU has against the plain triple loop, on shapes with partial blocks and
    /// partial tiles (`n` not a multiple of 64 nor of `BLOCK`), 1 to 13 rows (more than one
    /// micro-kernel call of each path; the wide tiles of one and two rows), with and without
    /// zero points.
    #[test]
    fn every_path_equals_the_plain_loops() {
        let codes: Codes = core::array::from_fn(|i| ((i as i32 + 8) % 16 - 8) as f32);
        let mut ran = 0;
        for (m, k, n, group) in [
            (1, 8, 2, 4),
            (3, 16, 40, 8),
            (4, 32, BLOCK + 70, 16),
            (5, 8, 6, 8),
            (7, 12, 128, 4),
            (13, 8, 192, 8),
            (1, 16, 2 * BLOCK + 64, 8),
            (2, 8, BLOCK + 128, 4),
        ] {
            let xs: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
            let w: Vec<u8> = (0..k * n / 2).map(|i| (i * 37 % 256) as u8).collect();
            let scales: Vec<f32> = (0..k / group * n)
                .map(|i| 0.25 * (1 + i % 3) as f32)
                .collect();
            let zs: Vec<f32> = (0..k / group * n).map(|i| (i % 5) as f32).collect();
            for zeros in [None, Some(&zs[..])] {
                let mut want = vec![0.0f32; m * n];
                for r in 0..m {
                    for c in 0..n {
                        want[r * n + c] = (0..k)
                            .map(|kk| {
                                let b = w[(kk * n + c) / 2];
                                let q =
                                    codes[usize::from(if c % 2 == 0 { b & 15 } else { b >> 4 })];
                                let g = (kk / group) * n + c;
                                let z = zeros.map_or(0.0, |z| z[g]);
                                xs[r * k + kk] * (q * scales[g] - z)
                            })
                            .sum();
                    }
                }
                for level in Level::ALL {
                    let Some(simd) = simd_at(level) else { continue };
                    let mut got = vec![f32::NAN; m * n];
                    let s = Scales {
                        scales: ScaleData::F32(&scales),
                        zeros,
                    };
                    product(simd, &xs, &w, (m, k, n, group), &codes, s, &mut got);
                    // Integers and quarter scales: every sum is exact in f32, in any order.
                    assert_eq!(got, want, "m {m} n {n} {level:?} zeros {}", zeros.is_some());
                    ran += 1;
                }
            }
        }
        assert!(ran >= 16);
    }
}
