"""Eager per-call time of customop ops called from torch: the native kernels (registered in
torch's dispatcher through its stable C ABI) against the Python path (`native=False`), with
`torch.sin` and a `torch.library.custom_op` whose Python body does the seed op's arithmetic in
torch ops as references. One command, both sides:

    bash benches/compare/run.sh --torch-eager

Each side runs in its own process (an op library registers once per process); each time is
the median over 7 rounds of 3,000 calls, in the default grad mode and under
`torch.inference_mode()`.

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): the same cases, tables and
processes, 2 rounds of 20 calls after 5 warm-up calls; no timing is asserted.
"""
import json
import os
import statistics
import subprocess
import sys
import time

SMOKE = os.environ.get("CUSTOMOP_BENCH_SMOKE") == "1"
ROUNDS, CALLS, WARMUP = (2, 20, 5) if SMOKE else (7, 3000, 300)


def per_call(fn, rounds=ROUNDS, calls=CALLS, warmup=WARMUP):
    """The median over `rounds` of the mean time per call (us) of `calls` calls of `fn`."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(times)


def both_modes(cases):
    """Each case's per-call time in grad mode and under `torch.inference_mode()`."""
    import torch

    out = {}
    for name, fn in cases.items():
        grad = per_call(fn)
        with torch.inference_mode():
            inference = per_call(fn)
        out[name] = [grad, inference]
    return out


def side(mode):
    import torch
    import customop.torch as ct

    lib = ct.load(os.environ["CUSTOMOP_KERNELS"], native=mode == "native")
    blob = lib.pack("my_lib::Blob", {"gain": 2.0, "bias": -1, "seed": 42,
                                     "tag": b"customop seed!!!"})
    cfg = lib.pack_attr("example::NormCfg", {"scale": 2.0, "shift": 0.5, "mode": "ScaleShift"})
    x3, x64 = torch.ones(3, 3), torch.randn(64, 32)
    ops = torch.ops
    cases = {
        "seed op 3x3": lambda: ops.my_custom_library.custom_op_external(blob, x3),
        "rms_norm_t 64x32": lambda: ops.example.rms_norm_t(x64, eps=1e-5),
        "rms_norm 64x32 (descriptor attribute)":
            lambda: ops.example.rms_norm(x64, eps=1e-5, cfg=cfg),
    }
    if mode == "native":
        @torch.library.custom_op("bench_py::seed", mutates_args=())
        def seed(blob: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            return (2.0 * x.sum(1)).round().sub(1).clamp(-128, 127).to(torch.int8)

        cases["torch.sin 3x3"] = lambda: torch.sin(x3)
        cases["torch.library.custom_op (Python body) 3x3"] = lambda: seed(blob, x3)
    print(json.dumps(both_modes(cases)))


def main():
    if len(sys.argv) > 1:
        side(sys.argv[1])
        return
    got = {}
    for mode in ("native", "python"):
        r = subprocess.run([sys.executable, __file__, mode], check=True, capture_output=True,
                           text=True)
        got[mode] = json.loads(r.stdout.strip().splitlines()[-1])
    native, python = got["native"], got["python"]
    sin = native["torch.sin 3x3"]
    print("eager per-call time from torch, us (median of %d x %d calls); grad mode | "
          "inference_mode" % (ROUNDS, CALLS))
    print("%-44s %17s %17s %15s %15s" % ("op", "native", "Python path", "Python/native",
                                          "native/sin"))
    for name in ("seed op 3x3", "rms_norm_t 64x32", "rms_norm 64x32 (descriptor attribute)"):
        n, p = native[name], python[name]
        print("%-44s %7.2f | %7.2f %7.2f | %7.2f %6.1f | %6.1f %6.2f | %6.2f"
              % (name, n[0], n[1], p[0], p[1], p[0] / n[0], p[1] / n[1], n[0] / sin[0],
                 n[1] / sin[1]))
    for name in ("torch.sin 3x3", "torch.library.custom_op (Python body) 3x3"):
        print("%-44s %7.2f | %7.2f" % (name, *native[name]))
    seed_n, seed_p = native["seed op 3x3"], python["seed op 3x3"]
    print("goal (seed op): native within 3x of torch.sin: grad mode %.2fx, inference_mode "
          "%.2fx; native >= 20x faster than the Python path: grad mode %.1fx, inference_mode "
          "%.1fx" % (seed_n[0] / sin[0], seed_n[1] / sin[1], seed_p[0] / seed_n[0],
                     seed_p[1] / seed_n[1]))


if __name__ == "__main__":
    main()
