#!/usr/bin/env bash
# The whole test suite: installs what is missing (scripts/setup.sh), then formatting, lints,
# every test (unit, doc, integration, UI, XLA end-to-end) and the book.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CUSTOMOP_PYTHON="$PWD/target/xla-venv/bin/python"
step() { printf '\n=== %s\n' "$*" >&2; }

step "cargo fmt --check"
cargo fmt --all --check
step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "customop builds without MLIR (the kernel cdylib configuration)"
cargo build -p customop --no-default-features --locked
step "customop without default features depends on no MLIR crate"
if cargo tree -p customop --no-default-features -e normal,build --locked | grep -E "mlir-sys|melior|tblgen"; then
  echo "customop --no-default-features must not depend on MLIR" >&2; exit 1
fi
step "cargo doc (no warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps -p customop -p customop-macros
step "cargo test"
log=target/test-output.log
cargo test --workspace --locked 2>&1 | tee "$log"
step "the example kernel cdylib, built alone (no MLIR)"
cargo build --locked -p customop-example-kernels --target-dir target/kernels
export CUSTOMOP_KERNELS="$PWD/target/kernels/debug/libcustomop_example_kernels.so"
if nm "$CUSTOMOP_KERNELS" | grep -q mlirContextCreate; then
  echo "the kernel cdylib links MLIR" >&2; exit 1
fi
step "examples"
"$CUSTOMOP_PYTHON" examples/jax/call_rust_op.py "$CUSTOMOP_KERNELS"
"$CUSTOMOP_PYTHON" examples/jax/sharded_rust_op.py "$CUSTOMOP_KERNELS"
"$CUSTOMOP_PYTHON" examples/torch/seed.py "$CUSTOMOP_KERNELS"
cargo run --locked -q -p customop-examples --bin seed
cargo run --locked -q -p customop-examples --bin mlp
cargo run --locked -q -p customop-examples --bin builder_scaling -- 1000 10000
cargo run --locked -q -p customop-examples --bin shard_scaling -- 64 32 3
step "PyTorch front end (customop.torch: eager CPU, torch_xla export, refusals)"
torch_log=target/test-torch.log
"$CUSTOMOP_PYTHON" -m unittest tests/torch/test_torch.py 2>&1 | tee "$torch_log" | grep -v '^  '
ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in.*/\1/p' "$torch_log")
grep -qx OK "$torch_log" || { echo "the PyTorch tests failed" >&2; exit 1; }
echo "test result: ok. $ran passed; 0 failed; 0 ignored; 0 measured; 0 filtered out" >> "$log"
step "mdbook build, links and Python blocks"
mdbook build book
"$CUSTOMOP_PYTHON" scripts/check_book.py book/src
# One closing line over every test binary's result (unit, integration, UI, doc).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1); if ($(i) ~ /^ignored;?$/) s += $(i-1) } }
     END { printf "total: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
