#!/usr/bin/env bash
# A team's ops shipped as a wheel: customop's own wheel and the example kernels' (one command,
# `pip wheel examples/kernels`, setuptools-rust putting the cdylib in the package), installed
# into new venvs and called from outside the repository, with no checkout path and no
# CUSTOMOP_* variable:
# - a new venv with jax (pinned as tests/xla/requirements.txt pins it, installed by pip) runs
#   ops through `customop_example_kernels.jax`, under jit too; without customop the import
#   fails naming it;
# - a new venv with torch runs them through `customop_example_kernels.torch` (torch.ops, native
#   kernels). Its torch is the newest-torch venv's installation, reached through a .pth file
#   (not 3 GB of torch and CUDA libraries installed again); customop and the kernels come
#   from the wheels, installed into the new venv, which Python finds first.
#
# Usage: bash scripts/wheels.sh   (scripts/test.sh runs it, after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
step() { printf '\n[wheels] %s\n' "$*"; }
CACHE="${CUSTOMOP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/customop}"
REQ=scripts/wheel-build-requirements.txt
BUILD="$CACHE/wheel-build-venv-$(sha256sum "$REQ" | cut -c1-16)"
base=target/xla-venv/bin/python     # a Python 3.12 (the venvs below are new: nothing inherited)
if [ ! -f "$BUILD/.complete" ]; then
  step "the wheel-building venv ($BUILD)"
  rm -rf "$BUILD"
  "$base" -m venv "$BUILD"
  "$BUILD/bin/pip" install -q --disable-pip-version-check -r "$REQ"
  touch "$BUILD/.complete"
fi
work=$(mktemp -d /tmp/customop-wheels.XXXXXX)
trap 'rm -rf "$work"' EXIT
dist="$work/dist"
step "customop's wheel and the example kernels' wheel"
# The Python package is built from a copy: setuptools writes build/ and egg-info into its tree.
cp -r python "$work/customop-src"
rm -rf "$work/customop-src/build" "$work/customop-src"/*.egg-info   # (see setup.sh)
"$BUILD/bin/pip" wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w "$dist" \
  "$work/customop-src"
PATH="$BUILD/bin:$PATH" "$BUILD/bin/pip" wheel -q --disable-pip-version-check \
  --no-build-isolation --no-deps -w "$dist" examples/kernels
rm -rf examples/kernels/build examples/kernels/python/*.egg-info
ls -l "$dist"
kernels=$(ls "$dist"/customop_example_kernels-*.whl)
listing=$(unzip -l "$kernels")  # whole, not piped: grep -q would SIGPIPE unzip under pipefail
grep -q 'customop_example_kernels/kernels.*\.so' <<<"$listing" ||
  { echo "the kernels' wheel holds no library" >&2; exit 1; }
# Outside the repository, with no customop variable and no PYTHONPATH.
clean() { env -u PYTHONPATH $(env | sed -n 's/^\(CUSTOMOP_[A-Z_]*\)=.*/-u \1/p') "$@"; }

step "a new venv with jax: pip install the two wheels and jax"
"$base" -m venv "$work/jax"
"$work/jax/bin/pip" install -q --disable-pip-version-check -c tests/xla/requirements.txt \
  "$dist"/customop-0.1.0-*.whl "$kernels" jax jaxlib flatbuffers
cat > "$work/use_jax.py" <<'PY'
import sys
import numpy as np
import jax
import customop, customop_example_kernels
from customop_example_kernels.jax import ops, library

# Both from this venv's site-packages: the wheels, not a checkout.
assert customop.__file__.startswith(sys.prefix), customop.__file__
assert customop_example_kernels.LIBRARY.startswith(sys.prefix), customop_example_kernels.LIBRARY
x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0
want = x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float32(1e-3))
got = np.asarray(jax.jit(lambda x: ops.example.rms_norm_t(x, eps=np.float32(1e-3)))(x))
np.testing.assert_allclose(got, want, rtol=1e-5)
# The wheel is built for plain x86-64, yet its kernels take the CPU's best vector level.
flags = set(next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split())
best = ("avx512" if {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"} <= flags
        else "avx2" if {"avx2", "fma"} <= flags else "portable")
assert library.cpu_level == best, (library.cpu_level, best)
import ml_dtypes
rng = np.random.default_rng(0)
xq = rng.normal(size=(2, 256)).astype(np.float32)
q = rng.integers(-8, 8, size=(256, 512)).astype(np.int8)
s = rng.uniform(0.5, 1.5, size=(2, 512)).astype(np.float32)
got = np.asarray(jax.jit(ops.example.matmul_i4)(xq, q.astype(ml_dtypes.int4), s))
want = xq.astype(np.float64) @ (q.reshape(2, 128, 512) * s[:, None, :].astype(np.float64)).reshape(256, 512)
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
print("jax %s: %d ops from %s; rms_norm_t under jit equals numpy; matmul_i4 on %s equals numpy"
      % (jax.__version__, len(library.entries()), customop_example_kernels.LIBRARY,
         library.cpu_level))
PY
(cd "$work" && clean "$work/jax/bin/python" use_jax.py)
"$work/jax/bin/pip" uninstall -q -y customop
out=$(cd "$work" && clean "$work/jax/bin/python" -c "import customop_example_kernels" 2>&1 || true)
grep -q "customop_example_kernels needs customop's Python package" <<<"$out" ||
  { echo "without customop the import said: $out" >&2; exit 1; }
echo "without customop: ImportError naming it"

step "a new venv with torch (the newest-torch venv's, through a .pth): pip install the two wheels"
"$base" -m venv "$work/torch"
torch_site=$(target/torch-venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
own_site=$("$work/torch/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# The wheels first (pip would take the cache's customop for installed otherwise), then torch.
"$work/torch/bin/pip" install -q --disable-pip-version-check --no-deps \
  "$dist"/customop-0.1.0-*.whl "$kernels"
echo "$torch_site" > "$own_site/zz_torch_from_cache.pth"
cat > "$work/use_torch.py" <<'PY'
import sys
import torch
import customop, customop_example_kernels
import customop_example_kernels.torch  # noqa: F401  registers torch.ops.example

assert customop.__file__.startswith(sys.prefix), customop.__file__   # the wheel's, not the cache's
assert customop_example_kernels.LIBRARY.startswith(sys.prefix)
x = torch.arange(12, dtype=torch.float32).reshape(3, 4) - 5.0
want = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-3)
got = torch.ops.example.rms_norm_t(x, eps=1e-3)
torch.testing.assert_close(got, want)
print("torch %s: torch.ops.example.rms_norm_t (native: %s) equals torch's"
      % (torch.__version__, customop_example_kernels.torch.library.native))
PY
(cd "$work" && clean "$work/torch/bin/python" use_torch.py)
echo "wheels: built, installed into new venvs, and called from JAX and torch outside the repository"
