"""JAX: forward mode, second derivatives through customop ops, and gradients inside
`jax.shard_map`.

- Forward mode through ops that declare a tangent op (`jvp = ...`): `jax.jvp`, `jacfwd`,
  `linearize`, and forward over reverse (`jax.hessian`) through backward ops that declare one
  too, against jax's own derivatives of the same functions and finite differences; each rule
  used where it applies (the programs name the tangent op, or the backward op, not both).

- Second derivatives compose from backward ops that declare their own backward
  (`rms_norm_t_bwd` -> `rms_norm_t_bwd_bwd`, `softplus` -> `softplus_bwd` ->
  `softplus_bwd_bwd`): grad of grad (Hessian-vector products) and `jacrev(jacrev(f))`, under
  `jit` (run by jaxlib and the Rust runner) and `vmap`, against jax's own derivatives of the
  same functions written with jnp and against finite differences of the first derivative; f64
  and f32.
- A missing second-order rule is refused naming the backward op (`NoGradientError`).
- `jax.grad` through ops called inside `jax.shard_map` with its default `check_vma` (the FFI
  call's results vary along the operands' manual axes) equals the unsharded gradient, for a
  sharded operand alone and next to a replicated one.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_higher_order.py
(scripts/test.sh does). Four CPU devices, f64 (set here, before jax starts).
"""

import os
import re
import sys
import unittest

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=4").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

from customop.xla import Library, NoForwardRuleError, NoGradientError, crosscheck  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax_refs import EPS, rms_norm_ref  # noqa: E402

PATH = os.environ["CUSTOMOP_KERNELS"]
LIB = Library(PATH)
LIB.register()
E = LIB.ops.example
RNG = np.random.default_rng(11)
C = RNG.normal(size=(8, 6))
SHARD_MAP = getattr(jax, "shard_map", None)
if SHARD_MAP is None:  # jax < 0.7
    from jax.experimental.shard_map import shard_map as SHARD_MAP


# (name, customop loss, the same loss written with jnp): scalar functions of x (8 x 6).
LOSSES = [
    ("rms_norm_t", lambda x: jnp.sum(E.rms_norm_t(x, eps=EPS) * C.astype(x.dtype)),
     lambda x: jnp.sum(rms_norm_ref(x) * C.astype(x.dtype))),
    ("softplus", lambda x: jnp.sum(E.softplus(x) * C.astype(x.dtype)),
     lambda x: jnp.sum(jax.nn.softplus(x) * C.astype(x.dtype))),
]


def hvp(f, v):
    """x -> the Hessian of f at x times v, as grad of grad."""
    return jax.grad(lambda x: jnp.sum(jax.grad(f)(x) * v))


class SecondDerivatives(unittest.TestCase):
    X = RNG.normal(size=(8, 6))
    V = RNG.normal(size=(8, 6))

    def test_hessian_vector_products_f64(self):
        for name, f, ref in LOSSES:
            with self.subTest(op=name):
                # Under jit, run by jaxlib and, in the test suite, by the Rust runner too.
                got = crosscheck.jit(PATH, hvp(f, self.V))(self.X)
                want = hvp(ref, self.V)(self.X)
                self.assertGreater(float(jnp.max(jnp.abs(want))), 0.1)
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
                # Finite differences of the first derivative: no second-order rule involved.
                h = 1e-5
                fd = (jax.grad(f)(self.X + h * self.V) - jax.grad(f)(self.X - h * self.V)) / (2 * h)
                np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7)
                np.testing.assert_allclose(hvp(f, self.V)(self.X), got, rtol=0, atol=0)

    def test_full_hessian_by_jacrev_of_jacrev(self):
        x = self.X[:2]
        for name, f, ref in LOSSES:
            with self.subTest(op=name):
                g = lambda x: f(jnp.concatenate([x, jnp.zeros((6, 6))]))  # noqa: E731
                r = lambda x: ref(jnp.concatenate([x, jnp.zeros((6, 6))]))  # noqa: E731
                np.testing.assert_allclose(jax.jacrev(jax.jacrev(g))(x), jax.hessian(r)(x),
                                           rtol=1e-12, atol=1e-12)

    def test_hessian_vector_products_f32(self):
        for name, f, ref in LOSSES:
            with self.subTest(op=name):
                got = jax.jit(hvp(f, self.V.astype(np.float32)))(self.X.astype(np.float32))
                self.assertEqual(got.dtype, np.float32)
                np.testing.assert_allclose(got, hvp(ref, self.V)(self.X), rtol=1e-4, atol=1e-4)

    def test_per_sample_hessian_vector_products(self):
        xs = RNG.normal(size=(3, 8, 6))
        for name, f, _ in LOSSES:
            with self.subTest(op=name):
                got = jax.jit(jax.vmap(hvp(f, self.V)))(xs)
                for b in range(3):
                    np.testing.assert_allclose(got[b], hvp(f, self.V)(xs[b]), rtol=1e-14,
                                               atol=1e-14)

    def test_a_missing_second_order_rule_is_refused_by_name(self):
        pool = lambda x: jnp.sum(E.mean_pool(x, k=2, stride=2) * C[:, :3])  # noqa: E731
        with self.assertRaisesRegex(NoGradientError, "example::mean_pool_bwd has no gradient"):
            hvp(pool, self.V)(self.X)
        f = LOSSES[1][1]
        third = jax.grad(lambda x: jnp.sum(hvp(f, self.V)(x) * self.V))
        with self.assertRaisesRegex(NoGradientError,
                                    "example::softplus_bwd_bwd has no gradient"):
            third(self.X)


