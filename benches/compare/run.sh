#!/usr/bin/env bash
# customop against JAX (and torch_xla if installed): one command, one machine, one run.
# Usage: bash benches/compare/run.sh [--quick | --runner | --torch-eager | --torch-cpp | --mut-jit |
#                                    --parallel | --state | --jax-rules | --torch-autograd |
#                                    --in-place | --int4]
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
#  --int4: an i4 weight-only matmul against jnp's dequantize-then-dot and torch's int4 kernel:
#    int4.py)
# torch_xla's side runs in the set-up's venv (torch 2.9.0 + torch_xla 2.9.0 with jax; or
# $CUSTOMOP_TORCH_PYTHON).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/setup.sh
# The benchmarks that need the kernel library (release) and Python only.
kernels() {
  cargo build --locked --release -q -p customop-example-kernels --target-dir target/kernels
  export CUSTOMOP_KERNELS="$PWD/target/kernels/release/libcustomop_example_kernels.so"
  export PYTHONPATH="$PWD/python" PJRT_DEVICE=CPU
}
# One script in each of the given venvs.
in_venvs() {
  local script=$1
  shift
  for venv in "$@"; do
    "$venv/bin/python" "benches/compare/$script"
  done
}
case "${1:-}" in
  --mut-jit) kernels; in_venvs mut_jit.py target/xla-venv; exit 0 ;;
  --state) kernels; in_venvs state_jit.py target/xla-venv; exit 0 ;;
  --in-place) kernels; in_venvs in_place.py target/xla-venv; exit 0 ;;
  --jax-rules) kernels; in_venvs jax_rules.py target/xla-venv target/jax-oldest-venv; exit 0 ;;
  --torch-autograd) kernels; in_venvs torch_autograd.py target/xla-venv target/torch-venv; exit 0 ;;
  --torch-cpp) kernels; in_venvs torch_cpp.py target/xla-venv target/torch-venv; exit 0 ;;
  --int4)
    kernels
    # The same kernels built for this machine's CPU (AVX-512 here), as a team serving on one
    # kind of machine would build them.
    RUSTFLAGS="-C target-cpu=native" cargo build --locked --release -q \
      -p customop-example-kernels --target-dir target/kernels-native
    target/xla-venv/bin/python benches/compare/int4.py jax "$CUSTOMOP_KERNELS"
    target/xla-venv/bin/python benches/compare/int4.py jax \
      "$PWD/target/kernels-native/release/libcustomop_example_kernels.so"
    target/torch-venv/bin/python benches/compare/int4.py torch "$CUSTOMOP_KERNELS"
    target/torch-venv/bin/python benches/compare/int4.py torch \
      "$PWD/target/kernels-native/release/libcustomop_example_kernels.so"
    exit 0
    ;;
  --parallel)
    kernels
    cargo build --locked --release -q -p customop-examples --bin pjrt_bench
    target/xla-venv/bin/python benches/compare/parallel.py "$PWD/target/release/pjrt_bench"
    # Again with glibc's heap kept: XLA's 16 MB result buffers are reused rather than given back
    # to the OS and faulted in again, so the kernels' own times are compared.
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824 \
      target/xla-venv/bin/python benches/compare/parallel.py
    in_venvs parallel_torch.py target/torch-venv
    exit 0
    ;;
esac
cargo build --locked --release -q -p customop-examples --bin builder_scaling --bin seed_module --bin pjrt_bench
cargo build --locked --release -q -p customop-example-kernels --target-dir target/kernels
export CUSTOMOP_KERNELS="$PWD/target/kernels/release/libcustomop_example_kernels.so"
INC=$(target/xla-venv/bin/python -c 'import jax; print(jax.ffi.include_dir())')
mkdir -p target/compare
cc -O2 -shared -fPIC -I"$INC" tests/xla/c/seed_floor.c -o target/compare/libseed_floor.so -lm
export CUSTOMOP_FLOOR_LIB="$PWD/target/compare/libseed_floor.so"
if [ "${1:-}" = "--torch-eager" ]; then
  export PYTHONPATH="$PWD/python" PJRT_DEVICE=CPU
  exec target/xla-venv/bin/python benches/compare/torch_eager.py
fi
exec target/xla-venv/bin/python benches/compare/compare.py "$@"
