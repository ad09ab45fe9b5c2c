"""torch.func's reverse-mode transforms and second derivatives through customop ops.

- `torch.func.grad`, `vjp`, `jacrev` and per-sample gradients (`vmap(grad(...))`) equal
  `torch.autograd`'s, bit for bit (one backward op, one kernel);
- second derivatives compose from backward ops that declare their own backward
  (`rms_norm_t_bwd` -> `rms_norm_t_bwd_bwd`, `softplus` -> `softplus_bwd` ->
  `softplus_bwd_bwd`): double backward, `gradgradcheck`, grad of grad and `jacrev(jacrev(f))`,
  checked against plain torch's own derivatives of the same functions and against finite
  differences of the first derivative, f64 and f32;
- forward mode through ops that declare a tangent op (`jvp = ...`): `torch.func.jvp`,
  `jacfwd`, `torch.autograd.forward_ad`, and forward over reverse (`torch.func.hessian`, jvp of
  grad) through backward ops that declare one too, against plain torch and finite differences;
- a missing rule is refused naming the op and the rule: forward over reverse
  (`torch.func.hessian`) at a backward op without a forward-mode rule, a third derivative at
  a backward op without a backward, grad through an op without one.

Run on both paths, as every torch test: CUSTOMOP_TORCH_NATIVE=1 (default) or 0, with
CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/torch/test_func_transforms.py
"""

import os
import unittest

import numpy as np
import torch

import customop.torch as ct

LIB = ct.load(os.environ["CUSTOMOP_KERNELS"],
              native=os.environ.get("CUSTOMOP_TORCH_NATIVE", "1") == "1")
E = torch.ops.example
# The op's `eps` is an f32 attribute: the references use the same value.
EPS = float(np.float32(1e-3))


def rms_norm_ref(x):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + EPS)


def rand(*shape, seed, dtype=torch.float64):
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


# (name, customop function, plain torch function): each a scalar loss of x (4 x 6).
C = rand(4, 6, seed=10)
LOSSES = [
    ("rms_norm_t", lambda x: (E.rms_norm_t(x, eps=EPS) * C.to(x.dtype)).sum(),
     lambda x: (rms_norm_ref(x) * C.to(x.dtype)).sum()),
    ("softplus", lambda x: (E.softplus(x) * C.to(x.dtype)).sum(),
     lambda x: (torch.nn.functional.softplus(x) * C.to(x.dtype)).sum()),
]


def autograd_grad(f, x):
    a = x.clone().requires_grad_()
    (g,) = torch.autograd.grad(f(a), a)
    return g


