#!/usr/bin/env bash
# Installs what customop's demo and tests need, idempotently:
#   - Debian's LLVM/MLIR 22 packages (melior links MLIR statically), and valgrind (the
#     handler-layer tests run under memcheck),
#   - a Python venv with pinned jax/jaxlib (XLA harness) and torch/torch_xla (the PyTorch
#     path), kept in a cache outside the clone
#     (${CUSTOMOP_CACHE:-${XDG_CACHE_HOME:-~/.cache}/customop}/xla-venv-<requirements hash>,
#     so that every clone and CI run on the machine reuses it) and linked as target/xla-venv,
#   - a second venv with the newest torch (2.15, no torch_xla; tests/torch/requirements-newest.txt),
#     cached the same way (torch-venv-<requirements hash>) and linked as target/torch-venv, for
#     the torch tests on the newest torch, and a third with the oldest jax customop supports
#     (0.10.0, no torch; tests/xla/requirements-oldest-jax.txt, target/jax-oldest-venv),
#   - this clone's Python package (python/, `customop`) installed into both venvs, every time
#     (a few seconds; the venvs are shared, so the last clone to run wins),
#   - mdbook at a pinned version, for the book,
#   - XLA's CPU PJRT plugins customop knows (runtime/src/pjrt/plugins.txt: PyPI wheels pinned
#     by hash), each unpacked into a folder of the same cache, the default one linked as
#     target/pjrt-plugin, for the Rust runner (feature `pjrt`); and the PJRT 0.114 header,
#   - a CUDA C compiler (nvcc 13.0, from NVIDIA's PyPI wheels, pinned by hash) unpacked into
#     the same cache (cuda-<version>) and linked as target/cuda, so that CUDA C kernels compile
#     on a machine with no GPU and no system CUDA.
# Each step checks first and does nothing when its part is already there.
#
# `setup.sh --pjrt` installs only what the Rust runner and the demo need: the Debian
# packages (LLVM/MLIR, to build programs with melior) and the default plugin; no venv, no
# mdbook.
set -euo pipefail
cd "$(dirname "$0")/.."

ONLY_PJRT=0
case "${1:-}" in
  --pjrt) ONLY_PJRT=1 ;;
  "") ;;
  *) echo "usage: $0 [--pjrt]" >&2; exit 2 ;;
esac

MDBOOK_VERSION=0.4.52
APT_PACKAGES=(libmlir-22-dev mlir-22-tools llvm-22-dev libclang-22-dev libpolly-22-dev
  libzstd-dev libz3-dev libxml2-dev zlib1g-dev)
# valgrind (the handler layer under memcheck), g++ (a C++ program calling an op through torch's
# dispatcher, tests/torch/cpp).
[ "$ONLY_PJRT" = 1 ] || APT_PACKAGES+=(valgrind g++)
# The PJRT 0.114 header for the runner's layout test: pypjrt's sdist vendors it (Apache-2.0).
PYPJRT_VERSION=0.1.1
PYPJRT_SHA256=e85e8fd382801726f9b8d1348deeebe5fb3aab35e95147c09d693cc701190dec
REQ=tests/xla/requirements.txt
CACHE="${CUSTOMOP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/customop}"
VENV="$CACHE/xla-venv-$(sha256sum "$REQ" | cut -c1-16)"
LINK=target/xla-venv
# The newest torch, without torch_xla (its last release supports torch 2.9 only).
TORCH_REQ=tests/torch/requirements-newest.txt
TORCH_VENV="$CACHE/torch-venv-$(sha256sum "$TORCH_REQ" | cut -c1-16)"
TORCH_LINK=target/torch-venv
# The oldest jax customop supports, without torch.
JAX_OLDEST_REQ=tests/xla/requirements-oldest-jax.txt
JAX_OLDEST_VENV="$CACHE/jax-oldest-venv-$(sha256sum "$JAX_OLDEST_REQ" | cut -c1-16)"
JAX_OLDEST_LINK=target/jax-oldest-venv

say() { printf '[setup] %s\n' "$*" >&2; }

# --- Debian packages -------------------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    say "missing Debian packages: ${missing[*]}"
    say "run as root:  apt-get update && apt-get install -y ${missing[*]}"
    exit 1
  fi
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ "$(llvm-config-22 --prefix)" != /usr/lib/llvm-22 ]; then
  say "llvm-config-22 --prefix is $(llvm-config-22 --prefix), but .cargo/config.toml says /usr/lib/llvm-22"
  exit 1
fi

