#!/usr/bin/env bash
# Installs what customop's demo and tests need, idempotently:
#   - Debian's LLVM/MLIR 22 packages (melior links MLIR statically), and valgrind (the
#     handler-layer tests run under memcheck),
#   - a Python venv with pinned jax/jaxlib (XLA harness) and torch/torch_xla (the PyTorch
#     path), kept in a cache outside the clone
#     (${CUSTOMOP_CACHE:-${XDG_CACHE_HOME:-~/.cache}/customop}/xla-venv-<requirements hash>,
#     so that every clone and CI run on the machine reuses it) and linked as target/xla-venv,
#   - this clone's Python package (python/, `customop`) installed into that venv, every time
#     (a few seconds; the venv is shared, so the last clone to run wins),
#   - mdbook at a pinned version, for the book.
# Each step checks first and does nothing when its part is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

MDBOOK_VERSION=0.4.52
APT_PACKAGES=(libmlir-22-dev mlir-22-tools llvm-22-dev libclang-22-dev libpolly-22-dev
  libzstd-dev libz3-dev libxml2-dev zlib1g-dev valgrind)
REQ=tests/xla/requirements.txt
CACHE="${CUSTOMOP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/customop}"
VENV="$CACHE/xla-venv-$(sha256sum "$REQ" | cut -c1-16)"
LINK=target/xla-venv

say() { printf '[setup] %s\n' "$*" >&2; }

# --- Debian packages -------------------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
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
venv_ok() {
  [ -x "$VENV/bin/python" ] && [ -f "$VENV/.requirements" ] && cmp -s "$REQ" "$VENV/.requirements" &&
    "$VENV/bin/python" -c 'import jax, jaxlib, numpy, torch, torch_xla' >/dev/null 2>&1
}
if ! venv_ok; then
  if ! base=$(find_python); then
    say "no working Python >= 3.12 found (tried pyenv's 3.12+, python3.13, python3.12, python3)."
    say "install one (e.g. apt-get install python3.12 python3.12-venv, or pyenv install 3.12)"
    say "or set CUSTOMOP_BASE_PYTHON to its path"
    exit 1
  fi
  say "creating $VENV with $base ($("$base" --version 2>&1))"
  rm -rf "$VENV"
  mkdir -p "$CACHE"
  "$base" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ"
  cp "$REQ" "$VENV/.requirements"   # written last: marks the venv complete
fi
mkdir -p target
if [ "$(readlink "$LINK" 2>/dev/null)" != "$VENV" ]; then
  rm -rf "$LINK"
  ln -s "$VENV" "$LINK"
fi
# customop's own package, from this clone (built in a temporary copy, so the clone stays clean).
pkg=$(mktemp -d)
cp -r python/. "$pkg"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
  --force-reinstall "$pkg" >/dev/null
rm -rf "$pkg"

# --- mdbook ----------------------------------------------------------------------------------
if ! mdbook --version 2>/dev/null | grep -q "v$MDBOOK_VERSION"; then
  say "installing mdbook $MDBOOK_VERSION"
  cargo install --locked --quiet mdbook --version "$MDBOOK_VERSION"
fi
say "ready"
