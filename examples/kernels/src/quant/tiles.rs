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
        let block = Block {
            p: &p,
            scales,
            xsums: &xsums,
            b,
            tile,
        };
        // The whole block, scaling included, compiled for the level that runs it: each
        // level's job holds its own micro-kernel only.
        match simd {
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512(v4) => v4.vectorize(BlockJob(v4, block)),
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2(v3) => v3.vectorize(BlockJob(v3, block)),
            Simd::Portable => BlockJob(Portable, block).call(),
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

/// One column block of the product (block `b`): its `[m, BLOCK]` tile.
struct Block<'a, 'p> {
    p: &'a Problem<'p>,
    scales: Scales<'a>,
    xsums: &'a [f32],
    b: usize,
    tile: &'a mut [f32],
}

/// A block's job on a level's micro-kernel: every group's sums scaled into its tile.
struct BlockJob<'a, 'p, M>(M, Block<'a, 'p>);

impl<M: Micro> NullaryFnOnce for BlockJob<'_, '_, M> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let BlockJob(micro, block) = self;
        let (p, tile) = (block.p, block.tile);
        let n0 = block.b * BLOCK;
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
                let cols = tile_sums(micro, p, at, &mut sums);
                let start = g * p.n + n0 + c0;
                for r in 0..p.m {
                    let xsum = block.xsums.get(r * groups + g).copied().unwrap_or(0.0);
                    block.scales.add(
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

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

#[cfg(test)]
mod tests {
    use super::{BLOCK, Codes, ScaleData, Scales, product};
    use customop::cpu::{Level, simd_at};

    /// The levels this CPU has, by the standard library's detection of their features (apart
    /// from `customop::cpu`'s, so that a level it fails to give is caught): x86-64-v3 and v4 as
    /// their tokens need them.
    fn levels_the_cpu_has() -> Vec<Level> {
        let mut have = vec![Level::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let v3 = has!("sse3")
                && has!("ssse3")
                && has!("sse4.1")
                && has!("sse4.2")
                && has!("popcnt")
                && has!("avx")
                && has!("avx2")
                && has!("bmi1")
                && has!("bmi2")
                && has!("fma")
                && has!("lzcnt");
            if v3 {
                have.push(Level::Avx2);
            }
            if v3
                && has!("avx512f")
                && has!("avx512bw")
                && has!("avx512cd")
                && has!("avx512dq")
                && has!("avx512vl")
            {
                have.push(Level::Avx512);
            }
        }
        have
    }

    /// Every path this CPU has against the plain triple loop, on shapes with partial blocks and
    /// partial tiles (`n` not a multiple of 64 nor of `BLOCK`), 1 to 13 rows (more than one
    /// micro-kernel call of each path; the wide tiles of one and two rows), with and without
    /// zero points. Each level the CPU has runs every case (the portable loop alone would pass
    /// a count of cases); one it lacks has no token, and says so.
    #[test]
    fn every_path_equals_the_plain_loops() {
        let codes: Codes = core::array::from_fn(|i| ((i as i32 + 8) % 16 - 8) as f32);
        let mut ran = [0usize; Level::ALL.len()];
        let mut cases = 0;
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
                cases += 1;
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
                    ran[level as usize] += 1;
                }
            }
        }
        let have = levels_the_cpu_has();
        for level in Level::ALL {
            if have.contains(&level) {
                assert_eq!(ran[level as usize], cases, "{level:?}: this CPU has it");
            } else {
                assert_eq!(ran[level as usize], 0, "{level:?}: this CPU lacks it");
                eprintln!("SKIPPED every_path_equals_the_plain_loops {level:?}: this CPU lacks it");
            }
        }
    }
}
