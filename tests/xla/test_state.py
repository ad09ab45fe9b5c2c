"""State built once per call site (`#[state]`) under jax.jit: `example::windowed`'s Hann window
is built at XLA's instantiate stage, once per custom call in each compiled executable, not per
execution; its constructor's error is the `[bad_state]` refusal, at compile time.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_state.py
"""

import ctypes
import gc
import os
import unittest

import jax
import numpy as np

from customop.xla import Library

PATH = os.environ["CUSTOMOP_KERNELS"]
LIB = Library(PATH)
LIB.register()
OPS = LIB.ops.example
BUILDS = LIB.cdll.example_state_builds
BUILDS.restype = ctypes.c_int64
DROPS = LIB.cdll.example_state_drops
DROPS.restype = ctypes.c_int64


def hann(n):
    i = np.arange(n, dtype=np.float64)
    return (0.5 - 0.5 * np.cos(2 * np.pi * i / max(n - 1, 1))).astype(np.float32)


def windowed_ref(x, n):
    return x * np.resize(hann(n), x.size).reshape(x.shape)


class StatePerCallSite(unittest.TestCase):
    def test_built_once_per_call_site_across_1000_runs(self):
        x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
        # Two call sites with the same attribute and one with another: three states.
        f = jax.jit(lambda x: (OPS.windowed(x, n=5), OPS.windowed(x + 1, n=5),
                               OPS.windowed(x, n=7)))
        before = BUILDS()
        for _ in range(1000):
            a, b, c = f(x)
        jax.block_until_ready((a, b, c))
        built = BUILDS() - before
        print("state: 1000 runs of 3 call sites under jax.jit built %d windows" % built)
        self.assertEqual(built, 3)
        np.testing.assert_allclose(np.asarray(a), windowed_ref(x, 5), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(b), windowed_ref(x + 1, 5), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(c), windowed_ref(x, 7), rtol=1e-6)
        # Another executable (another shape): its own call site, its own state.
        g = jax.jit(lambda x: OPS.windowed(x, n=5))
        for _ in range(10):
            g(x[0])
        self.assertEqual(BUILDS() - before, 4)

    def test_dropped_with_the_executable(self):
        x = np.linspace(-1, 1, 6, dtype=np.float32)
        built, dropped = BUILDS(), DROPS()
        # Two call sites of n = 6 (different operands, so XLA does not merge them).
        compiled = jax.jit(lambda x: (OPS.windowed(x, n=6), OPS.windowed(x * 2, n=6))) \
            .lower(x).compile()
        self.assertEqual(BUILDS() - built, 2)
        a, b = compiled(x)
        np.testing.assert_allclose(np.asarray(b), windowed_ref(x * 2, 6), rtol=1e-6)
        self.assertEqual(DROPS() - dropped, 0)
        del compiled, a, b
        gc.collect()
        self.assertEqual(DROPS() - dropped, 2)
        self.assertEqual(BUILDS() - built, 2)

    def test_a_constructor_error_is_the_bad_state_refusal(self):
        x = np.ones(3, np.float32)
        with self.assertRaises(Exception) as caught:
            jax.block_until_ready(jax.jit(lambda x: OPS.windowed(x, n=0))(x))
        message = str(caught.exception)
        self.assertIn("custom op `example::windowed` [bad_state]", message)
        self.assertIn("the window needs at least one tap, got n = 0", message)


if __name__ == "__main__":
    unittest.main()
