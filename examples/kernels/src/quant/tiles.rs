//! The product `x · dequant(w)` that every 4-bit kernel of `quant` shares: column blocks over
//! the pool, the weights unpacked next to their use, never a full-size copy.

/// Columns of the output computed by one task.
const BLOCK: usize = 256;

/// The factor each group's sum is scaled by, per group row and column: `coarse`, or where a
/// scale is an `f32` subnormal (MXFP4's `2^-127`), which XLA's threads read as zero (they
/// flush denormals), two normal factors: the sum times `fine`, then times `coarse`.
#[derive(Clone, Copy)]
pub(super) struct Scales<'a> {
    /// The scales, or their normal part.
    pub coarse: &'a [f32],
    /// What the sum is multiplied by first, where some scale needs it.
    pub fine: Option<&'a [f32]>,
}

impl Scales<'_> {
    /// `t += a · scale` for each column of `range` (`a` the group sums).
    #[inline(always)]
    fn add(&self, range: core::ops::Range<usize>, a: &[f32], t: &mut [f32]) {
        let s = &self.coarse[range.clone()];
        match self.fine {
            None => {
                for ((t, &a), &s) in t.iter_mut().zip(a).zip(s) {
                    *t += a * s;
                }
            }
            Some(fine) => {
                for (((t, &a), &s), &f) in t.iter_mut().zip(a).zip(s).zip(&fine[range]) {
                    *t += (a * f) * s;
                }
            }
        }
    }
}
/// `x · dequant(w)` for `x: [m, k]` (row-major), weights `[k, n]` packed two a byte (`w`),
/// `pair(byte)` their two values (low nibble first), and `scales: [k / group, n]`; written
/// into `out: [m, n]`.
///
/// For a few rows of `x` (decoding a token or four) built for a CPU with AVX2 (`-C
/// target-cpu=native` on most x86-64 machines of the last ten years), a tile is summed in
/// registers ([`register_tile`]); otherwise (more rows, or baseline x86-64, whose SSE2 has no
/// vector conversion from bytes) a row of the block is unpacked once into a buffer and then used
/// for every row of `x`.
pub(super) fn block_matmul(
    xs: &[f32],
    w: &[u8],
    (m, k, n, group): (usize, usize, usize, usize),
    pair: impl Fn(u8) -> [f32; 2] + Sync,
    scales: Scales<'_>,
    out: &mut [f32],
) {
    let registers = cfg!(target_feature = "avx2") && m <= ROWS;
    product(xs, w, (m, k, n, group), pair, scales, out, registers);
}

