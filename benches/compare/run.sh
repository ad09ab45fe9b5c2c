#!/usr/bin/env bash
# customop against JAX (and torch_xla if installed): one command, one machine, one run.
# Usage: bash benches/compare/run.sh [--quick | --runner | --torch-eager | --torch-cpp | --mut-jit |
#                                    --parallel | --state | --jax-rules | --torch-autograd |
#                                    --in-place | --int4 | --dtensor | --smoke]
# (--runner: only the Rust PJRT runner against jaxlib's client, per execution and to first result;
#  --torch-eager: eager calls from torch, native kernels against the Python path: torch_eager.py;
#  --torch-cpp: a customop op against the same op as a C++ extension op, on torch 2.9 and the
#    newest: torch_cpp.py;
#  --mut-jit: an op with a `&mut` external against a plain op under jax.jit: mut_jit.py;
#  --parallel: a kernel on XLA's pool against its one-thread self and jnp: parallel.py;
#  --state: an op with #[state] against the same op rebuilding its table per call: state_jit.py;
#  --jax-rules: an op with both derivative rules under jax.jit against the bare FFI call, on the
#    newest and the oldest jax: jax_rules.py;
#  --torch-autograd: the autograd layer against torch.library.custom_op and a C++ op, on torch 2.9
#    and the newest: torch_autograd.py;
#  --in-place: a donated #[inout] update of a 256 MB tensor against the same not donated, and
#    jnp's own in-place update: in_place.py;
#  --int4: 4-bit weight-only matmuls against jnp's dequantize-then-dot and torch's int4 kernel,
#    the default build at each dispatch level and a target-cpu=native build, with the memory
#    read rate and a summary: int4.py;
#  --dtensor: a sequence-parallel training step on DTensors, 2 processes, partitioned ops
#    against the replicated fallback, on torch 2.9 and the newest: dtensor.py)
# torch_xla's side runs in the set-up's venv (torch 2.9.0 + torch_xla 2.9.0 with jax; or
# $CUSTOMOP_TORCH_PYTHON).
#
# --smoke: every mode once, in smoke form, for the test suite: the default run (which holds
# --quick's and --runner's parts: the lowering tables with torch_xla's side, the execution
# overhead, the runner against jaxlib, the scaling table) and each of the modes above, every
# script with CUSTOMOP_BENCH_SMOKE=1 (tiny sizes, few calls; each script's docstring says what it
# runs), tables printed as usual, no timing asserted. It runs every mode, prints each one's wall
# time, and exits non-zero if any failed. It runs no scripts/setup.sh and builds nothing: the
# caller gives the kernel library and the example programs (debug builds will do):
#   CUSTOMOP_KERNELS                 the example kernel cdylib (libcustomop_example_kernels.so)
#   CUSTOMOP_BENCH_BUILDER_SCALING   the builder_scaling program
#   CUSTOMOP_BENCH_SEED_MODULE       the seed_module program
#   CUSTOMOP_BENCH_PJRT_BENCH        the pjrt_bench program
# --int4 runs the given library only (no target-cpu=native build). One mode in smoke form:
# CUSTOMOP_BENCH_SMOKE=1 bash benches/compare/run.sh --state (with the variables it needs).
#
# The venvs are target/xla-venv, target/torch-venv and target/jax-oldest-venv, or those under
# $CUSTOMOP_BENCH_VENV_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../.."
VENVS=${CUSTOMOP_BENCH_VENV_DIR:-target}
SMOKE=${CUSTOMOP_BENCH_SMOKE:-0}

# In smoke form, a file the caller must give (an environment variable naming it).
given() {
  for var in "$@"; do
    [ -e "${!var:-}" ] || {
      echo "run.sh in smoke form: \$$var must name an existing file (it is '${!var:-}')" >&2
      exit 2
    }
  done
}

