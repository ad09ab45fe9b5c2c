#!/usr/bin/env bash
# The book's quick start (book/src/quick-start.md), followed word for word in a new folder
# outside the repository: every block marked `<!-- quickstart: run -->` is run, in order, in one
# shell; every block marked `<!-- quickstart: file PATH -->` is written to PATH first (rust
# blocks without their `# `-hidden lines, as rustdoc shows them). Two things are the test's:
# `CUSTOMOP` (the book has the reader set it to their checkout) is this checkout, and the venv
# the book makes (`<!-- quickstart: venv -->`) also sees the newest-torch venv's packages through
# a .pth file (torch is 3 GB with its CUDA libraries; the book's `pip install` then finds torch
# and jax installed and installs customop, from this checkout). Needs the set-up's venvs and a
# Python 3.12 (pyenv's is found).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
book=book/src/quick-start.md
work=$(mktemp -d /tmp/customop-quickstart.XXXXXX)
# The book's `pip install "$CUSTOMOP/python[...]"` builds in the checkout (build/, egg-info):
# what it made there goes with the folder.
made=()
for d in python/build python/customop.egg-info; do [ -e "$d" ] || made+=("$root/$d"); done
trap 'rm -rf "$work" "${made[@]}"' EXIT
for p in "$(pyenv prefix 3.12.1 2>/dev/null || true)/bin" /root/.pyenv/versions/3.12.1/bin; do
  [ -x "$p/python3.12" ] && { PATH="$p:$PATH"; break; }
done
command -v python3.12 >/dev/null || { echo "no python3.12 on PATH" >&2; exit 1; }
torch_site=$(target/torch-venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# The book's blocks as one script.
python3 - "$book" "$root" "$torch_site" > "$work/steps.sh" <<'PY'
import re, sys
book, root, torch_site = sys.argv[1:]
text = open(book).read()
out = ["set -euo pipefail"]
blocks = re.findall(r"<!-- quickstart: (run|venv|file (\S+)) -->\n```([a-z]*)\n(.*?)```", text, re.S)
assert blocks, "no quickstart blocks in %s" % book
for kind, path, lang, body in blocks:
    if kind.startswith("file"):
        if lang == "rust":
            body = "".join(l for l in body.splitlines(True) if not l.lstrip().startswith("# ")
                           and l.strip() != "#")
        out.append("mkdir -p \"$(dirname %s)\"\ncat > %s <<'CUSTOMOP_QUICKSTART_EOF'\n%sCUSTOMOP_QUICKSTART_EOF"
                   % (path, path, body))
        continue
    body = re.sub(r"^export CUSTOMOP=.*$", "export CUSTOMOP=%s" % root, body, flags=re.M)
    out.append("echo '+ %s' >&2" % body.strip().replace("'", "'\\''").replace("\n", "\n+ "))
    out.append(body)
    if kind == "venv":
        # The test's shortcut: torch and jax from the newest-torch venv (see the header).
        out.append('echo %s > "$(.venv/bin/python -c \'import sysconfig; '
                   'print(sysconfig.get_paths()["purelib"])\')/zz_quickstart_torch.pth"'
                   % torch_site)
print("\n".join(out))
PY
cd "$work"
env -u PYTHONPATH -u CUSTOMOP_KERNELS bash steps.sh
# The customop the venv imports is the one the book's pip installed into it, from the checkout.
env -u PYTHONPATH my-ops/.venv/bin/python -c '
import sys, customop
assert customop.__file__.startswith(sys.prefix), customop.__file__'
echo "quick start: followed as written in $work, outside the repository"
