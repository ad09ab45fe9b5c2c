"""Packed sub-byte tensors (`i4`, `ui4`, `i2`, `ui2`, `f4E2M1FN`) in kernels: jaxlib packs them
in its device buffers, low bits first, and the kernels (`examples/kernels/src/low_bit.rs`) read
and write them through `PackedRef`/`PackedMut`. Every value of each type widens as ml_dtypes
widens it; i32 narrows to i4 as ml_dtypes wraps it; f32 rounds to f4E2M1FN as ml_dtypes rounds
(every value, every midpoint and beside it, saturation, NaN); odd lengths and every rank;
under jax.jit, cross-checked by the Rust runner in the suite. Eager numpy calls refuse the types
by name (numpy holds one element a byte); torch takes them as packed bytes
(tests/torch/test_low_bit.py).

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_low_bit.py
"""

import os
import sys
import unittest

import jax
import ml_dtypes
import numpy as np

from customop.eager import Handlers
from customop.xla import Library, crosscheck

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quant_refs import quantize_i4_ref, quantize_mxfp4_ref  # noqa: E402

PATH = os.environ["CUSTOMOP_KERNELS"]
LIB = Library(PATH)
LIB.register()
OPS = LIB.ops.example
INTS = {"int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1), "uint2": (0, 3)}


class PackedTensors(unittest.TestCase):
    def test_every_value_of_every_integer_type_widens(self):
        for name, (lo, hi) in INTS.items():
            t = getattr(ml_dtypes, name)
            for n in (1, 2, 3, 7, 64):
                with self.subTest(type=name, n=n):
                    x = (np.arange(n) % (hi - lo + 1) + lo).astype(t)
                    got = np.asarray(crosscheck.jit(PATH, OPS.unpack_int)(x))
                    np.testing.assert_array_equal(got, x.astype(np.int32))

    def test_any_rank(self):
        x = (np.arange(2 * 3 * 5) % 16 - 8).astype(ml_dtypes.int4).reshape(2, 3, 5)
        np.testing.assert_array_equal(np.asarray(OPS.unpack_int(x)), x.astype(np.int32))
        self.assertEqual(np.asarray(OPS.unpack_int(x[0, 0, 0])).shape, ())

    def test_narrowing_to_i4_wraps_as_ml_dtypes(self):
        v = np.arange(-40, 41, dtype=np.int32)
        got = np.asarray(crosscheck.jit(PATH, OPS.pack_i4)(v))
        self.assertEqual(got.dtype, ml_dtypes.int4)
        np.testing.assert_array_equal(got.astype(np.int32),
                                      v.astype(ml_dtypes.int4).astype(np.int32))

    def test_f4_rounding_and_widening_equal_ml_dtypes(self):
        t = ml_dtypes.float4_e2m1fn
        values = np.arange(16, dtype=np.uint8).view(t).astype(np.float32)
        finite = np.unique(values)
        mids = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
        x = np.concatenate([values, mids, np.nextafter(mids, np.float32(np.inf)),
                            np.nextafter(mids, np.float32(-np.inf)),
                            np.array([7.0, -7.0, 100.0, np.inf, -np.inf, np.nan, -np.nan, -0.0, 1e-45,
                                      -1e-45], np.float32),
                            np.random.default_rng(0).normal(size=500).astype(np.float32) * 3])
        got = np.asarray(crosscheck.jit(PATH, OPS.round_f4)(x))
        np.testing.assert_array_equal(got.view(np.uint8), x.astype(t).view(np.uint8))
        codes = np.arange(16, dtype=np.uint8).view(t)
        np.testing.assert_array_equal(np.asarray(OPS.widen_f4(codes)), values)

    def test_a_wrong_type_is_refused_by_name(self):
        with self.assertRaisesRegex(Exception,
                                    r"takes a tensor of T \(i4, ui4, i2 or ui2\), got i8"):
            OPS.unpack_int(np.zeros(3, np.int8))

    def test_eager_calls_refuse_packed_types_by_name(self):
        with self.assertRaisesRegex(TypeError, r"int4 is a packed sub-byte type \(i4\)"):
            Handlers(LIB).call_numpy("example::unpack_int", [np.zeros(3, ml_dtypes.int4)],
                                     [np.zeros(3, np.int32)])


class MatmulI4(unittest.TestCase):
    """`example::matmul_i4`: `x · (w · scales)` with `w` packed `i4` and a scale per group of
    rows, against numpy on ml_dtypes' int4 values, at decode and prefill sizes and a column
    count that is not a multiple of the kernel's block."""

    def test_equals_the_dequantized_product(self):
        rng = np.random.default_rng(1)
        for m, k, n, groups in ((1, 256, 512, 2), (8, 256, 300, 4), (5, 128, 64, 1)):
            with self.subTest(m=m, k=k, n=n):
                x = rng.normal(size=(m, k)).astype(np.float32)
                w = rng.integers(-8, 8, size=(k, n)).astype(ml_dtypes.int4)
                s = rng.uniform(0.01, 0.02, size=(groups, n)).astype(np.float32)
                got = np.asarray(crosscheck.jit(PATH, OPS.matmul_i4)(x, w, s))
                deq = (w.astype(np.float64).reshape(groups, k // groups, n)
                       * s[:, None, :]).reshape(k, n)
                np.testing.assert_allclose(got, x.astype(np.float64) @ deq, rtol=1e-5,
                                           atol=1e-5)

    def test_bf16_activations_and_scales(self):
        """bf16 `x` and scales, accumulated in f32 and rounded once: within bf16's rounding of
        the f64 product of the same bf16 values; gradients in bf16 too."""
        rng = np.random.default_rng(8)
        x = rng.normal(size=(8, 256)).astype(ml_dtypes.bfloat16)
        w = rng.integers(-8, 8, size=(256, 64)).astype(ml_dtypes.int4)
        s = rng.uniform(0.01, 0.02, size=(2, 64)).astype(ml_dtypes.bfloat16)
        got = np.asarray(crosscheck.jit(PATH, OPS.matmul_i4)(x, w, s))
        self.assertEqual(got.dtype, ml_dtypes.bfloat16)
        deq = (w.astype(np.float64).reshape(2, 128, 64) * s.astype(np.float64)[:, None, :])
        want = x.astype(np.float64) @ deq.reshape(256, 64)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2 ** -8,
                                   atol=2 ** -8 * np.abs(want).max())
        g = jax.grad(lambda x: OPS.matmul_i4(x, w, s).astype(np.float32).sum())(x)
        self.assertEqual(g.dtype, ml_dtypes.bfloat16)
        # The gradient's values: d sum(y) / dx = dequant(w) summed over its columns, within
        # bf16's rounding of the f64 value (accumulated in f32, rounded once).
        want = deq.reshape(256, 64).sum(axis=1)[None, :].repeat(8, axis=0)
        np.testing.assert_allclose(np.asarray(g).astype(np.float64), want, rtol=2 ** -8,
                                   atol=2 ** -8 * np.abs(want).max())
        self.assertGreater(np.abs(want).max(), 0.0)

    def test_unsigned_weights_with_zero_points(self):
        """`matmul_u4_zp`: (w - zeros) · scales, GPTQ-style, against numpy in f64."""
        rng = np.random.default_rng(9)
        for m, k, n, groups in ((1, 256, 512, 2), (8, 128, 64, 1)):
            x = rng.normal(size=(m, k)).astype(np.float32)
            w = rng.integers(0, 16, size=(k, n)).astype(ml_dtypes.uint4)
            s = rng.uniform(0.01, 0.02, size=(groups, n)).astype(np.float32)
            z = rng.integers(6, 10, size=(groups, n)).astype(np.float32)
            got = np.asarray(crosscheck.jit(PATH, OPS.matmul_u4_zp)(x, w, s, z))
            deq = ((w.astype(np.float64).reshape(groups, k // groups, n) - z[:, None, :])
                   * s[:, None, :]).reshape(k, n)
            np.testing.assert_allclose(got, x.astype(np.float64) @ deq, rtol=1e-5, atol=1e-5)

    def test_gradients_for_x_and_the_scales(self):
        """The declared backward (`matmul_i4_bwd`) against jnp's gradient of the dequantized
        product, for `x` and the scales; the weights, integers, get none."""
        rng = np.random.default_rng(7)
        x = rng.normal(size=(3, 64)).astype(np.float32)
        w = rng.integers(-8, 8, size=(64, 10)).astype(ml_dtypes.int4)
        s = rng.uniform(0.5, 1.5, size=(2, 10)).astype(np.float32)
        c = rng.normal(size=(3, 10)).astype(np.float32)

        def ref(x, s):
            deq = (w.astype(np.float32).reshape(2, 32, 10) * s[:, None, :]).reshape(64, 10)
            return (x @ deq * c).sum()

        got = crosscheck.jit(PATH, jax.grad(lambda x, s: (OPS.matmul_i4(x, w, s) * c).sum(),
                                            argnums=(0, 1)))(x, s)
        want = jax.grad(ref, argnums=(0, 1))(x, s)
        for g, r in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-5)

    def test_shapes_that_do_not_fit_are_refused(self):
        x = np.ones((1, 8), np.float32)
        with self.assertRaisesRegex(Exception, r"scales \[K / group, N\]"):
            OPS.matmul_i4(x, np.zeros((8, 4), ml_dtypes.int4), np.ones((3, 4), np.float32))
        with self.assertRaisesRegex(Exception, r"N even"):
            OPS.matmul_i4(x, np.zeros((8, 3), ml_dtypes.int4), np.ones((1, 3), np.float32))


class Mxfp4AndQuantizers(unittest.TestCase):
    def test_dequantize_mxfp4_is_exact(self):
        rng = np.random.default_rng(2)
        w = rng.integers(0, 16, size=(64, 6)).astype(np.uint8).view(ml_dtypes.float4_e2m1fn)
        codes = np.array([[0, 1, 100, 127, 200, 254], [127] * 6], np.uint8)
        s = codes.view(ml_dtypes.float8_e8m0fnu)
        got = np.asarray(crosscheck.jit(PATH, OPS.dequantize_mxfp4)(w, s))
        want = (w.astype(np.float64) * np.repeat(s.astype(np.float64), 32, axis=0))
        np.testing.assert_array_equal(got, want.astype(np.float32))

    def test_matmul_mxfp4_equals_the_dequantized_product(self):
        rng = np.random.default_rng(3)
        for m, k, n in ((1, 128, 512), (8, 64, 300)):
            x = rng.normal(size=(m, k)).astype(np.float32)
            w = rng.integers(0, 16, size=(k, n)).astype(np.uint8).view(ml_dtypes.float4_e2m1fn)
            s = rng.integers(120, 130, size=(k // 32, n)).astype(np.uint8).view(
                ml_dtypes.float8_e8m0fnu)
            got = np.asarray(crosscheck.jit(PATH, OPS.matmul_mxfp4)(x, w, s))
            deq = w.astype(np.float64) * np.repeat(s.astype(np.float64), 32, axis=0)
            np.testing.assert_allclose(got, x.astype(np.float64) @ deq, rtol=1e-5, atol=1e-4)

    def test_matmul_mxfp4_at_the_extreme_scales(self):
        """Scale codes 0 (2^-127, an f32 subnormal, which XLA's threads flush) to 254 and NaN
        (255), at M = 1 and M = 8: each column
        against numpy's f64 product of the dequantized weights. Code 0 gave 0 for 32 ones."""
        for m in (1, 8):
            x = np.ones((m, 64), np.float32)
            w = np.full((64, 8), 1.0, np.float32).astype(ml_dtypes.float4_e2m1fn)
            codes = np.array([[0, 1, 2, 127, 128, 253, 254, 255], [0, 0, 1, 120, 130, 1, 2, 0]],
                             np.uint8)
            s = codes.view(ml_dtypes.float8_e8m0fnu)
            got = np.asarray(crosscheck.jit(PATH, OPS.matmul_mxfp4)(x, w, s))
            deq = w.astype(np.float64) * np.repeat(s.astype(np.float64), 32, axis=0)
            want = (x.astype(np.float64) @ deq).astype(np.float32)
            self.assertEqual(got[0, 0], np.float32(2.0 ** -122) * 2, got[0])
            np.testing.assert_array_equal(got, want)

    def test_quantize_i4_equals_numpys(self):
        w = np.random.default_rng(4).normal(size=(256, 64)).astype(np.float32)
        w[:128, 3] = 0.0  # an all-zero group
        q, s = crosscheck.jit(PATH, lambda w: OPS.quantize_i4(w, group=128))(w)
        want_q, want_s = quantize_i4_ref(w, 128)
        np.testing.assert_array_equal(np.asarray(s), want_s)
        np.testing.assert_array_equal(np.asarray(q).astype(np.int32), want_q.astype(np.int32))
        # Quantized weights, then the product: close to the f32 one.
        x = np.random.default_rng(5).normal(size=(2, 256)).astype(np.float32)
        got = np.asarray(OPS.matmul_i4(x, q, s))
        np.testing.assert_allclose(got, x @ w, rtol=0, atol=0.1 * np.abs(x @ w).max())

    def test_empty_products_and_non_finite_weights(self):
        y = np.asarray(OPS.matmul_i4(np.zeros((0, 64), np.float32),
                                     np.zeros((64, 8), ml_dtypes.int4), np.ones((1, 8), np.float32)))
        self.assertEqual(y.shape, (0, 8))
        w = np.ones((32, 4), np.float32)
        w[3, 1] = np.inf
        for op in (lambda w: OPS.quantize_mxfp4(w), lambda w: OPS.quantize_i4(w, group=32)):
            with self.assertRaisesRegex(Exception, r"w\[13\] is inf: only finite weights"):
                op(w)

    def test_quantize_mxfp4_equals_the_ocp_reference(self):
        w = (np.random.default_rng(6).normal(size=(96, 40)) * 3).astype(np.float32)
        w[32:64, 5] = 0.0
        w[:32, 7] = 1e6
        q, s = crosscheck.jit(PATH, OPS.quantize_mxfp4)(w)
        want_q, want_s = quantize_mxfp4_ref(w)
        np.testing.assert_array_equal(np.asarray(s).view(np.uint8), want_s.view(np.uint8))
        np.testing.assert_array_equal(np.asarray(q).view(np.uint8), want_q.view(np.uint8))


if __name__ == "__main__":
    unittest.main()
