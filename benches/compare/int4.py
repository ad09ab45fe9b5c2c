"""4-bit weight-only matrix products against their references, at decode (M = 1, 8) and
prefill (M = 128) sizes, K = N = 4096, one run: `example::matmul_i4` (weights [K, N] packed two
a byte, one scale per 128 rows; f32 and bf16 activations), `example::matmul_u4_zp` (unsigned
with zero points) and `example::matmul_mxfp4` (f4E2M1FN weights, one f8E8M0FNU scale per 32
rows):

    bash benches/compare/run.sh --int4

`python int4.py jax LIB`: under jax.jit, the kernel library given against the jnp reference,
dequantize then dot (jitted), in the same process. `python int4.py torch LIB`: torch's own int4
CPU kernel (`aten._weight_int4pack_mm_for_cpu`, weights packed as torch packs them),
dequantize + `torch.matmul`, and the library's kernel called from torch eager (native kernels,
weights as XLA packs them, in uint8), f32 and bf16 activations; and the machine's memory read
bandwidth, which bounds a decode step, with the rate at which each kernel reads the weights.

Each side measures the library at the best level of vector instructions this CPU has
(`customop::cpu`), then each lower level (AVX2, the portable loop) in a process of its own
with CUSTOMOP_CPU set, against the same references. run.sh runs it for the default build
and for one built with -C target-cpu=native, then `python int4.py summary DIR`, which prints
the figures the issue's bar names side by side (native build against default build; M = 1
against torch's kernel and against the memory; M = 8, 128 against torch's kernel; M = 128
against jnp). Each process writes its figures to $CUSTOMOP_INT4_SUMMARY (a folder) if set.

Each figure is the median of 9 to 41 calls (as many as fit in half a second) after 5
warm-ups, results awaited; every product is checked against the f64 reference first.

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): K = N = 256 (two i4 groups),
the same M, products, levels and checks, each figure the median of 2 calls after 1 warm-up, the
bandwidth read over a 4 MB tensor; no timing is asserted. (run.sh --smoke runs the default
build only, not the target-cpu=native one.)
"""
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

SMOKE = os.environ.get("CUSTOMOP_BENCH_SMOKE") == "1"
K = N = 256 if SMOKE else 4096
GROUP = 128
SIZES = (1, 8, 128)
WARMUP, CALLS = (1, 2) if SMOKE else (5, 9)
LEVELS = ("avx512", "avx2", "portable")
WEIGHT_BYTES = K * N / 2


def median_ms(f, *args):
    """The median time of `f(*args)` in ms: after WARMUP calls, at least CALLS calls and as many
    more as fit in half a second (at most 41): a fast call is timed many times, torch's f32 int4
    kernel (2 s a call at M = 128) CALLS times."""
    for _ in range(WARMUP):
        f(*args)
    times = []
    start = time.perf_counter()
    while len(times) < CALLS or (not SMOKE and len(times) < 41
                                 and time.perf_counter() - start < 0.5):
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


def close(got, ref, tol, name):
    got = np.asarray(got).astype(np.float64)
    assert np.max(np.abs(got - ref)) <= tol * np.max(np.abs(ref)), "wrong product: " + name


def build_of(path):
    return "native" if "native" in path else "default"


def lower_levels(path, side, best):
    """Runs this script for `side` with CUSTOMOP_CPU at each level below `best`: {level: figures}."""
    out = {}
    for level in LEVELS[LEVELS.index(best) + 1:]:
        env = dict(os.environ, CUSTOMOP_CPU=level)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), side + "-ours", path],
                              env=env, capture_output=True, text=True, check=True)
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        assert report["level"] == level, report
        out[level] = report["ms"]
    return out


def save(side, path, figures):
    folder = os.environ.get("CUSTOMOP_INT4_SUMMARY")
    if folder:
        with open(os.path.join(folder, "%s-%s.json" % (side, build_of(path))), "w") as f:
            json.dump(figures, f)


# ---- JAX ---------------------------------------------------------------------------------

