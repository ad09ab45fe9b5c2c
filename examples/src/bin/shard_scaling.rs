//! Sharding benchmark: the same global input through `rms_norm` (partitioned over rows) on 1,
//! 2 and 4 virtual CPU devices, with the kernel cdylib built `--release`. For each mesh it
//! reports the per-device handler time (the kernel's own time per call, read from the
//! kernel's probe counters, reset after one warm-up execution: the fastest call and the mean),
//! the rows each call saw, and the median wall time of one execution of the whole program. Each device's call gets 1/N of the rows, so the per-call time should
//! fall about N-fold; the wall time cannot, past the machine's cores.
//!
//! Run: `cargo run -p customop-examples --bin shard_scaling -- ROWS COLS REPEAT`
//! (e.g. `2048 1024 30`). Prints one line per device count and the ratios to one device.

use customop::lower::{Module, Sharding};
use customop::prelude::*;
use customop_example_kernels::{NormCfg, NormMode, rms_norm};
use customop_xla::{Array, Ffi, Harness, Job, Probe, example_kernels_release};
use std::process::ExitCode;

/// rms_norm of a `rows x cols` input split by rows over a 1-D mesh of `n` devices.
fn module(n: i64, rows: i64, cols: i64) -> Result<String, Box<dyn std::error::Error>> {
    let mut m = Module::new();
    m.mesh("mesh", &[("x", n)])?;
    let mut f = m.entry("main", [TensorType::new(ElementType::F32, [rows, cols])?])?;
    let split = Sharding::new("mesh", &[&["x"], &[]]);
    f.shard_arg(0, split.clone())?;
    let x = f.arg(0)?;
    let cfg = NormCfg {
        scale: 1.0,
        shift: 0.0,
        mode: NormMode::Scale,
    };
    let y = rms_norm::call(&mut f, &x, 1e-5, &cfg)?;
    f.ret_sharded(&[&y], &[Some(split)])?;
    Ok(m.to_text()?)
}

struct Figures {
    min_call_us: f64,
    per_call_us: f64,
    rows_per_call: i64,
    calls_per_run: f64,
    wall_ms: f64,
}

fn measure(
    h: &Harness,
    n: i64,
    rows: i64,
    cols: i64,
    repeat: usize,
) -> Result<Figures, Box<dyn std::error::Error>> {
    let text = module(n, rows, cols)?;
    let lib = example_kernels_release();
    let probe = |name: &str| Probe {
        library: lib.clone(),
        symbol: format!("example_probe_{name}"),
    };
    let xs: Vec<f32> = (0..rows * cols)
        .map(|i| (i % 97) as f32 * 0.01 - 0.4)
        .collect();
    let ffi = Ffi::customop_library(lib.clone());
    let outcome = h.execute(&Job {
        text: &text,
        ffi: Some(&ffi),
        runs: vec![vec![Array::f32(&[rows, cols], &xs).sharded(&[&["x"], &[]])]],
        probes: vec![
            probe("calls"),
            probe("nanos"),
            probe("max_rows"),
            probe("min_nanos"),
        ],
        mesh: vec![("x".into(), n)],
        output_specs: vec![vec![vec!["x".into()], vec![]]],
        repeat,
        warmup_probes: vec![probe("reset")],
        ..Job::default()
    })?;
    let run = outcome.runs.into_iter().next().ok_or("no run")?;
    run?;
    let [calls, nanos, max_rows, min_nanos] = outcome.probes[..] else {
        return Err("the probes did not answer".into());
    };
    let mut secs = outcome.seconds.into_iter().next().unwrap_or_default();
    secs.sort_by(f64::total_cmp);
    let wall = secs.get(secs.len() / 2).copied().unwrap_or(f64::NAN);
    Ok(Figures {
        min_call_us: min_nanos as f64 / 1e3,
        per_call_us: nanos as f64 / calls.max(1) as f64 / 1e3,
        rows_per_call: max_rows,
        calls_per_run: calls as f64 / repeat as f64,
        wall_ms: wall * 1e3,
    })
}

fn main() -> ExitCode {
    let args: Vec<i64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let [rows, cols, repeat] = args[..] else {
        eprintln!("usage: shard_scaling ROWS COLS REPEAT   (e.g. 2048 1024 30)");
        return ExitCode::FAILURE;
    };
    let h = match Harness::locate() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{e}\nrun `bash scripts/setup.sh` first");
            return ExitCode::FAILURE;
        }
    };
    println!("rms_norm of {rows}x{cols} f32, rows split over N devices, {repeat} executions each");
    println!(
        "devices, calls per execution, rows per call, fastest call us, mean call us, execution wall ms"
    );
    let mut base: Option<Figures> = None;
    let mut lines = Vec::new();
    for n in [1, 2, 4] {
        match measure(&h, n, rows, cols, repeat.max(1) as usize) {
            Ok(f) => {
                println!(
                    "{n}, {:.1}, {}, {:.1}, {:.1}, {:.2}",
                    f.calls_per_run, f.rows_per_call, f.min_call_us, f.per_call_us, f.wall_ms
                );
                if let Some(b) = &base {
                    lines.push(format!(
                        "{n} devices vs 1: fastest call x{:.2}, mean call x{:.2}, wall time x{:.2}",
                        f.min_call_us / b.min_call_us,
                        f.per_call_us / b.per_call_us,
                        f.wall_ms / b.wall_ms
                    ));
                } else {
                    base = Some(f);
                }
            }
            Err(e) => {
                eprintln!("{n} devices: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    for l in lines {
        println!("{l}");
    }
    ExitCode::SUCCESS
}
