"""Compiles the seed model (examples/torch/seed.py's `Seed`, its 56-byte `my_lib::Blob` a
registered buffer named `external`) with AOTInductor into a package that C++ runs with no
Python (run_seed.cpp). Also writes the inputs the C++ program feeds, as raw bytes: x (3x3 f32),
the seed's blob, another blob, and a blob of the wrong size.

Run: python examples/aoti/compile_seed.py KERNELS_SO OUT_DIR
"""

import os
import sys

import torch

import customop.torch as ct

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch"))
from seed import Seed  # noqa: E402


def main(kernels, out):
    lib = ct.load(kernels)
    blob = lib.pack("my_lib::Blob", {"gain": 2.0, "bias": -1, "seed": 42,
                                     "tag": b"customop seed!!!"})
    other = lib.pack("my_lib::Blob", {"gain": -1.0, "bias": 4, "seed": 7,
                                      "tag": b"another blob, 16"})
    x = torch.arange(9, dtype=torch.float32).reshape(3, 3) * 0.5
    model = Seed(blob)
    ep = torch.export.export(model, (x,))
    # A round trip through torch.export.save/load first: the package is of the loaded program.
    path = os.path.join(out, "seed.pt2")
    torch.export.save(ep, os.path.join(out, "seed_exported.pt2"))
    ep = torch.export.load(os.path.join(out, "seed_exported.pt2"))
    torch._inductor.aoti_compile_and_package(ep, package_path=path)
    with open(os.path.join(out, "x.bin"), "wb") as f:
        f.write(x.numpy().tobytes())
    for name, b in (("blob", blob), ("other", other), ("short", blob[:40])):
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(b.numpy().tobytes())
    # What the C++ program must print, from this process (eager, through customop's kernels).
    with open(os.path.join(out, "expected.txt"), "w") as f:
        f.write("%s\n%s\n" % (model(x).tolist(), Seed(other)(x).tolist()))
    print("packaged", path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
