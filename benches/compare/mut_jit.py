"""Per-call cost under `jax.jit` of an op with a `&mut` external, against plain calls of the
same shape, in one process, one run:

    bash benches/compare/run.sh --mut-jit

`example::counter_step(state, x)` counts the call in its 40-byte `Counter` external and
returns `x + calls` and the new state (2 arguments, 2 results), the state threaded from call
to call as a program would. References: `(checked_sqrt(x), state)`, a plain op in a function
of the same arguments and results (JAX's dispatch costs per argument and result); the same in
jnp alone; `checked_sqrt(x)` alone (1 and 1); and the same `counter_step` call with
`has_side_effect=True`, which `&mut` implied before (JAX's effectful dispatch). Each figure is
the median of 7 rounds of 2,000 calls after a warm-up, outputs awaited every call.

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): the same functions and
checks, 2 rounds of 20 calls after 5 warm-up calls; the ratios are printed, not asserted.
"""
import os
import statistics
import time

import jax
import numpy as np
from customop.xla import Library

SMOKE = os.environ.get("CUSTOMOP_BENCH_SMOKE") == "1"
ROUNDS, CALLS, WARMUP = (2, 20, 5) if SMOKE else (7, 2000, 200)


def per_call(step, carry):
    for _ in range(WARMUP):
        carry = step(carry)
    jax.block_until_ready(carry)
    times = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        for _ in range(CALLS):
            carry = jax.block_until_ready(step(carry))
        times.append((time.perf_counter() - t) / CALLS * 1e6)
    return statistics.median(times)


def main():
    lib = Library(os.environ["CUSTOMOP_KERNELS"])
    lib.register()
    ops = lib.ops
    x = np.array([1.0, 4.0, 9.0], np.float32)
    state = np.frombuffer(lib.pack("example::Counter", {"calls": 0, "total": 0.0}), np.uint8)
    counter = jax.jit(lambda s, x: ops.example.counter_step(s, x))
    text = counter.lower(state, x).as_text()
    assert "has_side_effect" not in text, text
    shapes = (jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct(state.shape, state.dtype))
    effect = jax.jit(lambda s, x: jax.ffi.ffi_call("example.counter_step", shapes,
                                                   has_side_effect=True,
                                                   input_output_aliases={0: 1})(s, x))
    pair = jax.jit(lambda s, x: (ops.example.checked_sqrt(x), s))
    pair_jnp = jax.jit(lambda s, x: (x + 1, s + 1))
    plain = jax.jit(lambda x: ops.example.checked_sqrt(x))
    threaded = lambda f: (lambda c: (f(c[0], c[1])[1], c[1]))  # noqa: E731
    rows = [
        ("&mut op (counter_step)", per_call(threaded(counter), (state, x))),
        ("plain op, same arguments and results", per_call(threaded(pair), (state, x))),
        ("jnp, same arguments and results", per_call(threaded(pair_jnp), (state, x))),
        ("plain op alone (1 argument, 1 result)", per_call(plain, x)),
        ("counter_step with has_side_effect", per_call(threaded(effect), (state, x))),
    ]
    for name, us in rows:
        print("%-40s %7.2f us per call" % (name, us))
    mut, same = rows[0][1], rows[1][1]
    print("ratio &mut / plain of the same shape: %.2f (goal <= 1.5)" % (mut / same))
    print("ratio &mut / plain op alone: %.2f" % (mut / rows[3][1]))
    print("ratio has_side_effect / &mut: %.1f" % (rows[4][1] / mut))


if __name__ == "__main__":
    main()
