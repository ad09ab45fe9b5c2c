"""Element types beyond the primitives (complex64, f8E4M3FN, bf16, f16) from every Python front
end: JAX (`lib.call` under `jax.jit`), torch eager, and a torch_xla export run on XLA, each
against a reference computed here with numpy and ml_dtypes (never with customop's code).

Tolerances, against the exact (f64) result:
- complex64 product: relative 1e-6 (f32 arithmetic, possibly in another order);
- f8E4M3FN quantize: one ulp of the format at the value's magnitude (the kernel rounds to
  nearest, so half an ulp; saturated values are exactly 448); bit-exact against ml_dtypes'
  own rounding of the same f32 quotient;
- dequantize: exact (an fp8 value times a power of two);
- bf16: relative 2^-8, f16: relative 2^-11 (one rounding of an f32 product); both bit-exact
  against ml_dtypes/numpy's rounding of the same f32 product.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \
     target/xla-venv/bin/python -m unittest tests/xla/test_dtypes.py
(scripts/test.sh does).
"""

import os
import sys
import unittest

os.environ.setdefault("PJRT_DEVICE", "CPU")

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import customop.torch as ct  # noqa: E402
from customop.eager import KernelError  # noqa: E402
from customop.torch.exporter import from_numpy, to_numpy  # noqa: E402
from customop.xla import crosscheck  # noqa: E402
from customop.xla import Library  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_exporters  # noqa: E402

PATH = os.environ["CUSTOMOP_KERNELS"]
# Both paths: native kernels (the default) and, with CUSTOMOP_TORCH_NATIVE=0, the Python one.
TORCH = ct.load(PATH, native=os.environ.get("CUSTOMOP_TORCH_NATIVE", "1") == "1")
JAX = Library(PATH)
JAX.register()

E4M3 = ml_dtypes.float8_e4m3fn
SCALE = 0.5
SCALE_BYTES = JAX.pack("example::Fp8Scale", {"scale": SCALE})

A = (np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1.0
     + 1j * (2.0 - np.arange(6, dtype=np.float32).reshape(2, 3))).astype(np.complex64)
B = (0.25 * np.arange(6, dtype=np.float32).reshape(2, 3)
     + 1j * (np.arange(6, dtype=np.float32).reshape(2, 3) * 0.125 - 0.75)).astype(np.complex64)
# Values that round, saturate (|x / scale| > 448), underflow to subnormals, and a zero.
X = np.array([0.5, 250.0, -1000.0, 0.05, 0.0, 0.001, -1.65, 7.0, 3.14159, -0.0123],
             np.float32)
H = np.array([1.0, -2.5, 0.1, 300.0, 1e-3, -7.75, 65.4321, 1.0 / 3.0], np.float32)
FACTOR = 1.7


# --- references (numpy and ml_dtypes only) ---------------------------------------------------

def cmul_reference(a, b):
    return a.astype(np.complex128) * b.astype(np.complex128)


def quantize_reference(x):
    """ml_dtypes' rounding of the clamped f32 quotient."""
    q = np.clip(x / np.float32(SCALE), -448, 448).astype(np.float32)
    return q.astype(E4M3)


def e4m3_ulp(v):
    """The spacing of f8E4M3FN values at magnitude |v| (3 fraction bits, exponents >= -6)."""
    e = np.floor(np.log2(np.maximum(np.abs(v), 2.0 ** -6)))
    return 2.0 ** (e - 3)


def scaled_reference(x, dtype):
    """(exact f64 result, ml_dtypes/numpy rounding of the f32 product) for scale_bf16/f16."""
    exact = x.astype(np.float64) * np.float64(np.float32(FACTOR))
    rounded = (x.astype(np.float32) * np.float32(FACTOR)).astype(dtype)
    return exact, rounded


class Checks:
    """The comparisons, shared by the front ends."""

    def check_cmul(self, got):
        self.assertEqual(got.dtype, np.complex64)
        np.testing.assert_allclose(got.astype(np.complex128), cmul_reference(A, B),
                                   rtol=1e-6, atol=1e-6)

    def check_quantize(self, q):
        self.assertEqual(q.dtype, np.dtype(E4M3))
        want = quantize_reference(X)
        np.testing.assert_array_equal(q.view(np.uint8), want.view(np.uint8))
        exact = np.clip(X.astype(np.float64) / SCALE, -448, 448)
        err = np.abs(q.astype(np.float64) - exact)
        self.assertTrue(np.all(err <= e4m3_ulp(exact)), (q, exact))

    def check_dequantize(self, q, y):
        self.assertEqual(y.dtype, np.float32)
        np.testing.assert_array_equal(y, q.astype(np.float32) * np.float32(SCALE))

    def check_scaled(self, x, got, dtype, rel):
        self.assertEqual(got.dtype, np.dtype(dtype))
        exact, rounded = scaled_reference(x, dtype)
        np.testing.assert_array_equal(got.view(np.uint16), rounded.view(np.uint16))
        np.testing.assert_allclose(got.astype(np.float64), exact, rtol=rel, atol=0)


