"""customop ops on DTensors (torch.distributed), in 2 and then 4 processes (gloo on
loopback): an op's `partition(...)` is its DTensor sharding. `scale_rows` on row shards returns
row shards equal to one process's result, with no collective (CommDebugMode); `rms_norm_t`
forward and backward (its backward op declares the same partition) on row shards equal one
process's; a sequence-parallel block (norm, row gate, replicated linear) equals one process,
eagerly and under torch.compile, with no collective; tensor parallelism (parallelize_module,
DTensors kept) around the norm equals one process; a model under FSDP2 (`fully_shard`) trains
three steps to one process's weights; an op with no partition (`softplus`) runs on replicated
inputs; a placement no strategy takes (columns) is redistributed, never wrong; an op with a
side effect is refused by name; uneven shards (7 rows) and a 2-D mesh; and a hand-made rule
whose factor misses a result gives no sharded strategy.

Run on both paths: CUSTOMOP_TORCH_NATIVE=1 (default) or 0, with
CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/torch-venv/bin/python -m unittest tests/torch/test_dtensor.py
"""

import json
import os
import socket
import subprocess
import sys
import unittest

from customop.library import KernelLibrary
from customop.manifest import OpSchema

# 4 ranks on the native path only (the Python path is the same code at any world size).
WORLDS = (2, 4) if os.environ.get("CUSTOMOP_TORCH_NATIVE", "1") == "1" else (2,)

