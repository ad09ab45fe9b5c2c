"""torch's deployment without Python: the seed model (its 56-byte `my_lib::Blob` a buffer),
exported, saved and loaded (torch.export.save/load), compiled with AOTInductor into a package
(examples/aoti/compile_seed.py), and run from C++ (examples/aoti/run_seed.cpp: g++ against the
torch wheel's headers and libtorch) in a process with no Python: the kernel cdylib defines its
ops and registers their native kernels itself (`customop_torch_register_all`). It gives
[3, 5, -2]; another blob swapped in by the external's name (AOTInductor's constant update) gives
what eager torch gives for it; a blob of the wrong size is refused by the cdylib's check
(`customop_check_descriptor`) before AOTInductor copies it. And torch.export.save/load round
trips of programs with a descriptor attribute, a string and lists.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so PYTHONPATH=python \\
     target/torch-venv/bin/python -m unittest tests/torch/test_aoti.py
"""

import os
import subprocess
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from customop.torch import native  # noqa: E402
from torch_helpers import LIB, Wrap, ops  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
KERNELS = os.environ["CUSTOMOP_KERNELS"]
TORCH = os.path.dirname(torch.__file__)
# torch 2.9's headers build with C++17; 2.15's need C++20 (CppSignature.h).
CXX_STANDARD = "-std=c++17" if native.abi_version()[:2] <= (2, 9) else "-std=c++20"


class FromCpp(unittest.TestCase):
    def test_the_seed_package_runs_from_cpp_without_python(self):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, os.path.join(ROOT, "examples", "aoti",
                                                         "compile_seed.py"), KERNELS, tmp],
                           check=True, capture_output=True)
            exe = os.path.join(tmp, "run_seed")
            subprocess.run(["g++", CXX_STANDARD, "-O0", "-I" + os.path.join(TORCH, "include"),
                            "-I" + os.path.join(TORCH, "include", "torch", "csrc", "api",
                                                "include"),
                            os.path.join(ROOT, "examples", "aoti", "run_seed.cpp"), "-o", exe,
                            "-L" + os.path.join(TORCH, "lib"), "-ltorch_cpu", "-lc10", "-ltorch",
                            "-Wl,-rpath," + os.path.join(TORCH, "lib"), "-ldl"], check=True)
            linked = subprocess.run(["ldd", exe], check=True, capture_output=True,
                                    text=True).stdout
            self.assertNotIn("libpython", linked)
            # No Python anywhere in the process: a bare environment, the library path the
            # package's model library needs (it is libtorch's).
            out = subprocess.run([exe, KERNELS, os.path.join(TORCH, "lib", "libtorch_cpu.so"),
                                  tmp], check=True, capture_output=True, text=True,
                                 env={"PATH": "/usr/bin:/bin",
                                      "LD_LIBRARY_PATH": os.path.join(TORCH, "lib")}).stdout
            with open(os.path.join(tmp, "expected.txt")) as f:
                eager, other = f.read().splitlines()
        self.assertEqual(eager, "[3, 5, -2]")
        self.assertNotEqual(other, eager)
        self.assertEqual(out.splitlines(), [
            eager, other,
            "refused: descriptor `my_lib::Blob`: the header says the payload is 32 bytes, but "
            "16 follow it [bad_descriptor]",
        ])


class SaveLoad(unittest.TestCase):
    def round_trip(self, module, *args):
        ep = torch.export.export(module, args)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.pt2")
            torch.export.save(ep, path)
            loaded = torch.export.load(path)
        return module(*args), loaded.module()(*args)

    def test_an_external_buffer(self):
        blob = LIB.pack("my_lib::Blob", {"gain": 2.0, "bias": -1, "seed": 42,
                                         "tag": b"customop seed!!!"})
        m = Wrap(lambda s, x: ops.my_custom_library.custom_op_external(s.blob, torch.sin(x)) + 1,
                 blob=blob)
        want, got = self.round_trip(m, torch.arange(9, dtype=torch.float32).reshape(3, 3) * 0.5)
        self.assertEqual(got.tolist(), [3, 5, -2])
        self.assertTrue(torch.equal(got, want))

    def test_descriptor_string_and_list_attributes(self):
        cfg = LIB.pack_attr("example::NormCfg", {"scale": -3.75, "shift": 0.5,
                                                 "mode": "ScaleShift"})
        m = Wrap(lambda s, x: ops.example.rms_norm(x, eps=1e-5, cfg=cfg)
                 + ops.example_lib.affine(x, factor=1.5, label="héllo", offsets=[1, -2],
                                          flag=True, small=3))
        want, got = self.round_trip(m, torch.tensor([[3.0, 4.0], [1.0, -1.0]]))
        self.assertTrue(torch.equal(got, want))
        x = torch.tensor([[3.0, 4.0], [1.0, -1.0]])
        rms = torch.sqrt((x * x).mean(dim=1, keepdim=True) + 1e-5)
        torch.testing.assert_close(got, x / rms * -3.75 + 0.5 + (1.5 * x + 9))


if __name__ == "__main__":
    unittest.main()
