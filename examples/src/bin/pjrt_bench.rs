//! The Rust runner's side of the runner-vs-jaxlib benchmark (`benches/compare/run.sh
//! --runner`): per-execution time of the seed program and of a chain of 1,000 custom calls,
//! through `customop::pjrt` with the example kernel cdylib's handlers (the same library the
//! jaxlib side registers), inputs given from the host (or kept on the device: `*_placed_us`)
//! and outputs read back to it.
//!
//! Usage:
//!   pjrt_bench --kernels LIB --write DIR             write seed.mlir and chain1000.mlir
//!   pjrt_bench --kernels LIB --time ITER ROUNDS      print {"seed_us": .., "chain_us": ..}
//!   pjrt_bench --kernels LIB --first                 create, compile (or load from the compile
//!                                                    cache), run the seed once
//!   pjrt_bench --kernels LIB --parallel ITER ROUNDS  print {"par_us": .., "serial_us": ..}:
//!                                                    example::layer_norm_par and _serial,
//!                                                    4096 x 1024 f32
//!   pjrt_bench --kernels LIB --ceiling ITER ROUNDS   print what 2 plain threads gain over 1
//!                                                    on this machine, no XLA: a 16 MB copy
//!                                                    and layer_norm_serial's rows split in
//!                                                    two (medians, µs)

use customop::pjrt::{Client, DeviceDescriptor, DeviceTensor, Executable, HostTensor, Program};
use customop_example_kernels::Blob;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn blob() -> Blob {
    Blob {
        gain: 1.5,
        bias: -2,
        seed: 0,
        tag: [0; 16],
    }
}

fn x() -> Vec<f32> {
    (0..9).map(|i| i as f32 * 0.1).collect()
}

/// One execution as a user makes it: inputs from the host (the blob packed by name),
/// results back on the host.
fn once(exe: &Executable, name: &str) -> Result<Vec<HostTensor>, Box<dyn std::error::Error>> {
    Ok(exe
        .inputs()
        .arg(HostTensor::from_slice(&[3, 3], &x())?)?
        .external(name, &blob())?
        .run()?)
}

/// One execution with both inputs kept on the device (uploaded once), results to the host.
fn once_placed(
    exe: &Executable,
    name: &str,
    x: &DeviceTensor,
    b: &DeviceDescriptor<Blob>,
) -> Result<Vec<HostTensor>, Box<dyn std::error::Error>> {
    Ok(exe
        .inputs()
        .arg_placed(x)?
        .external_placed(name, b)?
        .run()?)
}

/// The best, over `rounds`, of the mean time per call of `f` over `iterations`.
fn time(
    iterations: u32,
    rounds: u32,
    mut f: impl FnMut() -> Result<Vec<HostTensor>, Box<dyn std::error::Error>>,
) -> Result<f64, Box<dyn std::error::Error>> {
    for _ in 0..200 {
        f()?;
    }
    let mut best = f64::INFINITY;
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..iterations {
            std::hint::black_box(f()?);
        }
        best = best.min(t.elapsed().as_secs_f64() / f64::from(iterations));
    }
    Ok(best * 1e6)
}

fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let [flag, lib, rest @ ..] = args else {
        return Err(
            "usage: pjrt_bench --kernels LIB (--write DIR | --time ITER ROUNDS | --first)".into(),
        );
    };
    if flag != "--kernels" {
        return Err("the first argument is --kernels LIB".into());
    }
    let seed = customop_examples::seed_model()?;
    match rest {
        [w, dir] if w == "--write" => {
            let dir = PathBuf::from(dir);
            std::fs::write(dir.join("seed.mlir"), seed.to_text()?)?;
            std::fs::write(
                dir.join("chain1000.mlir"),
                customop_examples::custom_call_chain(1000)?.to_text()?,
            )?;
            Ok(())
        }
        [f] if f == "--first" => {
            let client = Client::cpu(1)?;
            // SAFETY: `--kernels` names the example kernel cdylib (a customop library).
            unsafe { client.register_library(lib.as_ref())? };
            let program = Program::module(&seed)?;
            let t = std::time::Instant::now();
            let exe = client.compile(&program)?;
            let compile = t.elapsed();
            let out = once(&exe, "external")?;
            // What ran, for the report: the plugin, whether the executable was compiled, and
            // how long `compile` took (compiling, or loading from the cache).
            eprintln!(
                "plugin {}, {} in {:.1} ms",
                client.plugin().describe(),
                if exe.from_cache() {
                    "from the compile cache"
                } else {
                    "compiled"
                },
                compile.as_secs_f64() * 1e3
            );
            println!("{:?}", out[0].to_vec::<i8>()?);
            Ok(())
        }
        [t, iterations, rounds] if t == "--time" => {
            let (iterations, rounds): (u32, u32) = (iterations.parse()?, rounds.parse()?);
            let client = Client::cpu(1)?;
            // SAFETY: `--kernels` names the example kernel cdylib (a customop library).
            unsafe { client.register_library(lib.as_ref())? };
            let seed_exe = client.compile(&Program::module(&seed)?)?;
            let chain = customop_examples::custom_call_chain(1000)?;
            let chain_exe = client.compile(&Program::module(&chain)?)?;
            let x = client.upload(&HostTensor::from_slice(&[3, 3], &x())?)?;
            let b = client.upload_descriptor(&blob())?;
            let chain_n = iterations / 10 + 1;
            let seed_us = time(iterations, rounds, || once(&seed_exe, "external"))?;
            let chain_us = time(chain_n, rounds, || once(&chain_exe, "blob"))?;
            let seed_placed_us = time(iterations, rounds, || {
                once_placed(&seed_exe, "external", &x, &b)
            })?;
            let chain_placed_us =
                time(chain_n, rounds, || once_placed(&chain_exe, "blob", &x, &b))?;
            println!(
                "{{\"seed_us\": {seed_us:.3}, \"chain_us\": {chain_us:.3}, \
                 \"seed_placed_us\": {seed_placed_us:.3}, \"chain_placed_us\": {chain_placed_us:.3}}}"
            );
            Ok(())
        }
        [t, iterations, rounds] if t == "--parallel" => {
            // The row-parallel layer norm against its single-threaded self, 4096 x 1024 f32,
            // inputs kept on the device.
            let (iterations, rounds): (u32, u32) = (iterations.parse()?, rounds.parse()?);
            let client = Client::cpu(1)?;
            // SAFETY: `--kernels` names the example kernel cdylib (a customop library).
            unsafe { client.register_library(lib.as_ref())? };
            let (rows, cols) = (4096usize, 1024usize);
            let xs: Vec<f32> = (0..rows * cols)
                .map(|i| ((i * 7919) % 1000) as f32 * 1e-3)
                .collect();
            let x = client.upload(&HostTensor::from_slice(&[rows as i64, cols as i64], &xs)?)?;
            let w = client.upload(&HostTensor::vector(&vec![1.5f32; cols]))?;
            let b = client.upload(&HostTensor::vector(&vec![0.25f32; cols]))?;
            let mut us = Vec::new();
            for op in ["layer_norm_par", "layer_norm_serial"] {
                let exe = client.compile(&Program::text(&layer_norm_text(op, rows, cols))?)?;
                us.push(time(iterations, rounds, || {
                    Ok(exe
                        .inputs()
                        .arg_placed(&x)?
                        .arg_placed(&w)?
                        .arg_placed(&b)?
                        .run()?)
                })?);
            }
            println!("{{\"par_us\": {:.3}, \"serial_us\": {:.3}}}", us[0], us[1]);
            Ok(())
        }
        [t, iterations, rounds] if t == "--ceiling" => {
            let (iterations, rounds): (u32, u32) = (iterations.parse()?, rounds.parse()?);
            let c = ceiling(iterations, rounds)?;
            println!(
                "{{\"copy_1t_us\": {:.3}, \"copy_2t_us\": {:.3}, \"ln_1t_us\": {:.3}, \"ln_2t_us\": {:.3}}}",
                c[0], c[1], c[2], c[3]
            );
            Ok(())
        }
        [t, iterations] if t == "--seed-only" => {
            // For profiling the seed's execution alone.
            let client = Client::cpu(1)?;
            // SAFETY: `--kernels` names the example kernel cdylib (a customop library).
            unsafe { client.register_library(lib.as_ref())? };
            let seed_exe = client.compile(&Program::module(&seed)?)?;
            let n = iterations.parse()?;
            println!("{:.3}", time(n, 1, || once(&seed_exe, "external"))?);
            Ok(())
        }
        _ => Err(
            "usage: pjrt_bench --kernels LIB (--write DIR | --time ITER ROUNDS | --first)".into(),
        ),
    }
}