PROGRAM = r"""
import json, os, sys
import torch
import customop.torch as ct

# Loaded before DTensor is imported: the shardings are registered when it is.
lib = ct.load(os.environ["CUSTOMOP_KERNELS"],
              native=os.environ.get("CUSTOMOP_TORCH_NATIVE", "1") == "1")
assert "torch.distributed.tensor" not in sys.modules
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.debug import CommDebugMode

rank, world, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
dist.init_process_group("gloo", rank=rank, world_size=world)
E = torch.ops.example
mesh = init_device_mesh("cpu", (world,))
g = torch.Generator().manual_seed(3)
x = torch.randn(8, 16, dtype=torch.float64, generator=g)
w = torch.rand(8, dtype=torch.float64, generator=g) + 0.5
c = torch.randn(8, 16, dtype=torch.float64, generator=g)
said = {}

# A partitioned op on its row shards: row shards out, no collective, one process's values.
xd, wd = distribute_tensor(x, mesh, [Shard(0)]), distribute_tensor(w, mesh, [Shard(0)])
with CommDebugMode() as comm:
    yd = E.scale_rows(xd, wd)
said["scale_rows"] = {"placements": repr(yd.placements), "collectives": comm.get_total_counts(),
                      "equal": bool(torch.equal(yd.full_tensor(), E.scale_rows(x, w)))}

# Forward and backward of rms_norm_t on row shards (the backward op shares the partition).
xg = distribute_tensor(x, mesh, [Shard(0)]).requires_grad_()
cd = distribute_tensor(c, mesh, [Shard(0)])
with CommDebugMode() as comm:
    y = E.rms_norm_t(xg, eps=1e-3)
    (y * cd).to_local().sum().backward()
x1 = x.clone().requires_grad_()
(E.rms_norm_t(x1, eps=1e-3) * c).sum().backward()
said["rms_norm_t"] = {"placements": repr(y.placements), "grad_placements": repr(xg.grad.placements),
                      "collectives": {str(k): v for k, v in comm.get_comm_counts().items()},
                      "forward": bool(torch.allclose(y.full_tensor(), E.rms_norm_t(x, eps=1e-3))),
                      "backward": bool(torch.allclose(xg.grad.full_tensor(), x1.grad))}

# Uneven shards: 7 rows on the ranks (4 and 3 on 2, 2-2-2-1 on 4), forward and backward.
x7 = torch.randn(7, 16, dtype=torch.float64, generator=g)
w7 = torch.rand(7, dtype=torch.float64, generator=g) + 0.5
x7d = distribute_tensor(x7, mesh, [Shard(0)]).requires_grad_()
w7d = distribute_tensor(w7, mesh, [Shard(0)])
with CommDebugMode() as comm:
    y7 = E.scale_rows(E.rms_norm_t(x7d, eps=1e-3), w7d)
    y7.to_local().pow(2).sum().backward()
x71 = x7.clone().requires_grad_()
E.scale_rows(E.rms_norm_t(x71, eps=1e-3), w7).pow(2).sum().backward()
said["uneven"] = {"placements": repr(y7.placements), "rows": list(y7.to_local().shape)[0],
                  "collectives": comm.get_total_counts(),
                  "forward": bool(torch.allclose(y7.full_tensor(),
                                                 E.scale_rows(E.rms_norm_t(x7, eps=1e-3), w7))),
                  "backward": bool(torch.allclose(x7d.grad.full_tensor(), x71.grad))}

# A 2-D mesh (2 x 2 with 4 ranks, 1 x 2 with 2): the 7 rows split over one mesh dimension,
# the other, or both.
mesh2 = init_device_mesh("cpu", (world // 2, 2))
said["mesh_2d"] = {}
for placements in ([Shard(0), Replicate()], [Replicate(), Shard(0)], [Shard(0), Shard(0)]):
    x2 = distribute_tensor(x7, mesh2, placements)
    w2 = distribute_tensor(w7, mesh2, placements)
    with CommDebugMode() as comm:
        y2 = E.scale_rows(x2, w2)
    said["mesh_2d"][repr(placements)] = {
        "placements": repr(list(y2.placements)), "collectives": comm.get_total_counts(),
        "equal": bool(torch.equal(y2.full_tensor(), E.scale_rows(x7, w7)))}

# No partition: replicated inputs, replicated result, the same values.
sd = E.softplus(distribute_tensor(x, mesh, [Shard(0)]))
said["softplus"] = {"placements": repr(sd.placements),
                    "equal": bool(torch.equal(sd.full_tensor(), E.softplus(x)))}

# Columns: no strategy takes them; DTensor redistributes, the values stay right.
yc = E.scale_rows(distribute_tensor(x, mesh, [Shard(1)]), distribute_tensor(w, mesh, [Replicate()]))
said["columns"] = {"equal": bool(torch.equal(yc.full_tensor(), E.scale_rows(x, w)))}

# A side effect would run once a rank: refused by name.
blob = distribute_tensor(lib.pack("my_lib::Blob", {"gain": 2.0, "bias": -1, "seed": 42,
                                                   "tag": b"customop seed!!!"}), mesh, [Replicate()])
try:
    torch.ops.my_custom_library.custom_op_external(blob, distribute_tensor(
        torch.ones(3, 3), mesh, [Replicate()]))
    said["side_effect"] = "ran"
except Exception as e:
    # (torch 2.9 says "Sharding propagation failed for ..." raised from customop's refusal.)
    said["side_effect"] = " | ".join(str(x) for x in (e, e.__cause__, e.__context__) if x)
# A sequence-parallel block: activations sharded along the sequence (rows), the customop norm
# and row gate on their shards, a replicated linear; forward and every gradient equal one
# process's, and the customop ops add no collective.
W = torch.randn(16, 4, dtype=torch.float64, generator=g)
gate = torch.rand(8, dtype=torch.float64, generator=g) + 0.5


def block(x, gate, W):
    return E.scale_rows(E.rms_norm_t(x, eps=1e-3), gate) @ W


xs = distribute_tensor(x, mesh, [Shard(0)]).requires_grad_()
gs = distribute_tensor(gate, mesh, [Shard(0)]).requires_grad_()
Ws = distribute_tensor(W, mesh, [Replicate()]).requires_grad_()
with CommDebugMode() as comm:
    out = block(xs, gs, Ws)
    out.to_local().pow(2).sum().backward()
one = [t.clone().requires_grad_() for t in (x, gate, W)]
out1 = block(*one)
out1.pow(2).sum().backward()
said["sequence_parallel"] = {
    "placements": repr(out.placements),
    "forward": bool(torch.allclose(out.full_tensor(), out1)),
    "grads": [bool(torch.allclose(a.grad.full_tensor(), b.grad)) for a, b in zip((xs, gs), one)],
    "collectives": sorted(str(k) for k in comm.get_comm_counts()),
}

# The same block under torch.compile: DTensor traced, the customop ops on their shards.
xc = distribute_tensor(x, mesh, [Shard(0)]).requires_grad_()
outc = torch.compile(block, fullgraph=True)(xc, gs, Ws)
outc.to_local().pow(2).sum().backward()
said["compiled"] = {"placements": repr(outc.placements),
                    "forward": bool(torch.allclose(outc.full_tensor(), out1)),
                    "grad": bool(torch.allclose(xc.grad.full_tensor(), one[0].grad))}

# Tensor parallel (parallelize_module) keeping DTensors (use_local_output=False): the column-
# parallel linear's output is sharded on columns, which the norm's rule does not split, so
# DTensor redistributes it; forward and gradients equal one process.
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.up = torch.nn.Linear(16, 32, dtype=torch.float64)
        self.down = torch.nn.Linear(32, 16, dtype=torch.float64)

    def forward(self, x):
        return self.down(E.rms_norm_t(self.up(x), eps=1e-3))


tp, ref = Mlp(), Mlp()
parallelize_module(tp, mesh, {"up": ColwiseParallel(use_local_output=False),
                              "down": RowwiseParallel(use_local_output=False)})
out_tp, out_ref = tp(x), ref(x)
out_tp.full_tensor().pow(2).sum().backward()
out_ref.pow(2).sum().backward()
said["tensor_parallel"] = {
    "forward": bool(torch.allclose(out_tp.full_tensor(), out_ref)),
    "grads": all(torch.allclose(p.grad.full_tensor(), dict(ref.named_parameters())[k].grad)
                 for k, p in tp.named_parameters()),
}

# FSDP2: a model with the customop norm and gate trains three steps to one process's weights.
from torch.distributed.fsdp import fully_shard


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.a = torch.nn.Linear(16, 16, dtype=torch.float64)
        self.b = torch.nn.Linear(16, 4, dtype=torch.float64)

    def forward(self, x, gate):
        return self.b(E.scale_rows(E.rms_norm_t(self.a(x), eps=1e-3), gate))


def train(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        model(x, gate).pow(2).mean().backward()
        opt.step()
    return {k: (v.full_tensor() if isinstance(v, DTensor) else v).detach()
            for k, v in model.named_parameters()}


sharded = Model()
fully_shard(sharded.a, mesh=mesh)
fully_shard(sharded.b, mesh=mesh)
fully_shard(sharded, mesh=mesh)
got, want = train(sharded), train(Model())
said["fsdp2"] = {"params": sorted(got), "equal": all(torch.allclose(got[k], want[k]) for k in want),
                 "moved": not torch.allclose(want["a.weight"], Model().a.weight)}
dist.destroy_process_group()
print(json.dumps(said))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DTensorOps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        """Every rank's findings, with 2 processes and then 4."""
        cls.said = []
        for world in WORLDS:
            port = str(free_port())
            procs = [subprocess.Popen([sys.executable, "-c", PROGRAM, str(r), str(world), port],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for r in range(world)]
            for p in procs:
                try:
                    out, err = p.communicate(timeout=300)
                except subprocess.TimeoutExpired:
                    for q in procs:
                        q.kill()
                    raise
                if p.returncode != 0:
                    raise AssertionError("a rank of %d failed (exit %d):\n%s"
                                         % (world, p.returncode, err))
                cls.said.append(json.loads(out.strip().splitlines()[-1]))
        assert len(cls.said) == sum(WORLDS)

    def each(self, key):
        return [s[key] for s in self.said]

    def test_a_partitioned_op_runs_on_its_shards_with_no_collective(self):
        for s in self.each("scale_rows"):
            self.assertEqual(s, {"placements": "(Shard(dim=0),)", "collectives": 0, "equal": True})

    def test_forward_and_backward_on_row_shards_equal_one_process(self):
        for s in self.each("rms_norm_t"):
            self.assertEqual(s, {"placements": "(Shard(dim=0),)",
                                 "grad_placements": "(Shard(dim=0),)", "collectives": {},
                                 "forward": True, "backward": True})

    def test_uneven_shards_equal_one_process_with_no_collective(self):
        """7 rows on 2 ranks are 4 and 3, on 4 ranks 2, 2, 2 and 1."""
        rows = {2: [4, 3], 4: [2, 2, 2, 1]}
        self.assertEqual([s["rows"] for s in self.each("uneven")],
                         [n for world in WORLDS for n in rows[world]])
        for s in self.each("uneven"):
            self.assertEqual({k: v for k, v in s.items() if k != "rows"},
                             {"placements": "(Shard(dim=0),)", "collectives": 0,
                              "forward": True, "backward": True})

    def test_a_2d_mesh_shards_as_the_inputs_do(self):
        """Uneven rows on a 2-D mesh: shards out as the inputs came in, no collective."""
        for s in self.each("mesh_2d"):
            for placements in ("[Shard(dim=0), Replicate()]", "[Replicate(), Shard(dim=0)]",
                               "[Shard(dim=0), Shard(dim=0)]"):
                self.assertEqual(s[placements], {"placements": placements, "collectives": 0,
                                                 "equal": True})

    def test_an_op_without_a_partition_runs_replicated(self):
        for s in self.each("softplus"):
            self.assertEqual(s, {"placements": "(Replicate(),)", "equal": True})

    def test_a_placement_no_strategy_takes_is_redistributed(self):
        for s in self.each("columns"):
            self.assertEqual(s, {"equal": True})

    def test_a_sequence_parallel_block_equals_one_process_with_no_collective_of_its_own(self):
        for s in self.each("sequence_parallel"):
            self.assertEqual(s, {"placements": "(Shard(dim=0),)", "forward": True,
                                 "grads": [True, True], "collectives": []})

    def test_the_block_under_torch_compile_equals_one_process(self):
        for s in self.each("compiled"):
            self.assertEqual(s, {"placements": "(Shard(dim=0),)", "forward": True, "grad": True})

    def test_tensor_parallel_keeping_dtensors_equals_one_process(self):
        for s in self.each("tensor_parallel"):
            self.assertEqual(s, {"forward": True, "grads": True})

    def test_fsdp2_trains_to_one_process_weights(self):
        for s in self.each("fsdp2"):
            self.assertEqual(s, {"params": ["a.bias", "a.weight", "b.bias", "b.weight"],
                                 "equal": True, "moved": True})

    def test_shardings_are_registered_when_dtensor_is_already_imported(self):
        """(The two ranks load customop first: their shardings wait for DTensor's import.)"""
        program = (
            "import os, torch\n"
            "from torch.distributed.tensor import DTensor\n"
            "import customop.torch as ct\n"
            "ct.load(os.environ['CUSTOMOP_KERNELS'],"
            " native=os.environ.get('CUSTOMOP_TORCH_NATIVE', '1') == '1')\n"
            "funcs = DTensor._op_dispatcher.sharding_propagator.op_strategy_funcs\n"
            "print(torch.ops.example.scale_rows.default in funcs,"
            " torch.ops.example.softplus.default in funcs)\n")
        r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["True", "True"])

    def test_a_side_effect_is_refused_by_name(self):
        for s in self.each("side_effect"):
            self.assertIn("my_custom_library::custom_op_external cannot run on DTensors: it has "
                          "a side effect", s)


