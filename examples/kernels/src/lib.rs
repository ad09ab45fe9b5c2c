//! The example kernels: every parameter kind of `#[custom_op]`, as a cdylib that XLA loads.
//!
//! Build the cdylib (no MLIR is linked: `customop` comes with `default-features = false`):
//! `cargo build -p customop-example-kernels`. Model code uses the same crate as an rlib with
//! customop's `mlir` feature, for the lowerings.

use customop::prelude::*;

pub use customop_example_kernel_lib::affine;

pub mod any_rank;
pub mod attributes;
pub mod derivatives;
pub mod in_place;
pub mod parallel;
pub mod state;

/// Handler-side counters, read through exported functions by the tests and the sharding
/// benchmark (one process per XLA job, so they start at zero): how often the instrumented
/// kernels ran, on how many rows, and (`rms_norm`) for how long. They show that a partitioned
/// op runs once per device on its shard, not on gathered inputs.
pub mod probe {
    use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

    static CALLS: AtomicI64 = AtomicI64::new(0);
    static ROWS: AtomicI64 = AtomicI64::new(0);
    static MAX_ROWS: AtomicI64 = AtomicI64::new(0);
    static MIN_ROWS: AtomicI64 = AtomicI64::new(i64::MAX);
    static NANOS: AtomicI64 = AtomicI64::new(0);
    static MIN_NANOS: AtomicI64 = AtomicI64::new(i64::MAX);

    /// Counts one kernel call on `rows` rows.
    pub fn record(rows: usize) {
        let rows = rows as i64;
        CALLS.fetch_add(1, Relaxed);
        ROWS.fetch_add(rows, Relaxed);
        MAX_ROWS.fetch_max(rows, Relaxed);
        MIN_ROWS.fetch_min(rows, Relaxed);
    }

    /// Counts one kernel call on `rows` rows and, when dropped, adds the time it took.
    pub fn timed(rows: usize) -> Timed {
        record(rows);
        Timed(std::time::Instant::now())
    }

    /// Adds the time since it was made to the total when dropped.
    #[derive(Debug)]
    pub struct Timed(std::time::Instant);

    impl Drop for Timed {
        fn drop(&mut self) {
            let ns = i64::try_from(self.0.elapsed().as_nanos()).unwrap_or(i64::MAX);
            NANOS.fetch_add(ns, Relaxed);
            MIN_NANOS.fetch_min(ns, Relaxed);
        }
    }

    /// Kernel calls so far.
    #[unsafe(no_mangle)]
    pub extern "C" fn example_probe_calls() -> i64 {
        CALLS.load(Relaxed)
    }

    /// Rows over all calls.
    #[unsafe(no_mangle)]
    pub extern "C" fn example_probe_rows() -> i64 {
        ROWS.load(Relaxed)
    }

    /// The most rows one call saw.
    #[unsafe(no_mangle)]
    pub extern "C" fn example_probe_max_rows() -> i64 {
        MAX_ROWS.load(Relaxed)
    }

    /// The fewest rows one call saw (`i64::MAX` before any call).
    #[unsafe(no_mangle)]
    pub extern "C" fn example_probe_min_rows() -> i64 {
        MIN_ROWS.load(Relaxed)
    }

    /// Nanoseconds spent in timed kernels.
    #[unsafe(no_mangle)]
    pub extern "C" fn example_probe_nanos() -> i64 {
        NANOS.load(Relaxed)
    }

    /// Sets every counter back to its start (after a warm-up run, say); returns 0.
    #[unsafe(no_mangle)]
    pub extern "C" fn example_probe_reset() -> i64 {
        for c in [&CALLS, &ROWS, &MAX_ROWS, &NANOS] {
            c.store(0, Relaxed);
        }
        MIN_ROWS.store(i64::MAX, Relaxed);
        MIN_NANOS.store(i64::MAX, Relaxed);
        0
    }

    /// The shortest timed call, in nanoseconds (`i64::MAX` before any).
    #[unsafe(no_mangle)]
    pub extern "C" fn example_probe_min_nanos() -> i64 {
        MIN_NANOS.load(Relaxed)
    }
}

/// The seed model's opaque structure: a 32-byte payload (56 bytes packed).
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "my_lib::Blob")]
pub struct Blob {
    /// Multiplies each row sum.
    pub gain: f32,
    /// Added after rounding.
    pub bias: i32,
    /// Carried, not used by the arithmetic.
    pub seed: u64,
    /// A tag.
    pub tag: [u8; 16],
}

