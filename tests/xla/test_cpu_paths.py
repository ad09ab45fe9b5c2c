"""Every dispatch path of the 4-bit kernels (`customop::cpu`: AVX-512, AVX2 and the portable
loop), each forced with `CUSTOMOP_CPU` in a process of its own (the level is read once), under
jax.jit: `matmul_i4` (f32 and bf16), `matmul_u4_zp` and `matmul_mxfp4` against numpy's f64
products, on shapes with partial micro-tiles and row blocks (N = 200, 320, 576; M = 1, 2, 7, 13), and
the paths against each other. The library reports the level it took (`customop_cpu_level`):
each child checks it is the one forced. Levels this CPU lacks are capped to its own, and said
so; on the machines CI runs on (AVX-512) all three run.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_cpu_paths.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

PATH = os.environ["CUSTOMOP_KERNELS"]
LEVELS = ("avx512", "avx2", "portable")
SHAPES = ((1, 256, 576, 128), (2, 64, 384, 32), (7, 128, 200, 32), (13, 64, 320, 64))


def cases():
    """(name, args, f64 reference, tolerance relative to the largest |value|) of every product."""
    import ml_dtypes

    rng = np.random.default_rng(11)
    out = []
    for m, k, n, group in SHAPES:
        x = rng.normal(size=(m, k)).astype(np.float32)
        q = rng.integers(-8, 8, size=(k, n)).astype(np.int8)
        s = rng.uniform(0.5, 1.5, size=(k // group, n)).astype(np.float32)

        def deq(q, s, group=group, k=k, n=n):
            return (q.astype(np.float64).reshape(k // group, group, n)
                    * s.astype(np.float64)[:, None, :]).reshape(k, n)

        tag = "m%d_k%d_n%d_g%d" % (m, k, n, group)
        out.append(("matmul_i4_f32_" + tag, ("matmul_i4", x, q.astype(ml_dtypes.int4), s),
                    x.astype(np.float64) @ deq(q, s), 1e-5))
        xb, sb = x.astype(ml_dtypes.bfloat16), s.astype(ml_dtypes.bfloat16)
        out.append(("matmul_i4_bf16_" + tag, ("matmul_i4", xb, q.astype(ml_dtypes.int4), sb),
                    xb.astype(np.float64) @ deq(q, sb), 1e-2))
        u = rng.integers(0, 16, size=(k, n)).astype(np.uint8)
        z = rng.integers(6, 10, size=(k // group, n)).astype(np.float32)
        zd = np.repeat(z.astype(np.float64), group, axis=0)
        want = x.astype(np.float64) @ (deq(u, s) - zd * np.repeat(s, group, axis=0))
        out.append(("matmul_u4_zp_" + tag, ("matmul_u4_zp", x, u.astype(ml_dtypes.uint4), s, z),
                    want, 1e-5))
        if k % 32 == 0:
            f4 = rng.integers(0, 16, size=(k, n)).astype(np.uint8).view(ml_dtypes.float4_e2m1fn)
            codes = rng.integers(118, 130, size=(k // 32, n)).astype(np.uint8)
            codes[0, :3] = (0, 1, 2)  # 2^-127 (an f32 subnormal), 2^-126, 2^-125
            e8 = codes.view(ml_dtypes.float8_e8m0fnu)
            w = f4.astype(np.float64) * np.repeat(e8.astype(np.float64), 32, axis=0)
            out.append(("matmul_mxfp4_" + tag, ("matmul_mxfp4", x, f4, e8),
                        x.astype(np.float64) @ w, 1e-5))
    return out


def child(out_path):
    """In a process with CUSTOMOP_CPU set: every product, checked, saved to `out_path`."""
    import jax

    from customop.xla import Library

    lib = Library(PATH)
    lib.register()
    got = {}
    for name, (op, *args), want, tol in cases():
        y = np.asarray(jax.jit(getattr(lib.ops.example, op))(*args)).astype(np.float64)
        err = np.max(np.abs(y - want)) / np.max(np.abs(want))
        if not err <= tol:
            raise AssertionError("%s on %s: error %.3g of the largest value, over %g"
                                 % (name, lib.cpu_level, err, tol))
        got[name] = y
    np.savez(out_path, **got)
    print(json.dumps({"level": lib.cpu_level, "products": len(got)}))


class DispatchPaths(unittest.TestCase):
    def run_level(self, level, folder):
        out = os.path.join(folder, level + ".npz")
        env = dict(os.environ, CUSTOMOP_CPU=level)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "child", out],
                              env=env, capture_output=True, text=True, timeout=600)
        self.assertEqual(proc.returncode, 0, proc.stderr[-4000:])
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        return report, dict(np.load(out))

    def test_every_path_against_numpy_and_each_other(self):
        with tempfile.TemporaryDirectory() as folder:
            # Unforced, the library takes the best level this CPU has.
            best, _ = self.run_level("", folder)
            self.assertIn(best["level"], LEVELS)
            results = {}
            for level in LEVELS:
                with self.subTest(level=level):
                    report, got = self.run_level(level, folder)
                    # Forced to a level the CPU has, it takes it; above, the CPU's own.
                    want = level if LEVELS.index(level) >= LEVELS.index(best["level"]) \
                        else best["level"]
                    self.assertEqual(report["level"], want)
                    self.assertEqual(report["products"], len(cases()))
                    results[report["level"]] = got
            if best["level"] == "avx512":
                self.assertEqual(sorted(results), sorted(LEVELS))
            else:
                print("test_cpu_paths: this CPU's best is %s: the levels above it were not run"
                      % best["level"], file=sys.stderr)
            # The paths agree within the products' own tolerance (the portable loop rounds
            # each product, the vector paths fuse them).
            first = results[best["level"]]
            for level, got in results.items():
                for name, y in got.items():
                    tol = 1e-2 if "bf16" in name else 1e-5
                    scale = np.max(np.abs(first[name]))
                    self.assertLessEqual(np.max(np.abs(y - first[name])), tol * scale,
                                         "%s: %s against %s" % (name, level, best["level"]))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "child":
        child(sys.argv[2])
    else:
        unittest.main()
