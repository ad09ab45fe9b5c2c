"""The same pair as parallel.py under torch eager (native kernels), in one process, one run:
`example::layer_norm_par` on torch's intra-op pool (torch 2.10 and later; inline on 2.9)
against `example::layer_norm_serial` and `torch.nn.functional.layer_norm`, 4096 x 1024 f32,
each the median of 7 rounds of 50 calls after a warm-up. Run by `run.sh --parallel` with the
newest torch's venv.

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): 64 x 128 f32, checked against
F.layer_norm as usual, 2 rounds of 2 calls after 1 warm-up call; no timing is asserted.
"""
import os

import torch

import customop.torch as ct
import torch_eager  # benches/compare, this script's folder

ROUNDS, CALLS, WARMUP = (2, 2, 1) if torch_eager.SMOKE else (7, 50, 10)
ROWS, COLS = (64, 128) if torch_eager.SMOKE else (4096, 1024)


def per_call(f):
    return torch_eager.per_call(f, ROUNDS, CALLS, warmup=WARMUP)


def main():
    ct.load(os.environ["CUSTOMOP_KERNELS"])
    ops = torch.ops.example
    g = torch.Generator().manual_seed(0)
    x = torch.randn(ROWS, COLS, generator=g)
    w, b = torch.rand(COLS, generator=g) + 0.5, torch.randn(COLS, generator=g)
    torch.testing.assert_close(ops.layer_norm_par(x, w, b, eps=1e-5),
                               torch.nn.functional.layer_norm(x, (COLS,), w, b, 1e-5),
                               rtol=1e-4, atol=1e-4)
    threads = int(ops.pool_probe(torch.zeros(8), panic_at=-1)[0])
    print("torch %s: %d intra-op threads, the kernel sees %d"
          % (torch.__version__, torch.get_num_threads(), threads))
    with torch.inference_mode():
        par = per_call(lambda: ops.layer_norm_par(x, w, b, eps=1e-5))
        serial = per_call(lambda: ops.layer_norm_serial(x, w, b, eps=1e-5))
        ref = per_call(lambda: torch.nn.functional.layer_norm(x, (COLS,), w, b, 1e-5))
    for name, us in [("layer_norm_par (torch's pool)", par), ("layer_norm_serial", serial),
                     ("F.layer_norm", ref)]:
        print("torch    %-32s %9.1f us per call" % (name, us))
    print("torch    speed-up serial / par: %.2fx; par / F.layer_norm: %.2f" % (serial / par, par / ref))


if __name__ == "__main__":
    main()