class ReverseModeThroughTorchFunc(unittest.TestCase):
    """Before: torch.func.grad, vjp, jacrev and vmap(grad) raised torch's "must override the
    setup_context staticmethod" (torch 2.15) through any op with a declared backward."""

    X = rand(4, 6, seed=0)

    def test_grad_equals_autograd(self):
        w = torch.rand(4, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) + 0.5
        idx = torch.tensor([2, 0, 2, 3], dtype=torch.int32)
        cases = [(name, f) for name, f, _ in LOSSES] + [
            ("mean_pool", lambda x: (E.mean_pool(x, k=3, stride=2) * C[:, :2]).sum()),
            ("scale_rows", lambda x: (E.scale_rows(x, w) * C).sum()),
            ("gather_rows", lambda x: (E.gather_rows(x, idx) * C).sum()),
        ]
        for name, f in cases:
            with self.subTest(op=name):
                want = autograd_grad(f, self.X)
                self.assertTrue(torch.equal(torch.func.grad(f)(self.X), want))
                self.assertGreater(want.abs().max().item(), 0.0)

    def test_grad_of_two_inputs(self):
        w = torch.rand(4, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) + 0.5
        f = lambda x, w: (E.scale_rows(x, w) * C).sum()  # noqa: E731
        gx, gw = torch.func.grad(f, argnums=(0, 1))(self.X, w)
        a, b = self.X.clone().requires_grad_(), w.clone().requires_grad_()
        wx, ww = torch.autograd.grad(f(a, b), (a, b))
        self.assertTrue(torch.equal(gx, wx) and torch.equal(gw, ww))

    def test_vjp_and_jacrev(self):
        op = lambda x: E.rms_norm_t(x, eps=EPS)  # noqa: E731
        y, pullback = torch.func.vjp(op, self.X)
        self.assertTrue(torch.equal(y, op(self.X)))
        self.assertTrue(torch.equal(pullback(C)[0],
                                    autograd_grad(lambda x: (op(x) * C).sum(), self.X)))
        jac = torch.func.jacrev(op)(self.X)
        self.assertEqual(jac.shape, (4, 6, 4, 6))
        # Row by row: the gradient of each output element by autograd.
        a = self.X.clone().requires_grad_()
        out = op(a)
        for i in range(4):
            for j in range(6):
                (g,) = torch.autograd.grad(out[i, j], a, retain_graph=True)
                self.assertTrue(torch.equal(jac[i, j], g), (i, j))

    def test_per_sample_gradients(self):
        """vmap(grad(loss)) over a batch of 5 inputs: each sample's gradient as autograd gives
        it for that sample alone (the backward ops run batched, by their vmap rule)."""
        xs = rand(5, 4, 6, seed=2)
        for name, f, _ in LOSSES:
            with self.subTest(op=name):
                got = torch.func.vmap(torch.func.grad(f))(xs)
                for b in range(5):
                    torch.testing.assert_close(got[b], autograd_grad(f, xs[b]), rtol=1e-14,
                                               atol=1e-15)

    def test_under_torch_compile(self):
        """torch.compile of torch.func.grad and of vmap(grad): the eager transforms' results."""
        xs = rand(2, 4, 6, seed=9)
        for name, f, _ in LOSSES:
            with self.subTest(op=name):
                grad = torch.func.grad(f)
                torch.testing.assert_close(torch.compile(grad)(self.X), grad(self.X),
                                           rtol=1e-14, atol=1e-15)
                per_sample = torch.func.vmap(grad)
                torch.testing.assert_close(torch.compile(per_sample)(xs), per_sample(xs),
                                           rtol=1e-14, atol=1e-15)

    def test_an_op_without_a_backward_is_refused_by_name(self):
        x = torch.rand(2, 3) + 0.5
        with self.assertRaisesRegex(ct.NoGradientError,
                                    r"example::checked_sqrt has no gradient: it declares no "
                                    r"backward op \(`#\[custom_op\(vjp = \.\.\.\)\]`\)"):
            torch.func.grad(lambda x: E.checked_sqrt(x).sum())(x)


