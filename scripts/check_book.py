"""Checks the book: every relative link points at a file that exists (and, for `#anchor`
links into a chapter, at one of its headings), every chapter is in SUMMARY.md, every chapter
with a ```rust block is a doctest (in runtime/src/lib.rs's `mod book`), every block right after
a `<!-- same as path/in/repo -->` comment is that file's text, and every ```python block runs
(but the quick start's files, which scripts/quickstart.sh runs in the reader's folder).

Usage: python scripts/check_book.py book/src   (with CUSTOMOP_KERNELS set for the Python blocks)
Exits non-zero on the first broken link or failing block.
"""

import os
import re
import subprocess
import sys


def anchors(path):
    out = set()
    for line in open(path, encoding="utf-8"):
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^a-z0-9 _-]", "", title).replace(" ", "-"))
    return out


def chapters(src):
    """Every .md file under src, as a path relative to it (`reference/cli.md`)."""
    out = []
    for dirpath, _, files in os.walk(src):
        for f in files:
            if f.endswith(".md"):
                out.append(os.path.relpath(os.path.join(dirpath, f), src))
    return sorted(out)


def main(src):
    failures = []
    blocks = []
    root = os.path.dirname(os.path.dirname(os.path.abspath(src)))
    summary = open(os.path.join(src, "SUMMARY.md"), encoding="utf-8").read()
    listed = set(re.findall(r"\]\(([^)#\s]+)\)", summary))
    with open(os.path.join(root, "runtime", "src", "lib.rs"), encoding="utf-8") as f:
        doctests = set(re.findall(r'include_str!\("\.\./\.\./book/src/([^"]+)"\)', f.read()))
    for name in chapters(src):
        path = os.path.join(src, name)
        text = open(path, encoding="utf-8").read()
        if name != "SUMMARY.md" and name not in listed:
            failures.append("%s: not in SUMMARY.md" % name)
        if re.search(r"^```rust", text, re.M) and name not in doctests:
            failures.append("%s: has ```rust blocks but is not in runtime/src/lib.rs's mod book "
                            "(its examples would not be compiled)" % name)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+://", target):
                failures.append("%s: external link %s (the book links only to itself)" % (name, target))
                continue
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(dest):
                failures.append("%s: broken link %s" % (name, target))
            elif anchor and anchor not in anchors(dest):
                failures.append("%s: no heading #%s in %s" % (name, anchor, file or name))
        for file, shown in re.findall(r"<!-- same as (\S+) -->\n```[a-z]*\n(.*?)```", text, re.S):
            with open(os.path.join(root, file), encoding="utf-8") as f:
                if f.read() != shown:
                    failures.append("%s: the block after `same as %s` is not that file (copy "
                                    "it again)" % (name, file))
        for i, m in enumerate(re.finditer(r"(<!-- quickstart: [^>]*-->\n)?```python\n(.*?)```", text, re.S)):
            # A quick-start file runs in scripts/quickstart.sh, in the reader's folder where
            # its kernel library is built; here it would find no library.
            if not m.group(1):
                blocks.append(("%s, python block %d" % (name, i + 1), m.group(2)))
    for f in failures:
        print(f, file=sys.stderr)
    if failures:
        return 1
    for what, code in blocks:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if r.returncode != 0:
            print("%s failed:\n%s%s" % (what, r.stdout, r.stderr), file=sys.stderr)
            return 1
        print("ran %s" % what)
    print("book: links ok, %d python blocks ran" % len(blocks))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