/// The seed op: `y[i] = saturate_i8(round(gain * sum_j x[i, j]) + bias)`. Rows are
/// independent, so on a device mesh each device may take a block of rows.
#[custom_op(
    name = "my_custom_library::custom_op_external",
    side_effect,
    partition(x = [rows, _])
)]
pub fn custom_op_external(
    #[external] blob: &Blob,
    x: TensorRef<'_, f32, 2>,
    #[out(shape = [x.dim(0)])] mut y: TensorMut<'_, i8>,
) -> Result<(), OpError> {
    probe::record(x.dim(0));
    let cols = x.dim(1);
    for (i, out) in y.as_mut_slice().iter_mut().enumerate() {
        let row = &x.as_slice()[i * cols..(i + 1) * cols];
        let sum: f32 = row.iter().sum();
        let v = (blob.gain * sum).round() as i64 + i64::from(blob.bias);
        *out = v.clamp(i64::from(i8::MIN), i64::from(i8::MAX)) as i8;
    }
    Ok(())
}

/// How `rms_norm` scales.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[repr(u8)]
pub enum NormMode {
    /// `y = x / rms * scale`.
    Scale = 0,
    /// `y = x / rms * scale + shift`.
    ScaleShift = 1,
}

/// A compile-time descriptor attribute of `rms_norm`.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "example::NormCfg")]
pub struct NormCfg {
    /// Multiplies the normalised rows.
    pub scale: f32,
    /// Added in `ScaleShift` mode.
    pub shift: f32,
    /// The mode.
    pub mode: NormMode,
}

/// Row-wise RMS norm: `y[i, :] = x[i, :] / sqrt(mean(x[i, :]^2) + eps) * scale (+ shift)`.
/// Rows split across devices; each row needs all its columns.
#[custom_op(name = "example::rms_norm", partition(x = [rows, _]))]
pub fn rms_norm(
    x: TensorRef<'_, f32, 2>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
    #[attr] eps: f32,
    #[attr] cfg: &NormCfg,
) -> Result<(), OpError> {
    let _timed = probe::timed(x.dim(0));
    let cols = x.dim(1);
    if cols == 0 {
        return Ok(());
    }
    let out = y.as_mut_slice();
    for (i, row) in x.as_slice().chunks(cols).enumerate() {
        let ms = row.iter().map(|v| v * v).sum::<f32>() / cols as f32;
        let inv = 1.0 / (ms + eps).sqrt();
        for (j, v) in row.iter().enumerate() {
            let shift = if cfg.mode == NormMode::ScaleShift {
                cfg.shift
            } else {
                0.0
            };
            out[i * cols + j] = v * inv * cfg.scale + shift;
        }
    }
    Ok(())
}

/// `y[i, j] = x[i, j] * w[i]`: two inputs that share the factor `rows`, so on a device mesh
/// each device gets the same block of rows of both.
#[custom_op(name = "example::row_scale", partition(x = [rows, _], w = [rows]))]
pub fn row_scale(
    x: TensorRef<'_, f32, 2>,
    w: TensorRef<'_, f32, 1>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    probe::record(x.dim(0));
    if w.dim(0) != x.dim(0) {
        return Err(OpError::invalid_argument(format!(
            "row_scale: {} rows but {} weights",
            x.dim(0),
            w.dim(0)
        )));
    }
    let cols = x.dim(1);
    for ((out, row), &wi) in y
        .as_mut_slice()
        .chunks_mut(cols.max(1))
        .zip(x.as_slice().chunks(cols.max(1)))
        .zip(w.as_slice())
    {
        for (o, v) in out.iter_mut().zip(row) {
            *o = v * wi;
        }
    }
    Ok(())
}

/// State that `counter_step` updates in place.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "example::Counter")]
pub struct Counter {
    /// How many times the op ran.
    pub calls: u64,
    /// The sum of every input element seen.
    pub total: f64,
}

/// `y = x + calls` after counting this call; accumulates the inputs' sum in the state.
#[custom_op(name = "example::counter_step")]
pub fn counter_step(
    #[external] state: &mut Counter,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    state.calls += 1;
    state.total += x.as_slice().iter().map(|&v| f64::from(v)).sum::<f64>();
    for (o, &v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = v + state.calls as f32;
    }
    Ok(())
}

/// Statistics that one op produces and another consumes (an opaque result).
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "example::Stats")]
pub struct Stats {
    /// The mean of the input.
    pub mean: f32,
    /// The largest absolute deviation from the mean.
    pub spread: f32,
}

/// Computes `Stats` of `x`, returned as packed bytes.
#[custom_op(name = "example::make_stats")]
pub fn make_stats(x: TensorRef<'_, f32>) -> Result<Opaque<Stats>, OpError> {
    let n = x.len().max(1) as f32;
    let mean = x.as_slice().iter().sum::<f32>() / n;
    let spread = x
        .as_slice()
        .iter()
        .map(|v| (v - mean).abs())
        .fold(0.0, f32::max);
    Ok(Opaque(Stats { mean, spread }))
}

/// `y = (x - mean) / spread`, with the `Stats` another op produced.
#[custom_op(name = "example::apply_stats")]
pub fn apply_stats(
    #[external] stats: &Stats,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    if stats.spread == 0.0 {
        return Err(OpError::invalid_argument("spread is zero"));
    }
    for (o, &v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = (v - stats.mean) / stats.spread;
    }
    Ok(())
}

