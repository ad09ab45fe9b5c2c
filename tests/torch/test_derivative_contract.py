"""The front ends' contract on derivatives: one declaration means the same thing in JAX and in
torch. For every op of the example library (its sample call, tests/xla/samples.py) and every
operand both can ask a gradient of (a floating or complex tensor), reverse mode through JAX
(`jax.grad`) and through torch (`backward()`) gives the same answer, and the one Rust decided:
- the op declares no backward: `NoGradientError` in both (an op that updates a tensor in place
  among them: JAX refuses the gradient, torch the call);
- it does, and the manifest's `derivatives` lists the operand at its dtype: a gradient, equal
  in both;
- it does, and they do not list it (a complex or fp8 input, a type parameter that also allows
  an integer type): `NotDifferentiableError` in both, never a zero or a `.grad` left None.
The loss is the sum of the outputs that have a derivative at their types (so that a refusal
here is the operand's, not an output's), and of the tensors the op updates in place (JAX returns
them, torch writes them into the arguments).

Needs jax and torch in one venv (target/xla-venv: torch 2.9, jax 0.12; target/torch-venv: the
newest torch, with jax for torchax). Run on both torch paths: CUSTOMOP_TORCH_NATIVE=1 or 0, with
CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/torch/test_derivative_contract.py
"""

import os
import sys
import unittest

import jax

# The example ops take f64 too: jax's x64 mode, for this process.
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "xla"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import samples  # noqa: E402
from customop import xla as cx  # noqa: E402
from customop.manifest import UPDATED, UpdatedTensor  # noqa: E402
from torch_helpers import LIB  # noqa: E402
from torch_samples import missing_dtype, packet, to_torch, torch_attrs  # noqa: E402

JAX = cx.Library(os.environ["CUSTOMOP_KERNELS"])
JAX.register()
REFUSALS = ("NoGradientError", "NotDifferentiableError")


def expected(sch, name, dtype):
    """Rust's decision, as the manifest carries it."""
    if sch.vjp is None:
        return "NoGradientError"
    return "gradient" if sch.derivatives.input_has(name, dtype) else "NotDifferentiableError"


def outcome(run):
    """("gradient", value) or (the refusal's class name, None); any other error is raised."""
    try:
        return "gradient", run()
    except Exception as e:  # noqa: BLE001 (a refusal may come wrapped by the front end)
        for err in (e, e.__cause__, e.__context__):
            if err is not None and type(err).__name__ in REFUSALS:
                return type(err).__name__, None
        raise


class Contract(unittest.TestCase):
    def test_every_operand_of_every_op_is_differentiated_alike(self):
        compared = {"gradient": 0, "NoGradientError": 0, "NotDifferentiableError": 0,
                    "in place": 0}
        for call in samples.calls(JAX):
            if not call.torch or missing_dtype(call):
                continue  # torch refuses the op by name (tests/torch/test_transforms.py)
            sch = LIB.library.op(call.op).schema
            outs = [i for i, r in enumerate(sch.results)
                    if sch.derivatives.outputs.get(r.name) or isinstance(r, UpdatedTensor)]
            if not outs:
                continue  # no output to differentiate
            # Where each result is in torch: returned (in order), or written into its operand.
            returned = [i for i, r in enumerate(sch.results) if not isinstance(r, UPDATED)]
            in_place = any(isinstance(sch.results[k], UpdatedTensor) for k in outs)
            jattrs, tattrs = samples.jax_attrs(JAX, call.attrs), torch_attrs(call.attrs)
            for i, (p, a) in enumerate(zip(sch.operands, call.operands)):
                t = to_torch(a)
                if not (t.is_floating_point() or t.is_complex()) or not jnp.issubdtype(
                        a.dtype, jnp.inexact):
                    continue  # an integer, bool or packed operand: no tangent to ask
                want = expected(sch, p.name, a.dtype.name)
                with self.subTest(op=call.op, operand=p.name, dtype=a.dtype.name):
                    def jax_loss(v, i=i, call=call):
                        args = list(call.operands)
                        args[i] = v
                        got = JAX.ops[call.op](*args, **jattrs)
                        got = list(got) if isinstance(got, (list, tuple)) else [got]
                        return sum(jnp.sum(got[k].astype(jnp.float64)) for k in outs)

                    def torch_grad(i=i, call=call, t=t):
                        args = [to_torch(o) for o in call.operands]
                        args[i] = t.clone().requires_grad_()
                        got = packet(call.op)(*args, **tattrs)
                        got = list(got) if isinstance(got, (list, tuple)) else [got]
                        result = [args[r.operand] if isinstance(r, UpdatedTensor)
                                  else got[returned.index(k)] if k in returned else None
                                  for k, r in enumerate(sch.results)]
                        sum(result[k].double().sum() for k in outs).backward()
                        if args[i].grad is None:
                            raise AssertionError("%s: .grad of `%s` left None" % (call.op,
                                                                                 p.name))
                        return args[i].grad

                    j_kind, j_grad = outcome(lambda: np.asarray(jax.grad(jax_loss)(a)))
                    t_kind, t_grad = outcome(torch_grad)
                    self.assertEqual((j_kind, t_kind), (want, want))
                    if want == "gradient":
                        np.testing.assert_allclose(
                            t_grad.double().numpy(), j_grad.astype(np.float64),
                            rtol=1e-2 if a.dtype.itemsize < 4 else 1e-5, atol=1e-6)
                    compared[want] += 1
                    compared["in place"] += in_place
        # Each kind of answer is met (what the example library declares), in-place ops too.
        self.assertTrue(all(n > 0 for n in compared.values()), compared)


if __name__ == "__main__":
    unittest.main()
