"""Kernels on XLA's intra-op thread pool (`customop::parallel`) under jax.jit: the row-parallel
layer norm and the blocked reduction against numpy (and through the Rust runner, by
crosscheck.jit), the pool a kernel sees (its size, and more than one of its threads running a
kernel's ranges), and a panic in a range as the call's `[kernel_panic]`.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_parallel.py
"""

import ctypes
import os
import unittest

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

from customop.eager import Handlers  # noqa: E402
from customop.library import KernelLibrary  # noqa: E402
from customop.xla import Library, crosscheck  # noqa: E402

PATH = os.environ["CUSTOMOP_KERNELS"]
LIB = Library(PATH)
LIB.register()
OPS = LIB.ops.example
# The most threads one `pool_probe` call on an x of a given length saw running its ranges: kept
# per length, and each test probes with a length of its own (64; 48), so that it reads only
# what its own calls saw.
THREADS_SEEN = LIB.cdll.example_pool_probe_threads_seen
THREADS_SEEN.argtypes = [ctypes.c_int64]
THREADS_SEEN.restype = ctypes.c_int64
EPS = float(np.float32(1e-5))


def layer_norm_ref(x, w, b):
    x = x.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w + b


class OnXlasPool(unittest.TestCase):
    def test_row_parallel_layer_norm_equals_numpy_and_its_serial_self(self):
        rng = np.random.default_rng(0)
        # 512 rows of 1024: 32 ranges of 16 rows, over more than one thread.
        x = rng.normal(size=(512, 1024)).astype(np.float32)
        w = rng.uniform(0.5, 1.5, size=1024).astype(np.float32)
        b = rng.normal(size=1024).astype(np.float32)
        par = crosscheck.jit(PATH, lambda x, w, b: OPS.layer_norm_par(x, w, b, eps=EPS))(x, w, b)
        ser = jax.jit(lambda x, w, b: OPS.layer_norm_serial(x, w, b, eps=EPS))(x, w, b)
        np.testing.assert_allclose(np.asarray(par), layer_norm_ref(x, w, b), rtol=0, atol=2e-5)
        # Each row is computed by the same code on either path: bit for bit.
        np.testing.assert_array_equal(np.asarray(par), np.asarray(ser))

    def test_blocked_reduction_equals_numpy_on_any_pool(self):
        rng = np.random.default_rng(1)
        x = rng.normal(size=(300, 1000)).astype(np.float32)
        got = crosscheck.jit(PATH, OPS.sum_squares)(x)
        want = np.sum(x.astype(np.float64) ** 2)
        self.assertAlmostEqual(float(got) / want, 1.0, delta=1e-13)
        # The numpy handler runs the kernel inline (no pool): the blocks' order fixes the
        # result, so it is the same bits.
        inline = np.empty((), np.float64)
        Handlers(KernelLibrary(PATH)).call_numpy("example::sum_squares", [x], [inline])
        self.assertEqual(float(got), float(inline))

    def test_the_kernel_runs_on_more_than_one_of_xlas_threads(self):
        x = np.zeros(64, np.float32)
        threads = int(jax.jit(lambda x: OPS.pool_probe(x, panic_at=-1))(x)[0])
        seen = THREADS_SEEN(x.size)
        print("parallel: XLA's intra-op pool has %d threads; %d of them ran the ranges"
              % (threads, seen))
        # The cores this process may run on (XLA sizes its pool by them; os.cpu_count() counts
        # the machine's).
        if len(os.sched_getaffinity(0)) >= 2:
            self.assertGreaterEqual(threads, 2, "XLA's pool, not inline")
            self.assertGreaterEqual(seen, 2)
        else:
            # One core: a pool of one thread, which ran every range.
            self.assertEqual((threads, seen), (1, 1))

    def test_a_panic_in_a_range_is_the_calls_kernel_panic(self):
        x = np.zeros(48, np.float32)
        f = jax.jit(lambda x: OPS.pool_probe(x, panic_at=37))
        with self.assertRaises(Exception) as caught:
            np.asarray(f(x))
        message = str(caught.exception)
        self.assertIn("[kernel_panic]", message)
        self.assertIn("holds index 37", message)
        # Nothing is left behind: the next call works.
        self.assertGreaterEqual(int(jax.jit(lambda x: OPS.pool_probe(x, panic_at=-1))(x)[0]), 1)


if __name__ == "__main__":
    unittest.main()