def jax_products(lib):
    """Each product of the library under jax.jit, its arguments and f64 reference:
    (name, f, args, ref, tol) for i4 with f32 and bf16 activations and MXFP4, at each M."""
    import jax
    import jax.numpy as jnp
    import ml_dtypes

    q, s = weights()
    qd, sd = jnp.asarray(q.astype(ml_dtypes.int4)), jnp.asarray(s)
    sb = jnp.asarray(s.astype(ml_dtypes.bfloat16))
    ours = jax.jit(lambda x, q, s: lib.ops.example.matmul_i4(x, q, s))
    rng = np.random.default_rng(1)
    w4 = rng.integers(0, 16, size=(K, N)).astype(np.uint8).view(ml_dtypes.float4_e2m1fn)
    e8 = rng.integers(120, 124, size=(K // 32, N)).astype(np.uint8).view(
        ml_dtypes.float8_e8m0fnu)
    w4d, e8d = jnp.asarray(w4), jnp.asarray(e8)
    mx_ours = jax.jit(lambda x, w, s: lib.ops.example.matmul_mxfp4(x, w, s))
    deq = (w4.astype(np.float64).reshape(K // 32, 32, N)
           * e8.astype(np.float64)[:, None, :]).reshape(K, N)
    # ui4 with zero points (GPTQ-style): dequant = (u - z) · s.
    u = rng.integers(0, 16, size=(K, N)).astype(np.uint8)
    z = rng.integers(6, 10, size=(K // GROUP, N)).astype(np.float32)
    ud, zd = jnp.asarray(u.astype(ml_dtypes.uint4)), jnp.asarray(z)
    zp_ours = jax.jit(lambda x, u, s, z: lib.ops.example.matmul_u4_zp(x, u, s, z))
    zp_deq = ((u.astype(np.float64).reshape(K // GROUP, GROUP, N) - z[:, None, :])
              * s[:, None, :]).reshape(K, N)
    out = []
    for m in SIZES:
        x = np.random.default_rng(m).normal(size=(m, K)).astype(np.float32)
        ref = reference(x, q, s)
        xb = jnp.asarray(x.astype(ml_dtypes.bfloat16))
        out.append(("u4 zp M=%d" % m, zp_ours, (jnp.asarray(x), ud, sd, zd),
                    x.astype(np.float64) @ zp_deq, 1e-5))
        out.append(("i4 M=%d" % m, ours, (jnp.asarray(x), qd, sd), ref, 1e-5))
        out.append(("i4 bf16 M=%d" % m, ours, (xb, qd, sb), ref, 2e-2))
        out.append(("MXFP4 M=%d" % m, mx_ours, (jnp.asarray(x), w4d, e8d),
                    x.astype(np.float64) @ deq, 1e-5))
    return out, (qd, sd, w4d, e8d)


def time_products(products):
    """{name: ms} of each product under jax.jit, each checked first. Every product is checked
    and called a few times before any is timed: the first one timed would otherwise pay for
    waking the pool after the references' set-up (0.77 against 0.47 ms)."""
    for name, f, args, ref, tol in products:
        close(f(*args), ref, tol, name)
        median_ms(lambda: f(*args).block_until_ready())
    return {name: median_ms(lambda: f(*args).block_until_ready())
            for name, f, args, _, _ in products}


def jax_ours(path):
    """Child: the library's products at the level CUSTOMOP_CPU gives, as JSON."""
    from customop.xla import Library

    lib = Library(path)
    lib.register()
    print(json.dumps({"level": lib.cpu_level, "ms": time_products(jax_products(lib)[0])}))


def run_jax(path):
    import jax
    import jax.numpy as jnp

    from customop.xla import Library

    lib = Library(path)
    lib.register()
    products, _ = jax_products(lib)
    i4_jnp = jax.jit(lambda x, q, s: x @ (q.astype(jnp.float32).reshape(K // GROUP, GROUP, N)
                                          * s[:, None, :]).reshape(K, N))
    mx_jnp = jax.jit(lambda x, w, s: x @ (w.astype(jnp.float32).reshape(K // 32, 32, N)
                                          * s.astype(jnp.float32)[:, None, :]).reshape(K, N))
    zp_jnp = jax.jit(lambda x, u, s, z: x @ ((u.astype(jnp.float32).reshape(K // GROUP, GROUP, N)
                                              - z[:, None, :]) * s[:, None, :]).reshape(K, N))
    best = lib.cpu_level
    print("jax %s; K = N = %d, group %d; customop's kernel, %s build, %s"
          % (jax.__version__, K, GROUP, build_of(path), best))
    ours, jnp_ms = time_products(products), {}
    for name, f, args, ref, tol in products:
        if "bf16" not in name:
            ref_f = {"MXFP4": mx_jnp, "u4": zp_jnp}.get(name.split()[0], i4_jnp)
            close(ref_f(*args), ref, tol, "jnp " + name)
            jnp_ms[name] = median_ms(lambda: ref_f(*args).block_until_ready())
    levels = {best: ours, **lower_levels(path, "jax", best)}
    for name in ours:
        base = jnp_ms.get(name, jnp_ms.get(name.replace(" bf16", "")))
        cells = "  ".join("%s %8.2f ms (%5.2fx)" % (lv, ms[name], base / ms[name])
                          for lv, ms in levels.items())
        print("  %-13s jnp dequantize+dot %8.2f ms | customop %s" % (name, base, cells))
    print("  (x: jnp's time over customop's; bf16 rows against jnp's f32 product)")
    save("jax", path, {"level": best, "jnp": jnp_ms, "levels": levels})


# ---- torch -------------------------------------------------------------------------------

def torch_products():
    """(name, args for customop's op, f64 reference, tol, args for torch's kernel, args for
    dequantize + matmul) at each M, f32 and bf16 activations."""
    import torch

    q, s = weights()
    qt, st = torch.from_numpy(q.astype(np.int32)), torch.from_numpy(s)
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu((qt.T + 8).contiguous(), 1)
    sz = torch.stack([st, torch.zeros_like(st)], dim=-1).contiguous()
    # customop's torch ops take i4 as XLA packs it: two a byte along N, low nibble first.
    codes = (q & 0xF).astype(np.uint8)
    ours = torch.from_numpy(codes[:, 0::2] | (codes[:, 1::2] << 4))
    qd = qt.to(torch.int8)
    out = []
    for m in SIZES:
        x = np.random.default_rng(m).normal(size=(m, K)).astype(np.float32)
        ref = reference(x, q, s)
        for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 2e-2)):
            xt, szt, stt = torch.from_numpy(x).to(dtype), sz.to(dtype), st.to(dtype)
            name = "M=%-3d %s" % (m, str(dtype).split(".")[1])
            out.append((name, (xt, ours, stt), ref, tol, (xt, packed, GROUP, szt), (xt, qd, stt)))
    return out


def torch_ours(path):
    import torch

    import customop.torch as ct

    lib = ct.load(path)
    ms = {}
    for name, args, ref, tol, _, _ in torch_products():
        close(torch.ops.example.matmul_i4(*args).float().numpy(), ref, tol, name)
        ms[name] = median_ms(torch.ops.example.matmul_i4, *args)
    print(json.dumps({"level": lib.library.cpu_level, "ms": ms}))


def run_torch(path):
    import torch

    import customop.torch as ct

    lib = ct.load(path)
    best = lib.library.cpu_level
    print("torch %s, %d threads; customop's kernel (torch eager, native), %s build, %s"
          % (torch.__version__, torch.get_num_threads(), build_of(path), best))
    # What bounds a decode step: reading the weights (K·N/2 bytes) from memory. torch's sum of
    # a 256 MB f32 tensor (vectorised, on all threads) measures the read bandwidth (4 MB in
    # smoke mode).
    big = torch.ones((1 if SMOKE else 64) << 20, dtype=torch.float32)
    gbs = big.numel() * 4 / median_ms(torch.sum, big) / 1e6
    print("  memory read bandwidth %.1f GB/s: the %.3g MB of i4 weights take at least %.3f ms"
          % (gbs, WEIGHT_BYTES / (1 << 20), WEIGHT_BYTES / gbs / 1e6))
    del big

    def dequant_matmul(x, q, s):
        return x @ (q.to(x.dtype).reshape(K // GROUP, GROUP, N) * s[:, None, :]).reshape(K, N)

    kernel, deq, ours = {}, {}, {}
    for name, args, ref, tol, kargs, dargs in torch_products():
        for table, f, a in ((kernel, torch.ops.aten._weight_int4pack_mm_for_cpu, kargs),
                            (deq, dequant_matmul, dargs),
                            (ours, torch.ops.example.matmul_i4, args)):
            close(f(*a).float().numpy(), ref, tol, name)
            table[name] = median_ms(f, *a)
    levels = {best: ours, **lower_levels(path, "torch", best)}
    for name in ours:
        cells = " | ".join("%s %8.2f ms: %5.2fx kernel, %5.2fx deq" % (
            lv, ms[name], kernel[name] / ms[name], deq[name] / ms[name])
            for lv, ms in levels.items())
        print("  %s torch int4 kernel %8.2f ms | dequantize+matmul %8.2f ms | customop %s"
              % (name, kernel[name], deq[name], cells))
    print("  (x kernel: torch's kernel's time over customop's; x deq: dequantize+matmul's)")
    for name in ours:
        if name.startswith("M=1 "):
            rates = ", ".join("%s %.1f GB/s (%.0f%%)" % (lv, WEIGHT_BYTES / ms[name] / 1e6,
                                                         100 * WEIGHT_BYTES / ms[name] / 1e6 / gbs)
                              for lv, ms in levels.items())
            print("  %s weights read at: torch's kernel %.1f GB/s (%.0f%%), customop %s"
                  % (name, WEIGHT_BYTES / kernel[name] / 1e6,
                     100 * WEIGHT_BYTES / kernel[name] / 1e6 / gbs, rates))
    save("torch", path, {"level": best, "kernel": kernel, "deq": deq, "levels": levels,
                         "bandwidth": gbs})


def summary(folder):
    """The bar of the issue, from the figures of the four runs run.sh made."""
    def load(name):
        p = os.path.join(folder, name + ".json")
        return json.load(open(p)) if os.path.exists(p) else None

    jd, jn, td, tn = (load(n) for n in ("jax-default", "jax-native", "torch-default",
                                        "torch-native"))
    print("int4 summary (default build at its best level %s)" % td["level"])
    own = td["levels"][td["level"]]
    for m in SIZES:
        name = "M=%-3d bfloat16" % m
        t, k = own[name], td["kernel"][name]
        line = "  %s customop %8.2f ms, torch's kernel %8.2f ms: %.2fx its time" % (
            name, t, k, t / k)
        if m == 1:
            line += "; weights at %.0f%% of the measured %.1f GB/s" % (
                100 * WEIGHT_BYTES / t / 1e6 / td["bandwidth"], td["bandwidth"])
        print(line)
    jo = jd["levels"][jd["level"]]
    for m in SIZES:
        for kind in ("i4", "u4 zp", "MXFP4"):
            name = "%s M=%d" % (kind, m)
            print("  jax %-10s customop %8.2f ms, jnp dequantize+dot %8.2f ms: %.2fx its time"
                  % (name, jo[name], jd["jnp"][name], jo[name] / jd["jnp"][name]))
    for side, d, n in (("torch", td, tn), ("jax", jd, jn)):
        if n is None:
            continue
        od, on = d["levels"][d["level"]], n["levels"][n["level"]]
        ratios = ["%s %.2f" % (name.strip(), od[name] / on[name]) for name in od]
        print("  %s: default build's time over the native build's: %s" % (side, ", ".join(ratios)))


if __name__ == "__main__":
    {"jax": run_jax, "torch": run_torch, "jax-ours": jax_ours, "torch-ours": torch_ours,
     "summary": summary}[sys.argv[1]](sys.argv[2])