class SecondDerivatives(unittest.TestCase):
    X = rand(4, 6, seed=3)
    V = rand(4, 6, seed=4)

    def hvp_by_finite_differences(self, f, x, v, h=1e-5):
        """(grad f(x + h v) - grad f(x - h v)) / 2h: independent of any second-order rule."""
        return (autograd_grad(f, x + h * v) - autograd_grad(f, x - h * v)) / (2 * h)

    def test_hessian_vector_products_f64(self):
        """The Hessian-vector product three ways through the customop ops (double backward,
        grad of grad, a row of jacrev(jacrev)), against torch's own second derivative of the
        same function and against finite differences of the first derivative."""
        for name, f, ref in LOSSES:
            with self.subTest(op=name):
                a = self.X.clone().requires_grad_()
                (g,) = torch.autograd.grad(f(a), a, create_graph=True)
                (hv,) = torch.autograd.grad((g * self.V).sum(), a)
                r = self.X.clone().requires_grad_()
                (gr,) = torch.autograd.grad(ref(r), r, create_graph=True)
                (want,) = torch.autograd.grad((gr * self.V).sum(), r)
                self.assertGreater(want.abs().max().item(), 0.1)
                torch.testing.assert_close(hv, want, rtol=1e-12, atol=1e-12)
                torch.testing.assert_close(hv, self.hvp_by_finite_differences(f, self.X, self.V),
                                           rtol=1e-6, atol=1e-7)
                gg = torch.func.grad(lambda x: (torch.func.grad(f)(x) * self.V).sum())(self.X)
                torch.testing.assert_close(gg, want, rtol=1e-12, atol=1e-12)
                hessian = torch.func.jacrev(torch.func.jacrev(f))(self.X)
                torch.testing.assert_close(hessian, torch.func.hessian(ref)(self.X),
                                           rtol=1e-12, atol=1e-12)
                torch.testing.assert_close((hessian * self.V).sum((2, 3)), want, rtol=1e-12,
                                           atol=1e-12)

    def test_hessian_vector_products_f32(self):
        """In f32, within f32 rounding of the f64 reference."""
        for name, f, ref in LOSSES:
            with self.subTest(op=name):
                a = self.X.float().requires_grad_()
                (g,) = torch.autograd.grad(f(a), a, create_graph=True)
                (hv,) = torch.autograd.grad((g * self.V.float()).sum(), a)
                self.assertEqual(hv.dtype, torch.float32)
                r = self.X.clone().requires_grad_()
                (gr,) = torch.autograd.grad(ref(r), r, create_graph=True)
                (want,) = torch.autograd.grad((gr * self.V).sum(), r)
                torch.testing.assert_close(hv.double(), want, rtol=1e-4, atol=1e-4)

    def test_gradgradcheck(self):
        for name, f, _ in LOSSES:
            with self.subTest(op=name):
                x = self.X.clone().requires_grad_()
                self.assertTrue(torch.autograd.gradgradcheck(f, (x,)))
        x = self.X.clone().requires_grad_()
        self.assertTrue(torch.autograd.gradgradcheck(lambda x: E.rms_norm_t(x, eps=EPS), (x,)))
        self.assertTrue(torch.autograd.gradgradcheck(E.softplus, (x,)))

    def test_second_derivatives_per_sample(self):
        """vmap of a Hessian-vector product: each sample's as computed alone."""
        xs = rand(3, 4, 6, seed=5)
        for name, f, _ in LOSSES:
            with self.subTest(op=name):
                hvp = lambda x: torch.func.grad(  # noqa: E731
                    lambda x: (torch.func.grad(f)(x) * self.V).sum())(x)
                got = torch.func.vmap(hvp)(xs)
                for b in range(3):
                    torch.testing.assert_close(got[b], hvp(xs[b]), rtol=1e-14, atol=1e-14)

    def test_a_missing_rule_is_refused_by_name(self):
        pool = lambda x: (E.mean_pool(x, k=2, stride=2) * C[:, :3]).sum()  # noqa: E731
        # Forward over reverse: mean_pool declares no tangent op.
        with self.assertRaisesRegex(ct.NoForwardRuleError,
                                    "example::mean_pool has no forward-mode rule"):
            torch.func.hessian(pool)(self.X)
        # A third derivative: softplus_bwd_bwd declares no backward.
        g = LOSSES[1][1]
        third = torch.func.grad(lambda x: (torch.func.grad(
            lambda x: (torch.func.grad(g)(x) * self.V).sum())(x) * self.V).sum())
        with self.assertRaisesRegex(ct.NoGradientError, "example::softplus_bwd_bwd has no "
                                                        "gradient"):
            third(self.X)
        # Double backward through an op whose backward declares none.
        a = self.X.clone().requires_grad_()
        (g1,) = torch.autograd.grad((E.mean_pool(a, k=2, stride=2) * C[:, :3]).sum(), a,
                                    create_graph=True)
        with self.assertRaisesRegex(ct.NoGradientError, "example::mean_pool_bwd has no "
                                                        "gradient"):
            (g1 * self.V).sum().backward()



