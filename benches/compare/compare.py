"""customop against JAX (and torch_xla when installed) on the same work, in one run.

Run from the repository root:  bash benches/compare/run.sh
(it builds what is needed, then runs this with the test venv's Python).

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): every part below runs to its
end on tiny sizes (chains of 10 and 100 ops, one fresh-process run each, a few executions per
round) and prints its tables as usual; no timing is asserted, the plot goes to
target/compare/scaling.svg instead of the book, and a missing torch_xla is an error, not a
skipped side. The programs used are CUSTOMOP_BENCH_BUILDER_SCALING, CUSTOMOP_BENCH_SEED_MODULE
and CUSTOMOP_BENCH_PJRT_BENCH when set (else the release builds in target/release).

1. Lowering: a chain of N custom calls on a tensor<3x3xf32>, each also taking the 56-byte
   external (JAX: a uint8 operand to jax.ffi.ffi_call), with `+ 1` at the end. Each side builds
   and lowers to StableHLO text in a fresh process (best of 3 for N <= 10k); we record the wall
   time and the peak RSS, and
   separately the XLA CPU compile time of that text.
2. Execution overhead: the compiled seed program with customop's generated Rust handler against
   the same program with a minimal hand-written C handler (tests/xla/c/seed_floor.c), per
   execution, in one process.
3. Scaling: customop's lowering for N = 1k..1M: time and memory per op; an SVG plot is written
   to book/src/img/scaling.svg.
"""

import ctypes
import json
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PY = sys.executable
SMOKE = os.environ.get("CUSTOMOP_BENCH_SMOKE") == "1"
BUILDER = os.environ.get("CUSTOMOP_BENCH_BUILDER_SCALING",
                         os.path.join(ROOT, "target", "release", "builder_scaling"))
SEED_MODULE = os.environ.get("CUSTOMOP_BENCH_SEED_MODULE",
                             os.path.join(ROOT, "target", "release", "seed_module"))
PJRT_BENCH = os.environ.get("CUSTOMOP_BENCH_PJRT_BENCH",
                            os.path.join(ROOT, "target", "release", "pjrt_bench"))
# The venvs (xla-venv, ...): target/ unless CUSTOMOP_BENCH_VENV_DIR says otherwise.
VENV_DIR = os.environ.get("CUSTOMOP_BENCH_VENV_DIR", os.path.join(ROOT, "target"))
KERNELS = os.environ.get("CUSTOMOP_KERNELS",
                         os.path.join(ROOT, "target", "kernels", "debug", "libcustomop_example_kernels.so"))
FLOOR = os.environ["CUSTOMOP_FLOOR_LIB"]
sys.path.insert(0, os.path.join(ROOT, "python"))


