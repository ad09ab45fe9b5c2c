"""customop.torch eager, on every torch the tests run (2.9 and the newest): ops equal their
arithmetic, state updates in place, backward refuses an op without a gradient, torch.compile
equals eager, and every error is customop's. The torch_xla export is tests/torch/test_torch_export.py
(torch 2.9 only: torch_xla has no newer release).

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \
     target/xla-venv/bin/python -m unittest tests/torch/test_torch.py
(scripts/test.sh does, with target/xla-venv and target/torch-venv; missing torch is a failure
there, not a skip).
"""

import os
import sys
import unittest

os.environ.setdefault("PJRT_DEVICE", "CPU")

import torch  # noqa: E402

import customop.torch as ct  # noqa: E402

from customop.schema import SchemaError  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_helpers import LIB, blob, ops, seed_expected  # noqa: E402


class Eager(unittest.TestCase):
    def test_seed_op_eager_matches_arithmetic(self):
        x = torch.tensor([[0.5, 1.0, 1.5], [-3.0, 0.25, 0.0], [40.0, 30.0, 1.0]])
        y = ops.my_custom_library.custom_op_external(blob(), x)
        self.assertEqual(y.dtype, torch.int8)
        self.assertEqual(y.tolist(), seed_expected(x, {"gain": 2.0, "bias": -1}))

    def test_state_is_updated_in_place_eagerly(self):
        state = LIB.pack("example::Counter", {"calls": 0, "total": 0.0})
        x = torch.tensor([1.0, 2.0])
        y = ops.example.counter_step(state, x)
        self.assertEqual(LIB.unpack("example::Counter", state), {"calls": 1, "total": 3.0})
        self.assertEqual(y.tolist(), [2.0, 3.0])
        y = ops.example.counter_step(state, x)
        self.assertEqual(LIB.unpack("example::Counter", state), {"calls": 2, "total": 6.0})
        self.assertEqual(y.tolist(), [3.0, 4.0])

    def test_tensors_updated_in_place(self):
        """`#[inout]` tensors are mutated arguments (`Tensor(a!)` in the schema): the call
        returns nothing and leaves the new values in the caller's tensors, eager and compiled."""
        self.assertIn("Tensor(a!) x", str(ops.example.scale_in_place.default._schema))
        x = torch.arange(6.0).reshape(2, 3)
        want, ptr = x * 2, x.data_ptr()
        self.assertIsNone(ops.example.scale_in_place(x, factor=2.0))
        self.assertTrue(torch.equal(x, want))
        self.assertEqual(x.data_ptr(), ptr)
        counts = torch.zeros(4, dtype=torch.int64)
        total = torch.tensor(0.25, dtype=torch.float64)
        ops.example.histogram_add(torch.tensor([0.5, 1.5, 1.6, 9.0]), counts, total, lo=0.0, hi=4.0)
        self.assertEqual(counts.tolist(), [1, 2, 0, 0])
        self.assertEqual(total.item(), 0.25 + 0.5 + 1.5 + float(torch.tensor(1.6)))

        def step(cache, row):
            ops.example.cache_write(cache, row, at=1)
            return cache * 1

        cache = torch.zeros(3, 2)
        got = torch.compile(step, fullgraph=True)(cache, torch.tensor([4.0, 5.0]))
        want = torch.tensor([[0.0, 0.0], [4.0, 5.0], [0.0, 0.0]])
        self.assertTrue(torch.equal(got, want))
        self.assertTrue(torch.equal(cache, want))
        with self.assertRaisesRegex(ct.KernelError, r"row 7 is outside 0\.\.3"):
            ops.example.cache_write(cache, torch.zeros(2), at=7)
        self.assertTrue(torch.equal(cache, want))
        # vmap over the rows with one shared cache: every call would write the same tensor.
        with self.assertRaisesRegex(ValueError, r"updates `cache` in place, which is not batched"):
            torch.func.vmap(lambda c, r: ops.example.cache_write(c, r, at=0),
                            in_dims=(None, 0))(cache, torch.ones(2, 2))

    def test_the_fp8_types_torch_has_beyond_e4m3fn_and_e5m2(self):
        """float8_e4m3fnuz, float8_e5m2fnuz and float8_e8m0fnu cross into customop's kernels and
        back: every value widens as torch widens it, and rounding is ml_dtypes' (which torch's
        own differs from for a negative e8m0fnu: torch drops the sign, ml_dtypes says NaN). On
        torch 2.9 the native kernels have no e8m0fnu (its C shim has no such dtype): refused
        by name."""
        import ml_dtypes
        import numpy as np

        native_29 = LIB.native and torch.__version__.startswith("2.9")
        for name in ("float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"):
            dtype = getattr(torch, name)
            codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype)
            with self.subTest(type=name):
                if native_29 and name == "float8_e8m0fnu":
                    with self.assertRaisesRegex(Exception, r"operand `x` is "
                                                r"torch.float8_e8m0fnu \(f8E8M0FNU\), which no "
                                                r"customop kernel takes"):
                        ops.example.widen_f8(codes)
                    continue
                got = ops.example.widen_f8(codes)
                want = codes.float()
                self.assertTrue(bool(((got.view(torch.int32) == want.view(torch.int32))
                                      | (got.isnan() & want.isnan())).all()))
                x = torch.tensor([0.3, -2.5, 3.0, 1e-6, 7e4, -0.0, float("nan")])
                y = torch.zeros(x.shape, dtype=dtype)
                ops.example.round_f8(x, y)
                ref = x.numpy().astype(getattr(ml_dtypes, name)).view(np.uint8)
                self.assertEqual(y.view(torch.uint8).tolist(), ref.tolist())

    def test_backward_through_an_op_raises_naming_it(self):
        cfg = LIB.pack_attr("example::NormCfg", {"scale": 2.0, "shift": 0.5,
                                                 "mode": "ScaleShift"})
        x = torch.tensor([[3.0, 4.0], [1.0, -1.0]], requires_grad=True)
        y = ops.example.rms_norm(x, eps=1e-5, cfg=cfg)
        with torch.no_grad():
            rms = torch.sqrt((x * x).mean(dim=1, keepdim=True) + 1e-5)
            torch.testing.assert_close(y, x / rms * 2.0 + 0.5)
        with self.assertRaises(ct.NoGradientError) as cm:
            (y * 3).sum().backward()
        self.assertIn("example::rms_norm has no gradient", str(cm.exception))
        self.assertIsNone(x.grad)
        # A detached input needs no gradient: backward through the rest works.
        w = torch.tensor(2.0, requires_grad=True)
        (ops.example.rms_norm(x.detach(), eps=1e-5, cfg=cfg) * w).sum().backward()
        self.assertIsNotNone(w.grad)

    def test_backward_through_an_op_with_state_raises(self):
        state = LIB.pack("example::Counter", {"calls": 0, "total": 0.0})
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = ops.example.counter_step(state, x)
        self.assertEqual(LIB.unpack("example::Counter", state), {"calls": 1, "total": 3.0})
        with self.assertRaises(ct.NoGradientError) as cm:
            y.sum().backward()
        self.assertIn("example::counter_step has no gradient", str(cm.exception))

    def test_torch_compile_fullgraph_matches_eager(self):
        torch.manual_seed(0)

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(3, 3)
                self.register_buffer("external", blob())

            def forward(self, x):
                h = ops.example.checked_sqrt(self.lin(x).abs())
                return ops.my_custom_library.custom_op_external(self.external, h), h

        m = Model()
        x = torch.randn(4, 3)
        compiled = torch.compile(m, fullgraph=True)
        for got, want in zip(compiled(x), m(x)):
            torch.testing.assert_close(got, want, rtol=0, atol=0)
        # The backward is compiled too, and raises when run.
        _, h = compiled(x)
        with self.assertRaises(ct.NoGradientError) as cm:
            h.sum().backward()
        self.assertIn("example::checked_sqrt has no gradient", str(cm.exception))


