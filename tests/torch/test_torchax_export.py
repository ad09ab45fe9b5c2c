"""customop.torchax: the StableHLO export of a PyTorch program on the newest torch, where
torch_xla does not run, through torchax and customop.xla.export: externals annotated and named
after the module's buffers or the forward's inputs, attributes of every kind, the program run
by jaxlib and by the Rust runner (the PJRT cross-check) and equal to torch eager.

Run (torch 2.15 with torchax, the test command's target/torch-venv):
    CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
    target/torch-venv/bin/python -m unittest tests/torch/test_torchax_export.py
"""

import os
import sys
import unittest

import jax
import numpy as np
import torch

import customop.torchax as cx
from customop.crosscheck import cross_check
from customop.xla import External, externals

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_helpers import LIB, Wrap, blob, ops, seed_expected  # noqa: E402



def export_and_run(model, *inputs):
    """The export, and its run on jaxlib (also through the Rust runner, when the test
    command's cross-check is on), as numpy arrays."""
    ep = torch.export.export(model, inputs)
    exp = cx.export(ep, LIB)
    args = [np.asarray(a) for a in cx.arguments(ep, *inputs)]
    out = exp.call(*args)
    outs = [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
    cross_check(LIB.path, exp.mlir_module(), args, outs, None)
    return exp, outs


class Export(unittest.TestCase):
    def test_a_buffer_external_is_annotated_by_name_and_runs_like_eager(self):
        m = Wrap(lambda s, x: ops.my_custom_library.custom_op_external(s.external,
                                                                       torch.sin(x)) + 1,
                 external=blob())
        x = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
        exp, (y,) = export_and_run(m, x)
        fp = LIB.library.layout("my_lib::Blob").fingerprint_hex
        self.assertEqual(externals(exp), [External(0, "external", "my_lib::Blob", fp, 56, False)])
        np.testing.assert_array_equal(y, m(x).numpy())
        self.assertEqual((y - 1).tolist(), seed_expected(torch.sin(x), {"gain": 2.0, "bias": -1}))
        text = exp.mlir_module()
        self.assertIn("stablehlo.custom_call @my_custom_library.custom_op_external(", text)
        # The annotation survives jax.export's serialisation.
        again = jax.export.deserialize(exp.serialize())
        self.assertEqual(externals(again), externals(exp))
        np.testing.assert_array_equal(np.asarray(again.call(blob().numpy(), x.numpy())), y)

    def test_a_forward_input_external_is_named_after_the_input(self):
        class Seed(torch.nn.Module):
            def forward(self, cfg_bytes, x):
                return ops.my_custom_library.custom_op_external(cfg_bytes, x)

        m = Seed()
        x = torch.ones(2, 2)
        exp, (y,) = export_and_run(m, blob(gain=3.0), x)
        (e,) = externals(exp)
        self.assertEqual((e.index, e.name, e.size), (0, "cfg_bytes", 56))
        self.assertEqual(y.tolist(), seed_expected(x, {"gain": 3.0, "bias": -1}))

    def test_attributes_of_every_kind_equal_eager(self):
        cfg = LIB.pack_attr("example::NormCfg", {"scale": -3.75, "shift": 0.5,
                                                 "mode": "ScaleShift"})

        def f(s, x):
            a = ops.example.shift_by(x, k=2)
            b = ops.example.rms_norm(a, eps=1e-5, cfg=cfg)
            return ops.example_lib.affine(b, factor=1.5, label="héllo", offsets=[1, -2],
                                          flag=True, small=3)

        m = Wrap(f)
        x = torch.tensor([[3.0, 4.0, -1.0], [1.0, -1.0, 0.5]])
        _, (y,) = export_and_run(m, x)
        np.testing.assert_allclose(y, m(x).numpy(), rtol=1e-6, atol=1e-6)

    def test_two_results_and_a_declared_backward_op(self):
        def f(s, x, w):
            y = ops.example.scale_rows(x, w)
            return y, ops.example.checked_sqrt(y.abs())

        m = Wrap(f)
        x, w = torch.randn(3, 4), torch.tensor([1.0, -2.0, 0.5])
        _, (y, z) = export_and_run(m, x, w)
        want_y, want_z = m(x, w)
        np.testing.assert_array_equal(y, want_y.numpy())
        np.testing.assert_array_equal(z, want_z.numpy())

    def test_an_op_that_updates_its_external_is_refused(self):
        m = Wrap(lambda s, x: ops.example.counter_step(s.state, x),
                 state=LIB.pack("example::Counter", {"calls": 0, "total": 0.0}))
        ep = torch.export.export(m, (torch.ones(2),))
        with self.assertRaises(cx.ExportError) as cm:
            cx.export(ep, LIB)
        self.assertIn("example::counter_step updates its external `state` (`&mut`) in place",
                      str(cm.exception))

    def test_an_op_that_updates_a_tensor_in_place_is_refused(self):
        def f(s, x):
            ops.example.scale_in_place(x, factor=2.0)
            return x + 1

        ep = torch.export.export(Wrap(f), (torch.ones(3),))
        with self.assertRaises(cx.ExportError) as cm:
            cx.export(ep, LIB)
        self.assertIn("example::scale_in_place updates tensor `x` in place (`#[inout]`)",
                      str(cm.exception))

    def test_packed_sub_byte_tensors_are_refused(self):
        w = torch.zeros(8, 2, dtype=torch.uint8)  # i4 [8, 4], packed
        m = Wrap(lambda s, x: ops.example.matmul_i4(x, s.w, torch.ones(1, 4)), w=w)
        ep = torch.export.export(m, (torch.ones(1, 8),))
        with self.assertRaises(cx.ExportError) as cm:
            cx.export(ep, LIB)
        self.assertIn("example::matmul_i4: `w` holds packed sub-byte elements", str(cm.exception))

    def test_the_library_is_what_load_returned(self):
        ep = torch.export.export(Wrap(lambda s, x: ops.example.checked_sqrt(x)),
                                 (torch.ones(2),))
        with self.assertRaises(TypeError):
            cx.export(ep, LIB.library)


class TorchXlaExportOnThisTorch(unittest.TestCase):
    def test_customop_torch_export_names_torch_xlas_limit_and_torchax(self):
        """customop.torch.export lowers through torch_xla, which stops at torch 2.9: here (no
        torch_xla) it raises its own error, which says so and names customop.torchax.export,
        instead of a bare ModuleNotFoundError from inside customop."""
        import importlib.util

        import customop.torch as ct

        self.assertIsNone(importlib.util.find_spec("torch_xla"),
                          "this test runs where torch_xla is not installed (target/torch-venv)")
        self.assertGreaterEqual(tuple(int(p) for p in torch.__version__.split(".")[:2]), (2, 10))
        ep = torch.export.export(Wrap(lambda s, x: ops.example.checked_sqrt(x)),
                                 (torch.ones(2),))
        with self.assertRaises(ct.TorchXlaUnavailable) as cm:
            ct.export(ep, LIB)
        message = str(cm.exception)
        self.assertIn("No module named 'torch_xla'", message)
        self.assertIn("torch_xla's last release, 2.9, runs on torch 2.9 only, and this is "
                      "torch %s" % torch.__version__, message)
        self.assertIn("customop.torchax.export(ep, lib)", message)
        # Still an ImportError, as before, for code that caught that.
        self.assertIsInstance(cm.exception, ImportError)
        self.assertIsInstance(cm.exception.__cause__, ModuleNotFoundError)


if __name__ == "__main__":
    unittest.main()
