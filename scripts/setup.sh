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
#     target/pjrt-plugin, for the Rust runner (feature `pjrt`); and the PJRT 0.114 header.
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
