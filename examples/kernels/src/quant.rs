//! A quantized kernel: a matrix product with weights in packed `i4` and one `f32` scale per
//! group of rows (weight-only quantization, as LLM inference on CPU uses it), with the column
//! blocks spread over the pool (`customop::parallel`). No full-size copy of the weights is
//! ever made: each block of a weight row is unpacked into a small buffer next to its use.

use customop::prelude::*;
use customop::{I4, PackedRef};

/// Columns of the output computed by one task.
const BLOCK: usize = 256;

/// `y = x · dequant(w)`, `x: [M, K]`, `w: [K, N]` in `i4` (two a byte along `N`),
/// `scales: [K / group, N]`: `dequant(w)[k, n] = w[k, n] · scales[k / group, n]`, the group
/// size `K / scales.dim(0)`.
#[custom_op(name = "example::matmul_i4")]
pub fn matmul_i4(
    x: TensorRef<'_, f32, 2>,
    w: PackedRef<'_, I4, 2>,
    scales: TensorRef<'_, f32, 2>,
    #[out(shape = [x.dim(0), w.dim(1)])] mut y: TensorMut<'_, f32, 2>,
) -> Result<(), OpError> {
    let (m, k, n) = (x.dim(0), x.dim(1), w.dim(1));
    let groups = scales.dim(0);
    if w.dim(0) != k || scales.dim(1) != n || groups == 0 || k % groups != 0 || n % 2 != 0 {
        return Err(OpError::invalid_argument(format!(
            "matmul_i4: x is {:?}, w {:?}, scales {:?}: w must be [K, N] with N even, scales \
             [G, N] with G dividing K",
            x.dims(),
            w.dims(),
            scales.dims()
        )));
    }
    let group = k / groups;
    let blocks = n.div_ceil(BLOCK);
    // One [M, BLOCK] tile per column block, computed in parallel, then laid into `y`.
    let mut tiles = vec![0.0f32; blocks * m * BLOCK];
    let (xs, ws, ss) = (x.as_slice(), w.bytes(), scales.as_slice());
    customop::parallel::par_chunks_mut(&mut tiles, m * BLOCK, 1, |b, tile| {
        let n0 = b * BLOCK;
        let width = BLOCK.min(n - n0);
        let mut q = [0.0f32; BLOCK];
        let mut acc = vec![0.0f32; m * BLOCK];
        for g in 0..groups {
            acc.fill(0.0);
            for kk in g * group..(g + 1) * group {
                // Row kk's columns n0..n0 + width, two a byte, low nibble first.
                let start = (kk * n + n0) / 2;
                for (pair, &byte) in q.chunks_exact_mut(2).zip(&ws[start..start + width / 2]) {
                    pair[0] = f32::from(((byte << 4) as i8) >> 4);
                    pair[1] = f32::from((byte as i8) >> 4);
                }
                for (row, a) in acc.chunks_exact_mut(BLOCK).enumerate() {
                    let xv = xs[row * k + kk];
                    for (a, &q) in a[..width].iter_mut().zip(&q[..width]) {
                        *a += xv * q;
                    }
                }
            }
            let s = &ss[g * n + n0..g * n + n0 + width];
            for (t, a) in tile.chunks_exact_mut(BLOCK).zip(acc.chunks_exact(BLOCK)) {
                for ((t, &a), &s) in t[..width].iter_mut().zip(&a[..width]).zip(s) {
                    *t += a * s;
                }
            }
        }
    });
    let out = y.as_mut_slice();
    for (b, tile) in tiles.chunks_exact(m * BLOCK).enumerate() {
        let n0 = b * BLOCK;
        let width = BLOCK.min(n - n0);
        for (row, t) in tile.chunks_exact(BLOCK).enumerate() {
            out[row * n + n0..row * n + n0 + width].copy_from_slice(&t[..width]);
        }
    }
    Ok(())
}
