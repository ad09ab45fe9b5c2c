#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU (driver 580 / CUDA 13, jax with
# jax-cuda13-plugin, no network), every example op with a CUDA side, run from JAX on the GPU,
# against its CPU kernel and a jnp reference, and timed against its jnp equivalent
# (tests/gpu/check_jax.py). Nothing is built or downloaded there: the artifacts come in with
# the working tree.
#
#   bash scripts/gpu-check.sh --prepare   here: builds target/gpu-check/ (the kernel library,
#                                         release, with its sm_80/sm_90 kernels), a few MB
#   bash scripts/gpu-check.sh             there (carry target/gpu-check): runs the checks
#   bash scripts/gpu-check.sh --dry       here: the same checks with the CPU as the "GPU"
#
# Not checked yet (their CUDA sides do not exist yet): torch's CUDA kernels, the Rust runner
# on the CUDA PJRT plugin, the int4 matmul and the extension-cpp ports.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/gpu-check
lib="$out/libcustomop_example_kernels.so"
case "${1:-}" in
  --prepare)
    [ -x target/cuda/bin/nvcc ] || { echo "no target/cuda: run scripts/setup.sh" >&2; exit 1; }
    CUSTOMOP_NVCC="$PWD/target/cuda/bin/nvcc" cargo build --locked --release \
      -p customop-example-kernels --features cuda --target-dir target/kernels
    mkdir -p "$out"
    cp target/kernels/release/libcustomop_example_kernels.so "$lib"
    ls -l "$lib"
    exit 0 ;;
  --dry)
    # The test suite's kernel library (built with feature cuda) where it gives one.
    if [ -n "${CUSTOMOP_KERNELS:-}" ]; then lib=$CUSTOMOP_KERNELS; else
      [ -f "$lib" ] || bash "$0" --prepare
    fi
    export CUSTOMOP_GPU_CHECK_DRY=1
    python=${CUSTOMOP_PYTHON:-target/xla-venv/bin/python} ;;
  "")
    python=${CUSTOMOP_PYTHON:-python3}
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true ;;
  *) echo "usage: $0 [--prepare | --dry]" >&2; exit 2 ;;
esac
[ -f "$lib" ] || { echo "no $lib: run '$0 --prepare' where the toolkit is" >&2; exit 1; }
start=$SECONDS
CUSTOMOP_KERNELS="$(realpath "$lib")" PYTHONPATH="$PWD/python" timeout 420 "$python" tests/gpu/check_jax.py
echo "gpu-check: $((SECONDS - start)) s"
