#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/setup.sh), then formatting, lints,
# every test (unit, doc, integration, UI, XLA end-to-end) and the book.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CUSTOMOP_PYTHON="$PWD/target/xla-venv/bin/python"
# The newest torch (2.15, no torch_xla): the torch tests run on it too.
TORCH_NEWEST_PYTHON="$PWD/target/torch-venv/bin/python"
# The oldest jax customop supports (0.10.0): the JAX-only tests run on it too.
JAX_OLDEST_PYTHON="$PWD/target/jax-oldest-venv/bin/python"
# Each step's wall time, to target/step-times.log (printed, slowest first, at the end).
mkdir -p target
: > target/step-times.log
STEP_NAME="" STEP_START=$SECONDS
# `step` with no words ends the step that runs (a lane's last), starting none.
step() {
  [ -z "$STEP_NAME" ] || printf '%5d s  %s%s\n' $((SECONDS - STEP_START)) "${STEP_LANE:+[lane $STEP_LANE] }" "$STEP_NAME" >> target/step-times.log
  STEP_NAME="$*" STEP_START=$SECONDS
  [ -z "$*" ] || printf '\n=== %s\n' "$*" >&2
}
# One full run, not an edit loop: incremental caches would only take disk (~1 GB).
export CARGO_INCREMENTAL=0

# The torch and jax each suite's log names are the venv's: every package a venv's requirements
# file pins (torch 2.9, torch_xla 2.9, jax 0.12; torch 2.15; jax 0.10) is installed at that
# version. (setup.sh keeps a venv made from the same file: a later pip install into it would
# otherwise go unnoticed.)
step "each venv holds the versions its requirements file pins"
pinned_versions() {
  "$1" - "$2" <<'PY'
import re, sys
from importlib.metadata import PackageNotFoundError, version

req, wrong, shown, pins = sys.argv[1], [], [], 0
for line in open(req):
    m = re.match(r"([A-Za-z0-9_.-]+)==(\S+)", line.strip())
    if not m:
        continue
    name, pin = m.groups()
    pins += 1
    try:
        got = version(name)
    except PackageNotFoundError:
        got = "not installed"
    # A pin without a local part (+cpu) matches any local build of that version (PEP 440).
    if got.split("+")[0] != pin:
        wrong.append("%s %s (pinned %s)" % (name, got, pin))
    if re.sub(r"[-_.]+", "-", name.lower()) in ("torch", "torch-xla", "torchax", "jax", "jaxlib"):
        shown.append("%s %s" % (name, got))
if pins == 0 or wrong:
    sys.exit("%s: not what %s pins: %s" % (sys.executable, req, "; ".join(wrong) or "no pins read"))
print("%s: %s (all %d pins of %s)" % (sys.executable, ", ".join(shown), pins, req))
PY
}
pinned_versions "$CUSTOMOP_PYTHON" tests/xla/requirements.txt
pinned_versions "$TORCH_NEWEST_PYTHON" tests/torch/requirements-newest.txt
pinned_versions "$JAX_OLDEST_PYTHON" tests/xla/requirements-oldest-jax.txt

