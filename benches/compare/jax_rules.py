"""Per-call cost under `jax.jit` of an op that declares both derivative rules (`vjp` and
`jvp`), against the same custom call made with `jax.ffi.ffi_call` alone (no rules, nothing
around it), in one process, one run:

    bash benches/compare/run.sh --jax-rules

`example::rms_norm_t` (a 64 x 64 f32 input) declares `vjp = rms_norm_t_bwd` and
`jvp = rms_norm_t_jvp`. Its derivatives are a `jax.custom_jvp` with a tangent primitive
(customop.xla.derivatives); a call that is not differentiated should lower to the one custom
call and cost what the bare call costs. Each figure is the median of 7 rounds of 2,000 calls
after a warm-up, outputs awaited every call; the ratio is rules / bare.

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): the same checks (results
equal, programs compared), 2 rounds of 20 calls after 5 warm-up calls; no timing is asserted.
"""
import os
import statistics
import time

import jax
import numpy as np
from customop.xla import Library

SMOKE = os.environ.get("CUSTOMOP_BENCH_SMOKE") == "1"
ROUNDS, CALLS, WARMUP = (2, 20, 5) if SMOKE else (7, 2000, 200)


def per_call(f, x):
    for _ in range(WARMUP):
        jax.block_until_ready(f(x))
    times = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        for _ in range(CALLS):
            jax.block_until_ready(f(x))
        times.append((time.perf_counter() - t) / CALLS * 1e6)
    return statistics.median(times)


def main():
    lib = Library(os.environ["CUSTOMOP_KERNELS"])
    lib.register()
    sch = lib.op("example::rms_norm_t").schema
    assert sch.vjp is not None and sch.jvp is not None
    x = np.random.default_rng(0).normal(size=(64, 64)).astype(np.float32)
    rules = jax.jit(lambda x: lib.ops.example.rms_norm_t(x, eps=1e-3))
    bare = jax.jit(lambda x: jax.ffi.ffi_call(
        sch.target, jax.ShapeDtypeStruct(x.shape, x.dtype))(x, eps=np.float32(1e-3)))
    same = rules.lower(x).as_text() == bare.lower(x).as_text()
    np.testing.assert_array_equal(rules(x), bare(x))
    a, b = per_call(rules, x), per_call(bare, x)
    print("jax %s, rms_norm_t on 64 x 64 f32, per call under jax.jit (median of %d x %d):"
          % (jax.__version__, ROUNDS, CALLS))
    print("  both rules declared (lib.ops)   %8.2f us" % a)
    print("  bare jax.ffi.ffi_call           %8.2f us" % b)
    print("  ratio rules / bare              %8.3f   (programs identical: %s)" % (a / b, same))


if __name__ == "__main__":
    main()
