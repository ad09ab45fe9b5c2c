#!/usr/bin/env bash
# The crates a user depends on, as crates.io would serve them: `cargo package` (with its
# verification: each .crate builds on its own) for customop-shape, customop-macros, customop and
# customop-cli; then a kernel crate and a model crate written as a user writes them
# (tests/packaged/: `customop = "0.1"`, no path into this repository), copied outside the
# repository and built against the unpacked .crate files only ([patch.crates-io] in their
# .cargo/config.toml). The kernel cdylib's manifest is read by `customop ops`; the model builds
# a program with the kernel's op and runs it on the CPU plugin: y = 2 x + 1.
#
# Usage: bash scripts/packaged.sh CUSTOMOP_CLI   (scripts/test.sh runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=$1
step() { printf '\n[packaged] %s\n' "$*"; }
step "cargo package (verified) customop-shape customop-macros customop customop-cli"
# Cargo takes a registry crate as fixed by its name and version: customop-cli's verification
# reads customop from the local registry of the crates just packaged, which cargo extracts once
# into $CARGO_HOME/registry/src/-HASH/ (a folder per target folder) and builds once; an earlier
# run's sources and builds would be taken though the files have changed.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/customop-*0.1.0
cargo clean -q -p customop-shape -p customop-macros -p customop
# (--allow-dirty: what is packaged is the tree under test, committed or not.)
if ! cargo package --locked --allow-dirty -p customop-shape -p customop-macros -p customop \
    -p customop-cli > target/package.log 2>&1; then
  cat target/package.log >&2; exit 1
fi
grep -E '^\s*(Packaged|Verifying)' target/package.log
work=$(mktemp -d /tmp/customop-packaged.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/crates"
for c in customop-shape customop-macros customop customop-cli; do
  tar -xzf "target/package/$c-0.1.0.crate" -C "$work/crates"
done
cp -r tests/packaged/kernel tests/packaged/model "$work/"
prefix=$(llvm-config-22 --prefix)
mkdir -p "$work/.cargo"
cat > "$work/.cargo/config.toml" <<TOML
# What crates.io would serve: the packaged crates, unpacked.
[patch.crates-io]
customop = { path = "$work/crates/customop-0.1.0" }
customop-macros = { path = "$work/crates/customop-macros-0.1.0" }
customop-shape = { path = "$work/crates/customop-shape-0.1.0" }

# As the quick start tells a user: where Debian's MLIR 22 is, for melior.
[env]
MLIR_SYS_220_PREFIX = "$prefix"
TABLEGEN_220_PREFIX = "$prefix"
LLVM_SYS_220_PREFIX = "$prefix"
TOML
# The same dependency versions as this repository's lock file, which its tests ran with.
cp Cargo.lock "$work/kernel/Cargo.lock"
cp Cargo.lock "$work/model/Cargo.lock"
if grep -rq "$PWD" "$work/kernel" "$work/model"; then
  echo "a user crate names this repository" >&2; exit 1
fi
# The workspace's target folder, where the verification above built the same registry crates
# (melior, ...) with the same (default) profile: built once.
export CARGO_TARGET_DIR="$PWD/target"
step "the kernel crate (cdylib, no MLIR) against the packaged crates"
(cd "$work/kernel" && cargo build --lib -q)
lib="$CARGO_TARGET_DIR/debug/libquick_kernels.so"
[ -f "$lib" ] || { echo "no $lib" >&2; exit 1; }
# The symbols first: `nm | grep -q` under pipefail reads a found symbol as nm's SIGPIPE.
symbols=$(nm "$lib")
if grep -q mlirContextCreate <<<"$symbols"; then echo "the kernel cdylib links MLIR" >&2; exit 1; fi
"$cli" ops "$lib" | tee "$work/ops.txt"
grep -q 'quick::apply_gain(Tensor gain, Tensor x) -> Tensor' "$work/ops.txt"
grep -q 'quick::Gain (32 bytes packed' "$work/ops.txt"
step "the model crate (builder + runner) against the packaged crates"
out=$(cd "$work/model" && cargo run -q 2>/dev/null)
echo "$out"
[ "$out" = "y = [3.0, 5.0, 7.0]" ] || { echo "the model printed: $out" >&2; exit 1; }
# The customop crates the model used are the unpacked .crate files, none of this repository.
meta=$(cd "$work/model" && cargo metadata --format-version 1)
for c in customop customop-macros customop-shape; do
  grep -q "\"manifest_path\":\"$work/crates/$c-0.1.0/Cargo.toml\"" <<<"$meta" ||
    { echo "the model's $c is not the packaged one" >&2; exit 1; }
done
if grep -q "\"manifest_path\":\"$PWD/" <<<"$meta"; then
  echo "the model uses a crate of this repository" >&2; exit 1
fi
echo "packaged crates: packaged, verified, and used by a kernel crate and a model crate outside the repository"