step "cargo fmt --check"
cargo fmt --all --check
rustfmt --edition 2024 --check runtime/fuzz/fuzz_targets/*.rs
step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "customop builds without MLIR (the kernel cdylib configuration)"
cargo build -p customop --no-default-features --locked
step "customop with the runner but without MLIR (feature pjrt alone)"
cargo build -p customop --no-default-features --features pjrt --locked
cargo clippy -p customop --no-default-features --features pjrt --locked -- -D warnings
step "customop without default features depends on no MLIR crate"
if cargo tree -p customop --no-default-features -e normal,build --locked | grep -E "mlir-sys|melior|tblgen"; then
  echo "customop --no-default-features must not depend on MLIR" >&2; exit 1
fi
step "cargo doc (no warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps -p customop -p customop-macros --features customop/pjrt
# Every job the Rust harness runs on jaxlib also runs through the Rust runner (suite `rust`),
# and every program the Python tests run through customop.torch's Exported.run or
# customop.xla.crosscheck.jit (one suite per test file); each agreeing check is a line of this log.
export CUSTOMOP_PJRT_CROSS_CHECK_LOG="$PWD/target/pjrt-cross-checks.log"
rm -f "$CUSTOMOP_PJRT_CROSS_CHECK_LOG"
# The runner's compile cache: the run's own, empty at its start (so that a run compiles what it
# runs first, and the cache fills and serves within the run; none outlives it to grow).
export CUSTOMOP_COMPILE_CACHE="$PWD/target/compile-cache"
rm -rf "$CUSTOMOP_COMPILE_CACHE"
step "cargo test"
log=target/test-output.log
cargo test --workspace --locked 2>&1 | tee "$log"
# The example programs as that build made them: `cargo run -p customop-examples` would build
# them again with other features (no dev-dependencies unified), ~1.3 GB and minutes more.
declare -A EXAMPLE_BIN=()
while read -r name path; do EXAMPLE_BIN[$name]=$path; done < <(
  cargo test --workspace --locked --no-run --message-format=json 2>/dev/null | "$CUSTOMOP_PYTHON" -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["kind"] == ["bin"] \
            and not m["profile"]["test"] and m.get("executable"):
        print(m["target"]["name"], m["executable"])
')
example() {
  local bin=${EXAMPLE_BIN[$1]:-}
  [ -x "$bin" ] || { echo "cargo test --workspace built no example program $1" >&2; exit 1; }
  shift
  "$bin" "$@"
}
# nvcc 13.0 from NVIDIA's wheels (setup.sh: target/cuda, its version pinned there), to compile
# CUDA C kernels on this CPU-only machine.
export CUSTOMOP_NVCC="$PWD/target/cuda/bin/nvcc"
step "the example kernel cdylib, built alone (no MLIR), with its CUDA kernels (sm_80, sm_90)"
cargo build --locked -p customop-example-kernels --features cuda --target-dir target/kernels
step "the CUDA handlers on the host: fabricated CUDA frames against the stand-in driver, and no driver"
cargo clippy --locked -q -p customop-example-kernels --features cuda --all-targets \
  --target-dir target/kernels -- -D warnings
cargo test --locked -p customop-example-kernels --features cuda --target-dir target/kernels \
  --test cuda --test cuda_no_driver
export CUSTOMOP_KERNELS="$PWD/target/kernels/debug/libcustomop_example_kernels.so"
step "the C-kernel example: the C library's own tests, then its cdylib (no MLIR)"
mkdir -p target/c-kernel
cc -Wall -Werror examples/c-kernel/c/test_scale_rows.c examples/c-kernel/c/scale_rows.c \
  -o target/c-kernel/test_scale_rows
target/c-kernel/test_scale_rows
cargo build --locked -p customop-example-c-kernel --target-dir target/kernels
export CUSTOMOP_C_KERNEL="$PWD/target/kernels/debug/libcustomop_example_c_kernel.so"
# The symbols first, then grep: `nm | grep -q` under pipefail reads a found symbol as nm's SIGPIPE.
symbols=$(nm "$CUSTOMOP_KERNELS")
if grep -q mlirContextCreate <<<"$symbols"; then
  echo "the kernel cdylib links MLIR" >&2; exit 1
fi
# The fuzzing runs beside valgrind (each mostly one thread), its output to target/fuzz.log,
# printed and waited for at its step below.
bash scripts/fuzz.sh 8 > target/fuzz.log 2>&1 & fuzz_pid=$!
step "the handler layer under valgrind memcheck (fabricated frames and eager calls, no MLIR)"
bins=$(cargo test --locked -p customop-example-kernels --test frames --test eager --no-run 2>&1 |
  sed -n 's/.*Executable tests\/[a-z_/]*\.rs (\(.*\))/\1/p')
[ "$(echo "$bins" | wc -w)" = 2 ] || { echo "not the two test binaries to run under valgrind: $bins" >&2; exit 1; }
for b in $bins; do
  valgrind -q --error-exitcode=99 --leak-check=no "$b" --test-threads=1 2>&1 | grep -E '^(test result|==[0-9]+==)'
  echo "$b: valgrind memcheck, 0 errors"
done
# customop::parallel's unit tests (fabricated XLA and torch pools: tasks on other threads, late
# tasks, refusals, panics), in the runtime's unit-test binary without MLIR.
b=$(cargo test --locked -p customop --no-default-features --lib --no-run 2>&1 |
  sed -n 's/.*Executable unittests src\/lib.rs (\(.*\))/\1/p')
[ -n "$b" ] || { echo "no runtime unit-test binary to run under valgrind" >&2; exit 1; }
valgrind -q --error-exitcode=99 --leak-check=no "$b" --test-threads=1 parallel:: 2>&1 |
  tee target/valgrind-parallel.log | grep -E '^(test result|==[0-9]+==)'
# A filter that matches no test passes: at least one must have run.
grep -Eq '^test result: ok\. [1-9][0-9]* passed' target/valgrind-parallel.log ||
  { echo "no parallel:: test ran under valgrind" >&2; exit 1; }
echo "$b parallel::: valgrind memcheck, 0 errors"
step "coverage-guided fuzzing, 8 s a target (scripts/fuzz.sh: program text, compiled programs, descriptors, .npy, external values, attributes, jax.export; begun beside valgrind)"
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
cat target/fuzz.log >&2
[ "$fuzz_status" = 0 ] || { echo "scripts/fuzz.sh failed (exit $fuzz_status)" >&2; exit 1; }
step "examples"
"$CUSTOMOP_PYTHON" examples/jax/call_rust_op.py "$CUSTOMOP_KERNELS"
"$CUSTOMOP_PYTHON" examples/jax/sharded_rust_op.py "$CUSTOMOP_KERNELS"
"$CUSTOMOP_PYTHON" examples/torch/seed.py "$CUSTOMOP_KERNELS"
example seed
example seed_sharded
example mlp
example builder_scaling 1000 10000
example shard_scaling 64 32 3
# Every program customop.torch's Exported.run runs on jaxlib in the Python tests, and every
# function they run through customop.xla.crosscheck.jit, also runs through the Rust runner
# (examples/src/bin/pjrt_run.rs), which must agree; each check is counted in the log.
export CUSTOMOP_PJRT_CROSS_CHECK=${EXAMPLE_BIN[pjrt_run]:-}
[ -x "$CUSTOMOP_PJRT_CROSS_CHECK" ] || { echo "cargo test --workspace built no pjrt_run" >&2; exit 1; }
# Python unittest files, each counted in the closing total like a cargo test binary.
# `TORCH_TAG` names the torch or jax a run is on in its log (empty: the main venv's: torch 2.9,
# jax 0.12).
py_tests() {
  local what=$1 file=$2 python=${3:-$CUSTOMOP_PYTHON} out
  out=target/test-$(basename "$file" .py)${CUSTOMOP_TORCH_NATIVE:+-native$CUSTOMOP_TORCH_NATIVE}${TORCH_TAG:+-$TORCH_TAG}.log
  step "$what"
  CUSTOMOP_PJRT_CROSS_CHECK_SUITE="${file#tests/}" \
    "$python" -m unittest "$file" 2>&1 | tee "$out" | grep -v '^  '
  # A test skips only by name, where the machine lacks what it runs on (a CPU level): counted
  # as skipped in the closing total, its reason in the log (`SKIPPED ...`).
  grep -Eqx 'OK( \(skipped=[0-9]+\))?' "$out" || { echo "$file failed" >&2; exit 1; }
  ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in.*/\1/p' "$out")
  skipped=$(sed -n 's/^OK (skipped=\([0-9]*\))$/\1/p' "$out")
  skipped=${skipped:-0}
  if [ "$skipped" != 0 ] && [ "$(grep -c '^SKIPPED ' "$out")" -lt "$skipped" ]; then
    echo "$file skipped $skipped tests without naming each (a SKIPPED line)" >&2; exit 1
  fi
  echo "test result: ok. $((ran - skipped)) passed; 0 failed; $skipped ignored; 0 measured; 0 filtered out" >> "$log"
}
# The command line (cli/; `cargo test` builds only its unit tests) on the seed module the Rust
# builder emits, and on programs exported from JAX.
step "the customop command, and the seed module the Rust builder emits for it"
cargo build --locked -q -p customop-cli
export CUSTOMOP_CLI="$PWD/target/debug/customop"
[ -x "$CUSTOMOP_CLI" ] || { echo "cargo build -p customop-cli made no customop command" >&2; exit 1; }
export CUSTOMOP_SEED_MODULE="$PWD/target/seed.mlir"
example seed_module "$CUSTOMOP_SEED_MODULE"
# The Python suites in two lanes at once, one a core (most of a suite's time is one Python
# thread): the torch 2.9 venv's suites and the book's Python blocks in one; the newest torch's,
# the jax suites (0.12 and 0.10), the command line's and the benchmarks' smoke run in the other
# (about 550 s and 500 s here). Each lane is a subshell (its exports stay its own) writing
# target/lane-NAME.log, printed when both are done; its steps are timed within it, the step
# below is the wall time of both.
lane_torch() {
  py_tests "the Python package in layers: no import circle, the core without jax or torch, modules <= 400 lines" tests/python/test_layers.py
  py_tests "shape rules on symbolic sizes: the sizes' own arithmetic, never forced nor compared" tests/python/test_shape_symbolic.py
  py_tests "the PJRT cross-check's comparison: per-element tolerances, NaN, shape, dtype, refusal code, stage, status" tests/python/test_crosscheck.py
  py_tests "native torch kernels (torch's stable C ABI): registration, meta, opcheck, errors, RSS over 100k calls" tests/torch/test_native.py
  py_tests "AOTInductor from C++ with no Python (the cdylib registers its ops itself; blob swapped by name; wrong size refused), torch.export save/load" tests/torch/test_aoti.py
  # Every test that calls ops from torch runs on both paths: native kernels (1, the default) and
  # the Python path (0, `customop.torch.load(path, native=False)`).
  for native in 1 0; do
    export CUSTOMOP_TORCH_NATIVE=$native
    py_tests "PyTorch eager (customop.torch: CPU kernels, errors, backward refusals, torch.compile), native=$native" tests/torch/test_torch.py
    py_tests "PyTorch export through torch_xla (annotated, run on XLA, refusals), native=$native" tests/torch/test_torch_export.py
    py_tests "output shapes computed from dims and attributes: JAX, torch eager, torch.compile, torch_xla export, native=$native" tests/xla/test_computed_shapes.py
    py_tests "one op for several element types (dtypes(T = [...])): JAX, torch, the handler's refusal, native=$native" tests/xla/test_generic_ops.py
    py_tests "element types complex64, f8E4M3FN, bf16, f16: JAX, torch eager and fake, torch_xla export, native=$native" tests/xla/test_dtypes.py
    py_tests "autograd from declared backwards (gradcheck), torch.func.vmap and opcheck of every op, torch.compile, training, native=$native" tests/torch/test_transforms.py
    py_tests "packed sub-byte tensors and quantized kernels from torch (uint8 / float4_e2m1fn_x2 bytes), native=$native" tests/torch/test_low_bit.py
    py_tests "torch.func.grad, vjp, jacrev, vmap(grad); second derivatives (double backward, grad of grad, jacrev of jacrev); missing rules named, native=$native" tests/torch/test_func_transforms.py
    py_tests "which inputs and outputs have a derivative, in torch: a real gradient or a named refusal, never a zero or a .grad left None, native=$native" tests/torch/test_differentiability.py
    py_tests "the front ends' contract on derivatives: every operand of every op, jax.grad and backward() give the same gradient or the same refusal, Rust's, native=$native" tests/torch/test_derivative_contract.py
    py_tests "an op named before its library is loaded, a name the library lacks, a wrong path: customop's words and the fix (OpNotLoadedError, LibraryLoadError), native=$native" tests/torch/test_not_loaded.py
    py_tests "DTensor from partition(...): shards with no collective, sequence parallel eager and compiled, FSDP2 training, the replicated fallback, refusals (2 and 4 processes, gloo), native=$native" tests/torch/test_dtensor.py
  done
  step "mdbook build, links, SUMMARY, doctest list and Python blocks"
  mdbook build book
  "$CUSTOMOP_PYTHON" scripts/check_book.py book/src
  py_tests "the book's version table against the pins and bounds" tests/python/test_book_versions.py
  py_tests "the book's Python API reference against every module's __all__ and exceptions" tests/python/test_book_python_api.py
  # JAX suites here rather than in the other lane, which is the longer (they need no torch).
  unset CUSTOMOP_TORCH_NATIVE
  py_tests "CUDA sides from JAX without a GPU: the manifest's CUDA handlers, register(), one jax.export for cpu and cuda run on the CPU, an op with no CUDA side refused" tests/xla/test_cuda.py
  step "scripts/gpu-check.sh --dry: the GPU check's code, references and tolerances, with the CPU as the GPU"
  bash scripts/gpu-check.sh --dry
  echo "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out" >> "$log"
  export TORCH_TAG=$("$JAX_OLDEST_PYTHON" -c 'import jax; print("jax" + jax.__version__)')
  py_tests "JAX transforms and export on $TORCH_TAG" tests/xla/test_transforms.py "$JAX_OLDEST_PYTHON"
  py_tests "CUDA sides from JAX without a GPU on $TORCH_TAG" tests/xla/test_cuda.py "$JAX_OLDEST_PYTHON"
  unset TORCH_TAG
}
lane_jax() {
  # The same torch tests (all but torch_xla's export) on the newest torch, and its export path.
  export TORCH_TAG=$("$TORCH_NEWEST_PYTHON" -c 'import torch; print("torch" + torch.__version__.split("+")[0])')
  unset CUSTOMOP_TORCH_NATIVE
  py_tests "native torch kernels on $TORCH_TAG" tests/torch/test_native.py "$TORCH_NEWEST_PYTHON"
  py_tests "AOTInductor from C++ and torch.export save/load on $TORCH_TAG" tests/torch/test_aoti.py "$TORCH_NEWEST_PYTHON"
  # (On the newest torch only: the key is torch.compiler.config.cache_key_tag on every torch.)
  py_tests "torch.compile's caches on $TORCH_TAG: replayed for the same ops and customop, compiled again for others (cache_key_tag)" tests/torch/test_compile_cache.py "$TORCH_NEWEST_PYTHON"
  # The Python path (native=0) is the same Python code on every torch: on the newest torch it
  # runs the eager, autograd, differentiability, derivative-contract and not-loaded suites, the
  # native path everything.
  for native in 1 0; do
    export CUSTOMOP_TORCH_NATIVE=$native
    py_tests "PyTorch eager on $TORCH_TAG, native=$native" tests/torch/test_torch.py "$TORCH_NEWEST_PYTHON"
    py_tests "autograd, vmap, opcheck, torch.compile, training on $TORCH_TAG, native=$native" tests/torch/test_transforms.py "$TORCH_NEWEST_PYTHON"
    py_tests "which inputs and outputs have a derivative (in-place ops refused) on $TORCH_TAG, native=$native" tests/torch/test_differentiability.py "$TORCH_NEWEST_PYTHON"
    py_tests "the front ends' contract on derivatives on $TORCH_TAG, native=$native" tests/torch/test_derivative_contract.py "$TORCH_NEWEST_PYTHON"
    py_tests "an op named before its library is loaded on $TORCH_TAG, native=$native" tests/torch/test_not_loaded.py "$TORCH_NEWEST_PYTHON"
    [ "$native" = 1 ] || continue
    py_tests "packed sub-byte tensors and quantized kernels on $TORCH_TAG, native=$native" tests/torch/test_low_bit.py "$TORCH_NEWEST_PYTHON"
    py_tests "torch.func reverse mode and second derivatives on $TORCH_TAG, native=$native" tests/torch/test_func_transforms.py "$TORCH_NEWEST_PYTHON"
    py_tests "DTensor from partition(...) on $TORCH_TAG, native=$native" tests/torch/test_dtensor.py "$TORCH_NEWEST_PYTHON"
    # Their torch exports go through torchax here (tests/xla/torch_exporters.py).
    py_tests "computed output shapes on $TORCH_TAG (export through torchax), native=$native" tests/xla/test_computed_shapes.py "$TORCH_NEWEST_PYTHON"
    py_tests "one op for several element types on $TORCH_TAG (export through torchax), native=$native" tests/xla/test_generic_ops.py "$TORCH_NEWEST_PYTHON"
    py_tests "complex64, f8E4M3FN, bf16, f16 on $TORCH_TAG (export through torchax), native=$native" tests/xla/test_dtypes.py "$TORCH_NEWEST_PYTHON"
  done
  unset CUSTOMOP_TORCH_NATIVE
  py_tests "StableHLO export through torchax (customop.torchax) on $TORCH_TAG, run by jaxlib and the Rust runner" tests/torch/test_torchax_export.py "$TORCH_NEWEST_PYTHON"
  unset TORCH_TAG
  py_tests "JAX transforms: jax.vmap of every op, jax.grad (check_grads, f64), training, customop.xla.export" tests/xla/test_transforms.py
  py_tests "JAX second derivatives (grad of grad, jacrev of jacrev; jit, vmap) and jax.grad inside shard_map (check_vma)" tests/xla/test_higher_order.py
  py_tests "concurrent XLA executions from 8 threads (jaxlib)" tests/xla/test_concurrency.py
  py_tests "kernels on XLA's intra-op pool (customop::parallel): results, the pool's threads, a panic in a range" tests/xla/test_parallel.py
  py_tests "#[state] built once per call site at XLA's instantiate stage; a constructor error is bad_state" tests/xla/test_state.py
  py_tests "two processes with jax.distributed (gloo), a mesh across them: partitioned op, replicated external" tests/xla/test_processes.py
  py_tests "shape rules: Python's evaluation against the Rust handlers' (customop_call)" tests/xla/test_shape_rules.py
  py_tests "ports of jax's FFI examples: array and dictionary attributes (#[attrs]), tensors updated in place (#[inout], donated), rms_norm of any rank (..x.dims(..-1))" tests/xla/test_ffi_ports.py
  py_tests "which inputs and outputs have a derivative, in JAX: the manifest's (Rust's), a real gradient or a named refusal, never a zero" tests/xla/test_differentiability.py
  py_tests "an op called before lib.register(), a wrong library path: customop's words and the fix (NotRegisteredError, LibraryLoadError)" tests/xla/test_not_registered.py
  py_tests "the eight fp8 types: conversions equal ml_dtypes on every value and midpoint, under jaxlib and the runner" tests/xla/test_float8.py
  py_tests "packed sub-byte tensors (i4, ui4, i2, ui2, f4E2M1FN): XLA's packing, values and rounding equal ml_dtypes" tests/xla/test_low_bit.py
  py_tests "4-bit kernels on every dispatch path (CUSTOMOP_CPU=avx512, avx2, portable) against numpy and each other" tests/xla/test_cpu_paths.py
  py_tests "the customop command: run (the seed module from .npy and JSON/TOML, JAX exports on every known plugin; equal to jaxlib), ops, exit status by kind" tests/xla/test_cli.py
  py_tests "the customop command's plugins (list, path, verify, install, run --plugin) and compile cache (path, clear; filled, served, a corrupt entry compiled again)" tests/xla/test_cli_plugins.py
  py_tests "the descriptor field contract: every field type, in range, at its edges, beyond them and non-finite, through lib.pack, customop run (JSON, TOML) and the handler, against ml_dtypes" tests/xla/test_field_contract.py
  # The same JAX tests on the oldest jax.
  export TORCH_TAG=$("$JAX_OLDEST_PYTHON" -c 'import jax; print("jax" + jax.__version__)')
  py_tests "JAX second derivatives and shard_map gradients on $TORCH_TAG" tests/xla/test_higher_order.py "$JAX_OLDEST_PYTHON"
  py_tests "concurrent XLA executions on $TORCH_TAG" tests/xla/test_concurrency.py "$JAX_OLDEST_PYTHON"
  py_tests "kernels on XLA's intra-op pool on $TORCH_TAG" tests/xla/test_parallel.py "$JAX_OLDEST_PYTHON"
  py_tests "#[state] once per call site on $TORCH_TAG" tests/xla/test_state.py "$JAX_OLDEST_PYTHON"
  py_tests "shape rules on $TORCH_TAG" tests/xla/test_shape_rules.py "$JAX_OLDEST_PYTHON"
  py_tests "ports of jax's FFI examples on $TORCH_TAG" tests/xla/test_ffi_ports.py "$JAX_OLDEST_PYTHON"
  py_tests "which inputs and outputs have a derivative on $TORCH_TAG" tests/xla/test_differentiability.py "$JAX_OLDEST_PYTHON"
  py_tests "an op called before lib.register() on $TORCH_TAG" tests/xla/test_not_registered.py "$JAX_OLDEST_PYTHON"
  py_tests "the eight fp8 types on $TORCH_TAG" tests/xla/test_float8.py "$JAX_OLDEST_PYTHON"
  py_tests "packed sub-byte tensors on $TORCH_TAG" tests/xla/test_low_bit.py "$JAX_OLDEST_PYTHON"
  py_tests "the customop command on $TORCH_TAG (a serialized jax.export run too)" tests/xla/test_cli.py "$JAX_OLDEST_PYTHON"
  unset TORCH_TAG
  step "every benchmark in its short form (tiny sizes, no timing asserted): a benchmark that breaks fails here"
  CUSTOMOP_BENCH_BUILDER_SCALING="${EXAMPLE_BIN[builder_scaling]:-}" \
  CUSTOMOP_BENCH_SEED_MODULE="${EXAMPLE_BIN[seed_module]:-}" \
  CUSTOMOP_BENCH_PJRT_BENCH="${EXAMPLE_BIN[pjrt_bench]:-}" \
    bash benches/compare/run.sh --smoke
  echo "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out" >> "$log"
}
lane() {
  ( STEP_NAME="" STEP_LANE=$1; "lane_$1"; step ) > "target/lane-$1.log" 2>&1
}
step "the Python suites in two lanes (torch; jax, the command line, the newest torch)"
lane torch & torch_lane=$!
lane jax & jax_lane=$!
failed=""
wait "$torch_lane" || failed="$failed torch"
wait "$jax_lane" || failed="$failed jax"
for name in torch jax; do
  printf '\n=== lane %s (target/lane-%s.log)\n' "$name" "$name" >&2
  cat "target/lane-$name.log" >&2
