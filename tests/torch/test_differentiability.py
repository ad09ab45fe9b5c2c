"""Which inputs and outputs of an op have a derivative, in torch: as the manifest says (Rust
decides), for every class of element type, through backward(), torch.autograd.grad,
torch.func.grad and torch.func.jvp (and torch.autograd.forward_ad), eagerly and under
torch.compile. One that has a derivative gets the real one (against plain torch's); one that
has none is refused by name (`NotDifferentiableError` naming the op, the input or output and
its dtype) when a derivative is asked through it: never a zero, never a `.grad` left None.
An op that updates a tensor in place (`#[inout]`) refuses a call on inputs that require grad.
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
from customop.torch import NoForwardRuleError, NoGradientError, NotDifferentiableError

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


class InPlace(unittest.TestCase):
    """An op that updates a tensor in place (`#[inout]`) has no gradient (Rust refuses a rule
    for one): a call whose inputs require grad is refused by name (`NoGradientError`, as JAX
    refuses a gradient through it) before anything is written,
    where the updated tensor kept its old derivative, or none, and gradients were lost without
    an error. pytorch/extension-cpp's `myadd_out(a, b, out)` as its users call it."""

    def assert_refused(self, run, op, updated, name):
        with self.assertRaises(NoGradientError) as cm:
            run()
        m = str(cm.exception)
        for part in ("%s has no gradient: it updates `%s` in place" % (op, updated),
                     "input `%s` requires a gradient" % name, "x.detach()"):
            self.assertIn(part, m)

    def test_the_peers_schema(self):
        """The port keeps extension-cpp's schema: `out` a mutated argument, nothing returned."""
        self.assertEqual(E.myadd_out.default._schema, torch._C.parse_schema(
            "example::myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()"))

    def test_inputs_that_require_grad_are_refused_before_anything_is_written(self):
        """extension-cpp's test: a and b require grad, `(out * w).sum().backward()` then left
        a.grad and b.grad None with no error; now the call itself is refused, `out` untouched
        (values and version)."""
        a, b = X.clone().requires_grad_(), W.clone().requires_grad_()
        out = torch.zeros(2, 3)
        self.assert_refused(lambda: E.myadd_out(a, b, out), "example::myadd_out", "out", "a")
        self.assert_refused(lambda: E.myadd_out(X, b, out), "example::myadd_out", "out", "b")
        self.assertTrue(torch.equal(out, torch.zeros(2, 3)))
        self.assertEqual(out._version, 0)
        self.assertFalse(out.requires_grad)
        # A leaf that requires grad, updated in place: refused, as torch refuses its own.
        leaf = torch.zeros(2, 3, requires_grad=True)
        self.assert_refused(lambda: E.myadd_out(X, W, leaf), "example::myadd_out", "out", "out")
        self.assertTrue(torch.equal(leaf.detach(), torch.zeros(2, 3)))
        # A tensor carrying a graph (its old values' derivative), updated: refused too; its
        # backward would have given the old values' gradient.
        v = W.clone().requires_grad_()
        y = v * 2
        self.assert_refused(lambda: E.scale_in_place(y, factor=3.0), "example::scale_in_place",
                            "x", "x")
        self.assertTrue(torch.equal(y.detach(), W * 2))
        # Under torch.func.grad and torch.compile alike.
        self.assert_refused(
            lambda: torch.func.grad(lambda a: (E.myadd_out(a, W, out), out.sum())[1])(X),
            "example::myadd_out", "out", "a")
        torch._dynamo.reset()
        with self.assertRaisesRegex(Exception, "example::myadd_out has no gradient: it updates "
                                    "`out` in place"):
            torch.compile(lambda a, b, o: E.myadd_out(a, b, o))(a, b, out)

    def test_inputs_without_gradients_run_and_bump_the_version(self):
        """Detached, or under no_grad, it runs; the updated tensor's version counter moves, so
        a graph that saved its old values refuses to use them."""
        a, b = X.clone().requires_grad_(), W.clone().requires_grad_()
        out = torch.zeros(2, 3)
        E.myadd_out(a.detach(), b.detach(), out)
        self.assertTrue(torch.equal(out, X + W))
        with torch.no_grad():
            E.myadd_out(a, b, out)
        self.assertTrue(torch.equal(out, X + W))
        w = torch.ones(2, 3, requires_grad=True)
        saved = out * w   # saves `out` for w's gradient
        before = out._version
        E.myadd_out(X, X, out)
        self.assertGreater(out._version, before)
        with self.assertRaisesRegex(RuntimeError, "modified by an inplace operation"):
            saved.sum().backward()


if __name__ == "__main__":
    unittest.main()