def median_of(runs, fn):
    """The median of `runs` fresh-process runs (by seconds); its RSS with it."""
    results = sorted((fn() for _ in range(runs)), key=lambda r: r["seconds"])
    return results[len(results) // 2]


def best_of(runs, fn):
    """The fastest of `runs` fresh-process runs (the machine is noisy); its RSS with it."""
    return min((fn() for _ in range(runs)), key=lambda r: r["seconds"])


def customop_lower(n, out_path, runs=5):
    """The median of 5 fresh-process runs up to 10k ops, of 3 at 100k, one run beyond (one
    run in smoke mode)."""
    def once():
        r = subprocess.run([BUILDER, "--one", str(n), "--out", out_path], capture_output=True, text=True, check=True)
        fields = [f.strip() for f in r.stdout.strip().split(",")]
        return {"seconds": float(fields[1]), "rss_mb": float(fields[3])}
    return median_of(1 if SMOKE else runs if n <= 10000 else 3 if n <= 100000 else 1, once)


JAX_LOWER = r"""
import json, resource, sys, time
import numpy as np
import jax, jax.numpy as jnp
n, out_path = int(sys.argv[1]), sys.argv[2]
op = jax.ffi.ffi_call("example.passthrough", jax.ShapeDtypeStruct((3, 3), jnp.float32))
def f(x, blob):
    for _ in range(n):
        x = op(blob, x)
    return x + 1.0
x = np.zeros((3, 3), np.float32)
blob = np.zeros((56,), np.uint8)
t = time.perf_counter()
text = jax.jit(f).lower(x, blob).as_text()
secs = time.perf_counter() - t
open(out_path, "w").write(text)
print(json.dumps({"seconds": secs, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

COMPILE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[3])
import jax, jax.extend.backend
from customop.xla import Library
Library(sys.argv[2]).register()
text = open(sys.argv[1]).read()
backend = jax.extend.backend.get_backend("cpu")
t = time.perf_counter()
backend.compile_and_load(text, backend.local_devices()[:1])
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def jax_lower(n, out_path):
    def once():
        r = subprocess.run([PY, "-c", JAX_LOWER, str(n), out_path], capture_output=True, text=True, check=True)
        return json.loads(r.stdout.strip().splitlines()[-1])
    return median_of(1 if SMOKE else 5 if n <= 10000 else 1, once)


def xla_compile(path):
    r = subprocess.run([PY, "-c", COMPILE, path, KERNELS, os.path.join(ROOT, "python")],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])["seconds"]


def torch_python():
    """A Python with torch and torch_xla: $CUSTOMOP_TORCH_PYTHON, else the set-up's venv."""
    for py in [os.environ.get("CUSTOMOP_TORCH_PYTHON"), os.path.join(VENV_DIR, "xla-venv", "bin", "python")]:
        if py and os.path.exists(py):
            r = subprocess.run([py, "-c", "import torch, torch_xla"], capture_output=True)
            if r.returncode == 0:
                return py
    return None


def torch_lower(py, n):
    def once():
        r = subprocess.run([py, os.path.join(ROOT, "benches", "compare", "torch_side.py"), str(n)],
                           capture_output=True, text=True, check=True)
        return json.loads(r.stdout.strip().splitlines()[-1])
    return best_of(1, once)


def manifest_json(path):
    """The kernel library's manifest as the JSON text its `customop_manifest()` returns (what
    torch_side.py --schemas reads; `KernelLibrary.manifest` is the parsed, typed form)."""
    fn = ctypes.CDLL(path).customop_manifest
    fn.restype = ctypes.c_char_p
    return fn().decode("utf-8")


def execution_overhead(iterations=2000, rounds=10, warmup=300):
    import numpy as np
    import jax
    import jax.extend.backend
    from customop.xla import Library

    lib = Library(KERNELS)
    lib.register()
    floor = ctypes.CDLL(FLOOR)
    jax.ffi.register_ffi_target("customop_floor.seed", jax.ffi.pycapsule(floor.customop_floor_seed),
                                platform="cpu", api_version=1)
    blob = lib.pack("my_lib::Blob", {"gain": 1.5, "bias": -2, "seed": 0, "tag": [0] * 16})
    text = open(os.path.join(ROOT, "target", "compare", "seed.mlir")).read()
    backend = jax.extend.backend.get_backend("cpu")
    dev = backend.local_devices()[0]
    x = jax.device_put(np.arange(9, dtype=np.float32).reshape(3, 3) * 0.1, dev)
    b = jax.device_put(np.frombuffer(blob, np.uint8), dev)
    exes = {}
    for name, target in [("customop (Rust handler)", "my_custom_library.custom_op_external"),
                         ("hand-written C handler", "customop_floor.seed")]:
        exes[name] = backend.compile_and_load(
            text.replace("my_custom_library.custom_op_external", target), [dev])
        for _ in range(warmup):
            exes[name].execute([x, b])[0].block_until_ready()
    # Interleaved rounds, best of each: both sides see the same machine state.
    results = {name: None for name in exes}
    outs = {}
    for _ in range(rounds):
        for name, exe in exes.items():
            t = time.perf_counter()
            for _ in range(iterations):
                out = exe.execute([x, b])
            out[0].block_until_ready()
            per = (time.perf_counter() - t) / iterations
            results[name] = per if results[name] is None else min(results[name], per)
            outs[name] = np.asarray(out[0])
    a, c = outs.values()
    assert np.array_equal(a, c), (a, c)
    return results


JAX_FIRST = r"""
import sys, time
t0 = float(sys.argv[1])
sys.path.insert(0, sys.argv[2])
import numpy as np, jax, jax.extend.backend
from customop.xla import Library
lib = Library(sys.argv[3]); lib.register()
blob = lib.pack("my_lib::Blob", {"gain": 1.5, "bias": -2, "seed": 0, "tag": [0] * 16})
backend = jax.extend.backend.get_backend("cpu")
dev = backend.local_devices()[0]
exe = backend.compile_and_load(open(sys.argv[4]).read(), [dev])
x = np.arange(9, dtype=np.float32).reshape(3, 3) * 0.1
out = exe.execute([jax.device_put(x, dev), jax.device_put(np.frombuffer(blob, np.uint8), dev)])
print(np.asarray(out[0]).tolist())
"""


def runner_vs_jaxlib(iterations=2000, rounds=5, warmup=200, firsts=3):
    """Per execution, the Rust runner (customop::pjrt, XLA's CPU PJRT plugin) against jaxlib's
    client, on the seed program and a chain of 1,000 custom calls, the same handlers (the
    release kernel cdylib) on both sides; and process start to first result."""
    import numpy as np
    import jax
    import jax.extend.backend
    from customop.xla import Library

    bench = PJRT_BENCH
    tmp = os.path.join(ROOT, "target", "compare")
    subprocess.run([bench, "--kernels", KERNELS, "--write", tmp], check=True)
    r = subprocess.run([bench, "--kernels", KERNELS, "--time", str(iterations), str(rounds)],
                       capture_output=True, text=True, check=True)
    ours = json.loads(r.stdout.strip().splitlines()[-1])

    lib = Library(KERNELS)
    lib.register()
    blob = np.frombuffer(lib.pack("my_lib::Blob", {"gain": 1.5, "bias": -2, "seed": 0, "tag": [0] * 16}), np.uint8)
    backend = jax.extend.backend.get_backend("cpu")
    dev = backend.local_devices()[0]
    x = np.arange(9, dtype=np.float32).reshape(3, 3) * 0.1
    theirs = {}
    for key, name, n in [("seed_us", "seed.mlir", iterations), ("chain_us", "chain1000.mlir", iterations // 10 + 1)]:
        exe = backend.compile_and_load(open(os.path.join(tmp, name)).read(), [dev])
        xd, bd = jax.device_put(x, dev), jax.device_put(blob, dev)

        def host_to_host():   # the runner's work: host inputs in, host outputs out
            return np.asarray(exe.execute([jax.device_put(x, dev), jax.device_put(blob, dev)])[0])

        def placed():         # inputs already on the device: execute and read the output
            return np.asarray(exe.execute([xd, bd])[0])

        for fn in (host_to_host, placed):
            for _ in range(warmup):
                fn()
            best = None
            for _ in range(rounds):
                t = time.perf_counter()
                for _ in range(n):
                    fn()
                per = (time.perf_counter() - t) / n * 1e6
                best = per if best is None else min(best, per)
            theirs[(key, fn.__name__)] = best

    def first(cmd, env=None):
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, check=True,
                           env=None if env is None else {**os.environ, **env})
        took = time.perf_counter() - t
        said = [l for l in r.stderr.splitlines() if l.startswith("plugin ")]
        return took, r.stdout.strip().splitlines()[-1], said[-1] if said else ""

    # The runner's first result with an empty compile cache (it compiles and writes the
    # executable) and with a warm one (it loads it): each in a folder of the run's own.
    import tempfile
    cold, warm = [], []
    for _ in range(firsts):
        with tempfile.TemporaryDirectory() as d:
            cold.append(first([bench, "--kernels", KERNELS, "--first"], {"CUSTOMOP_COMPILE_CACHE": d}))
    with tempfile.TemporaryDirectory() as d:
        first([bench, "--kernels", KERNELS, "--first"], {"CUSTOMOP_COMPILE_CACHE": d})
        for _ in range(firsts):
            warm.append(first([bench, "--kernels", KERNELS, "--first"], {"CUSTOMOP_COMPILE_CACHE": d}))
    assert all("compiled" in w for _, _, w in cold) and all("from the compile cache" in w for _, _, w in warm), \
        (cold, warm)
    firsts_jax = []
    for _ in range(firsts):
        firsts_jax.append(first([PY, "-c", JAX_FIRST, str(time.time()), os.path.join(ROOT, "python"), KERNELS,
                                 os.path.join(tmp, "seed.mlir")]))
    # Every side computed the same first result.
    assert {o for _, o, _ in cold + warm} == {o for _, o, _ in firsts_jax}, (cold, warm, firsts_jax)
    plugin = cold[0][2].split(",")[0].removeprefix("plugin ")
    # The cold start without its compile: each cold process's time less what its compile took.
    compile_s = lambda said: float(said.rsplit(" in ", 1)[1].removesuffix(" ms")) / 1e3  # noqa: E731
    return (ours, theirs, min(s for s, _, _ in cold), min(s for s, _, _ in warm),
            min(s for s, _, _ in firsts_jax), cold[0][1], firsts_jax[0][1], rounds, firsts, plugin,
            min(s - compile_s(w) for s, _, w in cold), min(compile_s(w) for _, _, w in cold))


# Smoke mode's sizes for the runner against jaxlib: a few executions, one first result each.
RUNNER_ARGS = dict(iterations=20, rounds=2, warmup=5, firsts=1) if SMOKE else {}


def print_runner(res):
    ours, theirs, f_cold, f_warm, f_jax, out_ours, out_jax, rounds, firsts, plugin, f_bare, f_compile = res
    print()
    print("Rust runner (customop::pjrt, the PJRT plugin %s) against jaxlib 0.12 (Python client)," % plugin)
    print("per execution, best of %d rounds; host inputs in, host outputs out on both sides:" % rounds)
    print("| program | inputs | runner | jaxlib | runner / jaxlib |")
    print("|---|---|---|---|---|")
    for key, name in [("seed_us", "seed (1 custom call)"), ("chain_us", "chain of 1,000 custom calls")]:
        placed = key.replace("_us", "_placed_us")
        h, p = theirs[(key, "host_to_host")], theirs[(key, "placed")]
        print("| %s | from the host (runner: `arg`/`external`; jaxlib: device_put) | %.1f µs | %.1f µs | %.2f |"
              % (name, ours[key], h, ours[key] / h))
        print("| %s | kept on the device (runner: `arg_placed`/`external_placed`) | %.1f µs | %.1f µs | %.2f |"
              % (name, ours[placed], p, ours[placed] / p))
    print("process start to first result (load the plugin or import jax, create the client, register, "
          "build and compile the seed or load it from the compile cache, run once; best of %d):" % firsts)
    print("| runner, compiling | runner, from the compile cache | jaxlib | runner (cache) / jaxlib |")
    print("|---|---|---|---|")
    print("| %.3f s | %.3f s | %.3f s | %.2f |" % (f_cold, f_warm, f_jax, f_warm / f_jax))
    print("compiling: the compile itself %.3f s; the rest of the cold start %.3f s"
          % (f_compile, f_bare))
    print("first results: runner %s, jaxlib %s" % (out_ours, out_jax))


def svg_plot(points, path):
    """points: [(n, us_per_op, kb_per_op)]; a log-x line plot of both, written by hand."""
    w, h, pad = 640, 360, 60
    import math
    xs = [math.log10(p[0]) for p in points]
    x0, x1 = min(xs), max(xs)
    def sx(v): return pad + (v - x0) / max(x1 - x0, 1e-9) * (w - 2 * pad)
    ymax_t = max(p[1] for p in points) * 1.2
    ymax_m = max(p[2] for p in points) * 1.2
    def sy(v, m): return h - pad - v / m * (h - 2 * pad)
    t_line = " ".join("%.1f,%.1f" % (sx(x), sy(p[1], ymax_t)) for x, p in zip(xs, points))
    m_line = " ".join("%.1f,%.1f" % (sx(x), sy(p[2], ymax_m)) for x, p in zip(xs, points))
    labels = "".join('<text x="%.1f" y="%d" font-size="12" text-anchor="middle">%s</text>'
                     % (sx(x), h - pad + 18, "{:,}".format(p[0])) for x, p in zip(xs, points))
    svg = f"""<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
<text x="{w/2}" y="24" font-size="15" text-anchor="middle">customop lowering: cost per op as N grows</text>
<line x1="{pad}" y1="{h-pad}" x2="{w-pad}" y2="{h-pad}" stroke="black"/>
<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h-pad}" stroke="black"/>
{labels}
<text x="{w/2}" y="{h-12}" font-size="12" text-anchor="middle">N custom calls (log scale)</text>
<polyline points="{t_line}" fill="none" stroke="#1f77b4" stroke-width="2.5"/>
<polyline points="{m_line}" fill="none" stroke="#d62728" stroke-width="2.5" stroke-dasharray="6,4"/>
<text x="{pad+8}" y="{pad-10}" font-size="12" fill="#1f77b4">time per op (µs; axis top = {ymax_t:.1f})</text>
<text x="{w-pad-8}" y="{pad-10}" font-size="12" fill="#d62728" text-anchor="end">peak RSS per op (KiB; axis top = {ymax_m:.1f})</text>
</svg>
"""
    open(path, "w").write(svg)


def main():
    if "--runner" in sys.argv:
        print_runner(runner_vs_jaxlib(**RUNNER_ARGS))
        return
    quick = "--quick" in sys.argv
    ns = [10, 100] if SMOKE else [1000, 10000] if quick else [1000, 10000, 100000]
    os.makedirs(os.path.join(ROOT, "target", "compare"), exist_ok=True)
    tmp = lambda name: os.path.join(ROOT, "target", "compare", name)
    # --quick: customop against JAX only (torch_xla's 10k export alone takes about a minute).
    tpy = None if quick else torch_python()
    if SMOKE and not quick and not tpy:
        sys.exit("smoke mode: no Python with torch and torch_xla ($CUSTOMOP_TORCH_PYTHON or "
                 "%s/xla-venv): torch_xla's side would be skipped" % VENV_DIR)
    if quick:
        print("torch_xla: skipped with --quick")
    else:
        print("torch_xla: %s" % ("found at %s" % tpy if tpy else
                                  "not installed (scripts/setup.sh installs torch==2.9.0 and torch_xla==2.9.0 "
                                  "into target/xla-venv); its side is skipped"))
    rows = []
    torch_rows = {}
    for n in ns:
        c = customop_lower(n, tmp("customop-%d.mlir" % n))
        j = jax_lower(n, tmp("jax-%d.mlir" % n))
        if tpy and n <= (10 if SMOKE else 10000):  # torch_xla needs minutes beyond 10k
            torch_rows[n] = torch_lower(tpy, n)
        # XLA CPU takes ~110 s to compile 10k custom calls from either side: time 1k only
        # (in smoke mode, the smallest chain only).
        timed = n == ns[0] if SMOKE else n <= 1000
        cc = xla_compile(tmp("customop-%d.mlir" % n)) if timed else float("nan")
        jc = xla_compile(tmp("jax-%d.mlir" % n)) if timed else float("nan")
        rows.append((n, c, j, cc, jc))
    print()
    print("lowering times: %s" % ("one fresh-process run of each side (smoke mode)" if SMOKE else
                                  "the median of 5 fresh-process runs of each side up to 10k ops"))
    print("| N | customop lower | JAX lower | JAX / customop | customop RSS | JAX RSS | XLA compile (customop text) | XLA compile (JAX text) |")
    print("|---|---|---|---|---|---|---|---|")
    for n, c, j, cc, jc in rows:
        print("| {:,} | {:.3f} s | {:.3f} s | {:.1f}x | {:.0f} MiB | {:.0f} MiB | {} | {} |".format(
            n, c["seconds"], j["seconds"], j["seconds"] / c["seconds"], c["rss_mb"], j["rss_mb"],
            "%.2f s" % cc if cc == cc else "-", "%.2f s" % jc if jc == jc else "-"))

    if torch_rows:
        print()
        print("| N | customop lower | torch_xla export + lower | torch_xla / customop | torch_xla RSS |")
        print("|---|---|---|---|---|")
        for n, c, j, cc, jc in rows:
            if n in torch_rows:
                t = torch_rows[n]
                print("| {:,} | {:.3f} s | {:.2f} s | {:.0f}x | {:.0f} MiB |".format(
                    n, c["seconds"], t["seconds"], t["seconds"] / c["seconds"], t["rss_mb"]))
        open(tmp("manifest.json"), "w").write(manifest_json(KERNELS))
        r = subprocess.run([tpy, os.path.join(ROOT, "benches", "compare", "torch_side.py"), "--schemas", tmp("manifest.json")],
                           capture_output=True, text=True, check=True)
        print("\ntorch._C.parse_schema accepted the schema strings of all %d example ops"
              % json.loads(r.stdout.strip().splitlines()[-1])["parsed"])

    # The seed program, for the execution overhead.
    subprocess.run([SEED_MODULE, tmp("seed.mlir")], check=True)
    ex = execution_overhead(**(dict(iterations=20, rounds=2, warmup=5) if SMOKE else {}))
    (rn, rt), (cn, ct) = ex.items()
    print()
    print("| seed program, per execution | time |")
    print("|---|---|")
    print("| %s | %.2f µs |" % (rn, rt * 1e6))
    print("| %s | %.2f µs |" % (cn, ct * 1e6))
    print("| ratio | %.3f |" % (rt / ct))

    print_runner(runner_vs_jaxlib(**RUNNER_ARGS))

    for n, c, j, cc, jc in rows:
        if n == 10000:
            print("\nJAX / customop at 10,000 ops: %.1fx (median of 5 runs each)" % (j["seconds"] / c["seconds"]))
    scale_ns = [10, 100] if SMOKE else [1000, 10000, 1000000] if quick else [1000, 10000, 100000, 1000000]
    pts = []
    print()
    print("| N | customop lower | per op | peak RSS | RSS per op |")
    print("|---|---|---|---|---|")
    for n in scale_ns:
        c = customop_lower(n, tmp("scale.mlir"))
        pts.append((n, c["seconds"] / n * 1e6, c["rss_mb"] * 1024 / n))
        print("| {:,} | {:.3f} s | {:.2f} µs | {:.0f} MiB | {:.2f} KiB |".format(n, c["seconds"], c["seconds"] / n * 1e6, c["rss_mb"], c["rss_mb"] * 1024 / n))
    if SMOKE:  # the plot is drawn, but the book's is not replaced
        svg_plot(pts, tmp("scaling.svg"))
        print("\nplot: target/compare/scaling.svg (smoke mode)")
    elif not quick:
        os.makedirs(os.path.join(ROOT, "book", "src", "img"), exist_ok=True)
        svg_plot(pts, os.path.join(ROOT, "book", "src", "img", "scaling.svg"))
        print("\nplot: book/src/img/scaling.svg")


if __name__ == "__main__":
    main()
