"""The first mistakes with torch, each in customop's words with its fix: naming an op
(`torch.ops.example.rms_norm_t`) before its library is loaded, where torch said only
"'_OpNamespace' 'example' object has no attribute 'rms_norm_t'"; a name the loaded library does
not have; and a wrong library path for `customop.torch.load`. `OpNotLoadedError` is an
`AttributeError`, so `hasattr` and `getattr(..., default)` keep their meaning, for torch's own
namespaces too.

Run on both paths: CUSTOMOP_TORCH_NATIVE=1 (default) or 0, with
CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/torch/test_not_loaded.py
"""

import os
import tempfile
import unittest

import torch

import customop.torch as ct
from customop.library import LibraryLoadError

PATH = os.environ["CUSTOMOP_KERNELS"]
NATIVE = os.environ.get("CUSTOMOP_TORCH_NATIVE", "1") == "1"


class BeforeLoad(unittest.TestCase):
    def test_an_op_named_before_its_library_is_loaded_then_after(self):
        with self.assertRaises(ct.OpNotLoadedError) as cm:
            torch.ops.example.rms_norm_t
        self.assertIsInstance(cm.exception, AttributeError)
        self.assertEqual(str(cm.exception),
                         "torch has no op `example::rms_norm_t`: if it is an op of a customop "
                         "kernel library, load the library first, before the op is named: "
                         "customop.torch.load(\"path/to/libmy_ops.so\") (customop kernel "
                         "libraries loaded in this process: none)")
        self.assertFalse(hasattr(torch.ops.example, "rms_norm_t"))
        self.assertIsNone(getattr(torch.ops.example, "rms_norm_t", None))
        self.assertTrue(hasattr(torch.ops.aten, "add"))
        self.assertFalse(hasattr(torch.ops.aten, "customop_no_such_op"))
        # A wrong path, named before anything is registered.
        missing = os.path.join(tempfile.mkdtemp(), "libmy_ops.so")
        with self.assertRaises(LibraryLoadError) as cm:
            ct.load(missing, native=NATIVE)
        self.assertIn("customop: no kernel library at %s (no such file)" % missing,
                      str(cm.exception))
        lib = ct.load(PATH, native=NATIVE)
        x = torch.rand(2, 3) + 1
        torch.testing.assert_close(torch.ops.example.rms_norm_t(x, eps=1e-5),
                                   x / x.pow(2).mean(-1, keepdim=True).add(1e-5).sqrt())
        # A name the loaded library does not have: what it has, in the same namespace.
        with self.assertRaises(ct.OpNotLoadedError) as cm:
            torch.ops.example.rms_norm_tt
        m = str(cm.exception)
        self.assertIn("torch has no op `example::rms_norm_tt`: the customop kernel library "
                      "loaded here with namespace `example` (%s) has example::add_offset"
                      % lib.path, m)
        self.assertIn("and no `rms_norm_tt`", m)


if __name__ == "__main__":
    unittest.main()