# --- XLA's CPU PJRT plugins -------------------------------------------------------------------
# The plugins customop knows, from runtime/src/pjrt/plugins.txt (one line a plugin, the default
# first; the runner reads the same table): pip downloads each wheel without its dependencies
# (any Python 3 with pip will do: nothing is installed into it), its hash is checked, and the
# plugin (and the PJRT C header, where the wheel has one) is unpacked into the cache, its hash
# checked too. `--pjrt` installs the default plugin only; the tests run on all of them. The
# PJRT 0.114 header (the pypjrt sdist's copy) is for the runner's layout test.
pip_python=""
for c in python3 "${CUSTOMOP_BASE_PYTHON:-}"; do
  if [ -n "$c" ] && "$c" -m pip --version >/dev/null 2>&1; then pip_python=$c; break; fi
done
need_pip() {
  [ -n "$pip_python" ] || { say "no python3 with pip to download $1 (apt-get install python3-pip)"; exit 1; }
}
install_plugin() {  # name version dir wheel wheel_sha256 member sha256 header
  local name=$1 version=$2 dir="$CACHE/$3" wheel=$4 wheel_sha=$5 member=$6 sha=$7 header=$8
  [ -f "$dir/.complete" ] && return 0
  need_pip "the PJRT plugin $name $version"
  say "downloading the PJRT plugin $name $version"
  local tmp
  tmp=$(mktemp -d)
  "$pip_python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_27_x86_64 -d "$tmp" "$name==$version"
  if [ "$(sha256sum "$tmp/$wheel" | cut -d' ' -f1)" != "$wheel_sha" ]; then
    say "the downloaded $wheel does not have the pinned sha256 $wheel_sha"
    exit 1
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  "$pip_python" - "$tmp/$wheel" "$dir" "$member" "$header" <<'PY'
import os, sys, zipfile
wheel, out, member, header = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for name in [member] + ([header] if header != "-" else []):
        with z.open(name) as src, open(os.path.join(out, os.path.basename(name)), "wb") as dst:
            dst.write(src.read())
PY
  rm -rf "$tmp"
  if [ "$(sha256sum "$dir/$(basename "$member")" | cut -d' ' -f1)" != "$sha" ]; then
    say "the plugin in $wheel does not have the pinned sha256 $sha"
    rm -rf "$dir"
    exit 1
  fi
  echo "$wheel $wheel_sha" > "$dir/.complete"   # written last: marks it complete
}
first=1
while read -r name version _pjrt _stablehlo _ffi dir wheel wheel_sha member sha header; do
  case "$name" in ''|'#'*) continue ;; esac
  if [ "$first" = 1 ]; then DEFAULT_PJRT_DIR="$CACHE/$dir"; fi
  if [ "$first" = 1 ] || [ "$ONLY_PJRT" = 0 ]; then
    install_plugin "$name" "$version" "$dir" "$wheel" "$wheel_sha" "$member" "$sha" "$header"
  fi
  first=0
done < runtime/src/pjrt/plugins.txt
mkdir -p target
if [ "$(readlink target/pjrt-plugin 2>/dev/null)" != "$DEFAULT_PJRT_DIR" ]; then
  rm -rf target/pjrt-plugin
  ln -s "$DEFAULT_PJRT_DIR" target/pjrt-plugin
fi
if [ "$ONLY_PJRT" = 0 ]; then
  HEADER_DIR="$CACHE/pjrt-headers-0.114"
  if [ ! -f "$HEADER_DIR/.complete" ]; then
    need_pip "the PJRT 0.114 header"
    say "downloading the PJRT 0.114 header (the pypjrt 0.1.1 sdist)"
    tmp=$(mktemp -d)
    "$pip_python" -m pip download -q --disable-pip-version-check --no-deps --no-binary=:all: \
      -d "$tmp" "pypjrt==$PYPJRT_VERSION"
    if [ "$(sha256sum "$tmp/pypjrt-$PYPJRT_VERSION.tar.gz" | cut -d' ' -f1)" != "$PYPJRT_SHA256" ]; then
      say "the downloaded pypjrt-$PYPJRT_VERSION.tar.gz does not have the pinned sha256 $PYPJRT_SHA256"
      exit 1
    fi
    rm -rf "$HEADER_DIR"
    mkdir -p "$HEADER_DIR"
    tar -xzf "$tmp/pypjrt-$PYPJRT_VERSION.tar.gz" -C "$tmp"
    for h in pjrt_c_api.h pjrt_c_api_ffi_extension.h; do
      cp "$tmp/pypjrt-$PYPJRT_VERSION/vendor/xla/pjrt/c/$h" "$HEADER_DIR/"
    done
    rm -rf "$tmp"
    echo "pypjrt-$PYPJRT_VERSION.tar.gz $PYPJRT_SHA256" > "$HEADER_DIR/.complete"
  fi
