//! State built once per call site (`#[state]`): a kernel whose window table is computed from its
//! attribute once, not on every call, with counters of how often windows of each `n` were built,
//! dropped and applied.

use customop::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

/// What happened to the windows of one `n` in this process.
#[derive(Debug, Default)]
struct Counts {
    builds: AtomicI64,
    drops: AtomicI64,
    calls: AtomicI64,
}

/// The counts of each `n`, kept apart so that a test counts only the windows it made itself: it
/// picks an `n` no other test of its process uses, and whatever other tests' executables do
/// meanwhile (a garbage collector dropping one, a call on another thread) is not in its figures.
static COUNTS: Mutex<BTreeMap<i64, Arc<Counts>>> = Mutex::new(BTreeMap::new());

/// The counts of `n`, made on first use.
fn counts_of(n: i64) -> Arc<Counts> {
    let mut all = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(all.entry(n).or_default())
}

/// One count of `n` (0 if no window of `n` was ever built).
fn read(n: i64, which: fn(&Counts) -> &AtomicI64) -> i64 {
    let all = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
    all.get(&n).map_or(0, |c| which(c).load(Relaxed))
}

/// How many `HannWindow`s of `n` taps were built in this process, for the tests.
#[unsafe(no_mangle)]
pub extern "C" fn example_state_builds(n: i64) -> i64 {
    read(n, |c| &c.builds)
}

/// How many `HannWindow`s of `n` taps were dropped in this process (XLA drops a call site's
/// state with its executable), for the tests.
#[unsafe(no_mangle)]
pub extern "C" fn example_state_drops(n: i64) -> i64 {
    read(n, |c| &c.drops)
}

/// How many times a `HannWindow` of `n` taps was applied in this process (once per kernel call,
/// on each device that runs it), for the tests.
#[unsafe(no_mangle)]
pub extern "C" fn example_state_calls(n: i64) -> i64 {
    read(n, |c| &c.calls)
}

/// A Hann window of `n` taps: `0.5 - 0.5 cos(2 pi i / (n - 1))`.
#[derive(Debug)]
pub struct HannWindow {
    taps: Vec<f32>,
    counts: Arc<Counts>,
}

impl HannWindow {
    /// The window of `n` taps (`n >= 1`).
    fn new(n: i64) -> Result<Self, OpError> {
        if n <= 0 {
            return Err(OpError::invalid_argument(format!(
                "the window needs at least one tap, got n = {n}"
            )));
        }
        let counts = counts_of(n);
        counts.builds.fetch_add(1, Relaxed);
        let last = (n - 1).max(1) as f64;
        let taps = (0..n)
            .map(|i| (0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / last).cos()) as f32)
            .collect();
        Ok(HannWindow { taps, counts })
    }

    fn apply(&self, x: &[f32], y: &mut [f32]) {
        self.counts.calls.fetch_add(1, Relaxed);
        for (i, (o, v)) in y.iter_mut().zip(x).enumerate() {
            *o = v * self.taps[i % self.taps.len()];
        }
    }
}

impl Drop for HannWindow {
    fn drop(&mut self) {
        self.counts.drops.fetch_add(1, Relaxed);
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
