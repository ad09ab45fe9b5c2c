//! Descriptors as operands and results: `&mut` state (`counter_step`), an opaque result
//! (`make_stats`), externals read by value and borrowed in place (`table_dot`, `table_dot_copy`),
//! variable-length tails (`apply_taps`, `histogram`) and a declared backward over an external.

use customop::prelude::*;

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