fi
if [ "$ONLY_PJRT" = 1 ]; then
  say "ready (PJRT only)"
  exit 0
fi

# --- CUDA C compiler (nvcc) ------------------------------------------------------------------
# nvcc, ptxas, fatbinary (nvidia-cuda-nvcc), the device-side headers it includes (crt: the
# nvidia-cuda-crt wheel; cuda_runtime.h and the rest: nvidia-cuda-runtime; cuda/std, cub,
# thrust: nvidia-cuda-cccl) and cicc with libdevice (nvidia-nvvm). Each wheel holds its part of
# one tree, nvidia/cu13/{bin,include,lib,nvvm}, the layout of a CUDA toolkit: unpacked together
# into one folder they are one, and nvcc (its nvcc.profile finds nvvm/, include/ and cccl beside
# bin/) needs no flags but the host compiler, Debian's g++ (installed above; CUDA 13.0 takes
# gcc 6 to 15). 13.0.x, not newer: the GPU machines have driver 580 (CUDA 13.0), and the code
# we build there must load on it; each wheel is the newest 13.0.x patch on PyPI (the runtime's
# and cccl's patch numbers differ from nvcc's). No 13.0 wheel has cuobjdump.
CUDA_VERSION=13.0.88
CUDA_WHEELS=(  # name==version wheel sha256
  "nvidia-cuda-nvcc==13.0.88 nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 56fe502eb77625a12f25172caa3cdddb4e4c8ba2c8c17dba44b164761b380f03"
  "nvidia-cuda-crt==13.0.88 nvidia_cuda_crt-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 2c8043c7c9e02492716426e9919fc78d2c5b3b2a7a768a88e952676b08aa55a4"
  "nvidia-nvvm==13.0.88 nvidia_nvvm-13.0.88-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl c5f41ffeb6466944a026dfa5317d7d85355c119bbec279205d22f1869d1054e0"
  "nvidia-cuda-runtime==13.0.96 nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548"
  "nvidia-cuda-cccl==13.0.85 nvidia_cuda_cccl-13.0.85-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl e0da7ad981f3a8aff08241b5bfc1af868742a63e2762f53a5171c492ef242649"
)
CUDA_DIR="$CACHE/cuda-$CUDA_VERSION"
# The stamp is the pin list: a changed pin (a wheel of another patch) installs the tree again.
cuda_stamp=$(printf '%s\n' "${CUDA_WHEELS[@]}")
if [ "$(cat "$CUDA_DIR/.complete" 2>/dev/null)" != "$cuda_stamp" ]; then
  need_pip "nvcc $CUDA_VERSION"
  say "downloading nvcc $CUDA_VERSION (NVIDIA's CUDA wheels, ~100 MB)"
  tmp=$(mktemp -d)
  reqs=()
  for w in "${CUDA_WHEELS[@]}"; do reqs+=("${w%% *}"); done
  # Two platforms: nvidia-nvvm's wheel is tagged manylinux_2_12, the others manylinux_2_17
  # (pip matches --platform exactly, not "this one or older").
  "$pip_python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_12_x86_64 -d "$tmp" "${reqs[@]}"
  wheels=()
  for w in "${CUDA_WHEELS[@]}"; do
    read -r _ wheel sha <<<"$w"
    if [ "$(sha256sum "$tmp/$wheel" | cut -d' ' -f1)" != "$sha" ]; then
      say "the downloaded $wheel does not have the pinned sha256 $sha"
      exit 1
    fi
    wheels+=("$tmp/$wheel")
  done
  rm -rf "$CUDA_DIR"
  mkdir -p "$CUDA_DIR"
  # nvidia/cu13/X of every wheel to $CUDA_DIR/X, keeping the executable bits (zipfile drops
  # them); not the wheels' .metadata/ (NVIDIA's build scans, one copy a wheel).
  "$pip_python" - "$CUDA_DIR" "${wheels[@]}" <<'PY'
