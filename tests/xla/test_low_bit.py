"""Packed sub-byte tensors (`i4`, `ui4`, `i2`, `ui2`, `f4E2M1FN`) in kernels: jaxlib packs them
in its device buffers, low bits first, and the kernels (`examples/kernels/src/low_bit.rs`) read
and write them through `PackedRef`/`PackedMut`. Every value of each type widens as ml_dtypes
widens it; i32 narrows to i4 as ml_dtypes wraps it; f32 rounds to f4E2M1FN as ml_dtypes rounds
(every value, every midpoint and beside it, saturation, NaN); odd lengths and every rank;
under jax.jit, cross-checked by the Rust runner in the suite. torch and eager calls refuse the
types by name.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_low_bit.py
"""

import os
import unittest

import jax
import ml_dtypes
import numpy as np

from customop.eager import Handlers
from customop.xla import Library, crosscheck

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
                            np.array([7.0, -7.0, 100.0, np.inf, -np.inf, np.nan, -0.0, 1e-45,
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


if __name__ == "__main__":
    unittest.main()
