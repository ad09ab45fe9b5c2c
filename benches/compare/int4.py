"""4-bit weight-only matrix products against their references, at decode (M = 1, 8) and
prefill (M = 128) sizes, K = N = 4096, one run: `example::matmul_i4` (weights [K, N] packed two
a byte, one f32 scale per 128 rows) and `example::matmul_mxfp4` (f4E2M1FN weights, one
f8E8M0FNU scale per 32 rows):

    bash benches/compare/run.sh --int4

`python int4.py jax LIB`: under jax.jit, the kernel library given (run.sh runs the default
build, then one built with -C target-cpu=native: one process each, as one process registers
one library's targets) against the jnp reference, dequantize then dot (jitted), in the same
process. `python int4.py torch LIB`: torch's
own int4 CPU kernel (`aten._weight_int4pack_mm_for_cpu`, weights packed as torch packs them),
dequantize + `torch.matmul`, and the library's kernel called from torch eager (native kernels,
weights as XLA packs them, in uint8), with f32 and bf16 inputs; and the machine's memory read
bandwidth, which bounds a decode step. Each figure is the median of 9 calls after 3 warm-ups, results
awaited; every product is checked against the f64 reference first.

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): K = N = 256 (two i4 groups),
the same M, products and checks, each figure the median of 2 calls after 1 warm-up, the
bandwidth read over a 4 MB tensor; no timing is asserted. (run.sh --smoke runs the default
build only, not the target-cpu=native one.)
"""
import os
import statistics
import sys
import time

import numpy as np

SMOKE = os.environ.get("CUSTOMOP_BENCH_SMOKE") == "1"
K = N = 256 if SMOKE else 4096
GROUP = 128
SIZES = (1, 8, 128)
WARMUP, CALLS = (1, 2) if SMOKE else (3, 9)


