"""The autograd layer's cost: eager per-call time of customop ops (native kernels) against the
same ops as `torch.library.custom_op`s with a Python kernel calling torch (and
`register_autograd` for the one with a backward), on 3x3 f32, in one process per torch, on
every test venv's torch (2.9 and the newest):

    bash benches/compare/run.sh --torch-autograd

The four ratios customop / torch's custom_op:
- an op without a `vjp` (checked_sqrt) in grad mode (torch's default), input not requiring grad;
- an op with a `vjp` (rms_norm_t), input not requiring grad;
- the same, input requiring grad (the call records the node; backward not run);
- the op with a `vjp` under `torch.inference_mode()`.
And the op without a `vjp` against the same op as a C++ `TORCH_LIBRARY` op (no autograd kernel:
the floor), in grad mode and under inference_mode. Each time is the median over 7 rounds of
3,000 calls.

Smoke mode (CUSTOMOP_BENCH_SMOKE=1, as `run.sh --smoke` sets it): the C++ op is the one
torch_cpp.py built for this torch in smoke mode (built here if there is none), every case
checked and timed as usual, each time over 2 rounds of 20 calls (torch_eager's smoke sizes); no
timing is asserted.
"""
import json
import os
import subprocess
import sys
import tempfile

from torch_cpp import build_cpp_op
from torch_eager import per_call

EPS = 1e-3


def side(cpp_so):
    import torch
    import customop.torch as ct

    ct.load(os.environ["CUSTOMOP_KERNELS"])
    torch.ops.load_library(cpp_so)
    x = torch.tensor([[4.0, 9.0, 16.0], [1.0, 0.25, 2.0], [3.0, 5.0, 7.0]])
    xg = x.clone().requires_grad_()

    @torch.library.custom_op("bench_ag::sqrt", mutates_args=())
    def sqrt(x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x)

    @torch.library.custom_op("bench_ag::rms_norm", mutates_args=())
    def rms_norm(x: torch.Tensor, eps: float) -> torch.Tensor:
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)

    @rms_norm.register_fake
    def _(x, eps):
        return torch.empty_like(x)

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.eps = inputs[1]

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        r = torch.rsqrt((x * x).mean(-1, keepdim=True) + ctx.eps)
        return r * g - r ** 3 * x * (x * g).mean(-1, keepdim=True), None

    rms_norm.register_autograd(backward, setup_context=setup)
    E = torch.ops.example
    torch.testing.assert_close(E.rms_norm_t(x, eps=EPS), rms_norm(x, EPS))
    assert torch.equal(E.checked_sqrt(x), sqrt(x))
    cases = {
        "no vjp, grad mode": (lambda: E.checked_sqrt(x), lambda: sqrt(x)),
        "vjp, input without grad": (lambda: E.rms_norm_t(x, eps=EPS), lambda: rms_norm(x, EPS)),
        "vjp, input requires grad": (lambda: E.rms_norm_t(xg, eps=EPS),
                                     lambda: rms_norm(xg, EPS)),
    }
    out = {name: [per_call(a), per_call(b)] for name, (a, b) in cases.items()}
    with torch.inference_mode():
        out["vjp, inference_mode"] = [per_call(lambda: E.rms_norm_t(x, eps=EPS)),
                                      per_call(lambda: rms_norm(x, EPS))]
        out["no vjp vs C++ op, inference_mode"] = [per_call(lambda: E.checked_sqrt(x)),
                                                   per_call(lambda: torch.ops.cppref.checked_sqrt(x))]
    out["no vjp vs C++ op, grad mode"] = [per_call(lambda: E.checked_sqrt(x)),
                                          per_call(lambda: torch.ops.cppref.checked_sqrt(x))]
    print(json.dumps({"torch": torch.__version__, "times": out}))


def main():
    if len(sys.argv) > 1:
        side(sys.argv[1])
        return
    import torch

    with tempfile.TemporaryDirectory() as d:
        so = build_cpp_op(d)
        r = subprocess.run([sys.executable, __file__, so], check=True, capture_output=True,
                           text=True)
    got = json.loads(r.stdout.strip().splitlines()[-1])
    print("torch %s: eager per-call time, us, customop against torch's custom_op (or a C++ op)"
          % torch.__version__)
    for name, (ours, theirs) in got["times"].items():
        print("  %-36s %7.2f | %7.2f   ratio %5.2f" % (name, ours, theirs, ours / theirs))


if __name__ == "__main__":
    main()
