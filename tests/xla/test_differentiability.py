"""Which inputs and outputs of an op have a derivative, in JAX: as the manifest says (Rust
decides), for every class of element type, through jax.grad, jax.vjp and jax.jvp, eagerly and
under jit. An input or output that has a derivative gets the real one (against jnp's); one
that has none is refused by name (`NotDifferentiableError` naming the op, the input or output
and its dtype) when a derivative is asked through it, and never gives a zero. Integer inputs
carry no tangent (JAX's float0) and are no error. Part of the contract test: the torch half is
tests/torch/test_differentiability.py, the Rust half examples/kernels/tests/derivatives.rs.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_differentiability.py
"""

import os
import unittest

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from customop.xla import Library, NoForwardRuleError, NoGradientError, NotDifferentiableError

LIB = Library(os.environ["CUSTOMOP_KERNELS"])
LIB.register()
OPS = LIB.ops.example
RNG = np.random.default_rng(5)
X = RNG.uniform(1.0, 3.0, (2, 3)).astype(np.float32)
W = RNG.uniform(-2.0, 2.0, (2, 3)).astype(np.float32)
C = (X + 1j * X[::-1]).astype(np.complex64)
Q = (X * 4).astype(ml_dtypes.float8_e4m3fn)
TRANSFORMS = {"eager": lambda f: f, "jit": jax.jit}


class Manifest(unittest.TestCase):
    def test_the_manifest_says_which_inputs_and_outputs_have_one(self):
        """Rust's decision as the front ends read it: by parameter and result, the types."""
        d = LIB.op("example::mulw").schema.derivatives
        self.assertEqual(d.inputs["x"], ())  # T = [f32, i32]: none at any type
        self.assertEqual([t.name for t in d.inputs["w"]], ["f32"])
        self.assertEqual([t.name for t in d.outputs["y"]], ["f32"])
        d = LIB.op("example::fp8_affine").schema.derivatives
        self.assertEqual((d.inputs["q"], d.outputs["r"]), ((), ()))
        self.assertEqual(LIB.op("example::wnorm").schema.derivatives.inputs["x"], ())
        d = LIB.op("example::rms_norm_t").schema.derivatives
        self.assertEqual([t.name for t in d.inputs["x"]], ["f32", "f64", "bf16", "f16"])
        self.assertEqual(LIB.op("example::gather_rows").schema.derivatives.inputs["idx"], ())