def median_ms(f, *args):
    for _ in range(WARMUP):
        f(*args)
    times = []
    for _ in range(CALLS):
        t = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def weights():
    rng = np.random.default_rng(0)
    q = rng.integers(-8, 8, size=(K, N)).astype(np.int8)
    s = rng.uniform(0.005, 0.015, size=(K // GROUP, N)).astype(np.float32)
    return q, s


def reference(x, q, s):
    deq = (q.astype(np.float64).reshape(K // GROUP, GROUP, N) * s[:, None, :]).reshape(K, N)
    return x.astype(np.float64) @ deq


def run_jax(path):
    import jax
    import jax.numpy as jnp
    import ml_dtypes

    from customop.xla import Library

    q, s = weights()
    qd, sd = jnp.asarray(q.astype(ml_dtypes.int4)), jnp.asarray(s)
    jnp_f = jax.jit(lambda x, q, s: x @ (q.astype(jnp.float32).reshape(K // GROUP, GROUP, N)
                                         * s[:, None, :]).reshape(K, N))
    lib = Library(path)
    lib.register()
    ours = jax.jit(lambda x, q, s: lib.ops.example.matmul_i4(x, q, s))
    build = "target-cpu=native" if "native" in path else "default build"
    print("jax %s; K = N = %d, group %d; customop's kernel, %s" % (jax.__version__, K, GROUP,
                                                                   build))
    for m in SIZES:
        x = np.random.default_rng(m).normal(size=(m, K)).astype(np.float32)
        xd = jnp.asarray(x)
        ref = reference(x, q, s)
        scale = np.max(np.abs(ref))

        def timed(f):
            got = np.asarray(f(xd, qd, sd))
            assert np.max(np.abs(got - ref)) <= 1e-5 * scale, "wrong product"
            return median_ms(lambda: f(xd, qd, sd).block_until_ready())

        base, t = timed(jnp_f), timed(ours)
        # The same with bf16 activations and scales (accumulated in f32).
        xb, sb = jnp.asarray(x.astype(ml_dtypes.bfloat16)), jnp.asarray(s.astype(ml_dtypes.bfloat16))
        got = np.asarray(ours(xb, qd, sb)).astype(np.float64)
        assert np.max(np.abs(got - ref)) <= 2e-2 * scale, "wrong bf16 product"
        tb = median_ms(lambda: ours(xb, qd, sb).block_until_ready())
        print("  M=%-3d i4     jnp dequantize+dot %8.2f ms  |  customop %8.2f ms  (%.2fx), "
              "bf16 x %8.2f ms" % (m, base, t, base / t, tb))
    # MXFP4: f4E2M1FN weights, one f8E8M0FNU scale (a power of two) per 32 rows.
    rng = np.random.default_rng(1)
    w4 = rng.integers(0, 16, size=(K, N)).astype(np.uint8).view(ml_dtypes.float4_e2m1fn)
    e8 = rng.integers(120, 124, size=(K // 32, N)).astype(np.uint8).view(
        ml_dtypes.float8_e8m0fnu)
    w4d, e8d = jnp.asarray(w4), jnp.asarray(e8)
    mx_jnp = jax.jit(lambda x, w, s: x @ (w.astype(jnp.float32).reshape(K // 32, 32, N)
                                          * s.astype(jnp.float32)[:, None, :]).reshape(K, N))
    mx_ours = jax.jit(lambda x, w, s: lib.ops.example.matmul_mxfp4(x, w, s))
    deq = (w4.astype(np.float64).reshape(K // 32, 32, N)
           * e8.astype(np.float64)[:, None, :]).reshape(K, N)
    for m in SIZES:
        x = np.random.default_rng(m).normal(size=(m, K)).astype(np.float32)
        xd = jnp.asarray(x)
        ref = x.astype(np.float64) @ deq
        for f in (mx_jnp, mx_ours):
            got = np.asarray(f(xd, w4d, e8d))
            assert np.max(np.abs(got - ref)) <= 1e-5 * np.max(np.abs(ref)), "wrong product"
        base = median_ms(lambda: mx_jnp(xd, w4d, e8d).block_until_ready())
        t = median_ms(lambda: mx_ours(xd, w4d, e8d).block_until_ready())
        print("  M=%-3d MXFP4  jnp dequantize+dot %8.2f ms  |  customop %8.2f ms  (%.2fx)"
              % (m, base, t, base / t))


def run_torch(path):
    import torch

    import customop.torch as ct

    ct.load(path)
    q, s = weights()
    qt, st = torch.from_numpy(q.astype(np.int32)), torch.from_numpy(s)
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu((qt.T + 8).contiguous(), 1)
    sz = torch.stack([st, torch.zeros_like(st)], dim=-1).contiguous()
    # customop's torch ops take i4 as XLA packs it: two a byte along N, low nibble first.
    codes = (q & 0xF).astype(np.uint8)
    ours = torch.from_numpy(codes[:, 0::2] | (codes[:, 1::2] << 4))
    build = "target-cpu=native" if "native" in path else "default build"
    print("torch %s, %d threads; customop's kernel (torch eager, native), %s"
          % (torch.__version__, torch.get_num_threads(), build))
    # What bounds a decode step: reading the weights (K·N/2 bytes) from memory. torch's sum of
    # a 256 MB f32 tensor (vectorised, on all threads) measures the read bandwidth (4 MB in
    # smoke mode).
    big = torch.ones((1 if SMOKE else 64) << 20, dtype=torch.float32)
    gbs = big.numel() * 4 / median_ms(torch.sum, big) / 1e6
    print("  memory read bandwidth %.1f GB/s: the %.3g MB of i4 weights take at least %.2f ms"
          % (gbs, K * N / 2 / (1 << 20), K * N / 2 / gbs / 1e6))
    del big

    def dequant_matmul(x, q, s):
        return x @ (q.to(x.dtype).reshape(K // GROUP, GROUP, N) * s[:, None, :]).reshape(K, N)

    for m in SIZES:
        x = np.random.default_rng(m).normal(size=(m, K)).astype(np.float32)
        ref = reference(x, q, s)
        for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 2e-2)):
            xt, szt, stt = torch.from_numpy(x).to(dtype), sz.to(dtype), st.to(dtype)
            qd = qt.to(torch.int8)
            calls = (("torch int4 kernel", torch.ops.aten._weight_int4pack_mm_for_cpu,
                      (xt, packed, GROUP, szt)),
                     ("dequantize+matmul", dequant_matmul, (xt, qd, stt)),
                     ("customop", torch.ops.example.matmul_i4, (xt, ours, stt)))
            row = []
            for name, f, args in calls:
                got = f(*args)
                assert np.max(np.abs(got.float().numpy() - ref)) <= tol * np.max(np.abs(ref)), name
                row.append(median_ms(f, *args))
            print("  M=%-3d x %-8s torch int4 kernel %8.2f ms | dequantize+matmul %8.2f ms | "
                  "customop %8.2f ms: %.2fx torch's kernel, %.2fx dequantize+matmul"
                  % (m, str(dtype).split(".")[1], row[0], row[1], row[2], row[0] / row[2],
                     row[1] / row[2]))


if __name__ == "__main__":
    if sys.argv[1] == "jax":
        run_jax(sys.argv[2])
    else:
        run_torch(sys.argv[2])
