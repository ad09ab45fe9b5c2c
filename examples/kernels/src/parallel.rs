//! Kernels on the caller's thread pool (`customop::parallel`): a row-parallel layer norm and a
//! blocked reduction, the same layer norm on one thread for comparison, and a probe that reports
//! the pool a kernel sees.

use customop::parallel::{num_threads, par_chunks_mut, parallel_for};
use customop::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Elements a parallel range should hold at least: below this, scheduling costs more than it
/// saves.
const MIN_ELEMENTS_PER_RANGE: usize = 16 * 1024;

/// One row of layer norm: `y = (x - mean) / sqrt(var + eps) * w + b`.
fn layer_norm_row(x: &[f32], w: &[f32], b: &[f32], eps: f32, y: &mut [f32]) {
    let n = x.len() as f32;
    let mean = lanes_sum(x, |v| v) / n;
    let var = lanes_sum(x, |v| (v - mean) * (v - mean)) / n;
    let inv = 1.0 / (var + eps).sqrt();
    for (((o, v), wi), bi) in y.iter_mut().zip(x).zip(w).zip(b) {
        *o = (v - mean) * inv * wi + bi;
    }
}

/// `sum(f(v))` over `xs` in 16 independent lanes, so that the compiler can keep several
/// vector additions in flight instead of one long chain (a plain `sum()` of f32 must add in
/// order, one element at a time).
#[inline(always)]
fn lanes_sum(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0.0f32; 16];
    let chunks = xs.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += f(v);
        }
    }
    acc.iter().sum::<f32>() + rest.iter().map(|&v| f(v)).sum::<f32>()
}

fn check_params(
    op: &str,
    x: &TensorRef<'_, f32, 2>,
    w: &TensorRef<'_, f32, 1>,
    b: &TensorRef<'_, f32, 1>,
) -> Result<usize, OpError> {
    let cols = x.dim(1);
    if w.len() != cols || b.len() != cols {
        return Err(OpError::invalid_argument(format!(
            "{op}: rows of {cols} but {} weights and {} biases",
            w.len(),
            b.len()
        )));
    }
    Ok(cols)
}

/// Layer norm over the last axis, rows spread over the caller's pool (XLA's under jit and the
/// Rust runner, torch's in eager): each range holds at least 16 Ki elements.
#[custom_op(name = "example::layer_norm_par")]
pub fn layer_norm_par(
    x: TensorRef<'_, f32, 2>,
    w: TensorRef<'_, f32, 1>,
    b: TensorRef<'_, f32, 1>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
    #[attr] eps: f32,
) -> Result<(), OpError> {
    let cols = check_params("layer_norm_par", &x, &w, &b)?;
    if cols == 0 {
        return Ok(());
    }
    let (xs, ws, bs) = (x.as_slice(), w.as_slice(), b.as_slice());
    let grain = MIN_ELEMENTS_PER_RANGE.div_ceil(cols);
    par_chunks_mut(y.as_mut_slice(), cols, grain, |i, row| {
        layer_norm_row(&xs[i * cols..(i + 1) * cols], ws, bs, eps, row);
    });
    Ok(())
}

/// `layer_norm_par` on one thread: what the benchmark compares it with.
#[custom_op(name = "example::layer_norm_serial")]
pub fn layer_norm_serial(
    x: TensorRef<'_, f32, 2>,
    w: TensorRef<'_, f32, 1>,
    b: TensorRef<'_, f32, 1>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
    #[attr] eps: f32,
) -> Result<(), OpError> {
    let cols = check_params("layer_norm_serial", &x, &w, &b)?;
    if cols == 0 {
        return Ok(());
    }
    for (row, out) in x
        .as_slice()
        .chunks(cols)
        .zip(y.as_mut_slice().chunks_mut(cols))
    {
        layer_norm_row(row, w.as_slice(), b.as_slice(), eps, out);
    }
    Ok(())
}