/// Fails on negative inputs: the kernel's error reaches XLA.
#[custom_op(name = "example::checked_sqrt")]
pub fn checked_sqrt(
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    for (o, &v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        if v < 0.0 {
            return Err(OpError::invalid_argument(format!("negative input {v}")));
        }
        *o = v.sqrt();
    }
    Ok(())
}

/// Splits `x` by a boolean mask: `kept = x` where `mask`, else 0; `dropped` the rest. A `bool`
/// tensor input and two outputs (the handler checks mask bytes, and that no result overlaps
/// another).
#[custom_op(name = "example::masked_split")]
pub fn masked_split(
    x: TensorRef<'_, f32>,
    mask: TensorRef<'_, bool>,
    #[out(shape = x)] mut kept: TensorMut<'_, f32>,
    #[out(shape = x)] mut dropped: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    if mask.dims() != x.dims() {
        return Err(OpError::invalid_argument(format!(
            "mask shape {:?} is not x's {:?}",
            mask.dims(),
            x.dims()
        )));
    }
    let rows = x.as_slice().iter().zip(mask.as_slice());
    for ((&v, &m), (k, d)) in rows.zip(kept.as_mut_slice().iter_mut().zip(dropped.as_mut_slice())) {
        (*k, *d) = if m { (v, 0.0) } else { (0.0, v) };
    }
    Ok(())
}

/// 1-D average pooling along the rows of `x`: windows of `k` elements every `stride`, with
/// `pad` zeros on each side counted in the average. The output length is computed from the
/// input's and the attributes: `(n + 2 * pad - k) / stride + 1`.
#[custom_op(name = "example::avg_pool")]
pub fn avg_pool(
    x: TensorRef<'_, f32, 2>,
    #[attr] k: i64,
    #[attr] stride: i64,
    #[attr] pad: i64,
    #[out(shape = [x.dim(0), (x.dim(1) + 2 * pad - k) / stride + 1])] mut y: TensorMut<'_, f32, 2>,
) -> Result<(), OpError> {
    if k <= 0 || stride <= 0 || pad < 0 {
        return Err(OpError::invalid_argument(format!(
            "k = {k} and stride = {stride} must be positive, pad = {pad} not negative"
        )));
    }
    let (n, m) = (x.dim(1) as i64, y.dim(1));
    let rows = x.as_slice().chunks_exact(x.dim(1).max(1));
    for (row, out) in rows.zip(y.as_mut_slice().chunks_exact_mut(m.max(1))) {
        for (j, o) in out.iter_mut().enumerate() {
            let start = j as i64 * stride - pad;
            let sum: f32 = (start..start + k)
                .filter(|&i| 0 <= i && i < n)
                .map(|i| row[i as usize])
                .sum();
            *o = sum / k as f32;
        }
    }
    Ok(())
}

/// `a` on top of `b`: their rows, one after the other (`a.dim(0) + b.dim(0)` rows).
#[custom_op(name = "example::concat_rows")]
pub fn concat_rows(
    a: TensorRef<'_, f32, 2>,
    b: TensorRef<'_, f32, 2>,
    #[out(shape = [a.dim(0) + b.dim(0), a.dim(1)])] mut y: TensorMut<'_, f32, 2>,
) -> Result<(), OpError> {
    if a.dim(1) != b.dim(1) {
        return Err(OpError::invalid_argument(format!(
            "a has {} columns, b {}",
            a.dim(1),
            b.dim(1)
        )));
    }
    let (top, bottom) = y.as_mut_slice().split_at_mut(a.len());
    top.copy_from_slice(a.as_slice());
    bottom.copy_from_slice(b.as_slice());
    Ok(())
}

/// The `k` largest elements of `x`, largest first (ties: the lower index first), and their
/// indices. The outputs' length is the attribute `k`.
#[custom_op(name = "example::top_k")]
pub fn top_k(
    x: TensorRef<'_, f32, 1>,
    #[attr] k: i32,
    #[out(shape = [k])] mut values: TensorMut<'_, f32, 1>,
    #[out(shape = [k])] mut indices: TensorMut<'_, i32, 1>,
) -> Result<(), OpError> {
    let k = usize::try_from(k).unwrap_or(0);
    if k > x.len() || x.len() > i32::MAX as usize {
        return Err(OpError::invalid_argument(format!(
            "k = {k}, but x has {} elements",
            x.len()
        )));
    }
    let mut order: Vec<usize> = (0..x.len()).collect();
    let xs = x.as_slice();
    order.sort_by(|&i, &j| xs[j].total_cmp(&xs[i]).then(i.cmp(&j)));
    for ((v, ix), &i) in values
        .as_mut_slice()
        .iter_mut()
        .zip(indices.as_mut_slice())
        .zip(&order[..k])
    {
        *v = xs[i];
        *ix = i as i32;
    }
    Ok(())
}

