//! The example kernels: every parameter kind of `#[custom_op]`, as a cdylib that XLA loads.
//!
//! Build the cdylib (no MLIR is linked: `customop` comes with `default-features = false`):
//! `cargo build -p customop-example-kernels`. Model code uses the same crate as an rlib with
//! customop's `mlir` feature, for the lowerings.
//!
//! One file per theme, each what it shows:
//! - `seed`: the seed model's op, an opaque external structure and a side effect;
//! - `partitioned`: ops split over devices by rows (`partition`), a descriptor attribute;
//! - `externals`: descriptors as operands and results: `&mut` state, opaque results, borrowed
//!   externals, variable-length tails;
//! - `shapes`: shape rules computed from dimensions and attributes, several outputs, errors and
//!   panics;
//! - `generic`: one op for several element types (`dtypes`) with declared derivatives;
//! - `derivatives`: second derivatives and tangent ops (`vjp`, `jvp` of backward ops);
//! - `differentiability`: inputs and outputs without a derivative (an integer type parameter,
//!   complex, fp8), which JAX and torch refuse to differentiate through, by name;
//! - `dtypes`: complex, the eight fp8 types, bf16, f16;
//! - `low_bit`: packed sub-byte tensors (`i4`, `ui4`, `i2`, `ui2`, `f4E2M1FN`);
//! - `quant`: an `i4` weight-only quantized matrix product over the pool;
//! - `attributes`: every attribute of a call as one dictionary (`#[attrs]`), array attributes;
//! - `in_place`: tensors updated in place (`#[inout]`);
//! - `any_rank`: outputs whose rank follows an input's (`[..x.dims(..-1)]`);
//! - `parallel`: kernels on XLA's intra-op pool (`customop::parallel`);
//! - `state`: state built once per call site (`#[state]`);
//! - `cuda` (feature `cuda`): the CUDA sides of ops (`#[cuda(...)]`), their kernels in `cuda/`.

pub use customop_example_kernel_lib::affine;

pub mod any_rank;
pub mod attributes;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod derivatives;
pub mod differentiability;
pub mod dtypes;
pub mod externals;
pub mod generic;
pub mod in_place;
pub mod low_bit;
pub mod parallel;
pub mod partitioned;
pub mod quant;
pub mod seed;
pub mod shapes;
pub mod state;

// The ops and descriptors at the crate's root too (`customop_example_kernels::rms_norm`), as
// the tests and the model code name them.
pub use dtypes::*;
pub use externals::*;
pub use generic::*;
pub use partitioned::*;
pub use seed::*;
pub use shapes::*;

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
