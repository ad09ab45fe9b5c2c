"""The Rust handlers under concurrent XLA executions (jaxlib's CPU client, several Python
threads dispatching at once): results stay right, `&mut` state stays per execution, and a
kernel error in one thread leaves the others alone.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \
     target/xla-venv/bin/python -m unittest tests/xla/test_concurrency.py
"""

import os
import threading
import unittest

import jax
import numpy as np

from customop.xla import Library

LIB = Library(os.environ["CUSTOMOP_KERNELS"])
LIB.register()
THREADS = 8
RUNS = 1000


def blob(gain, bias):
    return np.frombuffer(LIB.pack("my_lib::Blob", {"gain": gain, "bias": bias, "seed": 0,
                                                   "tag": [0] * 16}), np.uint8)


def seed_expected(x, gain, bias):
    """saturate_i8(round(gain * row sum) + bias), rounding half away from zero as Rust does."""
    s = (np.float32(gain) * x.sum(axis=1, dtype=np.float32)).astype(np.float64)
    r = np.sign(s) * np.floor(np.abs(s) + 0.5)
    return np.clip(r + bias, -128, 127).astype(np.int8)


def in_threads(work):
    """Runs work(t) in THREADS threads at once; returns their results (or exceptions)."""
    out = [None] * THREADS
    start = threading.Barrier(THREADS)

    def run(t):
        start.wait()
        try:
            out[t] = work(t)
        except Exception as e:  # reported by the caller
            out[t] = e

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return out


class Concurrency(unittest.TestCase):
    def test_seed_op_from_eight_threads(self):
        seed = jax.jit(lambda b, x: LIB.call("my_custom_library::custom_op_external", b, x))

        def work(t):
            rng = np.random.default_rng(t)
            b = blob(1.0 + t, t - 4)
            wrong = 0
            for i in range(RUNS):
                x = rng.uniform(-3, 3, size=(4, 5)).astype(np.float32)
                y = np.asarray(seed(b, x))
                if not np.array_equal(y, seed_expected(x, 1.0 + t, t - 4)):
                    wrong += 1
            return wrong

        results = in_threads(work)
        for r in results:
            if isinstance(r, Exception):
                raise r
        self.assertEqual(results, [0] * THREADS, "wrong results per thread")
        print("concurrency: %d executions of the seed op from %d threads, %d wrong"
              % (THREADS * RUNS, THREADS, sum(results)))

    def test_mutable_state_is_per_execution(self):
        step = jax.jit(lambda s, x: LIB.call("example::counter_step", s, x))
        x = np.array([1.0, 2.0], np.float32)
        runs = RUNS // 4

        def work(t):
            state = np.frombuffer(LIB.pack("example::Counter", {"calls": t, "total": 0.0}),
                                  np.uint8)
            start = state.copy()
            for i in range(runs):
                y, state = step(state, x)
                calls = t + i + 1
                if not np.array_equal(np.asarray(y), x + calls):
                    return "thread %d run %d: y = %s" % (t, i, np.asarray(y))
            # The first state, which every execution read, was never written.
            if not np.array_equal(start, np.frombuffer(
                    LIB.pack("example::Counter", {"calls": t, "total": 0.0}), np.uint8)):
                return "the input state changed"
            return LIB.unpack("example::Counter", np.asarray(state).tobytes())

        results = in_threads(work)
        for t, r in enumerate(results):
            if isinstance(r, Exception):
                raise r
            self.assertEqual(r, {"calls": t + runs, "total": 3.0 * runs}, r)

    def test_an_error_in_one_thread_leaves_the_others_right(self):
        sqrt = jax.jit(lambda x: LIB.call("example::checked_sqrt", x))

        def work(t):
            bad = t == 3
            wrong, errors = 0, 0
            for i in range(RUNS // 4):
                x = np.array([-1.0 if bad and i % 2 else float(i), 4.0], np.float32)
                try:
                    y = np.asarray(sqrt(x))
                    if not np.array_equal(y, np.sqrt(x)):
                        wrong += 1
                except Exception as e:
                    if "negative input -1" not in str(e) or "[kernel_error]" not in str(e):
                        raise
                    errors += 1
            return wrong, errors

        results = in_threads(work)
        for t, r in enumerate(results):
            if isinstance(r, Exception):
                raise r
            wrong, errors = r
            self.assertEqual(wrong, 0, "thread %d" % t)
            self.assertEqual(errors, RUNS // 8 if t == 3 else 0, "thread %d" % t)


if __name__ == "__main__":
    unittest.main()
