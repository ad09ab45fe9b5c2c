//! Writes the seed model's StableHLO text to a file (for the execution-overhead benchmark in
//! `benches/compare`). Run: `cargo run -p customop-examples --bin seed_module -- seed.mlir`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: seed_module OUT.mlir");
        return ExitCode::FAILURE;
    };
    match customop_examples::seed_model().and_then(|m| m.to_text()) {
        Ok(text) if std::fs::write(&path, &text).is_ok() => ExitCode::SUCCESS,
        Ok(_) => {
            eprintln!("cannot write {path}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