class Refusals(unittest.TestCase):
    def assert_refused(self, run, op, name, dtype):
        with self.assertRaises(NotDifferentiableError) as cm:
            run()
        m = str(cm.exception)
        for part in (op, "`%s`" % name, "(%s here)" % dtype, "no derivative"):
            self.assertIn(part, m)

    def test_an_integer_type_parameter_at_f32(self):
        """mulw(x: T = [f32, i32], w: f32): d/dw is x, d/dx is refused at f32 too."""
        for how, t in TRANSFORMS.items():
            with self.subTest(how):
                g = t(jax.grad(lambda w: OPS.mulw(X, w).sum()))(W)
                np.testing.assert_array_equal(g, jax.grad(lambda w: (X * w).sum())(W))
                _, tw = t(lambda w, v: jax.jvp(lambda w: OPS.mulw(X, w), (w,), (v,)))(W, X)
                np.testing.assert_allclose(tw, X * X, rtol=1e-6)
                self.assert_refused(lambda: t(jax.grad(lambda x: OPS.mulw(x, W).sum()))(X),
                                    "example::mulw", "x", "float32")
                self.assert_refused(
                    lambda: t(jax.grad(lambda x, w: OPS.mulw(x, w).sum(), (0, 1)))(X, W),
                    "example::mulw", "x", "float32")
                self.assert_refused(lambda: jax.jvp(lambda x: OPS.mulw(x, W), (X,), (X,)),
                                    "example::mulw", "x", "float32")
        # At i32, x carries no tangent at all: w's gradient is still there.
        xi = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
        g = jax.grad(lambda w: OPS.mulw(xi, w).sum())(W)
        np.testing.assert_array_equal(g, xi.astype(np.float32))

    def test_a_complex_input(self):
        """wnorm(x: c64, w: f32) = |x| w: d/dw is |x|; a tangent of x is refused, in reverse
        (jax.vjp) and forward mode."""
        g = jax.jit(jax.grad(lambda w: OPS.wnorm(C, w).sum()))(W)
        np.testing.assert_allclose(g, np.abs(C), rtol=1e-6)
        self.assert_refused(lambda: jax.vjp(lambda x: OPS.wnorm(x, W), C),
                            "example::wnorm", "x", "complex64")
        self.assert_refused(lambda: jax.jvp(lambda x: OPS.wnorm(x, W), (C,), (C,)),
                            "example::wnorm", "x", "complex64")

    def test_an_fp8_input_and_an_fp8_output(self):
        """fp8_affine(q: f8, w) = (y = f32(q) w, r = fp8(y)): d sum(y)/dw is f32(q); a
        derivative through q, or through r, is refused; forward mode refuses r's tangent."""
        qf = Q.astype(np.float32)
        for how, t in TRANSFORMS.items():
            with self.subTest(how):
                g = t(jax.grad(lambda w: OPS.fp8_affine(Q, w)[0].sum()))(W)
                np.testing.assert_array_equal(g, qf)
                self.assert_refused(
                    lambda: t(jax.grad(lambda w: OPS.fp8_affine(Q, w)[1].astype(
                        jnp.float32).sum()))(W), "example::fp8_affine", "r", "float8_e4m3fn")
                self.assert_refused(
                    lambda: jax.vjp(lambda q: OPS.fp8_affine(q, W)[0], Q),
                    "example::fp8_affine", "q", "float8_e4m3fn")
        self.assert_refused(lambda: jax.jvp(lambda w: OPS.fp8_affine(Q, w), (W,), (W,)),
                            "example::fp8_affine", "r", "float8_e4m3fn")

    def test_an_integer_input_carries_no_tangent(self):
        """gather_rows(x, idx: i32): idx has no derivative and asks for none (float0)."""
        idx = np.array([1, 0], np.int32)
        g = jax.grad(lambda x: OPS.gather_rows(x, idx).sum())(X)
        np.testing.assert_array_equal(g, np.ones_like(X))
        _, vjp = jax.vjp(lambda x, i: OPS.gather_rows(x, i), X, idx)
        gx, gi = vjp(np.ones((2, 3), np.float32))
        np.testing.assert_array_equal(gx, np.ones_like(X))
        self.assertEqual(gi.dtype, jax.dtypes.float0)

    def test_no_rule_is_still_its_own_error(self):
        """An op with a derivative at its types but no tangent op: NoForwardRuleError."""
        with self.assertRaises(NoForwardRuleError):
            jax.jvp(lambda x: OPS.mean_pool(x, k=2, stride=1), (X,), (X,))

    def test_an_op_that_updates_a_tensor_in_place_has_none(self):
        """myadd_out(a, b, out) (`out` updated in place, returned as a result in JAX): a
        gradient through any of its operands, or a tangent, is refused by name, eagerly and
        under jit; without one it runs."""
        out = np.zeros((2, 3), np.float32)
        np.testing.assert_array_equal(OPS.myadd_out(X, W, out), X + W)
        for how, t in TRANSFORMS.items():
            for argnum in range(3):
                with self.subTest(how, argnum=argnum), \
                        self.assertRaisesRegex(NoGradientError, "example::myadd_out has no "
                                               "gradient"):
                    t(jax.grad(lambda *a: OPS.myadd_out(*a).sum(), argnum))(X, W, out)
            with self.assertRaisesRegex(NoForwardRuleError, "example::myadd_out has no "
                                        "forward-mode rule"):
                t(lambda o: jax.jvp(lambda o: OPS.myadd_out(X, W, o), (o,), (o,)))(out)
        g = jax.grad(lambda a: OPS.myadd_out(jax.lax.stop_gradient(a), W, out).sum() + a.sum())(X)
        np.testing.assert_array_equal(g, np.ones_like(X))


if __name__ == "__main__":
    unittest.main()