/// The real element types that `rms_norm_t` computes in (through `f64`).
pub trait Real: customop::types::Element {
    /// The value as an `f64`.
    fn to_f64(self) -> f64;
    /// The nearest value to `v`.
    fn from_f64(v: f64) -> Self;
}

impl Real for f32 {
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Real for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}

impl Real for customop::bf16 {
    fn to_f64(self) -> f64 {
        customop::bf16::to_f64(self)
    }
    fn from_f64(v: f64) -> Self {
        customop::bf16_from_f64(v)
    }
}

impl Real for customop::f16 {
    fn to_f64(self) -> f64 {
        customop::f16::to_f64(self)
    }
    fn from_f64(v: f64) -> Self {
        customop::f16_from_f64(v)
    }
}

/// Row-wise RMS norm for several element types in one op: `y = x / sqrt(mean(x^2) + eps)`,
/// computed in `f64` and rounded to `T`. One name, one schema, one target; the handler runs the
/// instantiation for the dtype XLA passes.
///
/// Its gradient is the op `rms_norm_t_bwd` (`vjp = ...`): JAX and PyTorch differentiate
/// through it with that op.
#[custom_op(
    name = "example::rms_norm_t",
    dtypes(T = [f32, f64, customop::bf16, customop::f16]),
    partition(x = [rows, _]),
    vjp = rms_norm_t_bwd,
    jvp = derivatives::rms_norm_t_jvp
)]
pub fn rms_norm_t<T: Real>(
    x: TensorRef<'_, T, 2>,
    #[attr] eps: f32,
    #[out(shape = x)] mut y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let cols = x.dim(1).max(1);
    for (row, out) in x
        .as_slice()
        .chunks(cols)
        .zip(y.as_mut_slice().chunks_mut(cols))
    {
        let ms = row.iter().map(|v| v.to_f64().powi(2)).sum::<f64>() / cols as f64;
        let inv = 1.0 / (ms + f64::from(eps)).sqrt();
        for (o, v) in out.iter_mut().zip(row) {
            *o = T::from_f64(v.to_f64() * inv);
        }
    }
    Ok(())
}

/// The backward of `rms_norm_t`: with `r = 1 / sqrt(mean(x^2) + eps)` per row,
/// `d_x = r * d_y - r^3 * x * mean(x * d_y)`. It takes the forward input `x`, the attribute
/// `eps` and the cotangent `d_y` of the output `y`, and returns the gradient `d_x` of `x`.
///
/// Its own gradient is `rms_norm_t_bwd_bwd` (second derivatives of `rms_norm_t`).
#[custom_op(
    name = "example::rms_norm_t_bwd",
    dtypes(T = [f32, f64, customop::bf16, customop::f16]),
    partition(x = [rows, _], d_y = [rows, _]),
    vjp = derivatives::rms_norm_t_bwd_bwd,
    jvp = derivatives::rms_norm_t_bwd_jvp
)]
pub fn rms_norm_t_bwd<T: Real>(
    x: TensorRef<'_, T, 2>,
    d_y: TensorRef<'_, T, 2>,
    #[attr] eps: f32,
    #[out(shape = x)] mut d_x: TensorMut<'_, T>,
) -> Result<(), OpError> {
    if d_y.dims() != x.dims() {
        return Err(OpError::invalid_argument(format!(
            "d_y is {:?} but x is {:?}",
            d_y.dims(),
            x.dims()
        )));
    }
    let cols = x.dim(1).max(1);
    let n = cols as f64;
    for ((row, dy), out) in x
        .as_slice()
        .chunks(cols)
        .zip(d_y.as_slice().chunks(cols))
        .zip(d_x.as_mut_slice().chunks_mut(cols))
    {
        let ms = row.iter().map(|v| v.to_f64().powi(2)).sum::<f64>() / n;
        let r = 1.0 / (ms + f64::from(eps)).sqrt();
        let dot = row
            .iter()
            .zip(dy)
            .map(|(a, b)| a.to_f64() * b.to_f64())
            .sum::<f64>()
            / n;
        for ((o, v), g) in out.iter_mut().zip(row).zip(dy) {
            *o = T::from_f64(r * g.to_f64() - r * r * r * v.to_f64() * dot);
        }
    }
    Ok(())
}

