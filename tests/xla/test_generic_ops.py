"""One op for several element types (`dtypes(T = [...])`): example::rms_norm_t from every Python
front end, each dtype of its list against a numpy reference, and a dtype outside the list
refused with the allowed list named, in Python (SchemaError) and by the Rust handler itself
([wrong_dtype], reached through customop_call with Python's checks bypassed).

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \
     target/xla-venv/bin/python -m unittest tests/xla/test_generic_ops.py
(scripts/test.sh does). 64-bit types need jax's x64 mode, switched on here for this process.
"""

import os
import sys
import unittest

os.environ.setdefault("PJRT_DEVICE", "CPU")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import customop.torch as ct  # noqa: E402
from customop.eager import Handlers, KernelError  # noqa: E402
from customop.schema import SchemaError  # noqa: E402
from customop.xla import crosscheck  # noqa: E402
from customop.xla import Library  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_exporters  # noqa: E402

PATH = os.environ["CUSTOMOP_KERNELS"]
# Both paths: native kernels (the default) and, with CUSTOMOP_TORCH_NATIVE=0, the Python one.
TORCH = ct.load(PATH, native=os.environ.get("CUSTOMOP_TORCH_NATIVE", "1") == "1")
JAX = Library(PATH)
JAX.register()
OP = "example::rms_norm_t"
EPS = 1e-3
# (dtype, relative tolerance): the kernel computes in f64 and rounds once to the dtype (half an
# ulp: 2^-24 f32, 2^-53 f64, 2^-8 bf16, 2^-11 f16), against the reference on the same inputs.
DTYPES = [(np.float32, 2.0**-23), (np.float64, 2.0**-52), (ml_dtypes.bfloat16, 2.0**-8),
          (np.float16, 2.0**-11)]
REFUSED = ("example::rms_norm_t: parameter `x` takes a tensor of T (f32, f64, bf16 or f16), "
           "got i32")


def reference(x):
    x = np.asarray(x, np.float64)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + np.float64(np.float32(EPS)))


X = np.array([[1.0, -2.0, 3.0, 0.5], [0.0, 4.0, -1.0, 2.5], [7.0, 7.0, 7.0, 7.0]])


TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64,
                np.dtype(ml_dtypes.bfloat16): torch.bfloat16, np.dtype(np.float16): torch.float16}


class Generic(unittest.TestCase):
    def check(self, got, dtype, rtol, x=None):
        """`got` against the reference on the input as the kernel saw it (`x`, default X in
        `dtype`), both in f64."""
        self.assertEqual(np.asarray(got).dtype, np.dtype(dtype))
        want = reference(X.astype(dtype).astype(np.float64) if x is None else x)
        np.testing.assert_allclose(np.asarray(got).astype(np.float64), want, rtol=rtol, atol=rtol)

    def test_jax_each_dtype(self):
        f = crosscheck.jit(PATH, lambda x: JAX.call(OP, x, eps=np.float32(EPS)))
        for dtype, rtol in DTYPES:
            with self.subTest(dtype=dtype):
                self.check(f(X.astype(dtype)), dtype, rtol)
        with self.assertRaises(SchemaError) as cm:
            JAX.call(OP, X.astype(np.int32), eps=np.float32(EPS))
        self.assertIn(REFUSED, str(cm.exception))

    def test_torch_eager_compile_and_export(self):
        for dtype, rtol in DTYPES:
            with self.subTest(dtype=dtype):
                x = torch.from_numpy(X.astype(np.float32)).to(TORCH_DTYPES[np.dtype(dtype)])
                y = torch.ops.example.rms_norm_t(x, eps=EPS)
                self.assertEqual(y.dtype, x.dtype)
                self.check(y.double().numpy().astype(dtype), dtype, rtol, x.double().numpy())
                compiled = torch.compile(lambda x: torch.ops.example.rms_norm_t(x, eps=EPS) * 2,
                                         fullgraph=True)
                self.assertTrue(torch.equal(compiled(x), y * 2))
        with self.assertRaises(SchemaError) as cm:
            torch.ops.example.rms_norm_t(torch.from_numpy(X.astype(np.int32)), eps=EPS)
        self.assertIn(REFUSED, str(cm.exception))

        class Norm(torch.nn.Module):
            def forward(self, x):
                return torch.ops.example.rms_norm_t(x, eps=EPS) * 2

        # Exported (torch_xla on torch 2.9, torchax on the newest) and run on XLA, in every dtype.
        for dtype, rtol in DTYPES:
            with self.subTest(export=dtype):
                x = torch.from_numpy(X.astype(np.float32)).to(TORCH_DTYPES[np.dtype(dtype)])
                exported = torch_exporters.export(torch.export.export(Norm(), (x,)), TORCH)
                self.assertIn("stablehlo.custom_call @example.rms_norm_t(", exported.text)
                y = exported.run(x)
                self.assertEqual(y.dtype, x.dtype)
                # Times 2 is exact in every format.
                self.check(y.double().numpy().astype(dtype) / 2, dtype, rtol, x.double().numpy())

    def test_one_type_per_call_everywhere(self):
        # `x` and `w` are both `T`: f32 and f64 in one call is refused with one message by
        # JAX's check, the torch kernel (native: the plan's rule in Rust; Python: schema.py)
        # and the Python path alike.
        mixed = ("example::scale_rows: `x` is f32 and `w` is f64, but both are `T`: one type per "
                 "call")
        x, w = X.astype(np.float32), np.ones(3, np.float64)
        with self.assertRaises(SchemaError) as cm:
            JAX.call("example::scale_rows", x, w)
        self.assertIn(mixed, str(cm.exception))
        with self.assertRaises(SchemaError) as cm:
            torch.ops.example.scale_rows(torch.from_numpy(x), torch.from_numpy(w))
        self.assertIn(mixed, str(cm.exception))
        # A type the parameter does not allow, on the second operand.
        with self.assertRaises(SchemaError) as cm:
            torch.ops.example.scale_rows(torch.from_numpy(x), torch.ones(3, dtype=torch.float16))
        self.assertIn("example::scale_rows: parameter `w` takes a tensor of T (f32 or f64), got "
                      "f16", str(cm.exception))
        # The same types run.
        y = torch.ops.example.scale_rows(torch.from_numpy(x), torch.from_numpy(w.astype(np.float32)))
        np.testing.assert_array_equal(y.numpy(), x)

    def test_the_handler_refuses_a_dtype_outside_the_list(self):
        # Past Python's checks, straight into the handler through customop_call.
        run = Handlers(JAX)
        x = X.astype(np.int32)
        with self.assertRaises(KernelError) as cm:
            run.call_numpy(OP, [x], [np.zeros(x.shape, np.int32)], {"eps": EPS})
        self.assertIn("custom op `example::rms_norm_t` [wrong_dtype]: parameter `x`: expected a "
                      "tensor of f32, f64, bf16 or f16 (`T`), got i32", str(cm.exception))
        # An output whose type is not the input's: refused by the instantiation's own check.
        x = X.astype(np.float32)
        with self.assertRaises(KernelError) as cm:
            run.call_numpy(OP, [x], [np.zeros(x.shape, np.float64)], {"eps": EPS})
        self.assertIn("[wrong_dtype]: parameter `y`: expected a tensor of f32, got f64",
                      str(cm.exception))


if __name__ == "__main__":
    unittest.main()