class Strategies(unittest.TestCase):
    """The strategies a manifest's rule gives, checked where they are used: a factor that does
    not reach every result gives none (the op runs replicated for it), where DTensor would call
    a result each rank computed from its own shard replicated. Rust refuses such a rule; this
    is a manifest made by hand."""

    def schema(self, edit):
        """scale_rows' schema, its manifest entry edited by `edit` first."""
        lib = KernelLibrary(os.environ["CUSTOMOP_KERNELS"])
        op = next(o for o in json.loads(lib.manifest_bytes)["ops"]
                  if o["name"] == "example::scale_rows")
        edit(op["schema"])
        return OpSchema.from_json(op["schema"], lib.manifest.element_types)

    def test_a_result_the_factor_does_not_reach_leaves_the_op_replicated(self):
        from torch.distributed.tensor import Replicate, Shard

        from customop.torch.sharding import strategies

        whole = strategies(self.schema(lambda s: None), 2)
        self.assertEqual(whole, [([Replicate()], [Replicate(), Replicate()]),
                                 ([Shard(0)], [Shard(0), Shard(0)])])

        def second_result(carries):
            def edit(s):
                s["results"].append(dict(s["results"][0], name="z",
                                         shape=[{"kind": "shape_of", "param": "w"}]))
                s["derivatives"]["outputs"]["z"] = []
                if carries is not None:
                    s["partition"]["results"].append({"name": "z", "index": 1,
                                                      "dims": [carries]})
            return edit

        for carries in (None, "cols"):
            got = strategies(self.schema(second_result(carries)), 2)
            self.assertEqual(got, [([Replicate(), Replicate()], [Replicate(), Replicate()])],
                             carries)
        got = strategies(self.schema(second_result("rows")), 2)
        self.assertEqual(got[1], ([Shard(0), Shard(0)], [Shard(0), Shard(0)]))


if __name__ == "__main__":
    unittest.main()