/// Mean pooling along the rows of `x`, for `f32` and `f64`: windows of `k` elements every
/// `stride` (no padding), `(n - k) / stride + 1` of them. Differentiable: its backward is
/// `mean_pool_bwd`.
#[custom_op(
    name = "example::mean_pool",
    dtypes(T = [f32, f64]),
    partition(x = [rows, _]),
    vjp = mean_pool_bwd
)]
pub fn mean_pool<T: Real>(
    x: TensorRef<'_, T, 2>,
    #[attr] k: i64,
    #[attr] stride: i64,
    #[out(shape = [x.dim(0), (x.dim(1) - k) / stride + 1])] mut y: TensorMut<'_, T, 2>,
) -> Result<(), OpError> {
    let (k, stride) = pool_window(k, stride)?;
    // The shape rule's division rounds toward zero: a row shorter than a window still gets
    // one output, which no window fills.
    if x.dim(1) < k {
        return Err(OpError::invalid_argument(format!(
            "rows of {} elements are shorter than a window of k = {k}",
            x.dim(1)
        )));
    }
    let (n, m) = (x.dim(1).max(1), y.dim(1).max(1));
    for (row, out) in x.as_slice().chunks(n).zip(y.as_mut_slice().chunks_mut(m)) {
        for (j, o) in out.iter_mut().enumerate() {
            let window = &row[j * stride..j * stride + k];
            *o = T::from_f64(window.iter().map(|v| v.to_f64()).sum::<f64>() / k as f64);
        }
    }
    Ok(())
}

/// The window of `mean_pool`, checked: `k` and `stride` positive.
fn pool_window(k: i64, stride: i64) -> Result<(usize, usize), OpError> {
    match (usize::try_from(k), usize::try_from(stride)) {
        (Ok(k), Ok(s)) if k > 0 && s > 0 => Ok((k, s)),
        _ => Err(OpError::invalid_argument(format!(
            "k = {k} and stride = {stride} must be positive"
        ))),
    }
}

/// The backward of `mean_pool`: each output's cotangent spread evenly over its window,
/// `d_x[i, j * stride + t] += d_y[i, j] / k`.
#[custom_op(
    name = "example::mean_pool_bwd",
    dtypes(T = [f32, f64]),
    partition(x = [rows, _], d_y = [rows, _])
)]
pub fn mean_pool_bwd<T: Real>(
    x: TensorRef<'_, T, 2>,
    d_y: TensorRef<'_, T, 2>,
    #[attr] k: i64,
    #[attr] stride: i64,
    #[out(shape = x)] mut d_x: TensorMut<'_, T, 2>,
) -> Result<(), OpError> {
    let (k, stride) = pool_window(k, stride)?;
    let (n, m) = (x.dim(1).max(1), d_y.dim(1).max(1));
    let windows = (x.dim(1) >= k).then(|| (x.dim(1) - k) / stride + 1);
    if d_y.dim(0) != x.dim(0) || windows != Some(d_y.dim(1)) {
        return Err(OpError::invalid_argument(format!(
            "d_y is {:?}, not the pooled shape of x {:?}",
            d_y.dims(),
            x.dims()
        )));
    }
    for (dy, out) in d_y
        .as_slice()
        .chunks(m)
        .zip(d_x.as_mut_slice().chunks_mut(n))
    {
        let mut acc = vec![0f64; n];
        for (j, g) in dy.iter().enumerate() {
            for a in &mut acc[j * stride..j * stride + k] {
                *a += g.to_f64() / k as f64;
            }
        }
        for (o, a) in out.iter_mut().zip(acc) {
            *o = T::from_f64(a);
        }
    }
    Ok(())
}

/// `y[i, j] = x[i, j] * w[i]` for `f32` and `f64`, differentiable in both inputs
/// (`scale_rows_bwd` returns `d_x` and `d_w`).
#[custom_op(
    name = "example::scale_rows",
    dtypes(T = [f32, f64]),
    partition(x = [rows, _], w = [rows]),
    vjp = scale_rows_bwd
)]
pub fn scale_rows<T: Real>(
    x: TensorRef<'_, T, 2>,
    w: TensorRef<'_, T, 1>,
    #[out(shape = x)] mut y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    if w.dim(0) != x.dim(0) {
        return Err(OpError::invalid_argument(format!(
            "scale_rows: {} rows but {} weights",
            x.dim(0),
            w.dim(0)
        )));
    }
    let cols = x.dim(1).max(1);
    for ((row, wi), out) in x
        .as_slice()
        .chunks(cols)
        .zip(w.as_slice())
        .zip(y.as_mut_slice().chunks_mut(cols))
    {
        for (o, v) in out.iter_mut().zip(row) {
            *o = T::from_f64(v.to_f64() * wi.to_f64());
        }
    }
    Ok(())
}

