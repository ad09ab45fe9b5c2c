"""The GPU check's JAX part (run by scripts/gpu-check.sh on a machine with an NVIDIA GPU): each
example op with a CUDA side, run by XLA on the GPU through its CUDA handler, equals its CPU
kernel (run by XLA on the CPU) and a jnp reference within the stated tolerance, under jax.jit,
jax.grad (the backward op's CUDA side) and jax.vmap; then each is timed against its jnp
equivalent on the GPU. Prints one line a check and a ratio a timing; exits non-zero on the
first mismatch.

With CUSTOMOP_GPU_CHECK_DRY=1 (scripts/test.sh, no GPU) the "GPU" is the CPU device: the same
code, references and tolerances run, so the script is known to work before device time is
spent on it.
"""

import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from customop import xla
from customop.xla.library import has_cuda_backend

jax.config.update("jax_enable_x64", True)

DRY = os.environ.get("CUSTOMOP_GPU_CHECK_DRY") == "1"
lib = xla.Library(os.environ["CUSTOMOP_KERNELS"])
if DRY:
    lib.register()
    gpu = jax.devices("cpu")[0]
else:
    if not has_cuda_backend():
        sys.exit("gpu-check: jax has no CUDA backend here (jax-cuda13-plugin and a GPU)")
    lib.register()
    gpu = jax.devices("cuda")[0]
cpu = jax.devices("cpu")[0]
print("gpu-check: jax %s, device %s%s" % (jax.__version__, gpu.device_kind,
                                          " (dry run: the CPU)" if DRY else ""))
failures = []


def check(what, got, want, rtol, atol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    ok = got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=atol)
    err = float(np.max(np.abs(got - want))) if got.shape == want.shape and got.size else 0.0
    print("%-62s %s (max |diff| %.3g, rtol %g)" % (what, "ok" if ok else "MISMATCH", err, rtol))
    if not ok:
        failures.append(what)


def on(device, fn, *args):
    args = [jax.device_put(a, device) for a in args]
    return jax.block_until_ready(jax.jit(fn)(*args))


def timed(fn, *args, n=50):
    f = jax.jit(fn)
    args = [jax.device_put(a, gpu) for a in args]
    jax.block_until_ready(f(*args))
    t = time.perf_counter()
    for _ in range(n):
        out = f(*args)
    jax.block_until_ready(out)
    return (time.perf_counter() - t) / n


# The seed op: an external on the device, checked before the launch.
blob = np.frombuffer(lib.pack("my_lib::Blob", {"gain": 0.5, "bias": 3, "seed": 1,
                                                "tag": list(b"gpu-check blob!!")}), np.uint8)
rng = np.random.default_rng(0)
x = rng.standard_normal((1024, 64)).astype(np.float32)
seed = lambda b, x: lib.call("my_custom_library::custom_op_external", b, x)  # noqa: E731
s = 0.5 * x.sum(axis=1, dtype=np.float32)
seed_ref = np.clip(np.sign(s) * np.floor(np.abs(s) + 0.5) + 3, -128, 127)
seed_gpu = on(gpu, seed, blob, x)
check("seed: GPU vs CPU kernel (exact: same summation order)", seed_gpu, on(cpu, seed, blob, x),
      0, 0)
check("seed: GPU vs numpy", seed_gpu, seed_ref, 0, 1)

# rms_norm_nd and its backward, four element types.
rms = lambda x: lib.ops.example.rms_norm_nd(x, eps=1e-5)  # noqa: E731


def rms_ref(x):
    x = x.astype(jnp.float64)
    return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-5)


TOL = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 1e-2, "float16": 2e-3}
for dtype in ["float32", "float64", "bfloat16", "float16"]:
    xs = jnp.asarray(rng.standard_normal((8, 33, 300)), dtype)
    g = on(gpu, rms, xs)
    check("rms_norm_nd %s: GPU vs CPU kernel" % dtype, g, on(cpu, rms, xs), TOL[dtype], 1e-6)
    check("rms_norm_nd %s: GPU vs jnp" % dtype, g, rms_ref(xs), TOL[dtype], TOL[dtype])
    loss = lambda x: jnp.sum(rms(x).astype(jnp.float32) * jnp.arange(300.0, dtype=jnp.float32))  # noqa: E731
    ref_loss = lambda x: jnp.sum(rms_ref(x) * jnp.arange(300.0))  # noqa: E731
    dg = on(gpu, jax.grad(loss), xs)
    check("jax.grad(rms_norm_nd) %s: GPU vs CPU kernel" % dtype, dg, on(cpu, jax.grad(loss), xs),
          TOL[dtype] * 10, 1e-4)
    check("jax.grad(rms_norm_nd) %s: GPU vs jnp" % dtype, dg,
          jax.grad(ref_loss)(xs.astype(jnp.float64)), TOL[dtype] * 10, TOL[dtype] * 300)
xs = jnp.asarray(rng.standard_normal((4, 16, 64)), jnp.float32)
check("jax.vmap(rms_norm_nd) f32: GPU vs jnp", on(gpu, jax.vmap(rms), xs), rms_ref(xs), 1e-5, 1e-6)

# myadd_out (pytorch/extension-cpp's, updated in place): out = a + b.
a, b, o = (rng.standard_normal((1000, 3)).astype(np.float32) for _ in range(3))
add = lambda a, b, o: lib.call("example::myadd_out", a, b, o)  # noqa: E731
check("myadd_out: GPU vs CPU kernel", on(gpu, add, a, b, o), on(cpu, add, a, b, o), 0, 0)
check("myadd_out: GPU vs numpy", on(gpu, add, a, b, o), a + b, 0, 0)

# Timings: each op against its jnp equivalent on the same device.
# (A dry run times small arrays: what it checks is that the timing code runs.)
n = 256 if DRY else 4096
big = jnp.asarray(rng.standard_normal((n, n)), jnp.float32)
for what, ours, theirs, args in [
    ("rms_norm_nd f32 %dx%d" % (n, n), rms, lambda x: rms_ref(x).astype(jnp.float32), (big,)),
    ("seed %dx%d (with the external's copy and check)" % (n, n), seed,
     lambda b, x: jnp.clip(jnp.round(0.5 * x.sum(axis=1)) + 3, -128, 127).astype(jnp.int8),
     (blob, big)),
]:
    a, b = timed(ours, *args, n=5 if DRY else 50), timed(theirs, *args, n=5 if DRY else 50)
    print("time %-50s customop %.1f us, jnp %.1f us, ratio %.2f" % (what, a * 1e6, b * 1e6, a / b))

if failures:
    sys.exit("gpu-check: %d mismatches: %s" % (len(failures), ", ".join(failures)))
print("gpu-check jax: ok")
