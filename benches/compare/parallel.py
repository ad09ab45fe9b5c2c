"""A kernel on XLA's intra-op pool against its single-threaded self and against jnp, in one
process, one run (and the same pair through the Rust runner):

    bash benches/compare/run.sh --parallel

`example::layer_norm_par` spreads the rows of a 4096 x 1024 f32 layer norm over XLA's pool
with `customop::parallel`; `example::layer_norm_serial` is the same per-row code on one thread;
the jnp version is layer norm written in jax.numpy, which XLA fuses and runs on its own pool.
Each figure is the median of 15 rounds of 20 calls under `jax.jit` after a warm-up, the three
functions' rounds interleaved, inputs on the device, outputs awaited every call. The machine's
load (os.getloadavg) is printed with it, and each function's minor page faults per call: a
16 MB result buffer that the allocator gave back to the OS since the last call is faulted in
again by whoever writes it first (here the kernel), which can triple a call's time. run.sh
runs this twice, as is and with glibc's heap kept (GLIBC_TUNABLES), and then times what two
plain threads gain over one on this machine with no XLA at all (pjrt_bench --ceiling).

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): a 64 x 128 layer norm, 2
rounds of 2 calls after 1 warm-up call, checked against jnp as usual; with the runner given,
only `pjrt_bench --ceiling 1 1` runs: `pjrt_bench --parallel` has its size (4096 x 1024) and
its 200 warm-up calls built in, over a minute with the debug kernel library. No timing is
asserted.
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from customop.xla import Library

SMOKE = os.environ.get("CUSTOMOP_BENCH_SMOKE") == "1"
ROUNDS, CALLS = (2, 2) if SMOKE else (15, 20)
ROWS, COLS = (64, 128) if SMOKE else (4096, 1024)
EPS = float(np.float32(1e-5))


WARMUP = 1 if SMOKE else 10


def per_call(fns, *args, rounds=ROUNDS, calls=CALLS, faults=None):
    """Median time per call (us) of each of `fns` after WARMUP calls each, rounds interleaved
    (par, serial, jnp, par, ...) so that a slow stretch of the machine hits all of them alike.
    If `faults` is a list, each function's minor page faults per timed call are appended."""
    for f in fns:
        for _ in range(WARMUP):
            jax.block_until_ready(f(*args))
    times = [[] for _ in fns]
    faulted = [0 for _ in fns]
    for _ in range(rounds):
        for k, f in enumerate(fns):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t = time.perf_counter()
            for _ in range(calls):
                jax.block_until_ready(f(*args))
            times[k].append((time.perf_counter() - t) / calls * 1e6)
            faulted[k] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    if faults is not None:
        faults.extend(n / (rounds * calls) for n in faulted)
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
    print("cores %d, XLA's intra-op pool %d threads, load average before %.2f, GLIBC_TUNABLES %s"
          % (os.cpu_count(), threads, os.getloadavg()[0],
             os.environ.get("GLIBC_TUNABLES", "unset")))
    faults = []
    times = per_call([par, serial, ref], x, w, b, faults=faults)
    rows = list(zip(["layer_norm_par (XLA's pool)", "layer_norm_serial (one thread)",
                     "layer norm in jnp"], times))
    for (name, us), n in zip(rows, faults):
        print("jax.jit  %-32s %9.1f us per call, %6.0f page faults per call" % (name, us, n))
    p, s, j = (r[1] for r in rows)
    print("jax.jit  speed-up serial / par: %.2fx (goal >= 1.8 on 2 cores)" % (s / p))
    print("jax.jit  par / jnp: %.2f (goal <= 1.0)" % (p / j))
    bench = sys.argv[1] if len(sys.argv) > 1 else None
    if bench and SMOKE:
        print("runner   layer_norm_par against layer_norm_serial: not run in smoke mode "
              "(pjrt_bench --parallel's size and warm-up are fixed)")
    elif bench:
        out = subprocess.run([bench, "--kernels", os.environ["CUSTOMOP_KERNELS"], "--parallel",
                              str(CALLS), str(ROUNDS)], check=True, capture_output=True, text=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print("runner   layer_norm_par %9.1f us, layer_norm_serial %9.1f us (best of %d rounds)"
              % (r["par_us"], r["serial_us"], ROUNDS))
        print("runner   speed-up serial / par: %.2fx" % (r["serial_us"] / r["par_us"]))
    if bench:
        calls, rounds = (1, 1) if SMOKE else (CALLS, ROUNDS)
        out = subprocess.run([bench, "--kernels", os.environ["CUSTOMOP_KERNELS"], "--ceiling",
                              str(calls), str(rounds)], check=True, capture_output=True, text=True)
        c = json.loads(out.stdout.strip().splitlines()[-1])
        print("ceiling  no XLA, 2 plain threads vs 1 (medians): 16 MB copy %.0f / %.0f us = "
              "%.2fx; layer_norm_serial's rows %.0f / %.0f us = %.2fx"
              % (c["copy_1t_us"], c["copy_2t_us"], c["copy_1t_us"] / c["copy_2t_us"],
                 c["ln_1t_us"], c["ln_2t_us"], c["ln_1t_us"] / c["ln_2t_us"]))
    print("load average after %.2f" % os.getloadavg()[0])


if __name__ == "__main__":
    main()