import os, sys, zipfile
out, prefix = sys.argv[1], "nvidia/cu13/"
for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            rel = info.filename[len(prefix):]
            if not info.filename.startswith(prefix) or not rel or info.is_dir() \
                    or rel.startswith(".metadata/"):
                continue
            path = os.path.join(out, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with z.open(info) as src, open(path, "wb") as dst:
                dst.write(src.read())
            os.chmod(path, 0o755 if (info.external_attr >> 16) & 0o111 else 0o644)
PY
  rm -rf "$tmp"
  # One kernel compiled to machine code, so that a tree nvcc cannot use (a header or cicc
  # missing, no host compiler) fails here, not in a test.
  tmp=$(mktemp -d)
  echo 'extern "C" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }' > "$tmp/k.cu"
  if ! "$CUDA_DIR/bin/nvcc" -fatbin -gencode arch=compute_80,code=sm_80 -o "$tmp/k.fatbin" \
      "$tmp/k.cu" >&2 || [ "$(od -An -tx4 -N4 "$tmp/k.fatbin" | tr -d ' ')" != ba55ed50 ]; then
    say "nvcc $CUDA_VERSION in $CUDA_DIR does not compile a kernel to a fatbin"
    rm -rf "$tmp" "$CUDA_DIR"
    exit 1
  fi
  rm -rf "$tmp"
  echo "$cuda_stamp" > "$CUDA_DIR/.complete"   # written last: marks it complete
fi
if [ "$(readlink target/cuda 2>/dev/null)" != "$CUDA_DIR" ]; then
  rm -rf target/cuda
  ln -s "$CUDA_DIR" target/cuda
fi

# --- Python venv with jax/jaxlib -------------------------------------------------------------
python_ok() { "$@" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
find_python() {
  local c
  if [ -n "${CUSTOMOP_BASE_PYTHON:-}" ] && python_ok "$CUSTOMOP_BASE_PYTHON"; then
    echo "$CUSTOMOP_BASE_PYTHON"; return
  fi
  if command -v pyenv >/dev/null 2>&1; then
    for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.(1[2-9])(\.|$)' | sort -V); do
      c="$(pyenv prefix "$v" 2>/dev/null)/bin/python3"
      if python_ok "$c"; then echo "$c"; return; fi
    done
  fi
  for c in python3.13 python3.12 python3; do
    if python_ok "$c"; then command -v "$c"; return; fi
  done
  return 1
}
# make_venv VENV REQUIREMENTS LINK CHECK: the venv at VENV with REQUIREMENTS installed (made
# again when the file changed), linked as LINK, with this clone's package installed into it.
make_venv() {
  local venv=$1 req=$2 link=$3 check=$4 base pkg
  if ! { [ -x "$venv/bin/python" ] && [ -f "$venv/.requirements" ] &&
         cmp -s "$req" "$venv/.requirements" &&
         "$venv/bin/python" -c "$check" >/dev/null 2>&1; }; then
    if ! base=$(find_python); then
      say "no working Python >= 3.12 found (tried pyenv's 3.12+, python3.13, python3.12, python3)."
      say "install one (e.g. apt-get install python3.12 python3.12-venv, or pyenv install 3.12)"
      say "or set CUSTOMOP_BASE_PYTHON to its path"
      exit 1
    fi
    say "creating $venv with $base ($("$base" --version 2>&1))"
    rm -rf "$venv"
    mkdir -p "$CACHE"
    "$base" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
    cp "$req" "$venv/.requirements"   # written last: marks the venv complete
  fi
  mkdir -p target
  if [ "$(readlink "$link" 2>/dev/null)" != "$venv" ]; then
    rm -rf "$link"
    ln -s "$venv" "$link"
  fi
  # customop's own package, from this clone (built in a temporary copy, so the clone stays
  # clean).
  pkg=$(mktemp -d)
  cp -r python/. "$pkg"
  # Not a build/ or egg-info left in the clone by an install from it (the book's `pip install
  # ./python`): setuptools would take build/'s older copies, which `cp` made as new as the sources.
  rm -rf "$pkg/build" "$pkg"/*.egg-info
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
    --force-reinstall "$pkg" >/dev/null
  rm -rf "$pkg"
}
make_venv "$VENV" "$REQ" "$LINK" 'import jax, jaxlib, numpy, torch, torch_xla'
make_venv "$TORCH_VENV" "$TORCH_REQ" "$TORCH_LINK" 'import numpy, ml_dtypes, torch'
make_venv "$JAX_OLDEST_VENV" "$JAX_OLDEST_REQ" "$JAX_OLDEST_LINK" 'import jax, jaxlib, numpy, scipy'

# --- mdbook ----------------------------------------------------------------------------------
mdbook_version=$(mdbook --version 2>/dev/null || true)
if [[ $mdbook_version != *"v$MDBOOK_VERSION"* ]]; then
  say "installing mdbook $MDBOOK_VERSION"
  cargo install --locked --quiet mdbook --version "$MDBOOK_VERSION"
fi
say "ready"