/// The backward of `scale_rows`: `d_x = d_y * w[i]`, `d_w[i] = sum_j d_y[i, j] * x[i, j]`.
#[custom_op(
    name = "example::scale_rows_bwd",
    dtypes(T = [f32, f64]),
    partition(x = [rows, _], w = [rows], d_y = [rows, _])
)]
pub fn scale_rows_bwd<T: Real>(
    x: TensorRef<'_, T, 2>,
    w: TensorRef<'_, T, 1>,
    d_y: TensorRef<'_, T, 2>,
    #[out(shape = x)] mut d_x: TensorMut<'_, T>,
    #[out(shape = w)] mut d_w: TensorMut<'_, T>,
) -> Result<(), OpError> {
    if w.dim(0) != x.dim(0) || d_y.dims() != x.dims() {
        return Err(OpError::invalid_argument(format!(
            "scale_rows_bwd: x {:?}, w {:?}, d_y {:?}",
            x.dims(),
            w.dims(),
            d_y.dims()
        )));
    }
    let (dx, dw) = (d_x.as_mut_slice(), d_w.as_mut_slice());
    // Row by row, so that every d_w[i] is written also when rows are empty.
    for (i, (wi, dwi)) in w.as_slice().iter().zip(dw.iter_mut()).enumerate() {
        let span = i * x.dim(1)..(i + 1) * x.dim(1);
        let (row, dy) = (&x.as_slice()[span.clone()], &d_y.as_slice()[span.clone()]);
        let mut acc = 0f64;
        for ((o, v), g) in dx[span].iter_mut().zip(row).zip(dy) {
            *o = T::from_f64(g.to_f64() * wi.to_f64());
            acc += g.to_f64() * v.to_f64();
        }
        *dwi = T::from_f64(acc);
    }
    Ok(())
}

/// Panics when the first element is 13: the panic becomes an XLA error, not a crash.
#[custom_op(name = "example::unlucky")]
pub fn unlucky(
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    if x.as_slice().first() == Some(&13.0) {
        panic!("unlucky number 13");
    }
    y.as_mut_slice().copy_from_slice(x.as_slice());
    Ok(())
}

/// `y = x`, taking the 56-byte `Blob` too: the op of the lowering benchmarks (a chain of N).
#[custom_op(name = "example::passthrough")]
pub fn passthrough(
    #[external] blob: &Blob,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = blob;
    y.as_mut_slice().copy_from_slice(x.as_slice());
    Ok(())
}

/// `y = 2 x`, declared with an explicit `target` and `crate` path (the options that the other
/// ops leave at their defaults).
#[custom_op(
    name = "example::doubled",
    target = "example_doubled_target",
    crate = "::customop"
)]
pub fn doubled(
    x: TensorRef<'_, f64>,
    #[out(shape = x)] mut y: TensorMut<'_, f64>,
) -> Result<(), OpError> {
    for (o, v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = 2.0 * v;
    }
    Ok(())
}

/// What `add_offset` adds: a 4-byte payload, 28 bytes packed (the smallest external here).
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "example::Offset")]
pub struct Offset {
    /// Added to every element.
    pub add: f32,
}

/// `y = x + offset.add`.
#[custom_op(name = "example::add_offset")]
pub fn add_offset(
    #[external] offset: &Offset,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    for (o, &v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = v + offset.add;
    }
    Ok(())
}

/// `y = x + k`, its attribute declared before its tensor: torch's schema puts attributes after
/// `*`, so a native torch kernel finds `k` after `x` on its stack.
#[custom_op(name = "example::shift_by")]
pub fn shift_by(
    #[attr] k: i64,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    for (o, &v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = v + k as f32;
    }
    Ok(())
}

/// Weights that `apply_taps` cycles over: a 72-byte payload, 96 bytes packed.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "example::Taps")]
pub struct Taps {
    /// Added after weighting.
    pub bias: f64,
    /// Element `i` is multiplied by `taps[i % 16]`.
    pub taps: [f32; 16],
}

/// `y[i] = x[i] * taps[i % 16] + bias`. Differentiable in `x` (the external gets no
/// gradient): its backward `apply_taps_bwd` takes the external as a residual.
#[custom_op(name = "example::apply_taps", vjp = apply_taps_bwd)]
pub fn apply_taps(
    #[external] taps: &Taps,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    for (i, (o, &v)) in y.as_mut_slice().iter_mut().zip(x.as_slice()).enumerate() {
        *o = (f64::from(v * taps.taps[i % 16]) + taps.bias) as f32;
    }
    Ok(())
}

/// Index `idx[k] = i` as a row of a tensor of `rows` rows, or the op's refusal.
fn row_of(op: &str, k: usize, i: i32, rows: usize) -> Result<usize, OpError> {
    usize::try_from(i)
        .ok()
        .filter(|&r| r < rows)
        .ok_or_else(|| {
            OpError::invalid_argument(format!(
                "{op}: idx[{k}] = {i} is not a row of x (0..{rows})"
            ))
        })
}

/// `y[k, :] = x[idx[k], :]`, an embedding lookup, for `f32` and `f64`. Differentiable in `x`;
/// `idx` is an integer tensor, so it has no gradient (`None` in torch, a `float0` zero in
/// JAX) and the backward returns none for it.
#[custom_op(name = "example::gather_rows", dtypes(T = [f32, f64]), vjp = gather_rows_bwd)]
pub fn gather_rows<T: Real>(
    x: TensorRef<'_, T, 2>,
    idx: TensorRef<'_, i32, 1>,
    #[out(shape = [idx.dim(0), x.dim(1)])] mut y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let (rows, cols) = (x.dim(0), x.dim(1));
    let out = y.as_mut_slice();
    for (k, &i) in idx.as_slice().iter().enumerate() {
        let r = row_of("gather_rows", k, i, rows)?;
        out[k * cols..(k + 1) * cols].copy_from_slice(&x.as_slice()[r * cols..(r + 1) * cols]);
    }
    Ok(())
}

