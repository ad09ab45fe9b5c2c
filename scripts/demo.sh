#!/usr/bin/env bash
# The seed model: emit its StableHLO from Rust and run it on XLA CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CUSTOMOP_PYTHON="$PWD/target/xla-venv/bin/python"
cargo run --locked -q -p customop-examples --bin seed
