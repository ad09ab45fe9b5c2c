#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer through libfuzzer-sys, SanitizerCoverage on the stable
# toolchain) of what customop reads from outside: `signature` (program text: the runner's MLIR
# tokenizer and signature reader), `compiled_program` (the protobuf a plugin returns),
# `descriptor` (descriptor bytes), `npy` (the command line's `.npy` reader), `external`
# (external values from JSON and TOML into the descriptor packer), `attributes` (XLA attribute
# dictionaries into an `#[attrs]` handler) and `jax_export` (a serialized `jax.export`).
# Usage: scripts/fuzz.sh [SECONDS per target] [TARGET...].
# Each target starts from the checked-in seeds (runtime/fuzz/corpus/<target>/) plus what earlier
# runs kept (target/fuzz-corpus/<target>/); a crash fails the run, its input saved under
# target/fuzz-artifacts/<target>/. Prints, per target, the executions, seconds and crashes.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(signature compiled_program descriptor npy external attributes jax_export)
triple=$(rustc -vV | sed -n 's/^host: //p')
# As cargo-fuzz instruments (no sanitizer): inline 8-bit counters, the PC table and compare
# tracing for libFuzzer; debug assertions and overflow checks on, so an overflow is a crash.
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
# `--target` keeps build scripts and proc macros uninstrumented.
cargo build --locked --release --manifest-path runtime/fuzz/Cargo.toml --target "$triple" \
  --target-dir target/fuzz
for t in "${targets[@]}"; do
  corpus=target/fuzz-corpus/$t
  artifacts=target/fuzz-artifacts/$t/
  mkdir -p "$corpus" "$artifacts"
  seeds=runtime/fuzz/corpus/$t
  log=target/fuzz-$t.log
  set +e
  "target/fuzz/$triple/release/$t" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts" -max_len=65536 -rss_limit_mb=4096 "$corpus" "$seeds" >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  crashes=$(find "$artifacts" -type f | wc -l)
  printf 'fuzz %-17s %12s executions in %4s s, %d crashes, corpus %d inputs\n' \
    "$t" "${runs:-?}" "${took:-?}" "$crashes" "$(find "$corpus" -type f | wc -l)"
  if [ "$rc" != 0 ]; then
    tail -40 "$log" >&2
    echo "fuzz target $t failed (exit $rc); inputs under $artifacts" >&2
    exit 1
  fi
done
