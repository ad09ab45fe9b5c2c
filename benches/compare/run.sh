#!/usr/bin/env bash
# customop against JAX (and torch_xla if installed): one command, one machine, one run.
# Usage: bash benches/compare/run.sh [--quick | --runner | --torch-eager | --torch-cpp | --mut-jit |
#                                    --parallel | --state | --jax-rules | --torch-autograd]
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
#    and the newest: torch_autograd.py)
# torch_xla's side runs in the set-up's venv (torch 2.9.0 + torch_xla 2.9.0 with jax; or
# $CUSTOMOP_TORCH_PYTHON).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/setup.sh
if [ "${1:-}" = "--mut-jit" ]; then
  # Only the kernel library (release) is needed.
  cargo build --locked --release -q -p customop-example-kernels --target-dir target/kernels
  export CUSTOMOP_KERNELS="$PWD/target/kernels/release/libcustomop_example_kernels.so"
  export PYTHONPATH="$PWD/python"
  exec target/xla-venv/bin/python benches/compare/mut_jit.py
fi
if [ "${1:-}" = "--jax-rules" ]; then
  cargo build --locked --release -q -p customop-example-kernels --target-dir target/kernels
  export CUSTOMOP_KERNELS="$PWD/target/kernels/release/libcustomop_example_kernels.so"
  export PYTHONPATH="$PWD/python"
  target/xla-venv/bin/python benches/compare/jax_rules.py
  exec target/jax-oldest-venv/bin/python benches/compare/jax_rules.py
fi
if [ "${1:-}" = "--state" ]; then
  cargo build --locked --release -q -p customop-example-kernels --target-dir target/kernels
  export CUSTOMOP_KERNELS="$PWD/target/kernels/release/libcustomop_example_kernels.so"
  export PYTHONPATH="$PWD/python"
  exec target/xla-venv/bin/python benches/compare/state_jit.py
fi
if [ "${1:-}" = "--parallel" ]; then
  cargo build --locked --release -q -p customop-example-kernels --target-dir target/kernels
  cargo build --locked --release -q -p customop-examples --bin pjrt_bench
  export CUSTOMOP_KERNELS="$PWD/target/kernels/release/libcustomop_example_kernels.so"
  export PYTHONPATH="$PWD/python"
  target/xla-venv/bin/python benches/compare/parallel.py "$PWD/target/release/pjrt_bench"
  # Again with glibc's heap kept: XLA's 16 MB result buffers are reused rather than given back
  # to the OS and faulted in again, so the kernels' own times are compared.
  GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824 \
    target/xla-venv/bin/python benches/compare/parallel.py
  exec target/torch-venv/bin/python benches/compare/parallel_torch.py
fi
if [ "${1:-}" = "--torch-autograd" ]; then
  cargo build --locked --release -q -p customop-example-kernels --target-dir target/kernels
  export CUSTOMOP_KERNELS="$PWD/target/kernels/release/libcustomop_example_kernels.so"
  export PYTHONPATH="$PWD/python" PJRT_DEVICE=CPU
  for venv in target/xla-venv target/torch-venv; do
    "$venv/bin/python" benches/compare/torch_autograd.py
  done
  exit 0
fi
if [ "${1:-}" = "--torch-cpp" ]; then
  cargo build --locked --release -q -p customop-example-kernels --target-dir target/kernels
  export CUSTOMOP_KERNELS="$PWD/target/kernels/release/libcustomop_example_kernels.so"
  export PYTHONPATH="$PWD/python" PJRT_DEVICE=CPU
  for venv in target/xla-venv target/torch-venv; do
    "$venv/bin/python" benches/compare/torch_cpp.py
  done
  exit 0
fi
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