/// The backward of `gather_rows`: `d_x[idx[k], :] += d_y[k, :]` (zero elsewhere).
#[custom_op(name = "example::gather_rows_bwd", dtypes(T = [f32, f64]))]
pub fn gather_rows_bwd<T: Real>(
    x: TensorRef<'_, T, 2>,
    idx: TensorRef<'_, i32, 1>,
    d_y: TensorRef<'_, T, 2>,
    #[out(shape = x)] mut d_x: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let (rows, cols) = (x.dim(0), x.dim(1));
    if d_y.dim(0) != idx.dim(0) || d_y.dim(1) != cols {
        return Err(OpError::invalid_argument(format!(
            "gather_rows_bwd: d_y {:?} for {} indices of rows of {cols}",
            d_y.dims(),
            idx.dim(0)
        )));
    }
    let mut acc = vec![0f64; rows * cols];
    for (k, &i) in idx.as_slice().iter().enumerate() {
        let r = row_of("gather_rows_bwd", k, i, rows)?;
        for (a, g) in acc[r * cols..(r + 1) * cols]
            .iter_mut()
            .zip(&d_y.as_slice()[k * cols..(k + 1) * cols])
        {
            *a += g.to_f64();
        }
    }
    for (o, a) in d_x.as_mut_slice().iter_mut().zip(acc) {
        *o = T::from_f64(a);
    }
    Ok(())
}

/// `y[r, c] = x[r, c] * taps[c % 16] + bias`: rows are independent (`partition(x = [rows,
/// _])`), so `jax.vmap` and `torch.func.vmap` fold a batch into the rows; with the external
/// batched too, each element needs its own taps, and the batch runs as a loop.
#[custom_op(name = "example::tap_rows", partition(x = [rows, _]))]
pub fn tap_rows(
    #[external] taps: &Taps,
    x: TensorRef<'_, f32, 2>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let cols = x.dim(1).max(1);
    for (i, (o, &v)) in y.as_mut_slice().iter_mut().zip(x.as_slice()).enumerate() {
        *o = (f64::from(v * taps.taps[(i % cols) % 16]) + taps.bias) as f32;
    }
    Ok(())
}

/// The backward of `apply_taps`: `d_x[i] = d_y[i] * taps[i % 16]`.
#[custom_op(name = "example::apply_taps_bwd")]
pub fn apply_taps_bwd(
    #[external] taps: &Taps,
    d_y: TensorRef<'_, f32>,
    #[out(shape = d_y)] mut d_x: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    for (i, (o, &g)) in d_x
        .as_mut_slice()
        .iter_mut()
        .zip(d_y.as_slice())
        .enumerate()
    {
        *o = g * taps.taps[i % 16];
    }
    Ok(())
}

/// State that `histogram` updates: 12 buckets of `width` from `lo`; a 56-byte payload, 80 bytes
/// packed.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "example::Histogram")]
pub struct Histogram {
    /// The lower edge of bucket 0.
    pub lo: f32,
    /// The width of each bucket.
    pub width: f32,
    /// Counts; values below `lo` go to bucket 0, above the last edge to bucket 11.
    pub counts: [u32; 12],
}

/// `y = x`, counting each element into the histogram state.
#[custom_op(name = "example::histogram")]
pub fn histogram(
    #[external] hist: &mut Histogram,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    if hist.width.is_nan() || hist.width <= 0.0 {
        return Err(OpError::invalid_argument(
            "histogram: width must be positive",
        ));
    }
    for &v in x.as_slice() {
        let bucket = ((v - hist.lo) / hist.width).floor().clamp(0.0, 11.0) as usize;
        hist.counts[bucket] += 1;
    }
    y.as_mut_slice().copy_from_slice(x.as_slice());
    Ok(())
}

/// A 4 KiB table read in place by `table_dot` (`#[external(borrow)]`) and copied by
/// `table_dot_copy` (`#[external]`): the pair the handler benchmark compares. `#[repr(C)]` with
/// `repr_c`, so its Rust layout is its wire payload (checked at compile time).
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "example::Table4k", repr_c)]
#[repr(C)]
pub struct Table4k {
    /// Multiplies the dot product.
    pub scale: f32,
    /// How many of `values` are used.
    pub len: u32,
    /// The table.
    pub values: [f32; 1022],
}

/// `y[i] = scale * sum_j x[i, j] * values[j % len]`, reading the table in place.
#[custom_op(name = "example::table_dot")]
pub fn table_dot(
    #[external(borrow)] table: &Table4k,
    x: TensorRef<'_, f32, 2>,
    #[out(shape = [x.dim(0)])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    table_dot_kernel(table, x, y)
}

