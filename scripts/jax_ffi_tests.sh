#!/usr/bin/env bash
# JAX's own FFI example tests (jax's examples/ffi/tests/*_test.py), run unchanged against
# customop's ports of the examples (tests/xla/jax_ffi/jax_ffi_example: the module names JAX's
# tests import, calling ops written with customop in Rust), on this checkout's example kernel
# library. JAX's tests are not in this repository, nor in jax's wheel or sdist: give a jax
# checkout (or its examples/ffi/tests folder) of the version the test venv pins. Not part of the
# test command, which cannot reach GitHub; tests/xla/test_ffi_ports.py holds the same checks in
# customop's words.
# Usage: bash scripts/jax_ffi_tests.sh JAX_CHECKOUT [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: $0 JAX_CHECKOUT_OR_TESTS_DIR [PYTHON]}
python=${2:-target/xla-venv/bin/python}
tests=$src
[ -d "$src/examples/ffi/tests" ] && tests=$src/examples/ffi/tests
[ -f "$tests/cpu_examples_test.py" ] || { echo "no cpu_examples_test.py in $tests" >&2; exit 2; }
cargo build --locked -q -p customop-example-kernels --target-dir target/kernels
export CUSTOMOP_KERNELS="$PWD/target/kernels/debug/libcustomop_example_kernels.so"
export PYTHONPATH="$PWD/tests/xla/jax_ffi" JAX_PLATFORMS=cpu
status=0
for x64 in 0 1; do
  for t in "$tests"/*_test.py; do
    echo "=== $(basename "$t"), JAX_ENABLE_X64=$x64" >&2
    JAX_ENABLE_X64=$x64 "$python" "$t" 2>&1 | tail -4 || status=1
  done
done
exit $status