/// `block_matmul`, the path chosen by the caller (`registers`: [`register_tile`]).
fn product(
    xs: &[f32],
    w: &[u8],
    (m, k, n, group): (usize, usize, usize, usize),
    pair: impl Fn(u8) -> [f32; 2] + Sync,
    scales: Scales<'_>,
    out: &mut [f32],
    registers: bool,
) {
    if m == 0 || n == 0 {
        return; // an empty product: nothing to write
    }
    let blocks = n.div_ceil(BLOCK);
    // One [m, BLOCK] tile per column block, computed in parallel, then laid into `out`.
    let mut tiles = vec![0.0f32; blocks * m * BLOCK];
    customop::parallel::par_chunks_mut(&mut tiles, m * BLOCK, 1, |b, tile| {
        let n0 = b * BLOCK;
        let width = BLOCK.min(n - n0);
        if registers {
            let block = Block {
                xs,
                w,
                k,
                n,
                group,
                n0,
                width,
            };
            for g in 0..k / group {
                for c in (0..width / 2).step_by(CHUNK) {
                    for r0 in (0..m).step_by(ROWS) {
                        register_tile(&block, (g, c, r0), &pair, scales, tile);
                    }
                }
            }
            return;
        }
        let mut q = [0.0f32; BLOCK];
        let mut acc = vec![0.0f32; m * BLOCK];
        for g in 0..k / group {
            acc.fill(0.0);
            for kk in g * group..(g + 1) * group {
                let start = (kk * n + n0) / 2;
                for (j, &byte) in w[start..start + width / 2].iter().enumerate() {
                    let [lo, hi] = pair(byte);
                    q[2 * j] = lo;
                    q[2 * j + 1] = hi;
                }
                for (row, a) in acc.chunks_exact_mut(BLOCK).enumerate() {
                    let xv = xs[row * k + kk];
                    for (a, &q) in a[..width].iter_mut().zip(&q[..width]) {
                        *a += xv * q;
                    }
                }
            }
            let range = g * n + n0..g * n + n0 + width;
            for (t, a) in tile.chunks_exact_mut(BLOCK).zip(acc.chunks_exact(BLOCK)) {
                scales.add(range.clone(), &a[..width], &mut t[..width]);
            }
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

/// The bytes of a weight row one register tile takes (two columns each).
const CHUNK: usize = 16;
/// The rows of `x` one register tile takes.
const ROWS: usize = 4;

/// What every tile of one column block shares: `x: [m, k]`, the packed weights `[k, n]`, the
/// group size, and the block's first column and width.
struct Block<'a> {
    xs: &'a [f32],
    w: &'a [u8],
    k: usize,
    n: usize,
    group: usize,
    n0: usize,
    width: usize,
}

/// Adds to `tile` (`[m, BLOCK]`, the block's columns) the products of rows `r0..r0 + ROWS` of
/// `x` with the `2 · CHUNK` columns from byte `c` of the block, over the rows of group `g`,
/// scaled: the sums stay in registers for the whole group (`ROWS × 2 × CHUNK` f32s), each
/// weight byte is unpacked once, the even and the odd columns apart.
#[inline(always)]
fn register_tile(
    b: &Block<'_>,
    (g, c, r0): (usize, usize, usize),
    pair: &impl Fn(u8) -> [f32; 2],
    scales: Scales<'_>,
    tile: &mut [f32],
) {
    let rows = ROWS.min(b.xs.len() / b.k - r0);
    let bytes = CHUNK.min(b.width / 2 - c);
    let mut acc = [[[0.0f32; CHUNK]; 2]; ROWS];
    for kk in g * b.group..(g + 1) * b.group {
        let start = (kk * b.n + b.n0) / 2 + c;
        let mut q = [0u8; CHUNK];
        let row = match <&[u8; CHUNK]>::try_from(&b.w[start..start + bytes]) {
            Ok(full) => full,
            Err(_) => {
                q[..bytes].copy_from_slice(&b.w[start..start + bytes]);
                &q
            }
        };
        let (mut lo, mut hi) = ([0.0f32; CHUNK], [0.0f32; CHUNK]);
        for j in 0..CHUNK {
            [lo[j], hi[j]] = pair(row[j]);
        }
        for (r, a) in acc.iter_mut().enumerate().take(rows) {
            let xv = b.xs[(r0 + r) * b.k + kk];
            for j in 0..CHUNK {
                a[0][j] = mul_add(lo[j], xv, a[0][j]);
                a[1][j] = mul_add(hi[j], xv, a[1][j]);
            }
        }
    }
    let start = g * b.n + b.n0 + 2 * c;
    for (r, a) in acc.iter().enumerate().take(rows) {
        let t = &mut tile[(r0 + r) * BLOCK + 2 * c..][..2 * bytes];
        // The even and odd columns' sums back in column order.
        let mut sums = [0.0f32; 2 * CHUNK];
        for j in 0..bytes {
            sums[2 * j] = a[0][j];
            sums[2 * j + 1] = a[1][j];
        }
        scales.add(start..start + 2 * bytes, &sums[..2 * bytes], t);
    }
}

/// `a · b + c`, fused where the CPU the code is built for has FMA (without it, `f32::mul_add`
/// would be a call into libm).
#[inline(always)]
fn mul_add(a: f32, b: f32, c: f32) -> f32 {
    if cfg!(target_feature = "fma") {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

#[cfg(test)]
mod tests {
    use super::{BLOCK, Scales, product};

    /// Both paths against the plain triple loop, on shapes with partial blocks and partial
    /// register tiles (`n` not a multiple of `2 · CHUNK` nor of `BLOCK`), 1 to 5 rows.
    #[test]
    fn both_paths_equal_the_plain_loops() {
        let pair = |b: u8| [f32::from(((b << 4) as i8) >> 4), f32::from((b as i8) >> 4)];
        for (m, k, n, group) in [
            (1, 8, 2, 4),
            (3, 16, 40, 8),
            (4, 32, BLOCK + 38, 16),
            (5, 8, 6, 8),
        ] {
            let xs: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
            let w: Vec<u8> = (0..k * n / 2).map(|i| (i * 37 % 256) as u8).collect();
            let scales: Vec<f32> = (0..k / group * n)
                .map(|i| 0.25 * (1 + i % 3) as f32)
                .collect();
            let mut want = vec![0.0f32; m * n];
            for r in 0..m {
                for c in 0..n {
                    want[r * n + c] = (0..k)
                        .map(|kk| {
                            let q = pair(w[(kk * n + c) / 2])[c % 2];
                            xs[r * k + kk] * q * scales[(kk / group) * n + c]
                        })
                        .sum();
                }
            }
            for registers in [false, true] {
                let mut got = vec![f32::NAN; m * n];
                let scales = Scales {
                    coarse: &scales,
                    fine: None,
                };
                product(&xs, &w, (m, k, n, group), pair, scales, &mut got, registers);
                // Integers and quarter scales: every sum is exact in f32, in any order.
                assert_eq!(got, want, "m {m} n {n} registers {registers}");
            }
        }
    }
}