done
[ -z "$failed" ] || { echo "lane(s) failed:$failed (the last lines of each lane above say which suite)" >&2; exit 1; }
step "wheels: customop's and the example kernels' (pip wheel examples/kernels), installed into new venvs, ops called from JAX and torch outside the repository"
bash scripts/wheels.sh
echo "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out" >> "$log"
step "crates that package: cargo package (verified), then a kernel crate and a model crate outside the repository built against the .crate files only"
bash scripts/packaged.sh "$CUSTOMOP_CLI"
echo "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out" >> "$log"
# Installing customop as the book says (ranges, not pins) changes nothing in a venv that has
# what it asks for: pip would install customop and nothing else (no torch or jax replaced).
step "pip install ./python[extra] keeps each venv's torch and jax (dry run)"
pkg=$(mktemp -d)
cp -r python/. "$pkg"
rm -rf "$pkg/build" "$pkg"/*.egg-info   # (see setup.sh)
only_customop() {
  local python=$1 extra=$2 report=target/pip-report-$2-$(basename "$(dirname "$(dirname "$1")")").json
  shift 2
  "$python" -m pip install --dry-run --quiet --disable-pip-version-check --report "$report" "$@" \
    "$pkg[$extra]"
  "$python" - "$report" "$extra" <<'PY'
import json, re, sys
install = json.load(open(sys.argv[1]))["install"]
got = [(i["metadata"]["name"], i["metadata"]["version"]) for i in install]
assert [n for n, _ in got] == ["customop"], "customop[%s] would also install %s" % (sys.argv[2], got)
# pip only warns about an extra the package does not provide, and installs it without: the
# extra asked for must be one customop declares (names compared as PEP 685 normalises them).
norm = lambda e: re.sub(r"[-_.]+", "-", e).lower()
asked = [norm(e) for e in install[0].get("requested_extras") or []]
provided = [norm(e) for e in install[0]["metadata"].get("provides_extra") or []]
assert asked == [norm(sys.argv[2])] and asked[0] in provided, \
    "customop[%s]: pip was asked for extras %s; customop provides %s" % (sys.argv[2], asked, provided)
print("customop[%s]: would install only customop" % sys.argv[2])
PY
}
only_customop "$CUSTOMOP_PYTHON" torch-xla
only_customop "$CUSTOMOP_PYTHON" jax
only_customop "$TORCH_NEWEST_PYTHON" torch
only_customop "$TORCH_NEWEST_PYTHON" torchax --pre
only_customop "$JAX_OLDEST_PYTHON" jax
rm -rf "$pkg"
# Each suite's cross-checks, at least as many as it makes today: a suite that stops checking
# fails here, whatever the others count. (Counts add over the runs of a file: both torch paths
# on torch 2.9, the native path on the newest torch for computed_shapes, generic_ops and dtypes,
# three runs of 7, 8 and 6; both jax versions for test_transforms.py.)
step "PJRT cross-checks per suite (jaxlib and the Rust runner agreeing)"
declare -A MIN_CHECKS=(
  [rust]=45
  [torch/test_torch_export.py]=20
  [torch/test_torchax_export.py]=4
  [xla/test_computed_shapes.py]=21
  [xla/test_generic_ops.py]=24
  [xla/test_dtypes.py]=18
  [xla/test_transforms.py]=184
  [xla/test_higher_order.py]=12
  [xla/test_parallel.py]=4
  [xla/test_ffi_ports.py]=52
  [xla/test_float8.py]=16
  [xla/test_low_bit.py]=64
)
short=0
for suite in $(printf '%s\n' "${!MIN_CHECKS[@]}" | sort); do
  n=$(grep -c "^ok $suite\$" "$CUSTOMOP_PJRT_CROSS_CHECK_LOG" || true)
  printf '  %-26s %4d (minimum %d)\n' "$suite" "$n" "${MIN_CHECKS[$suite]}" >&2
  [ "$n" -ge "${MIN_CHECKS[$suite]}" ] || short=1
done
total=$(wc -l < "$CUSTOMOP_PJRT_CROSS_CHECK_LOG")
echo "PJRT cross-check: $total programs run by both jaxlib and the Rust runner, all agreeing" >&2
[ "$short" = 0 ] || { echo "a suite made fewer PJRT cross-checks than its minimum" >&2; exit 1; }
step "the quick start word for word, from an empty folder outside the repository"
bash scripts/quickstart.sh
step "end"
echo "Where the time went (seconds a step, slowest first):" >&2
# awk reads to the end: `head` would close the pipe early and pipefail turn sort's SIGPIPE
# into the script's exit status (141).
sort -rn target/step-times.log | awk 'NR <= 30' >&2
echo "all steps: $SECONDS s" >&2
# One closing line over every test binary's result (unit, integration, UI, doc).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1); if ($(i) ~ /^ignored;?$/) s += $(i-1) } }
     END { printf "total: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
