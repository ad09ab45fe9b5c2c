"""A sequence-parallel training step on DTensors, 2 processes (gloo on loopback), one run:

    bash benches/compare/run.sh --dtensor

The block: activations `x` sharded along the sequence (rows), `rms_norm_t` then `scale_rows`
(customop ops that declare `partition(x = [rows, _], ...)`, and whose backward ops do), then a
replicated linear; forward and backward. Partitioned: each rank runs the ops on its rows, no
collective. Replicated fallback (what an op with no `partition` gets): the ops' inputs are
gathered onto every rank, the ops run on all rows everywhere, and the gradients flow back
through the gather. Same values either way (checked). Each figure is the median over 5 rounds
of 10 steps, of the slower rank.

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): 64 x 32, 2 rounds of 2
steps; no timing is asserted.
"""
import json
import os
import socket
import subprocess
import sys

SMOKE = os.environ.get("CUSTOMOP_BENCH_SMOKE") == "1"
ROWS, HIDDEN, ROUNDS, STEPS = (64, 32, 2, 2) if SMOKE else (4096, 1024, 5, 10)
WORLD = 2

RANK = r"""
import json, os, statistics, sys, time
import torch
import customop.torch as ct
ct.load(os.environ["CUSTOMOP_KERNELS"])
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor

rank, world, port, rows, hidden, rounds, steps = sys.argv[1:8]
rounds, steps = int(rounds), int(steps)
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
dist.init_process_group("gloo", rank=int(rank), world_size=int(world))
torch.set_num_threads(1)
mesh = init_device_mesh("cpu", (int(world),))
E = torch.ops.example
g = torch.Generator().manual_seed(0)
x = torch.randn(int(rows), int(hidden), generator=g)
gate = torch.rand(int(rows), generator=g) + 0.5
W = torch.randn(int(hidden), 64, generator=g) / 32
xs = distribute_tensor(x, mesh, [Shard(0)]).requires_grad_()
gs = distribute_tensor(gate, mesh, [Shard(0)])
Ws = distribute_tensor(W, mesh, [Replicate()])
R = [Replicate()]


def partitioned():
    return E.scale_rows(E.rms_norm_t(xs, eps=1e-3), gs) @ Ws


def fallback():
    h = E.rms_norm_t(xs.redistribute(mesh, R), eps=1e-3)
    return E.scale_rows(h, gs.redistribute(mesh, R)) @ Ws


def step(f):
    xs.grad = None
    out = f()
    out.to_local().pow(2).sum().backward()
    return out


a, b = step(partitioned), step(fallback)
same = bool(torch.allclose(a.full_tensor(), b.full_tensor(), rtol=1e-4, atol=1e-5))
times = {}
for name, f in [("partitioned", partitioned), ("fallback", fallback)]:
    per = []
    for _ in range(rounds):
        dist.barrier()
        t = time.perf_counter()
        for _ in range(steps):
            step(f)
        per.append((time.perf_counter() - t) / steps)
    times[name] = statistics.median(per)
dist.destroy_process_group()
print(json.dumps({"same": same, **times}))
"""


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    args = [str(a) for a in (WORLD, port, ROWS, HIDDEN, ROUNDS, STEPS)]
    procs = [subprocess.Popen([sys.executable, "-c", RANK, str(r), *args], stdout=subprocess.PIPE,
                              text=True) for r in range(WORLD)]
    said = []
    for p in procs:
        out, _ = p.communicate(timeout=900)
        if p.returncode != 0:
            sys.exit("a rank failed (exit %d)" % p.returncode)
        said.append(json.loads(out.strip().splitlines()[-1]))
    assert all(s["same"] for s in said), said
    part = max(s["partitioned"] for s in said)
    fall = max(s["fallback"] for s in said)
    import torch
    print("DTensor sequence-parallel step (torch %s, %d processes, x %dx%d f32 sharded on rows, "
          "rms_norm_t + scale_rows + a replicated linear, forward and backward; median of %d "
          "rounds of %d steps, the slower rank):" % (torch.__version__.split("+")[0], WORLD, ROWS,
                                                     HIDDEN, ROUNDS, STEPS))
    print("| partitioned (each rank its rows) | replicated fallback (gathered) | partitioned / fallback |")
    print("|---|---|---|")
    print("| %.2f ms | %.2f ms | %.2f |" % (part * 1e3, fall * 1e3, part / fall))


if __name__ == "__main__":
    main()