/// What two threads of this machine gain over one without XLA or any pool: median µs per
/// call of a 4096 x 1024 f32 copy and of `layer_norm_serial` (called as a Rust function) over
/// the same rows, each on one thread and split in two halves on two threads (the caller and
/// one spawned thread), interleaved round by round.
fn ceiling(iterations: u32, rounds: u32) -> Result<[f64; 4], Box<dyn std::error::Error>> {
    use customop::prelude::{TensorMut, TensorRef};
    use customop_example_kernels::parallel::layer_norm_serial;
    let (rows, cols) = (4096usize, 1024usize);
    let xs: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919) % 1000) as f32 * 1e-3)
        .collect();
    let (w, b) = (vec![1.5f32; cols], vec![0.25f32; cols]);
    let mut y = vec![0.0f32; rows * cols];
    type Part<'a> = dyn Fn(&[f32], &mut [f32]) -> Result<(), String> + Sync + 'a;
    let copy = |x: &[f32], y: &mut [f32]| -> Result<(), String> {
        y.copy_from_slice(x);
        Ok(())
    };
    let norm = |x: &[f32], y: &mut [f32]| -> Result<(), String> {
        let n = (x.len() / cols) as i64;
        layer_norm_serial(
            TensorRef::new(x, &[n, cols as i64]).map_err(|e| e.to_string())?,
            TensorRef::new(&w, &[cols as i64]).map_err(|e| e.to_string())?,
            TensorRef::new(&b, &[cols as i64]).map_err(|e| e.to_string())?,
            TensorMut::new(y, &[n, cols as i64]).map_err(|e| e.to_string())?,
            1e-5,
        )
        .map_err(|e| e.to_string())
    };
    // One call of `part` over all rows, on `threads` (1 or 2) threads.
    let call = |part: &Part<'_>, threads: usize, y: &mut [f32]| -> Result<(), String> {
        if threads == 1 {
            return part(&xs, y);
        }
        let half = rows / 2 * cols;
        let (x0, x1) = xs.split_at(half);
        let (y0, y1) = y.split_at_mut(half);
        std::thread::scope(|s| {
            let other = s.spawn(|| part(x1, y1));
            let mine = part(x0, y0);
            other
                .join()
                .map_err(|_| "a thread panicked".to_string())?
                .and(mine)
        })
    };
    let cases: [(&Part<'_>, usize); 4] = [(&copy, 1), (&copy, 2), (&norm, 1), (&norm, 2)];
    for &(part, threads) in &cases {
        for _ in 0..10 {
            call(part, threads, &mut y)?;
        }
    }
    let mut times = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        for (k, &(part, threads)) in cases.iter().enumerate() {
            let t = Instant::now();
            for _ in 0..iterations {
                call(part, threads, &mut y)?;
                std::hint::black_box(&y);
            }
            times[k].push(t.elapsed().as_secs_f64() / f64::from(iterations) * 1e6);
        }
    }
    let mut medians = [0.0; 4];
    for (m, mut t) in medians.iter_mut().zip(times) {
        t.sort_by(f64::total_cmp);
        *m = t[t.len() / 2];
    }
    Ok(medians)
}

/// A program of one `example::<op>(x, w, b, eps = 1e-5)` call on `rows x cols` f32 that returns
/// the result's first row: the kernel's time, not a 16 MB copy to the host, is what is timed.
fn layer_norm_text(op: &str, rows: usize, cols: usize) -> String {
    let x = format!("tensor<{rows}x{cols}xf32>");
    let v = format!("tensor<{cols}xf32>");
    let r = format!("tensor<1x{cols}xf32>");
    format!(
        r#"func.func @main(%x: {x}, %w: {v}, %b: {v}) -> {r} {{
  %0 = "stablehlo.custom_call"(%x, %w, %b) {{api_version = 4 : i32, call_target_name = "example.{op}", backend_config = {{eps = 9.99999974E-6 : f32}}}} : ({x}, {v}, {v}) -> {x}
  %1 = "stablehlo.slice"(%0) {{start_indices = array<i64: 0, 0>, limit_indices = array<i64: 1, {cols}>, strides = array<i64: 1, 1>}} : ({x}) -> {r}
  return %1 : {r}
}}"#
    )
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    customop_examples::exit_with(run(&args))
}