/// Elements per block of `sum_squares`: fixed, so the result does not depend on the number of
/// threads (each block's partial sum is added in block order).
const BLOCK: usize = 4096;

/// `sum(x^2)` over every element, accumulated in f64: one partial sum per 4 Ki-element block,
/// computed in parallel, then added in block order (the same result on any pool).
#[custom_op(name = "example::sum_squares")]
pub fn sum_squares(
    x: TensorRef<'_, f32>,
    #[out(shape = [])] mut total: TensorMut<'_, f64>,
) -> Result<(), OpError> {
    let xs = x.as_slice();
    let mut partial = vec![0.0f64; xs.len().div_ceil(BLOCK)];
    par_chunks_mut(&mut partial, 1, MIN_ELEMENTS_PER_RANGE / BLOCK, |i, p| {
        let block = &xs[i * BLOCK..((i + 1) * BLOCK).min(xs.len())];
        p[0] = block.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
    });
    total.as_mut_slice()[0] = partial.iter().sum();
    Ok(())
}

/// Per length of `x`, the most distinct threads one `pool_probe` call on it saw running its
/// ranges. Kept apart by length so that a test reads only what its own calls saw: it gives `x`
/// a length no other test of its process uses, and an earlier test's calls (on a pool that had
/// more threads then, say) are not in its figure.
static THREADS_SEEN: Mutex<BTreeMap<i64, i64>> = Mutex::new(BTreeMap::new());

/// The most distinct threads one `pool_probe` call on an `x` of `len` elements saw running its
/// ranges (0 if no call on that length returned), for the tests.
#[unsafe(no_mangle)]
pub extern "C" fn example_pool_probe_threads_seen(len: i64) -> i64 {
    let seen = THREADS_SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    seen.get(&len).copied().unwrap_or(0)
}

/// How long `pool_probe`'s ranges wait, at most, for a second thread to run one.
const SECOND_THREAD_DEADLINE: Duration = Duration::from_secs(10);

/// What the pool looks like from a kernel: `threads[0] = num_threads()`. It also runs
/// `x.len()` one-element ranges, each waiting ~1 ms, and records how many distinct threads ran
/// them, per length of `x` (`example_pool_probe_threads_seen`). On a pool of more than one
/// thread, with two ranges or more, a range also waits (10 s at most) until a second thread
/// has run one: on a loaded machine, a pool thread can take longer to wake than the caller
/// takes to run every range itself, and the count would say more of the scheduler than of the
/// pool. A range containing index `panic_at` (if `>= 0`) panics, which must reach the caller
/// as the call's `[kernel_panic]`.
#[custom_op(name = "example::pool_probe")]
pub fn pool_probe(
    x: TensorRef<'_, f32, 1>,
    #[attr] panic_at: i64,
    #[out(shape = [1])] mut threads: TensorMut<'_, i64>,
) -> Result<(), OpError> {
    let seen = Mutex::new(HashSet::new());
    let joined = Condvar::new();
    let wait = num_threads() >= 2 && x.len() >= 2;
    let deadline = Instant::now() + SECOND_THREAD_DEADLINE;
    parallel_for(x.len(), 1, |r| {
        let mut s = seen.lock().unwrap_or_else(PoisonError::into_inner);
        if s.insert(std::thread::current().id()) {
            joined.notify_all();
        }
        while wait && s.len() < 2 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = joined
                .wait_timeout(s, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        drop(s);
        if panic_at >= 0 && r.contains(&(panic_at as usize)) {
            panic!("pool_probe: range {r:?} holds index {panic_at}");
        }
        std::thread::sleep(Duration::from_millis(1));
    });
    let distinct = seen.lock().map(|s| s.len()).unwrap_or(0) as i64;
    {
        let mut seen_by_len = THREADS_SEEN.lock().unwrap_or_else(PoisonError::into_inner);
        let most = seen_by_len.entry(x.len() as i64).or_default();
        *most = (*most).max(distinct);
    }
    threads.as_mut_slice()[0] = num_threads() as i64;
    Ok(())
}
