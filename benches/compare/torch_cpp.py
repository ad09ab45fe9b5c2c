"""Eager per-call time of a customop op called from torch against the same op as a C++
extension op (`TORCH_LIBRARY` with a CPU kernel, built here with g++ against the running torch's
headers: the floor for any op called through `torch.ops`), in grad mode and under
`torch.inference_mode()`, on 3x3 f32: `example::checked_sqrt` natively, on the Python path, and
`cppref::checked_sqrt`, with `torch.sin` for scale. One command runs it on every test venv's
torch (2.9 and the newest):

    bash benches/compare/run.sh --torch-cpp

Each side runs in its own process; each time is the median over 7 rounds of 3,000 calls.

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): the C++ op is built and
checked as usual, but kept in target/compare under a name made of the torch version and a hash
of the source and the compiler's arguments, so that torch_autograd.py (and the next smoke run)
reuse it rather than compile it again (about 15 s a torch on 2 cores); each time is 2 rounds of
20 calls (torch_eager's smoke sizes); no timing is asserted.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

from torch_eager import CALLS, ROUNDS, SMOKE, both_modes  # the same timing as --torch-eager

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def build_cpp_op(out_dir):
    """The C++ op's shared library, built against the imported torch (in smoke mode, the one
    built before for this torch and source, if any)."""
    import torch
    from customop.torch import native

    root = os.path.dirname(torch.__file__)
    std = "-std=c++17" if native.abi_version()[:2] <= (2, 9) else "-std=c++20"
    src = os.path.join(HERE, "cpp", "checked_sqrt.cpp")
    args = [std, "-O2", "-shared", "-fPIC",
            "-I" + os.path.join(root, "include"),
            "-I" + os.path.join(root, "include", "torch", "csrc", "api", "include"),
            src, "-L" + os.path.join(root, "lib"), "-ltorch_cpu", "-lc10",
            "-Wl,-rpath," + os.path.join(root, "lib")]
    so = os.path.join(out_dir, "libcppref.so")
    if SMOKE:
        key = hashlib.sha256(repr((torch.__version__, args)).encode() + open(src, "rb").read())
        so = os.path.join(ROOT, "target", "compare", "libcppref-%s-%s.so"
                          % (torch.__version__, key.hexdigest()[:16]))
        if os.path.exists(so):
            return so
        os.makedirs(os.path.dirname(so), exist_ok=True)
    subprocess.run(["g++", *args, "-o", so + ".tmp"], check=True)
    os.replace(so + ".tmp", so)
    return so


def side(mode, cpp_so):
    import torch
    import customop.torch as ct

    ct.load(os.environ["CUSTOMOP_KERNELS"], native=mode == "native")
    x = torch.tensor([[4.0, 9.0, 16.0], [1.0, 0.25, 2.0], [3.0, 5.0, 7.0]])
    cases = {"customop": lambda: torch.ops.example.checked_sqrt(x)}
    if mode == "native":
        torch.ops.load_library(cpp_so)
        want = torch.sqrt(x)
        assert torch.equal(torch.ops.cppref.checked_sqrt(x), want)
        assert torch.equal(torch.ops.example.checked_sqrt(x), want)
        cases["C++ op"] = lambda: torch.ops.cppref.checked_sqrt(x)
        cases["torch.sin"] = lambda: torch.sin(x)
    print(json.dumps({"torch": torch.__version__, "times": both_modes(cases)}))


def main():
    if len(sys.argv) > 2:
        side(sys.argv[1], sys.argv[2])
        return
    with tempfile.TemporaryDirectory() as tmp:
        so = build_cpp_op(tmp)
        got = {}
        for mode in ("native", "python"):
            r = subprocess.run([sys.executable, __file__, mode, so], check=True,
                               capture_output=True, text=True)
            got[mode] = json.loads(r.stdout.strip().splitlines()[-1])
    native, python = got["native"]["times"], got["python"]["times"]
    cpp = native["C++ op"]
    print("torch %s: eager per-call time of checked_sqrt on 3x3 f32, us (median of %d x %d "
          "calls); grad mode | inference_mode" % (got["native"]["torch"], ROUNDS, CALLS))
    rows = [("C++ extension op (TORCH_LIBRARY)", cpp), ("customop native", native["customop"]),
            ("customop Python path", python["customop"]), ("torch.sin", native["torch.sin"])]
    for name, (g, i) in rows:
        print("  %-34s %7.2f | %6.2f   ratio to the C++ op %5.2f | %5.2f"
              % (name, g, i, g / cpp[0], i / cpp[1]))


if __name__ == "__main__":
    main()