class Jax(unittest.TestCase, Checks):
    def test_every_dtype_under_jit(self):
        self.check_cmul(np.asarray(crosscheck.jit(PATH, lambda a, b: JAX.call("example::cmul", a, b))(A, B)))
        s = np.frombuffer(SCALE_BYTES, np.uint8)
        q = np.asarray(crosscheck.jit(PATH, lambda s, x: JAX.call("example::quantize_fp8", s, x))(s, X))
        self.check_quantize(q)
        y = np.asarray(crosscheck.jit(PATH, lambda s, q: JAX.call("example::dequantize_fp8", s, q))(s, q))
        self.check_dequantize(q, y)
        for op, dtype, rel in [("example::scale_bf16", ml_dtypes.bfloat16, 2.0 ** -8),
                               ("example::scale_f16", np.float16, 2.0 ** -11)]:
            x = H.astype(dtype)
            got = np.asarray(crosscheck.jit(PATH, lambda x, op=op: JAX.call(op, x, factor=np.float32(FACTOR)))(x))
            self.check_scaled(x, got, dtype, rel)

    def test_result_dtypes_come_from_the_manifest(self):
        types = JAX.manifest.element_types
        for name, numpy_name in [("bf16", "bfloat16"), ("f16", "float16"),
                                 ("complex<f32>", "complex64"), ("complex<f64>", "complex128"),
                                 ("f8E4M3FN", "float8_e4m3fn"), ("f8E5M2", "float8_e5m2")]:
            t = types[name]
            self.assertEqual(t.numpy, numpy_name)
            self.assertEqual(t.numpy_dtype.name, numpy_name)
            self.assertEqual(t.numpy_dtype.itemsize, t.byte_size)
        self.assertEqual(types["complex<f32>"].kind, "complex")
        self.assertTrue(types["bf16"].is_float and not types["complex<f64>"].is_float)


class Torch(unittest.TestCase, Checks):
    def test_eager(self):
        a, b = torch.from_numpy(A), torch.from_numpy(B)
        self.check_cmul(torch.ops.example.cmul(a, b).numpy())
        s = TORCH.pack("example::Fp8Scale", {"scale": SCALE})
        q = torch.ops.example.quantize_fp8(s, torch.from_numpy(X))
        self.assertEqual(q.dtype, torch.float8_e4m3fn)
        self.check_quantize(to_numpy(q))
        y = torch.ops.example.dequantize_fp8(s, q)
        self.check_dequantize(to_numpy(q), y.numpy())
        for op, dtype, tdtype, rel in [
                (torch.ops.example.scale_bf16, ml_dtypes.bfloat16, torch.bfloat16, 2.0 ** -8),
                (torch.ops.example.scale_f16, np.float16, torch.float16, 2.0 ** -11)]:
            x = from_numpy(H.astype(dtype))
            self.assertEqual(x.dtype, tdtype)
            got = op(x, factor=FACTOR)
            self.assertEqual(got.dtype, tdtype)
            self.check_scaled(H.astype(dtype), to_numpy(got), dtype, rel)

    def test_a_tensor_of_another_dtype_is_refused_by_the_handler(self):
        with self.assertRaises(KernelError) as cm:
            torch.ops.example.scale_bf16(torch.ones(3, dtype=torch.float16), factor=1.0)
        self.assertIn("custom op `example::scale_bf16` [wrong_dtype]: parameter `x`: expected a "
                      "tensor of bf16, got f16", str(cm.exception))

    def test_fake_tensors_have_the_dtypes(self):
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode():
            q = torch.ops.example.quantize_fp8(torch.empty(28, dtype=torch.uint8),
                                               torch.empty(4))
            z = torch.ops.example.cmul(torch.empty(2, dtype=torch.complex64),
                                       torch.empty(2, dtype=torch.complex64))
            h = torch.ops.example.scale_bf16(torch.empty(5, dtype=torch.bfloat16), factor=2.0)
        self.assertEqual((q.dtype, tuple(q.shape)), (torch.float8_e4m3fn, (4,)))
        self.assertEqual(z.dtype, torch.complex64)
        self.assertEqual(h.dtype, torch.bfloat16)

    def test_torch_export_runs_every_dtype(self):
        # torch_xla 2.9's stablehlo_custom_call (torch 2.9) and torchax's JAX functions (the
        # newest torch) carry all of these dtypes: none is refused.
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("scale", TORCH.pack("example::Fp8Scale", {"scale": SCALE}))

            def forward(self, a, b, x, hb, hh):
                q = torch.ops.example.quantize_fp8(self.scale, x)
                return (torch.ops.example.cmul(a, b), q,
                        torch.ops.example.dequantize_fp8(self.scale, q),
                        torch.ops.example.scale_bf16(hb, factor=FACTOR),
                        torch.ops.example.scale_f16(hh, factor=FACTOR))

        hb, hh = H.astype(ml_dtypes.bfloat16), H.astype(np.float16)
        args = (torch.from_numpy(A), torch.from_numpy(B), torch.from_numpy(X), from_numpy(hb),
                torch.from_numpy(hh))
        exported = torch_exporters.export(torch.export.export(M(), args), TORCH)
        for ty in ["(tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>) -> "
                   "tensor<2x3xcomplex<f32>>",
                   "(tensor<28xui8>, tensor<10xf32>) -> tensor<10xf8E4M3FN>",
                   "(tensor<28xui8>, tensor<10xf8E4M3FN>) -> tensor<10xf32>",
                   "(tensor<8xbf16>) -> tensor<8xbf16>", "(tensor<8xf16>) -> tensor<8xf16>"]:
            self.assertIn(ty, exported.text)
        z, q, y, sb, sh = exported.run(*args)
        self.check_cmul(z.numpy())
        self.assertEqual(q.dtype, torch.float8_e4m3fn)
        self.check_quantize(to_numpy(q))
        self.check_dequantize(to_numpy(q), y.numpy())
        self.check_scaled(hb, to_numpy(sb), ml_dtypes.bfloat16, 2.0 ** -8)
        self.check_scaled(hh, sh.numpy(), np.float16, 2.0 ** -11)
        # The same as eager, bit for bit.
        eager = M()(*args)
        for got, want in zip((z, q, y, sb, sh), eager):
            np.testing.assert_array_equal(to_numpy(got).view(np.uint8),
                                          to_numpy(want).view(np.uint8))


if __name__ == "__main__":
    unittest.main()