if [ "${1:-}" = "--smoke" ]; then
  given CUSTOMOP_KERNELS CUSTOMOP_BENCH_BUILDER_SCALING CUSTOMOP_BENCH_SEED_MODULE \
    CUSTOMOP_BENCH_PJRT_BENCH
  export CUSTOMOP_BENCH_SMOKE=1
  # Not --quick nor --runner: the default run runs both of their parts.
  modes=(default --torch-eager --torch-cpp --mut-jit --parallel --state --jax-rules
    --torch-autograd --in-place --int4 --dtensor)
  failed=() report=() all=$SECONDS
  for mode in "${modes[@]}"; do
    printf '\n=== run.sh %s (smoke)\n' "$mode"
    start=$SECONDS status=ok
    arg=$mode
    [ "$mode" != default ] || arg=
    bash "$HERE/run.sh" $arg || { status=FAILED; failed+=("$mode"); }
    report+=("$(printf '%4d s  %-16s %s' $((SECONDS - start)) "$mode" "$status")")
  done
  printf '\n=== run.sh --smoke: %d s in all\n' $((SECONDS - all))
  printf '%s\n' "${report[@]}"
  if [ ${#failed[@]} -gt 0 ]; then
    echo "run.sh --smoke: failed: ${failed[*]}" >&2
    exit 1
  fi
  exit 0
fi

[ "$SMOKE" = 1 ] || bash scripts/setup.sh
# The benchmarks that need the kernel library (release) and Python only.
kernels() {
  if [ "$SMOKE" = 1 ]; then
    given CUSTOMOP_KERNELS
  else
    cargo build --locked --release -q -p customop-example-kernels --target-dir target/kernels
    export CUSTOMOP_KERNELS="$PWD/target/kernels/release/libcustomop_example_kernels.so"
  fi
  export PYTHONPATH="$PWD/python" PJRT_DEVICE=CPU
}
# One script in each of the given venvs.
in_venvs() {
  local script=$1
  shift
  for venv in "$@"; do
    "$VENVS/$venv/bin/python" "benches/compare/$script"
  done
}
case "${1:-}" in
  --torch-eager) kernels; in_venvs torch_eager.py xla-venv; exit 0 ;;
  --mut-jit) kernels; in_venvs mut_jit.py xla-venv; exit 0 ;;
  --state) kernels; in_venvs state_jit.py xla-venv; exit 0 ;;
  --in-place) kernels; in_venvs in_place.py xla-venv; exit 0 ;;
  --dtensor) kernels; in_venvs dtensor.py xla-venv torch-venv; exit 0 ;;
  --jax-rules) kernels; in_venvs jax_rules.py xla-venv jax-oldest-venv; exit 0 ;;
  --torch-autograd) kernels; in_venvs torch_autograd.py xla-venv torch-venv; exit 0 ;;
  --torch-cpp) kernels; in_venvs torch_cpp.py xla-venv torch-venv; exit 0 ;;
  --int4)
    kernels
    libs=("$CUSTOMOP_KERNELS")
    if [ "$SMOKE" = 1 ]; then
      echo "int4 (smoke): the given kernel library only; the target-cpu=native build is skipped"
    else
      # The same kernels built for this machine's CPU (AVX-512 here), as a team serving on one
      # kind of machine would build them.
      RUSTFLAGS="-C target-cpu=native" cargo build --locked --release -q \
        -p customop-example-kernels --target-dir target/kernels-native
      libs+=("$PWD/target/kernels-native/release/libcustomop_example_kernels.so")
    fi
    # Each run measures every dispatch level below the CPU's best too (CUSTOMOP_CPU), and
    # leaves its figures here for the summary.
    CUSTOMOP_INT4_SUMMARY=$(mktemp -d)
    export CUSTOMOP_INT4_SUMMARY
    trap 'rm -rf "$CUSTOMOP_INT4_SUMMARY"' EXIT
    for lib in "${libs[@]}"; do
      "$VENVS/xla-venv/bin/python" benches/compare/int4.py jax "$lib"
    done
    for lib in "${libs[@]}"; do
      "$VENVS/torch-venv/bin/python" benches/compare/int4.py torch "$lib"
    done
    "$VENVS/xla-venv/bin/python" benches/compare/int4.py summary "$CUSTOMOP_INT4_SUMMARY"
    exit 0
    ;;
  --parallel)
    kernels
    if [ "$SMOKE" = 1 ]; then
      given CUSTOMOP_BENCH_PJRT_BENCH
    else
      cargo build --locked --release -q -p customop-examples --bin pjrt_bench
      CUSTOMOP_BENCH_PJRT_BENCH="$PWD/target/release/pjrt_bench"
    fi
    "$VENVS/xla-venv/bin/python" benches/compare/parallel.py "$CUSTOMOP_BENCH_PJRT_BENCH"
    # Again with glibc's heap kept: XLA's 16 MB result buffers are reused rather than given back
    # to the OS and faulted in again, so the kernels' own times are compared.
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824 \
      "$VENVS/xla-venv/bin/python" benches/compare/parallel.py
    in_venvs parallel_torch.py torch-venv
    exit 0
    ;;
esac
if [ "$SMOKE" = 1 ]; then
  given CUSTOMOP_KERNELS CUSTOMOP_BENCH_BUILDER_SCALING CUSTOMOP_BENCH_SEED_MODULE \
    CUSTOMOP_BENCH_PJRT_BENCH
  export CUSTOMOP_BENCH_BUILDER_SCALING CUSTOMOP_BENCH_SEED_MODULE CUSTOMOP_BENCH_PJRT_BENCH
else
  cargo build --locked --release -q -p customop-examples --bin builder_scaling --bin seed_module --bin pjrt_bench
  cargo build --locked --release -q -p customop-example-kernels --target-dir target/kernels
  export CUSTOMOP_KERNELS="$PWD/target/kernels/release/libcustomop_example_kernels.so"
  export CUSTOMOP_BENCH_BUILDER_SCALING="$PWD/target/release/builder_scaling"
  export CUSTOMOP_BENCH_SEED_MODULE="$PWD/target/release/seed_module"
  export CUSTOMOP_BENCH_PJRT_BENCH="$PWD/target/release/pjrt_bench"
fi
INC=$("$VENVS/xla-venv/bin/python" -c 'import jax; print(jax.ffi.include_dir())')
mkdir -p target/compare
cc -O2 -shared -fPIC -I"$INC" tests/xla/c/seed_floor.c -o target/compare/libseed_floor.so -lm
export CUSTOMOP_FLOOR_LIB="$PWD/target/compare/libseed_floor.so"
exec "$VENVS/xla-venv/bin/python" benches/compare/compare.py "$@"
