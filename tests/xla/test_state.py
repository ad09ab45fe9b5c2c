"""State built once per call site (`#[state]`) under jax.jit: `example::windowed`'s Hann window
is built at XLA's instantiate stage, once per custom call in each compiled executable, not per
execution; its constructor's error is the `[bad_state]` refusal, at compile time. Registered
for execution only (a bare `jax.ffi.pycapsule` of the handler, as "Running on XLA" shows), the
state comes from the process cache instead: once per (op, attribute values), kept to the end.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_state.py
"""

import ctypes
import gc
import os
import subprocess
import sys
import textwrap
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


class StatePerRegistration(unittest.TestCase):
    """One behaviour per way of registering the handlers, each tested: `Library.register()`
    (instantiate and execute stages: a state per call site per executable, dropped with it;
    StatePerCallSite above), and a bare `jax.ffi.register_ffi_target(target, pycapsule(h))`
    (execution only: the process cache, one state per (op, attribute values), kept across
    executables and `jax.clear_caches()`). Run in a process of its own: a target is registered
    once per process."""

    def test_execution_only_registration_uses_the_process_cache(self):
        code = textwrap.dedent("""
            import ctypes, gc, json, os
            import jax, numpy as np
            lib = ctypes.CDLL(os.environ["CUSTOMOP_KERNELS"])
            lib.customop_manifest.restype = ctypes.c_char_p
            for op in json.loads(lib.customop_manifest())["ops"]:
                jax.ffi.register_ffi_target(op["target"],
                                            jax.ffi.pycapsule(getattr(lib, op["handler_symbol"])),
                                            platform="cpu", api_version=1)
            def counter(name):
                f = getattr(lib, name)
                f.argtypes, f.restype = [ctypes.c_int64], ctypes.c_int64
                return f
            built, dropped, calls = (counter("example_state_builds"),
                                     counter("example_state_drops"),
                                     counter("example_state_calls"))
            x = np.ones(12, np.float32)
            out = jax.ShapeDtypeStruct(x.shape, x.dtype)
            win = lambda x, n: jax.ffi.ffi_call("example.windowed", out)(x, n=np.int64(n))
            seen = []
            for _ in range(2):
                f = jax.jit(lambda x: (win(x, 9), win(x + 1, 9), win(x, 10)))
                jax.block_until_ready(f(x))
                jax.clear_caches()
                del f
                gc.collect()
                seen.append([built(9), built(10), dropped(9), calls(9)])
            print(json.dumps(seen))
        """)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(os.environ), check=True)
        seen = r.stdout.strip().splitlines()[-1]
        # One state per (op, attribute values) in the process, built on first use and kept:
        # n=9 once for both call sites and both executables, n=10 once, none dropped; the two
        # n=9 call sites ran twice each.
        self.assertEqual(seen, "[[1, 1, 0, 2], [1, 1, 0, 4]]")
