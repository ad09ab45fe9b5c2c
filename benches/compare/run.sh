#!/usr/bin/env bash
# customop against JAX (and torch_xla if installed): one command, one machine, one run.
# Usage: bash benches/compare/run.sh [--quick]
# torch_xla's side runs when target/torch-venv (or $CUSTOMOP_TORCH_PYTHON) has torch and
# torch_xla; to install them (~6.5 GB): CUSTOMOP_WITH_TORCH=1 bash benches/compare/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/setup.sh
if [ -n "${CUSTOMOP_WITH_TORCH:-}" ] && ! target/torch-venv/bin/python -c 'import torch_xla' 2>/dev/null; then
  "$(target/xla-venv/bin/python -c 'import sys; print(sys._base_executable)')" -m venv target/torch-venv
  target/torch-venv/bin/pip install -q --disable-pip-version-check torch==2.9.0 torch_xla==2.9.0
fi
cargo build --locked --release -q -p customop-examples --bin builder_scaling --bin seed_module
cargo build --locked --release -q -p customop-example-kernels --target-dir target/kernels
export CUSTOMOP_KERNELS="$PWD/target/kernels/release/libcustomop_example_kernels.so"
INC=$(target/xla-venv/bin/python -c 'import jax; print(jax.ffi.include_dir())')
mkdir -p target/compare
cc -O2 -shared -fPIC -I"$INC" tests/xla/c/seed_floor.c -o target/compare/libseed_floor.so -lm
export CUSTOMOP_FLOOR_LIB="$PWD/target/compare/libseed_floor.so"
exec target/xla-venv/bin/python benches/compare/compare.py "$@"
