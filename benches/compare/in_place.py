"""A tensor updated in place (`#[inout]`) under `jax.jit`, in one process, one run:

    bash benches/compare/run.sh --in-place

`example::cache_write(cache, row, at)` overwrites one row of a 256 MB `f32[65536, 1024]` cache
(a KV cache's one-token write). Donated (`donate_argnums=0`), XLA hands the handler the cache's
own buffer: the result is the same buffer (checked by address every call) and the call costs
what writing 4 KB costs. Not donated, XLA must keep the caller's cache, so it copies 256 MB into
the result before the call. References: jnp's own in-place update, `cache.at[at].set(row)`
(XLA's dynamic-update-slice), donated and not. Each figure is the median of 7 rounds of 20
calls, outputs awaited every call.

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): a 256 KB `f32[64, 1024]`
cache, 2 rounds of 3 calls after 1 warm-up call, the donated buffer's address and the written
row checked as usual; no timing is asserted.
"""
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from customop.xla import Library

SMOKE = os.environ.get("CUSTOMOP_BENCH_SMOKE") == "1"
ROWS, WIDTH, ROUNDS, CALLS, WARMUP = (64, 1024, 2, 3, 1) if SMOKE else (65536, 1024, 7, 20, 3)


def per_call(step, cache, row, check_address):
    """Median milliseconds per call of `cache = step(cache, row)`, the cache threaded through;
    with `check_address`, every result must be the first cache's buffer."""
    address = cache.unsafe_buffer_pointer()
    for _ in range(WARMUP):
        cache = jax.block_until_ready(step(cache, row))
    times = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        for _ in range(CALLS):
            cache = jax.block_until_ready(step(cache, row))
            if check_address:
                assert cache.unsafe_buffer_pointer() == address, "the donated cache was copied"
        times.append((time.perf_counter() - t) / CALLS * 1e3)
    return statistics.median(times), cache


def size(n):
    """`n` bytes as MB (or KB below a megabyte)."""
    return "%d MB" % (n >> 20) if n >= 1 << 20 else "%d KB" % (n >> 10)


def main():
    lib = Library(os.environ["CUSTOMOP_KERNELS"])
    lib.register()
    op = lib.ops.example.cache_write
    row = jnp.arange(WIDTH, dtype=jnp.float32)
    print("cache f32[%d, %d] = %s, one row written per call (jax %s, %d CPUs)"
          % (ROWS, WIDTH, size(ROWS * WIDTH * 4), jax.__version__, os.cpu_count()))
    results = {}
    for name, fn in (("customop cache_write", lambda c, r: op(c, r, at=7)),
                     ("jnp cache.at[7].set(row)", lambda c, r: c.at[7].set(r))):
        for donate in (True, False):
            step = jax.jit(fn, donate_argnums=0 if donate else ())
            cache = jnp.zeros((ROWS, WIDTH), jnp.float32)
            ms, cache = per_call(step, cache, row, check_address=donate)
            np.testing.assert_array_equal(np.asarray(cache[7]), np.asarray(row))
            results[(name, donate)] = ms
            print("  %-26s %-12s %9.3f ms/call" % (name, "donated" if donate else "not donated",
                                                    ms))
            del cache
    ours, copy = results[("customop cache_write", True)], results[("customop cache_write", False)]
    ref = results[("jnp cache.at[7].set(row)", True)]
    print("donated vs not donated: %.0fx faster (the %s copy avoided; same buffer every call)"
          % (copy / ours, size(ROWS * WIDTH * 4)))
    print("customop donated / jnp donated: %.2f" % (ours / ref))


if __name__ == "__main__":
    main()
