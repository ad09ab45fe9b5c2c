//! State built once per call site (`#[state]`): a kernel whose window table is computed from its
//! attribute once, not on every call, with a counter of how often it was built.

use customop::prelude::*;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

/// How many `HannWindow`s were built in this process.
static BUILDS: AtomicI64 = AtomicI64::new(0);

/// How many `HannWindow`s were dropped in this process.
static DROPS: AtomicI64 = AtomicI64::new(0);

/// How many `HannWindow`s were built in this process, for the tests.
#[unsafe(no_mangle)]
pub extern "C" fn example_state_builds() -> i64 {
    BUILDS.load(Relaxed)
}

/// How many `HannWindow`s were dropped in this process (XLA drops a call site's state with
/// its executable), for the tests.
#[unsafe(no_mangle)]
pub extern "C" fn example_state_drops() -> i64 {
    DROPS.load(Relaxed)
}

/// A Hann window of `n` taps: `0.5 - 0.5 cos(2 pi i / (n - 1))`.
#[derive(Debug)]
pub struct HannWindow {
    taps: Vec<f32>,
}

impl HannWindow {
    /// The window of `n` taps (`n >= 1`).
    fn new(n: i64) -> Result<Self, OpError> {
        if n <= 0 {
            return Err(OpError::invalid_argument(format!(
                "the window needs at least one tap, got n = {n}"
            )));
        }
        BUILDS.fetch_add(1, Relaxed);
        let last = (n - 1).max(1) as f64;
        let taps = (0..n)
            .map(|i| (0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / last).cos()) as f32)
            .collect();
        Ok(HannWindow { taps })
    }

    fn apply(&self, x: &[f32], y: &mut [f32]) {
        for (i, (o, v)) in y.iter_mut().zip(x).enumerate() {
            *o = v * self.taps[i % self.taps.len()];
        }
    }
}

impl Drop for HannWindow {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Relaxed);
    }
}

impl OpState for HannWindow {
    fn build(attrs: &StateAttrs<'_, '_>) -> Result<Self, OpError> {
        HannWindow::new(attrs.get("n")?)
    }
}

/// `y[i] = x[i] * window[i % n]` over the flattened input, the window built once per call site.
#[custom_op(name = "example::windowed")]
pub fn windowed(
    x: TensorRef<'_, f32>,
    #[attr] n: i64,
    #[state] window: &HannWindow,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    debug_assert_eq!(window.taps.len() as i64, n);
    window.apply(x.as_slice(), y.as_mut_slice());
    Ok(())
}

/// `windowed` building its window on every call: what the benchmark compares it with.
#[custom_op(name = "example::windowed_rebuild")]
pub fn windowed_rebuild(
    x: TensorRef<'_, f32>,
    #[attr] n: i64,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    HannWindow::new(n)?.apply(x.as_slice(), y.as_mut_slice());
    Ok(())
}
