"""Every dispatch path of the 4-bit kernels (`customop::cpu`: AVX-512, AVX2 and the portable
loop), each forced with `CUSTOMOP_CPU` in a process of its own (the level is read once), under
jax.jit: `matmul_i4` (f32 and bf16), `matmul_u4_zp` and `matmul_mxfp4` against numpy's f64
products, on shapes with partial micro-tiles and row blocks (N = 200, 320, 576; M = 1, 2, 7, 13),
MXFP4 at its extreme scales exactly (2^-127 included, N = 200), and the paths against each
other. The library reports the level it took (`customop_cpu_level`), checked against the
levels this CPU has as /proc/cpuinfo says: a level it has must be taken, run and compared; one
it lacks is capped to its own and skipped by name (a skip the test command counts). On the
machines CI runs on (AVX-512) all three run.

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
    # MXFP4 at the extreme scales, exactly, with N >= 64 so that the micro-kernels run: each
    # column one scale code for every group (so that its sum is exact in f32), 0 (2^-127, an
    # f32 subnormal, which XLA's threads flush: a flushed scale gives 0) to 130, positive
    # weights and rows, so that every result is a normal f32 the product gives exactly.
    for m in (1, 2, 7):
        k, n = 64, 200
        x = rng.integers(1, 4, size=(m, k)).astype(np.float32)
        f4 = rng.integers(1, 8, size=(k, n)).astype(np.uint8).view(ml_dtypes.float4_e2m1fn)
        column = np.array([0, 1, 2, 3, 60, 126, 127, 128, 130], np.uint8)[np.arange(n) % 9]
        e8 = np.tile(column, (k // 32, 1)).view(ml_dtypes.float8_e8m0fnu)
        w = f4.astype(np.float64) * np.repeat(e8.astype(np.float64), 32, axis=0)
        out.append(("matmul_mxfp4_exact_m%d_n%d" % (m, n), ("matmul_mxfp4", x, f4, e8),
                    (x.astype(np.float64) @ w).astype(np.float32).astype(np.float64), 0.0))
    return out


def cpu_levels():
    """The levels this CPU has, as its kernel reports them (/proc/cpuinfo's flags), best first:
    read here, apart from what customop detects, so that a level the library fails to take is
    caught."""
    with open("/proc/cpuinfo") as f:
        flags = set(next(line for line in f if line.startswith("flags")).split(":")[1].split())
    # x86-64-v3 as its token needs it (cpuinfo spells sse3 `pni`, lzcnt `abm`), v4 on top.
    v3 = {"pni", "ssse3", "sse4_1", "sse4_2", "popcnt", "avx", "avx2", "bmi1", "bmi2", "fma",
          "abm"} <= flags
    have = []
    if v3 and {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"} <= flags:
        have.append("avx512")
    if v3:
        have.append("avx2")
    return have + ["portable"]


def child(out_path):
    """In a process with CUSTOMOP_CPU set: every product, checked, saved to `out_path`."""
    import jax

    from customop.xla import Library

    lib = Library(PATH)
    lib.register()
    got = {}
    for name, (op, *args), want, tol in cases():
        y = np.asarray(jax.jit(getattr(lib.ops.example, op))(*args)).astype(np.float64)
        if tol == 0.0:
            # Exact: every element, as numpy's f64 product rounds to f32.
            bad = np.flatnonzero(y != want)
            if bad.size:
                i = bad[0]
                raise AssertionError("%s on %s: %d elements differ, the first at %d: %r, not %r"
                                     % (name, lib.cpu_level, bad.size, i, y.flat[i], want.flat[i]))
            got[name] = y
            continue
        err = np.max(np.abs(y - want)) / np.max(np.abs(want))
        if not err <= tol:
            raise AssertionError("%s on %s: error %.3g of the largest value, over %g"
                                 % (name, lib.cpu_level, err, tol))
        got[name] = y
    np.savez(out_path, **got)
    print(json.dumps({"level": lib.cpu_level, "products": len(got)}))


class DispatchPaths(unittest.TestCase):
    """Each level this CPU has is forced, run and compared (a level it has that the library
    does not take fails); a level it lacks is capped to its best, and its own comparison is
    skipped by name (counted as skipped in the summary)."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory()
        cls.have = cpu_levels()
        cls.best = cls.run_level("")
        cls.forced = {level: cls.run_level(level) for level in LEVELS}

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    @classmethod
    def run_level(cls, level):
        out = os.path.join(cls.folder.name, (level or "default") + ".npz")
        env = dict(os.environ, CUSTOMOP_CPU=level)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "child", out],
                              env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            return {"failed": proc.stderr[-4000:]}, {}
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        return report, dict(np.load(out))

    def test_unforced_the_library_takes_the_best_level_the_cpu_has(self):
        report, _ = self.best
        self.assertNotIn("failed", report, report.get("failed"))
        self.assertEqual(report["level"], self.have[0])

    def check_level(self, level):
        report, got = self.forced[level]
        self.assertNotIn("failed", report, report.get("failed"))
        self.assertEqual(report["products"], len(cases()))
        if level not in self.have:
            # Above what the CPU has: capped to its own, never taken.
            self.assertEqual(report["level"], self.have[0])
            why = "this CPU lacks %s (/proc/cpuinfo): capped to %s" % (level, self.have[0])
            print("SKIPPED test_cpu_paths %s: %s" % (level, why), file=sys.stderr)
            self.skipTest(why)
        self.assertEqual(report["level"], level)
        # Against the best level's results, within the products' own tolerance (the portable
        # loop rounds each product, the vector paths fuse them; the exact ones are equal).
        first = self.forced[self.have[0]][1]
        for name, y in got.items():
            tol = 0.0 if "exact" in name else 1e-2 if "bf16" in name else 1e-5
            scale = np.max(np.abs(first[name]))
            self.assertLessEqual(np.max(np.abs(y - first[name])), tol * scale,
                                 "%s: %s against %s" % (name, level, self.have[0]))

    def test_avx512_against_numpy_and_the_best_level(self):
        self.check_level("avx512")

    def test_avx2_against_numpy_and_the_best_level(self):
        self.check_level("avx2")

    def test_portable_against_numpy_and_the_best_level(self):
        self.check_level("portable")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "child":
        child(sys.argv[2])
    else:
        unittest.main()
