//! Builder scaling: build, verify and print a chain of N custom calls (see
//! `customop_examples::custom_call_chain`) and report the time and the peak memory.
//!
//! Run: `cargo run --release -p customop-examples --bin builder_scaling -- 1000 10000 100000`.
//! Each N runs in a fresh process (the binary re-runs itself), so the peak RSS is that N's.
//! Prints one line per N: `N, seconds, ns per op, peak RSS MiB, text bytes`.
//! `--one N --out FILE` also writes the module text to FILE (for the XLA compile timing).

use std::process::{Command, ExitCode};
use std::time::Instant;

fn one(n: usize, out: Option<&str>) -> ExitCode {
    let start = Instant::now();
    let text = match customop_examples::custom_call_chain(n).and_then(|m| m.to_text()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("N = {n}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let secs = start.elapsed().as_secs_f64();
    if let Some(path) = out
        && std::fs::write(path, &text).is_err()
    {
        eprintln!("cannot write {path}");
        return ExitCode::FAILURE;
    }
    let rss = customop_examples::peak_rss_bytes().unwrap_or(0) as f64 / (1024.0 * 1024.0);
    println!(
        "{n}, {secs:.4}, {:.0}, {rss:.1}, {}",
        secs * 1e9 / n as f64,
        text.len()
    );
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, n] if flag == "--one" => {
            return n.parse().map_or(ExitCode::FAILURE, |n| one(n, None));
        }
        [flag, n, o, path] if flag == "--one" && o == "--out" => {
            return n.parse().map_or(ExitCode::FAILURE, |n| one(n, Some(path)));
        }
        _ => {}
    }
    let Ok(exe) = std::env::current_exe() else {
        return ExitCode::FAILURE;
    };
    println!("N, seconds, ns per op, peak RSS MiB, text bytes");
    let ns: Vec<String> = if args.is_empty() {
        vec!["1000".into(), "10000".into(), "100000".into()]
    } else {
        args
    };
    for n in ns {
        match Command::new(&exe).args(["--one", &n]).status() {
            Ok(s) if s.success() => {}
            _ => return ExitCode::FAILURE,
        }
    }
    ExitCode::SUCCESS
}
