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


def _counter(name):
    f = getattr(LIB.cdll, name)
    f.argtypes = [ctypes.c_int64]
    f.restype = ctypes.c_int64
    return f


# Windows of `n` taps built, dropped and applied in this process, counted per `n`: each test
# counts the windows of its own `n` (5 and 7; 6; 0), which no other test here uses, so that an
# earlier test's executable collected meanwhile is not in its figures.
BUILDS = _counter("example_state_builds")
DROPS = _counter("example_state_drops")
CALLS = _counter("example_state_calls")


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
        built5, built7, calls5 = BUILDS(5), BUILDS(7), CALLS(5)
        for _ in range(1000):
            a, b, c = f(x)
        jax.block_until_ready((a, b, c))
        built = (BUILDS(5) - built5, BUILDS(7) - built7)
        print("state: 1000 runs of 3 call sites under jax.jit built %d + %d windows" % built)
        self.assertEqual(built, (2, 1))
        # Built once, applied on every run: both call sites of n = 5, 1000 times each.
        self.assertEqual(CALLS(5) - calls5, 2000)
        np.testing.assert_allclose(np.asarray(a), windowed_ref(x, 5), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(b), windowed_ref(x + 1, 5), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(c), windowed_ref(x, 7), rtol=1e-6)
        # Another executable (another shape): its own call site, its own state.
        g = jax.jit(lambda x: OPS.windowed(x, n=5))
        for _ in range(10):
            g(x[0])
        self.assertEqual((BUILDS(5) - built5, BUILDS(7) - built7), (3, 1))

    def test_dropped_with_the_executable(self):
        x = np.linspace(-1, 1, 6, dtype=np.float32)
        built, dropped = BUILDS(6), DROPS(6)
        # Two call sites of n = 6 (different operands, so XLA does not merge them).
        compiled = jax.jit(lambda x: (OPS.windowed(x, n=6), OPS.windowed(x * 2, n=6))) \
            .lower(x).compile()
        self.assertEqual(BUILDS(6) - built, 2)
        a, b = compiled(x)
        np.testing.assert_allclose(np.asarray(b), windowed_ref(x * 2, 6), rtol=1e-6)
        self.assertEqual(DROPS(6) - dropped, 0)
        del compiled, a, b
        gc.collect()
        self.assertEqual(DROPS(6) - dropped, 2)
        self.assertEqual(BUILDS(6) - built, 2)

    def test_a_constructor_error_is_the_bad_state_refusal(self):
        x = np.ones(3, np.float32)
        built = BUILDS(0)
        with self.assertRaises(Exception) as caught:
            jax.block_until_ready(jax.jit(lambda x: OPS.windowed(x, n=0))(x))
        message = str(caught.exception)
        self.assertIn("custom op `example::windowed` [bad_state]", message)
        self.assertIn("the window needs at least one tap, got n = 0", message)
        self.assertEqual(BUILDS(0) - built, 0)


if __name__ == "__main__":
    unittest.main()
