"""Which inputs and outputs of an op have a derivative, in torch: as the manifest says (Rust
decides), for every class of element type, through backward(), torch.autograd.grad,
torch.func.grad and torch.func.jvp (and torch.autograd.forward_ad), eagerly and under
torch.compile. One that has a derivative gets the real one (against plain torch's); one that
has none is refused by name (`NotDifferentiableError` naming the op, the input or output and
its dtype) when a derivative is asked through it: never a zero, never a `.grad` left None.
Part of the contract test: the JAX half is tests/xla/test_differentiability.py.

Run on both paths, as every torch test: CUSTOMOP_TORCH_NATIVE=1 (default) or 0, with
CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/torch/test_differentiability.py
"""

import os
import unittest

import torch
from torch.autograd import forward_ad as fwAD

import customop.torch as ct
from customop.torch import NoForwardRuleError, NotDifferentiableError

LIB = ct.load(os.environ["CUSTOMOP_KERNELS"],
              native=os.environ.get("CUSTOMOP_TORCH_NATIVE", "1") == "1")
E = torch.ops.example
G = torch.Generator().manual_seed(5)
X = torch.rand(2, 3, generator=G) * 2 + 1
W = torch.rand(2, 3, generator=G) * 4 - 2
C = torch.complex(X, X.flip(0))
Q = (X * 4).to(torch.float8_e4m3fn)


class Refusals(unittest.TestCase):
    def assert_refused(self, run, op, name, dtype):
        with self.assertRaises(NotDifferentiableError) as cm:
            run()
        m = str(cm.exception)
        for part in (op, "`%s`" % name, "(%s here)" % dtype, "no derivative"):
            self.assertIn(part, m)

    def test_an_integer_type_parameter_at_f32(self):
        """mulw(x: T = [f32, i32], w: f32): d/dw is x; d/dx is refused at f32 too, where
        backward() would otherwise leave x.grad None."""
        w = W.clone().requires_grad_()
        E.mulw(X, w).sum().backward()
        self.assertTrue(torch.equal(w.grad, X))
        self.assertTrue(torch.equal(torch.func.grad(lambda w: E.mulw(X, w).sum())(W), X))
        _, tw = torch.func.jvp(lambda w: E.mulw(X, w), (W,), (X,))
        torch.testing.assert_close(tw, X * X)
        x = X.clone().requires_grad_()
        self.assert_refused(lambda: E.mulw(x, W).sum().backward(), "example::mulw", "x",
                            "float32")
        self.assert_refused(lambda: torch.func.grad(lambda x: E.mulw(x, W).sum())(X),
                            "example::mulw", "x", "float32")
        self.assert_refused(lambda: torch.func.jvp(lambda x: E.mulw(x, W), (X,), (X,)),
                            "example::mulw", "x", "float32")
        with fwAD.dual_level():
            self.assert_refused(lambda: E.mulw(fwAD.make_dual(X, X), W), "example::mulw", "x",
                                "float32")
        # At i32, x has no gradient to ask for: w's is still there.
        xi = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int32)
        w = W.clone().requires_grad_()
        E.mulw(xi, w).sum().backward()
        self.assertTrue(torch.equal(w.grad, xi.float()))

    def test_a_complex_input(self):
        """wnorm(x: c64, w: f32) = |x| w: d/dw is |x|; a gradient of x is refused."""
        w = W.clone().requires_grad_()
        E.wnorm(C, w).sum().backward()
        torch.testing.assert_close(w.grad, C.abs())
        x = C.clone().requires_grad_()
        self.assert_refused(lambda: E.wnorm(x, W).sum().backward(), "example::wnorm", "x",
                            "complex64")
        self.assert_refused(lambda: torch.func.jvp(lambda x: E.wnorm(x, W), (C,), (C,)),
                            "example::wnorm", "x", "complex64")

    def test_an_fp8_input_and_an_fp8_output(self):
        """fp8_affine(q: f8, w) = (y = f32(q) w, r = fp8(y)): d sum(y)/dw is f32(q); a gradient
        through r, a tangent of q, and forward mode (r's tangent) are refused."""
        w = W.clone().requires_grad_()
        E.fp8_affine(Q, w)[0].sum().backward()
        self.assertTrue(torch.equal(w.grad, Q.float()))
        w = W.clone().requires_grad_()
        self.assert_refused(lambda: E.fp8_affine(Q, w)[1].float().sum().backward(),
                            "example::fp8_affine", "r", "float8_e4m3fn")
        self.assert_refused(lambda: torch.func.jvp(lambda w: E.fp8_affine(Q, w), (W,), (W,)),
                            "example::fp8_affine", "r", "float8_e4m3fn")

    def test_under_torch_compile(self):
        """The refusal is compiled into the backward graph: running that backward raises it;
        w's gradient compiles and equals eager's."""
        torch._dynamo.reset()
        f = torch.compile(lambda x, w: E.mulw(x, w).sum(), fullgraph=True)
        w = W.clone().requires_grad_()
        f(X, w).backward()
        self.assertTrue(torch.equal(w.grad, X))
        x = X.clone().requires_grad_()
        self.assert_refused(lambda: f(x, W).backward(), "example::mulw", "x", "float32")

    def test_no_rule_is_still_its_own_error(self):
        """An op with a derivative at its types but no tangent op: NoForwardRuleError."""
        with self.assertRaises(NoForwardRuleError):
            torch.func.jvp(lambda x: E.mean_pool(x, k=2, stride=1), (X,), (X,))


if __name__ == "__main__":
    unittest.main()
