#!/usr/bin/env bash
# The seed model: build its StableHLO in Rust and run it through XLA's CPU PJRT plugin, with
# the Rust handler linked into the binary. Installs only what that needs (LLVM/MLIR packages,
# the plugin): no Python venv.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --pjrt
cargo run --locked -q -p customop-examples --bin seed