class ForwardMode(unittest.TestCase):
    """Ops that declare a tangent op (`jvp = ...`): rms_norm_t (rms_norm_t_jvp) and softplus
    (softplus_jvp), and their backward ops (rms_norm_t_bwd_jvp, softplus_bwd_jvp), so that
    forward over reverse works too."""

    X = rand(4, 6, seed=6)
    T = rand(4, 6, seed=7)

    def test_jvp_jacfwd_and_forward_ad_against_torch(self):
        from torch.autograd import forward_ad as fwAD
        ops = [("rms_norm_t", lambda x: E.rms_norm_t(x, eps=EPS), rms_norm_ref),
               ("softplus", E.softplus, torch.nn.functional.softplus)]
        for name, op, ref in ops:
            with self.subTest(op=name):
                y, ty = torch.func.jvp(op, (self.X,), (self.T,))
                yr, want = torch.func.jvp(ref, (self.X,), (self.T,))
                self.assertTrue(torch.equal(y, op(self.X)))
                torch.testing.assert_close(ty, want, rtol=1e-13, atol=1e-14)
                h = 1e-6
                fd = (op(self.X + h * self.T) - op(self.X - h * self.T)) / (2 * h)
                torch.testing.assert_close(ty, fd, rtol=1e-7, atol=1e-8)
                torch.testing.assert_close(torch.func.jacfwd(op)(self.X),
                                           torch.func.jacrev(ref)(self.X), rtol=1e-13,
                                           atol=1e-14)
                with fwAD.dual_level():
                    got = fwAD.unpack_dual(op(fwAD.make_dual(self.X, self.T))).tangent
                torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-14)
                # f32: within f32 rounding of the f64 tangent.
                _, t32 = torch.func.jvp(op, (self.X.float(),), (self.T.float(),))
                self.assertEqual(t32.dtype, torch.float32)
                torch.testing.assert_close(t32.double(), want, rtol=1e-5, atol=1e-5)

    def test_forward_over_reverse(self):
        """torch.func.hessian (jacfwd of jacrev) and jvp of grad: through the backward ops'
        tangent ops."""
        for name, f, ref in LOSSES:
            with self.subTest(op=name):
                torch.testing.assert_close(torch.func.hessian(f)(self.X),
                                           torch.func.hessian(ref)(self.X), rtol=1e-12,
                                           atol=1e-12)
                _, got = torch.func.jvp(torch.func.grad(f), (self.X,), (self.T,))
                _, want = torch.func.jvp(torch.func.grad(ref), (self.X,), (self.T,))
                self.assertGreater(want.abs().max().item(), 0.1)
                torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)

    def test_jvp_per_sample_and_with_reverse_mode(self):
        xs = rand(3, 4, 6, seed=8)
        for name, f, _ in LOSSES:
            with self.subTest(op=name):
                one = lambda x: torch.func.jvp(f, (x,), (self.T,))[1]  # noqa: E731
                got = torch.func.vmap(one)(xs)
                for b in range(3):
                    torch.testing.assert_close(got[b], one(xs[b]), rtol=1e-14, atol=1e-14)
        # A dual input that also requires grad: the reverse-mode node is recorded as usual.
        from torch.autograd import forward_ad as fwAD
        x = self.X.clone().requires_grad_()
        with fwAD.dual_level():
            y = E.softplus(fwAD.make_dual(x, self.T))
            (y * C).sum().backward()
        torch.testing.assert_close(x.grad, torch.sigmoid(self.X) * C, rtol=1e-14, atol=1e-15)

    def test_under_torch_compile(self):
        """torch.func.jvp, jacfwd, hessian and jvp of grad compiled give the eager results;
        torch.autograd.forward_ad inside torch.compile gives them too, or is refused by name
        (torch 2.9 traces it so that the op's tangent would be dropped), never a lost tangent."""
        from torch.autograd import forward_ad as fwAD
        f = LOSSES[1][1]
        cases = {
            "jvp": lambda x, t: torch.func.jvp(E.softplus, (x,), (t,))[1],
            "jacfwd": lambda x, t: torch.func.jacfwd(E.softplus)(x[:1]),
            "hessian": lambda x, t: torch.func.hessian(f)(x),
            "jvp of grad": lambda x, t: torch.func.jvp(torch.func.grad(f), (x,), (t,))[1],
        }
        for what, fn in cases.items():
            with self.subTest(what=what):
                torch._dynamo.reset()
                torch.testing.assert_close(torch.compile(fn)(self.X, self.T), fn(self.X, self.T),
                                           rtol=1e-14, atol=1e-15)

        def dual(x, t):
            with fwAD.dual_level():
                return fwAD.unpack_dual(E.softplus(fwAD.make_dual(x, t))).tangent

        torch._dynamo.reset()
        try:
            got = torch.compile(dual)(self.X, self.T)
        except Exception as e:  # torch wraps it (TorchRuntimeError)
            self.assertIn("example::softplus: torch.autograd.forward_ad inside torch.compile",
                          str(e))
        else:
            torch.testing.assert_close(got, dual(self.X, self.T), rtol=1e-14, atol=1e-15)

    def test_a_missing_forward_rule_is_refused_by_name(self):
        # A second forward derivative: softplus_jvp declares no tangent op of its own.
        with self.assertRaisesRegex(ct.NoForwardRuleError,
                                    "example::softplus_jvp has no forward-mode rule"):
            torch.func.jacfwd(torch.func.jacfwd(E.softplus))(self.X)
        with self.assertRaisesRegex(ct.NoForwardRuleError,
                                    "example::mean_pool has no forward-mode rule"):
            torch.func.jvp(lambda x: E.mean_pool(x, k=2, stride=2), (self.X,), (self.T,))


if __name__ == "__main__":
    unittest.main()
