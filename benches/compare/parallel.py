"""A kernel on XLA's intra-op pool against its single-threaded self and against jnp, in one
process, one run (and the same pair through the Rust runner):

    bash benches/compare/run.sh --parallel

`example::layer_norm_par` spreads the rows of a 4096 x 1024 f32 layer norm over XLA's pool
with `customop::parallel`; `example::layer_norm_serial` is the same per-row code on one thread;
the jnp version is layer norm written in jax.numpy, which XLA fuses and runs on its own pool.
Each figure is the median of 15 rounds of 20 calls under `jax.jit` after a warm-up, the three
functions' rounds interleaved, inputs on the device, outputs awaited every call. The machine's load (os.getloadavg) is printed with it.
"""
import json
import os
import statistics
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from customop.xla import Library

ROUNDS, CALLS = 15, 20
ROWS, COLS = 4096, 1024
EPS = float(np.float32(1e-5))


WARMUP = 10


def per_call(fns, *args, rounds=ROUNDS, calls=CALLS):
    """Median time per call (us) of each of `fns` after WARMUP calls each, rounds interleaved
    (par, serial, jnp, par, ...) so that a slow stretch of the machine hits all of them alike."""
    for f in fns:
        for _ in range(WARMUP):
            jax.block_until_ready(f(*args))
    times = [[] for _ in fns]
    for _ in range(rounds):
        for k, f in enumerate(fns):
            t = time.perf_counter()
            for _ in range(calls):
                jax.block_until_ready(f(*args))
            times[k].append((time.perf_counter() - t) / calls * 1e6)
    return [statistics.median(t) for t in times]


def layer_norm_jnp(x, w, b):
    mean = jnp.mean(x, axis=1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + EPS) * w + b


def main():
    lib = Library(os.environ["CUSTOMOP_KERNELS"])
    lib.register()
    ops = lib.ops.example
    rng = np.random.default_rng(0)
    x = jax.device_put(rng.normal(size=(ROWS, COLS)).astype(np.float32))
    w = jax.device_put(rng.uniform(0.5, 1.5, size=COLS).astype(np.float32))
    b = jax.device_put(rng.normal(size=COLS).astype(np.float32))
    par = jax.jit(lambda x, w, b: ops.layer_norm_par(x, w, b, eps=EPS))
    serial = jax.jit(lambda x, w, b: ops.layer_norm_serial(x, w, b, eps=EPS))
    ref = jax.jit(layer_norm_jnp)
    np.testing.assert_allclose(np.asarray(par(x, w, b)), np.asarray(ref(x, w, b)), atol=1e-4)
    threads = int(jax.jit(lambda v: ops.pool_probe(v, panic_at=-1))(np.zeros(8, np.float32))[0])
    print("cores %d, XLA's intra-op pool %d threads, load average before %.2f"
          % (os.cpu_count(), threads, os.getloadavg()[0]))
    times = per_call([par, serial, ref], x, w, b)
    rows = list(zip(["layer_norm_par (XLA's pool)", "layer_norm_serial (one thread)",
                     "layer norm in jnp"], times))
    for name, us in rows:
        print("jax.jit  %-32s %9.1f us per call" % (name, us))
    p, s, j = (r[1] for r in rows)
    print("jax.jit  speed-up serial / par: %.2fx (goal >= 1.8 on 2 cores)" % (s / p))
    print("jax.jit  par / jnp: %.2f (goal <= 1.0)" % (p / j))
    bench = sys.argv[1] if len(sys.argv) > 1 else None
    if bench:
        out = subprocess.run([bench, "--kernels", os.environ["CUSTOMOP_KERNELS"], "--parallel",
                              str(CALLS), str(ROUNDS)], check=True, capture_output=True, text=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print("runner   layer_norm_par %9.1f us, layer_norm_serial %9.1f us (best of %d rounds)"
              % (r["par_us"], r["serial_us"], ROUNDS))
        print("runner   speed-up serial / par: %.2fx" % (r["serial_us"] / r["par_us"]))
    print("load average after %.2f" % os.getloadavg()[0])


if __name__ == "__main__":
    main()
