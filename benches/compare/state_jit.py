"""Per-call cost under `jax.jit` of an op whose table is built once per call site (`#[state]`)
against the same op building it on every call, in one process, one run:

    bash benches/compare/run.sh --state

`example::windowed(x, n)` multiplies x by a Hann window of n taps kept as its state;
`example::windowed_rebuild(x, n)` computes the window (n cosines) in each call. x has 4,096
elements; n is 64, 4,096 and 65,536. Each figure is the median of 7 rounds of 500 calls after
a warm-up, the two ops' rounds interleaved (parallel.per_call), outputs awaited every call.

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): n = 64 and 4,096 only, 2
rounds of 5 calls after parallel.py's smoke warm-up; no timing is asserted.
"""
import ctypes
import os

import jax
import numpy as np
from customop.xla import Library

import parallel  # benches/compare, this script's folder: the interleaved timing

ROUNDS, CALLS = (2, 5) if parallel.SMOKE else (7, 500)
TAPS = (64, 4096) if parallel.SMOKE else (64, 4096, 65536)


def main():
    lib = Library(os.environ["CUSTOMOP_KERNELS"])
    lib.register()
    ops = lib.ops.example
    builds = lib.cdll.example_state_builds  # windows of n taps built in this process
    builds.argtypes = [ctypes.c_int64]
    builds.restype = ctypes.c_int64
    x = jax.device_put(np.linspace(-1, 1, 4096, dtype=np.float32))
    for n in TAPS:
        state = jax.jit(lambda x, n=n: ops.windowed(x, n=n))
        rebuild = jax.jit(lambda x, n=n: ops.windowed_rebuild(x, n=n))
        np.testing.assert_array_equal(np.asarray(state(x)), np.asarray(rebuild(x)))
        before = builds(n)
        s, r = parallel.per_call([state, rebuild], x, rounds=ROUNDS, calls=CALLS)
        print("n = %6d: #[state] %8.2f us, rebuilt each call %8.2f us per call (%.1fx); "
              "windows built while each op made %d calls: %d"
              % (n, s, r, r / s, ROUNDS * CALLS + parallel.WARMUP, builds(n) - before))


if __name__ == "__main__":
    main()