class ForwardMode(unittest.TestCase):
    X = RNG.normal(size=(8, 6))
    T = RNG.normal(size=(8, 6))
    OPS = [("rms_norm_t", lambda x: E.rms_norm_t(x, eps=EPS), rms_norm_ref),
           ("softplus", E.softplus, jax.nn.softplus)]

    def test_jvp_jacfwd_and_linearize(self):
        for name, op, ref in self.OPS:
            with self.subTest(op=name):
                tangent = lambda x, t: jax.jvp(op, (x,), (t,))[1]  # noqa: E731
                # Under jit, run by jaxlib and, in the test suite, by the Rust runner too.
                got = crosscheck.jit(PATH, tangent)(self.X, self.T)
                want = jax.jvp(ref, (self.X,), (self.T,))[1]
                np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
                h = 1e-6
                fd = (op(self.X + h * self.T) - op(self.X - h * self.T)) / (2 * h)
                np.testing.assert_allclose(got, fd, rtol=1e-7, atol=1e-8)
                np.testing.assert_allclose(jax.jacfwd(op)(self.X[:2]), jax.jacrev(ref)(self.X[:2]),
                                           rtol=1e-13, atol=1e-14)
                y, lin = jax.linearize(op, self.X)
                np.testing.assert_array_equal(y, op(self.X))
                np.testing.assert_allclose(lin(self.T), want, rtol=1e-13, atol=1e-14)
                t32 = jax.jit(tangent)(self.X.astype(np.float32), self.T.astype(np.float32))
                self.assertEqual(t32.dtype, np.float32)
                np.testing.assert_allclose(t32, want, rtol=1e-5, atol=1e-5)

    def test_hessian_forward_over_reverse(self):
        for name, f, ref in LOSSES:
            with self.subTest(op=name):
                g = lambda x: f(jnp.concatenate([x, jnp.zeros((6, 6))]))  # noqa: E731
                r = lambda x: ref(jnp.concatenate([x, jnp.zeros((6, 6))]))  # noqa: E731
                x = self.X[:2]
                np.testing.assert_allclose(crosscheck.jit(PATH, jax.hessian(g))(x),
                                           jax.hessian(r)(x), rtol=1e-12, atol=1e-12)
                got = jax.jvp(jax.grad(f), (self.X,), (self.T,))[1]
                np.testing.assert_allclose(got, hvp(ref, self.T)(self.X), rtol=1e-12,
                                           atol=1e-12)

    def test_each_rule_where_it_applies(self):
        """One op with both rules: reverse mode runs its backward op and not its tangent op,
        forward mode the other way round; a call that is not differentiated is the op's one
        custom call, as without rules."""
        op = lambda x: E.rms_norm_t(x, eps=EPS)  # noqa: E731

        def targets(fn, *args):
            """The custom call targets of the jitted program, in order."""
            return re.findall(r"custom_call @([\w.]+)\(", jax.jit(fn).lower(*args).as_text())

        self.assertEqual(targets(jax.grad(lambda x: jnp.sum(jnp.sin(op(x)))), self.X),
                         ["example.rms_norm_t", "example.rms_norm_t_bwd"])
        self.assertEqual(targets(lambda x, t: jax.jvp(op, (x,), (t,)), self.X, self.T),
                         ["example.rms_norm_t", "example.rms_norm_t_jvp"])
        self.assertEqual(targets(op, self.X), ["example.rms_norm_t"])
        self.assertEqual(jax.jit(op).lower(self.X).as_text().count("stablehlo."), 1,
                         "the op's custom call, nothing else")

    def test_per_sample_and_inside_shard_map(self):
        xs = RNG.normal(size=(3, 8, 6))
        op = lambda x: E.rms_norm_t(x, eps=EPS)  # noqa: E731
        one = lambda x: jax.jvp(op, (x,), (self.T,))[1]  # noqa: E731
        got = jax.jit(jax.vmap(one))(xs)
        for b in range(3):
            np.testing.assert_allclose(got[b], one(xs[b]), rtol=1e-14, atol=1e-14)
        mesh = Mesh(np.array(jax.devices()[:4]), ("x",))
        sharded = SHARD_MAP(op, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
        np.testing.assert_array_equal(jax.jit(lambda x, t: jax.jvp(sharded, (x,), (t,))[1])(
            self.X, self.T), jax.jvp(op, (self.X,), (self.T,))[1])

    def test_a_missing_forward_rule_is_refused_by_name(self):
        with self.assertRaisesRegex(NoForwardRuleError,
                                    "example::softplus_jvp has no forward-mode rule"):
            jax.jacfwd(jax.jacfwd(E.softplus))(self.X[:1])
        with self.assertRaisesRegex(NoForwardRuleError,
                                    "example::mean_pool has no forward-mode rule"):
            jax.jvp(lambda x: E.mean_pool(x, k=2, stride=2), (self.X,), (self.T,))
        pool = lambda x: jnp.sum(E.mean_pool(x, k=2, stride=2) * C[:, :3])  # noqa: E731
        with self.assertRaisesRegex(NoForwardRuleError,
                                    "example::mean_pool has no forward-mode rule"):
            jax.hessian(pool)(self.X)


class ShardMap(unittest.TestCase):
    """Before: jax.grad through an op inside shard_map failed with JAX's "Custom VJP bwd rule
    must produce an output with the same type as the args tuple ... the manual axis types do
    not match" unless check_vma=False."""

    MESH = Mesh(np.array(jax.devices()[:4]), ("x",))
    X = RNG.normal(size=(8, 6))
    W = RNG.uniform(0.5, 2.0, size=8)

    def test_four_devices(self):
        self.assertEqual(len(jax.devices()), 4)

    def test_grad_inside_shard_map_equals_the_unsharded_gradient(self):
        op = lambda x: E.rms_norm_t(x, eps=EPS)  # noqa: E731
        sharded = SHARD_MAP(op, mesh=self.MESH, in_specs=P("x"), out_specs=P("x"))
        loss = lambda f: lambda x: jnp.sum(f(x) * C)  # noqa: E731
        want = jax.grad(loss(op))(self.X)
        np.testing.assert_array_equal(jax.grad(loss(sharded))(self.X), want)
        np.testing.assert_array_equal(jax.jit(jax.grad(loss(sharded)))(self.X), want)
        # Second order inside shard_map too: reverse over reverse, and forward over reverse.
        want = hvp(loss(op), C)(self.X)
        np.testing.assert_allclose(jax.jit(hvp(loss(sharded), C))(self.X), want, rtol=1e-14,
                                   atol=1e-14)
        fwd_over_rev = jax.jit(lambda x: jax.jvp(jax.grad(loss(sharded)), (x,), (jnp.asarray(C),))[1])
        np.testing.assert_allclose(fwd_over_rev(self.X), want, rtol=1e-12, atol=1e-12)

    def test_a_sharded_and_a_replicated_operand(self):
        """scale_rows(x, w) with x split on rows and w whole on every device (each device
        scales its rows by the rows' weights it slices): w's gradient sums over devices."""
        def local(x, w):
            i = jax.lax.axis_index("x")
            return E.scale_rows(x, jax.lax.dynamic_slice_in_dim(w, i * 2, 2))

        sharded = SHARD_MAP(local, mesh=self.MESH, in_specs=(P("x"), P()), out_specs=P("x"))
        loss = lambda f: lambda x, w: jnp.sum(f(x, w) * C)  # noqa: E731
        np.testing.assert_array_equal(sharded(self.X, self.W), E.scale_rows(self.X, self.W))
        got = jax.jit(jax.grad(loss(sharded), argnums=(0, 1)))(self.X, self.W)
        want = jax.grad(loss(E.scale_rows), argnums=(0, 1))(self.X, self.W)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-14, atol=1e-14)


if __name__ == "__main__":
    unittest.main()