/// `table_dot` with the table unpacked into a copy (the default for `#[external]`).
#[custom_op(name = "example::table_dot_copy")]
pub fn table_dot_copy(
    #[external] table: &Table4k,
    x: TensorRef<'_, f32, 2>,
    #[out(shape = [x.dim(0)])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    table_dot_kernel(table, x, y)
}

fn table_dot_kernel(
    table: &Table4k,
    x: TensorRef<'_, f32, 2>,
    mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let len = table.len as usize;
    if len == 0 || len > table.values.len() {
        return Err(OpError::invalid_argument(format!(
            "table length {len} is not in 1..={}",
            table.values.len()
        )));
    }
    let cols = x.dim(1);
    for (i, out) in y.as_mut_slice().iter_mut().enumerate() {
        let row = &x.as_slice()[i * cols..(i + 1) * cols];
        let dot: f32 = row
            .iter()
            .enumerate()
            .map(|(j, v)| v * table.values[j % len])
            .sum();
        *out = table.scale * dot;
    }
    Ok(())
}

// --- Element types beyond Rust's primitives: complex64, fp8, bf16 and f16 ---------------------

/// Elementwise complex product `z = a * b` of two complex64 tensors of one shape.
#[custom_op(name = "example::cmul")]
pub fn cmul(
    a: TensorRef<'_, customop::Complex64>,
    b: TensorRef<'_, customop::Complex64>,
    #[out(shape = a)] mut z: TensorMut<'_, customop::Complex64>,
) -> Result<(), OpError> {
    if a.dims() != b.dims() {
        return Err(OpError::invalid_argument(format!(
            "cmul takes two tensors of one shape, got {:?} and {:?}",
            a.dims(),
            b.dims()
        )));
    }
    for ((o, x), y) in z
        .as_mut_slice()
        .iter_mut()
        .zip(a.as_slice())
        .zip(b.as_slice())
    {
        *o = x * y;
    }
    Ok(())
}

/// The scale of an fp8 tensor: `x ≈ f32(q) * scale`.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "example::Fp8Scale")]
pub struct Fp8Scale {
    /// What one unit of the fp8 value stands for (positive and finite).
    pub scale: f32,
}

impl Fp8Scale {
    fn checked(&self) -> Result<f32, OpError> {
        if self.scale.is_finite() && self.scale > 0.0 {
            Ok(self.scale)
        } else {
            Err(OpError::invalid_argument(format!(
                "the fp8 scale must be positive and finite, got {}",
                self.scale
            )))
        }
    }
}

/// `q = fp8(clamp(x / scale, -448, 448))`: quantizes to f8E4M3FN, saturating at its largest
/// value (448) as fp8 quantizers do; NaN stays NaN. Rounds to nearest, ties to even.
#[custom_op(name = "example::quantize_fp8")]
pub fn quantize_fp8(
    #[external] scale: &Fp8Scale,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut q: TensorMut<'_, customop::F8E4M3FN>,
) -> Result<(), OpError> {
    use customop::F8E4M3FN;
    let scale = scale.checked()?;
    let max = F8E4M3FN::MAX.to_f32();
    for (o, &v) in q.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = F8E4M3FN::from_f32((v / scale).clamp(-max, max));
    }
    Ok(())
}

/// `y = f32(q) * scale`: the inverse of `quantize_fp8` (up to its rounding).
#[custom_op(name = "example::dequantize_fp8")]
pub fn dequantize_fp8(
    #[external] scale: &Fp8Scale,
    q: TensorRef<'_, customop::F8E4M3FN>,
    #[out(shape = q)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let scale = scale.checked()?;
    for (o, v) in y.as_mut_slice().iter_mut().zip(q.as_slice()) {
        *o = v.to_f32() * scale;
    }
    Ok(())
}

/// `y = bf16(f32(x) * factor)`: computed in f32, rounded to nearest (ties to even) once.
#[custom_op(name = "example::scale_bf16")]
pub fn scale_bf16(
    x: TensorRef<'_, customop::bf16>,
    #[attr] factor: f32,
    #[out(shape = x)] mut y: TensorMut<'_, customop::bf16>,
) -> Result<(), OpError> {
    for (o, v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = customop::bf16::from_f32(v.to_f32() * factor);
    }
    Ok(())
}

/// `y = f16(f32(x) * factor)`: computed in f32, rounded to nearest (ties to even) once.
#[custom_op(name = "example::scale_f16")]
pub fn scale_f16(
    x: TensorRef<'_, customop::f16>,
    #[attr] factor: f32,
    #[out(shape = x)] mut y: TensorMut<'_, customop::f16>,
) -> Result<(), OpError> {
    for (o, v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = customop::f16::from_f32(v.to_f32() * factor);
    }
    Ok(())
}
