"""The eight 8-bit float types XLA's FFI carries (f8E4M3FN, f8E5M2, f8E4M3, f8E3M4,
f8E4M3FNUZ, f8E5M2FNUZ, f8E4M3B11FNUZ, f8E8M0FNU): customop's conversions, run in a kernel
under jaxlib (`example::round_f8`, `example::widen_f8`, generic over all eight), equal
ml_dtypes' bit for bit on every representable value, every midpoint between neighbours, the
values just beside each midpoint, the specials (±0, ±∞, NaN, beyond the largest, f32
subnormals) and 2,000 random values; the same programs run by the Rust runner in the suite.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_float8.py
"""

import os
import unittest

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from customop.xla import Library, crosscheck

PATH = os.environ["CUSTOMOP_KERNELS"]
LIB = Library(PATH)
LIB.register()
OPS = LIB.ops.example
TYPES = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3", "float8_e3m4", "float8_e4m3fnuz",
         "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e8m0fnu"]


def inputs(t):
    """Every value of `t`, every midpoint, the f32s beside each midpoint, specials, randoms."""
    values = np.arange(256, dtype=np.uint8).view(t).astype(np.float32)
    finite = np.unique(values[np.isfinite(values)])
    mids = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
    up, down = np.float32(np.inf), np.float32(-np.inf)
    specials = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 1e-45, -1e-45, 2.0 ** -127,
                         3e38, -3e38, float(ml_dtypes.finfo(t).max) * 1.5], np.float32)
    rng = np.random.default_rng(0)
    return np.concatenate([values, mids, np.nextafter(mids, up), np.nextafter(mids, down),
                           -mids, specials,
                           rng.normal(size=2000).astype(np.float32) * np.float32(100)])


class Float8Conversions(unittest.TestCase):
    def test_rounding_equals_ml_dtypes_bit_for_bit(self):
        for name in TYPES:
            t = getattr(ml_dtypes, name)
            with self.subTest(type=name):
                x = inputs(t)
                want = x.astype(t).view(np.uint8)
                got = np.asarray(OPS.round_f8(x, jnp.zeros(x.shape, t))).view(np.uint8)
                bad = np.nonzero(want != got)[0]
                self.assertEqual(len(bad), 0, [(float(x[i]), hex(want[i]), hex(got[i]))
                                               for i in bad[:5]])

    def test_widening_is_exact_for_every_value(self):
        for name in TYPES:
            t = getattr(ml_dtypes, name)
            with self.subTest(type=name):
                codes = np.arange(256, dtype=np.uint8).view(t)
                got = np.asarray(OPS.widen_f8(codes))
                want = codes.astype(np.float32)
                same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) &
                                                                        np.isnan(want))
                self.assertTrue(same.all(), [(hex(i), got[i], want[i])
                                             for i in np.nonzero(~same)[0][:5]])

    def test_under_jit_by_jaxlib_and_the_rust_runner(self):
        for name in TYPES:
            t = getattr(ml_dtypes, name)
            with self.subTest(type=name):
                x = inputs(t)[:512]
                f = crosscheck.jit(PATH, lambda x, y: OPS.widen_f8(OPS.round_f8(x, y)))
                got = np.asarray(f(x, jnp.zeros(x.shape, t)))
                want = x.astype(t).astype(np.float32)
                np.testing.assert_array_equal(got, want)

    def test_a_type_outside_the_list_is_refused_by_name(self):
        with self.assertRaisesRegex(Exception, r"takes a tensor of .*f8E4M3FN.*, got bf16"):
            OPS.widen_f8(np.zeros(3, ml_dtypes.bfloat16))


if __name__ == "__main__":
    unittest.main()