class StateOncePerAttributes(unittest.TestCase):
    """`#[state]` in torch eager: one state per (op, attribute values) in the process, built on
    the first call and shared by every later one; a constructor error is `[bad_state]`."""

    def test_built_once_for_1000_calls(self):
        import ctypes
        # Windows are counted per number of taps; 13 and 14 are this test's own (no other
        # test here uses them), so the counts are what its calls built.
        builds = ctypes.CDLL(os.environ["CUSTOMOP_KERNELS"]).example_state_builds
        builds.argtypes = [ctypes.c_int64]
        builds.restype = ctypes.c_int64
        x = torch.linspace(-2, 2, 12)
        before = builds(13), builds(14)
        for _ in range(1000):
            y = ops.example.windowed(x, n=13)
        self.assertEqual(builds(13) - before[0], 1)
        i = torch.arange(13, dtype=torch.float64)
        hann = (0.5 - 0.5 * torch.cos(2 * torch.pi * i / 12)).float()
        torch.testing.assert_close(y, x * hann[:12], rtol=1e-6, atol=1e-7)
        ops.example.windowed(x, n=14)
        self.assertEqual((builds(13) - before[0], builds(14) - before[1]), (1, 1),
                         "other attribute values, another state")

    def test_a_constructor_error_is_bad_state(self):
        with self.assertRaisesRegex(RuntimeError, r"\[bad_state\].*at least one tap, got n = 0"):
            ops.example.windowed(torch.ones(3), n=0)


class EagerErrors(unittest.TestCase):
    def test_kernel_error(self):
        with self.assertRaises(ct.KernelError) as cm:
            ops.example.checked_sqrt(torch.tensor([-1.0]))
        self.assertEqual(cm.exception.code, 3)
        self.assertIn("negative input -1", str(cm.exception))

    def test_kernel_panic(self):
        with self.assertRaises(ct.KernelError) as cm:
            ops.example.unlucky(torch.tensor([13.0]))
        self.assertEqual(cm.exception.code, 13)
        self.assertIn("unlucky number 13", str(cm.exception))
        self.assertEqual(ops.example.unlucky(torch.tensor([1.0])).tolist(), [1.0])

    def test_bad_descriptor_bytes(self):
        with self.assertRaises(ct.KernelError) as cm:
            ops.my_custom_library.custom_op_external(torch.zeros(56, dtype=torch.uint8),
                                                     torch.ones(3, 3))
        self.assertIn("my_lib::Blob", str(cm.exception))

    def test_attribute_declared_before_the_tensor(self):
        x = torch.tensor([[1.0, 2.5], [-4.0, 0.0]])
        torch.testing.assert_close(ops.example.shift_by(x, k=2), x + 2, rtol=0, atol=0)

    def test_wrong_element_type(self):
        with self.assertRaises(ct.KernelError) as cm:
            ops.my_custom_library.custom_op_external(blob(), torch.ones(3, 3, dtype=torch.float64))
        self.assertIn("f32", str(cm.exception))

    def test_attribute_checks(self):
        x = torch.ones(1, 3)
        kw = dict(factor=1.5, label="l", offsets=[1], flag=True, small=1)
        with self.assertRaises(SchemaError) as cm:
            ops.example_lib.affine(x, **dict(kw, small=300))
        self.assertIn("out of range", str(cm.exception))
        with self.assertRaises(ct.KernelError) as cm:
            ops.example.rms_norm(torch.ones(1, 2), eps=1e-5, cfg="not a descriptor")
        self.assertIn("example::NormCfg", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
