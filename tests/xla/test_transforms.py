"""JAX transforms of customop ops (`lib.ops`, customop.xla.ops): jax.vmap of every example op
against the loop of calls, jax.grad of the ops that declare a backward against finite
differences (`jax.test_util.check_grads`, f64) and against the same function written with jnp,
a small model with a two-op chain (rms_norm_t, then mean_pool) trained for a few steps, and
`customop.xla.export` (annotated externals, serialise, deserialise, run; symbolic shapes).

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_transforms.py
(scripts/test.sh does). f64 needs jax's x64 mode, switched on here for this process.
"""

import os
import sys
import unittest

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import samples  # noqa: E402
from jax_refs import EPS, as_list, mean_pool_ref, rms_norm_ref  # noqa: E402
from customop.xla import crosscheck  # noqa: E402
from customop.xla import NoGradientError  # noqa: E402
from customop.schema import SchemaError  # noqa: E402
from customop.xla import ExportError, Library, export, externals  # noqa: E402

PATH = os.environ["CUSTOMOP_KERNELS"]
LIB = Library(PATH)
LIB.register()
OPS = LIB.ops
RNG = np.random.default_rng(7)


def jax_attrs(attrs):
    return samples.jax_attrs(LIB, attrs)


class Vmap(unittest.TestCase):
    def test_every_example_op_has_a_sample(self):
        self.assertEqual(sorted(c.op for c in samples.calls(LIB)),
                         sorted(e.name for e in LIB.entries()))

    def test_vmap_of_every_op_is_the_loop_of_calls(self):
        """jax.jit(jax.vmap(op)) over a batch of 3 equals the 3 calls stacked, bit for bit
        (the rows rule runs the same arithmetic per row; the sequential rule the same calls)."""
        for call in samples.calls(LIB):
            if not call.batched:
                continue  # takes no tensor: nothing to batch
            with self.subTest(op=call.op):
                op, attrs = OPS[call.op], jax_attrs(call.attrs)
                batch = call.batch()
                in_axes = tuple(0 if i in call.batched else None for i in range(len(batch)))
                # Run by jaxlib and, in the test suite, by the Rust PJRT runner too.
                got = as_list(crosscheck.jit(PATH, jax.vmap(lambda *a: op(*a, **attrs),
                                                            in_axes))(*batch))
                loop = [as_list(op(*[b[k] if i in call.batched else b
                                     for i, b in enumerate(batch)], **attrs))
                        for k in range(3)]
                self.assertEqual(len(got), len(loop[0]))
                for r, g in enumerate(got):
                    want = np.stack([np.asarray(one[r]) for one in loop])
                    np.testing.assert_array_equal(np.asarray(g), want)

    def test_the_rule_each_op_gets(self):
        rules = {op.name: op.batching for op in OPS}
        for name in ("example::rms_norm_t", "example::rms_norm", "example::mean_pool",
                     "example::scale_rows", "example::row_scale"):
            self.assertEqual(rules[name], "rows", name)
        for name in ("example::checked_sqrt", "example::counter_step", "example::top_k",
                     "my_custom_library::custom_op_external"):
            self.assertEqual(rules[name], "sequential", name)

    def test_rows_rule_with_an_unbatched_operand_and_another_axis(self):
        """scale_rows with x batched along its axis 1 and w unbatched (broadcast first)."""
        xt = RNG.normal(size=(4, 3, 6))           # batch on axis 1
        w = RNG.uniform(0.5, 2.0, size=4)
        got = jax.vmap(lambda x, w: OPS.example.scale_rows(x, w), in_axes=(1, None))(xt, w)
        want = np.stack([OPS.example.scale_rows(xt[:, b], w) for b in range(3)])
        np.testing.assert_array_equal(got, want)

    def test_an_empty_batch(self):
        got = jax.vmap(lambda x: OPS.example.rms_norm_t(x, eps=EPS))(np.zeros((0, 4, 6)))
        self.assertEqual(got.shape, (0, 4, 6))
        got = jax.vmap(lambda x: OPS.example.checked_sqrt(x))(np.zeros((0, 3), np.float32))
        self.assertEqual(got.shape, (0, 3))

    def test_operands_and_attributes_are_checked(self):
        with self.assertRaises(TypeError) as cm:
            OPS.example.rms_norm_t(np.ones((2, 3)), 1e-3)
        self.assertIn("attributes are keyword arguments (eps)", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            OPS.example.rms_norm_t(np.ones((2, 3)), epsilon=1e-3)
        self.assertIn("has no attribute epsilon", str(cm.exception))

    def test_a_side_effect_whose_result_is_unused_is_kept(self):
        """Through lib.ops' custom_vjp and custom_vmap wrappers, jit still keeps a side-effecting
        op whose result nobody reads."""
        blob = np.frombuffer(LIB.pack("my_lib::Blob", {"gain": 2.0, "bias": -1, "seed": 0,
                                                       "tag": [0] * 16}), np.uint8)

        def f(blob, x):
            OPS.my_custom_library.custom_op_external(blob, x)
            return x + 1

        text = jax.jit(f).lower(blob, np.ones((3, 2), np.float32)).as_text()
        self.assertIn("stablehlo.custom_call @my_custom_library.custom_op_external(", text)

    def test_a_mut_external_threads_its_state_without_a_side_effect(self):
        """A `&mut` external does not make the call side-effecting (no `has_side_effect`, so
        JAX dispatches it as any op); the new state is a result, threaded from call to call."""
        step = jax.jit(lambda s, x: OPS.example.counter_step(s, x))
        state = np.frombuffer(LIB.pack("example::Counter", {"calls": 0, "total": 0.0}), np.uint8)
        x = np.array([1.0, 2.0], np.float32)
        text = step.lower(state, x).as_text()
        self.assertIn("stablehlo.custom_call @example.counter_step(", text)
        self.assertNotIn("has_side_effect", text)
        for calls in (1, 2, 3):
            y, state = step(state, x)
            np.testing.assert_array_equal(y, x + calls)
        self.assertEqual(LIB.unpack("example::Counter", np.asarray(state)),
                         {"calls": 3, "total": 9.0})

    def test_nested_vmap(self):
        xs = RNG.normal(size=(2, 3, 4, 6))
        got = jax.vmap(jax.vmap(lambda x: OPS.example.rms_norm_t(x, eps=EPS)))(xs)
        np.testing.assert_allclose(got, rms_norm_ref(xs), rtol=1e-14)


class Attributes(unittest.TestCase):
    """Every JAX entry (`lib.ops`, `lib.call`, `customop.xla.export`) checks attributes the same
    way, before tracing: unknown, missing and ill-typed ones are a SchemaError naming the op and
    the attribute; a Python number becomes the declared type."""

    X = np.arange(12, dtype=np.float32).reshape(3, 4) / 7

    def test_a_missing_attribute_is_refused_before_tracing(self):
        for call in (lambda x: OPS.example.rms_norm_t(x),
                     lambda x: LIB.call("example::rms_norm_t", x)):
            with self.assertRaises(SchemaError) as cm:
                call(self.X)
            self.assertIn("example::rms_norm_t: missing attribute eps", str(cm.exception))
            with self.assertRaises(SchemaError):
                export(call, self.X, lib=LIB)

    def test_an_undeclared_attribute_is_refused_by_the_handler(self):
        """Through a raw jax.ffi.ffi_call (no customop front end to check it first), under jit
        too: a misspelt or extra attribute is the handler's named refusal, as XLA's own binding
        refuses one, never ignored."""
        import jax.ffi

        target = LIB.op("example::rms_norm_t").schema.target
        out = jax.ShapeDtypeStruct(self.X.shape, self.X.dtype)
        eps = np.float32(EPS)
        np.testing.assert_array_equal(jax.ffi.ffi_call(target, out)(self.X, eps=eps),
                                      OPS.example.rms_norm_t(self.X, eps=EPS))
        for call in (lambda x: jax.ffi.ffi_call(target, out)(x, eps=eps, epsilon=eps),
                     jax.jit(lambda x: jax.ffi.ffi_call(target, out)(x, eps=eps, extra=1))):
            with self.assertRaisesRegex(Exception, r"custom op `example::rms_norm_t` "
                                        r"\[unknown_attribute\]: the call carries attribute "
                                        r"`(epsilon|extra)` that the op does not declare "
                                        r"\(it takes `eps`\)"):
                np.asarray(call(self.X))

    def test_a_descriptor_attribute_as_bytes_or_as_torchs_latin1_string(self):
        # torch spells a descriptor attribute as a str of its bytes, one character each; JAX
        # sends a str as UTF-8, so the check converts it to the packed bytes first.
        value = {"scale": -3.75, "shift": 0.5, "mode": "ScaleShift"}
        packed = LIB.pack("example::NormCfg", value)
        self.assertTrue(any(b > 127 for b in packed))
        x = np.asarray(self.X, np.float32)
        by_bytes = np.asarray(LIB.call("example::rms_norm", x, eps=EPS, cfg=packed))
        by_str = np.asarray(LIB.call("example::rms_norm", x, eps=EPS,
                                     cfg=packed.decode("latin-1")))
        np.testing.assert_array_equal(by_str, by_bytes)
        rms = np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + np.float32(EPS))
        np.testing.assert_allclose(by_bytes, x / rms * -3.75 + 0.5, rtol=1e-5)

    def test_an_unknown_attribute_is_refused_naming_it(self):
        for call in (lambda x: OPS.example.rms_norm_t(x, eps=EPS, epz=1.0),
                     lambda x: LIB.call("example::rms_norm_t", x, epz=EPS)):
            with self.assertRaises(SchemaError) as cm:
                jax.jit(call)(self.X)
            self.assertIn("example::rms_norm_t has no attribute epz (its attributes: eps)",
                          str(cm.exception))

    def test_an_ill_typed_attribute_is_refused_naming_it(self):
        for call in (lambda x: OPS.example.rms_norm_t(x, eps="small"),
                     lambda x: LIB.call("example::rms_norm_t", x, eps="small")):
            with self.assertRaises(SchemaError) as cm:
                call(self.X)
            self.assertIn("example::rms_norm_t: attribute `eps` takes a float, got 'small'",
                          str(cm.exception))
        with self.assertRaises(SchemaError) as cm:
            OPS.example.top_k(self.X[0], k=2.5)
        self.assertIn("attribute `k` takes an int", str(cm.exception))

    def test_a_python_number_becomes_the_declared_type(self):
        """eps is an f32 attribute; a Python float (f64 under x64) is converted, in lib.call
        as in lib.ops, and both equal the reference."""
        want = np.asarray(rms_norm_ref(self.X))
        for call in (lambda x: OPS.example.rms_norm_t(x, eps=EPS),
                     lambda x: LIB.call("example::rms_norm_t", x, eps=EPS)):
            got = crosscheck.jit(PATH, call)(self.X)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


class Grad(unittest.TestCase):
    X = RNG.normal(size=(4, 6))
    W = RNG.uniform(0.5, 2.0, size=4)

    def test_check_grads_f64(self):
        """Reverse mode, order 1, against finite differences, on every op with a backward."""
        check_grads(lambda x: OPS.example.rms_norm_t(x, eps=EPS), (self.X,), 1, ["rev"])
        check_grads(lambda x: OPS.example.mean_pool(x, k=3, stride=2), (self.X,), 1, ["rev"])
        check_grads(lambda x, w: OPS.example.scale_rows(x, w), (self.X, self.W), 1, ["rev"])
        # Order 2 in reverse mode: through backward ops that declare their own backward.
        check_grads(lambda x: OPS.example.rms_norm_t(x, eps=EPS), (self.X,), 2, ["rev"])
        check_grads(OPS.example.softplus, (self.X,), 2, ["rev"])
        check_grads(lambda x, g: OPS.example.rms_norm_t_bwd(x, g, eps=EPS),
                    (self.X, self.X[::-1].copy()), 1, ["rev"])
        taps = LIB.pack("example::Taps", {"bias": 1.0, "taps": [0.5 * i for i in range(16)]})
        # apply_taps is f32 only: its gradient is exact (linear), so f32 tolerances are ample.
        check_grads(lambda x: OPS.example.apply_taps(taps, x), (self.X.astype(np.float32),), 1,
                    ["rev"], atol=1e-2, rtol=1e-2)

    def test_differentiable_ops_are_exactly_those_with_a_backward(self):
        with_vjp = sorted(op.name for op in OPS if op.schema.vjp is not None)
        self.assertEqual(with_vjp, ["example::apply_taps", "example::fp8_affine",
                                    "example::gather_rows",
                                    "example::matmul_i4", "example::mean_pool",
                                    "example::mulw", "example::rms_norm_nd",
                                    "example::rms_norm_t", "example::rms_norm_t_bwd",
                                    "example::scale_rows", "example::softplus",
                                    "example::softplus_bwd", "example::wnorm"])

    def test_jit_grad_matches_jnp(self):
        c = RNG.normal(size=(4, 6))
        for f, ref in [
            (lambda x: OPS.example.rms_norm_t(x, eps=EPS), rms_norm_ref),
            (lambda x: OPS.example.mean_pool(x, k=2, stride=1), lambda x: mean_pool_ref(x, 2, 1)),
        ]:
            got = crosscheck.jit(PATH, jax.grad(
                lambda x: jnp.sum(jnp.sin(f(x)) * c[:, :f(x).shape[1]])))(self.X)
            want = jax.grad(lambda x: jnp.sum(jnp.sin(ref(x)) * c[:, :ref(x).shape[1]]))(self.X)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
        gx, gw = crosscheck.jit(PATH, jax.grad(
            lambda x, w: jnp.sum(OPS.example.scale_rows(x, w) ** 2), argnums=(0, 1)))(self.X,
                                                                                     self.W)
        rx, rw = jax.grad(lambda x, w: jnp.sum((x * w[:, None]) ** 2), argnums=(0, 1))(self.X,
                                                                                        self.W)
        np.testing.assert_allclose(gx, rx, rtol=1e-13)
        np.testing.assert_allclose(gw, rw, rtol=1e-13)

    def test_every_dtype_of_rms_norm_t_differentiates(self):
        """The backward in each type of `dtypes(T = [f32, f64, bf16, f16])`, against jnp's
        gradient in f64 on the same (rounded) inputs; tolerance a few ulps of the type."""
        import ml_dtypes
        c = RNG.normal(size=(4, 6))
        want = jax.grad(lambda x: jnp.sum(rms_norm_ref(x) * c))
        for dtype, tol in [(np.float32, 1e-5), (np.float64, 1e-12),
                           (ml_dtypes.bfloat16, 3e-2), (np.float16, 4e-3)]:
            with self.subTest(dtype=dtype):
                x = self.X.astype(dtype)
                got = crosscheck.jit(PATH, jax.grad(lambda x: jnp.sum(
                    OPS.example.rms_norm_t(x, eps=EPS).astype(jnp.float64) * c)))(x)
                self.assertEqual(got.dtype, np.dtype(dtype))
                np.testing.assert_allclose(np.asarray(got, np.float64),
                                           want(x.astype(np.float64)), rtol=tol, atol=tol)

    def test_an_integer_operand_gets_no_gradient(self):
        """gather_rows(x, idx): x's gradient is the scatter-add of the cotangent (the backward
        op); idx, an int32 array, gets none: its cotangent is a float0 zero."""
        x = RNG.normal(size=(4, 3))
        idx = np.array([2, 0, 2, 3], np.int32)
        c = RNG.normal(size=(4, 3))
        want = np.zeros_like(x)
        np.add.at(want, idx, c)
        got = crosscheck.jit(PATH, jax.grad(
            lambda x: jnp.sum(OPS.example.gather_rows(x, idx) * c)))(x)
        np.testing.assert_array_equal(got, want)
        _, vjp = jax.vjp(lambda x, i: OPS.example.gather_rows(x, i), x, idx)
        dx, di = vjp(c)
        np.testing.assert_array_equal(dx, want)
        self.assertEqual(di.dtype, jax.dtypes.float0)
        self.assertEqual(di.shape, idx.shape)
        check_grads(lambda x: OPS.example.gather_rows(x, idx), (x,), 1, ["rev"])
        # An index outside x is the kernel's refusal, not a read past the buffer.
        with self.assertRaises(Exception) as cm:
            jax.block_until_ready(OPS.example.gather_rows(x, np.array([1, 4], np.int32)))
        self.assertIn("[kernel_error]", str(cm.exception))
        self.assertIn("gather_rows: idx[1] = 4 is not a row of x (0..4)", str(cm.exception))

    def test_vmap_of_grad_is_the_loop_of_grads(self):
        xs = RNG.normal(size=(3, 4, 6))

        def f(x):
            return jnp.sum(OPS.example.mean_pool(OPS.example.rms_norm_t(x, eps=EPS), k=2,
                                                 stride=2) ** 3)

        got = crosscheck.jit(PATH, jax.vmap(jax.grad(f)))(xs)
        want = np.stack([jax.grad(f)(x) for x in xs])
        np.testing.assert_array_equal(got, want)

    def test_grad_of_a_vmapped_function_is_the_loop_of_grads(self):
        """`jax.grad` of a vmapped function (the batch summed): each element's gradient is
        its own function's, as computed one at a time."""
        xs = RNG.normal(size=(3, 4, 6))

        def f(x):
            return jnp.sum(OPS.example.mean_pool(OPS.example.rms_norm_t(x, eps=EPS), k=2,
                                                 stride=2) ** 3)

        got = crosscheck.jit(PATH, jax.grad(lambda xs: jnp.sum(jax.vmap(f)(xs))))(xs)
        want = np.stack([jax.grad(f)(x) for x in xs])
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)

    def test_a_batched_external_takes_the_loop_rule(self):
        """tap_rows has the rows rule: with its external unbatched, the batch is folded into
        the rows (one call, no loop); with the external batched too, each element runs with its
        own external (jax.lax.map: a while loop), and both equal the loop of calls."""
        op = OPS.example.tap_rows
        self.assertEqual(op.batching, "rows")
        taps = [np.frombuffer(LIB.pack("example::Taps", {"bias": float(b), "taps": [
            0.5 * i + b for i in range(16)]}), np.uint8) for b in range(3)]
        xs = RNG.normal(size=(3, 2, 5)).astype(np.float32)
        one = jax.vmap(lambda x: op(taps[0], x))
        self.assertNotIn("stablehlo.while", jax.jit(one).lower(xs).as_text())
        np.testing.assert_array_equal(crosscheck.jit(PATH, one)(xs),
                                      np.stack([op(taps[0], x) for x in xs]))
        each = jax.vmap(lambda t, x: op(t, x))
        stacked = np.stack(taps)
        self.assertIn("stablehlo.while", jax.jit(each).lower(stacked, xs).as_text())
        np.testing.assert_array_equal(crosscheck.jit(PATH, each)(stacked, xs),
                                      np.stack([op(t, x) for t, x in zip(taps, xs)]))

    def test_an_op_with_an_external_differentiates_its_tensor(self):
        taps = np.frombuffer(LIB.pack("example::Taps", {"bias": 1.0, "taps": [2.0] * 16}),
                             np.uint8)
        x = np.ones((2, 3), np.float32)
        gx = jax.grad(lambda x: jnp.sum(OPS.example.apply_taps(taps, x)))(x)
        np.testing.assert_array_equal(gx, np.full((2, 3), 2.0, np.float32))
        # Nothing is asked of the gradient with respect to the external: it is an integer
        # array, and jax refuses to differentiate one (jax.grad) or makes its cotangent a float0
        # zero (jax.vjp) whatever the op's backward returns for it.

    def test_an_op_without_a_backward_says_so(self):
        with self.assertRaises(NoGradientError) as cm:
            jax.grad(lambda x: jnp.sum(OPS.example.checked_sqrt(x)))(np.ones(3, np.float32))
        self.assertIn("example::checked_sqrt has no gradient", str(cm.exception))
        # Not differentiated: no error.
        y = jax.grad(lambda x: jnp.sum(x * OPS.example.checked_sqrt(
            jax.lax.stop_gradient(x))))(np.full(3, 4.0, np.float32))
        np.testing.assert_array_equal(y, [2.0, 2.0, 2.0])


class Training(unittest.TestCase):
    def test_a_two_op_chain_trains_like_jnp(self):
        """x @ W, then rms_norm_t, then mean_pool: 8 steps of gradient descent in f64. Losses fall
        every step and equal the jnp model's to 1e-12 (relative)."""
        x = RNG.normal(size=(8, 6))
        target = RNG.normal(size=(8, 3))
        w0 = RNG.normal(size=(6, 6))

        def loss(w, norm, pool):
            return jnp.mean((pool(norm(x @ w)) - target) ** 2)

        ours = crosscheck.jit(PATH, jax.value_and_grad(lambda w: loss(
            w, lambda h: OPS.example.rms_norm_t(h, eps=EPS),
            lambda h: OPS.example.mean_pool(h, k=2, stride=2))))
        ref = jax.jit(jax.value_and_grad(lambda w: loss(
            w, rms_norm_ref, lambda h: mean_pool_ref(h, 2, 2))))
        wa, wb, losses = w0, w0, []
        for _ in range(8):
            (la, ga), (lb, gb) = ours(wa), ref(wb)
            np.testing.assert_allclose(la, lb, rtol=1e-12)
            losses.append(float(la))
            wa, wb = wa - 0.5 * ga, wb - 0.5 * gb
        self.assertTrue(all(b < a for a, b in zip(losses, losses[1:])), losses)
        self.assertLess(losses[-1], 0.9 * losses[0], losses)


class Export(unittest.TestCase):
    def setUp(self):
        self.blob = np.frombuffer(LIB.pack("my_lib::Blob", {"gain": 2.0, "bias": -1, "seed": 0,
                                                            "tag": [0] * 16}), np.uint8)
        self.x = np.arange(9, dtype=np.float32).reshape(3, 3) / 4

    def model(self, blob, x):
        y = OPS.my_custom_library.custom_op_external(blob, jnp.sin(x))
        return y.astype(jnp.float32) + 1, OPS.example.rms_norm_t(x, eps=EPS)

    def test_symbolic_shapes_export_once_and_run_at_any_size(self):
        """jax.export with shape polymorphism (`b, n`): the rules are evaluated on the symbolic
        sizes (mean_pool's `(n - k) / stride + 1` too, not only a copied `b`), and the one
        exported program runs at three sizes, each equal to the concrete call. Before: JAX's
        "Symbolic dimension used in a context that requires a constant"."""
        f = lambda x: OPS.example.mean_pool(x, k=2, stride=2)  # noqa: E731
        b, n = jax.export.symbolic_shape("b, n", constraints=("n >= 2",))
        exp = export(f, jax.ShapeDtypeStruct((b, n), np.float32), lib=LIB)
        self.assertEqual(str(exp.out_avals[0].shape), "(b, floordiv(n - 2, 2) + 1)")
        back = jax.export.deserialize(exp.serialize())
        for shape in ((2, 6), (3, 9), (5, 4)):
            x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 7
            got = np.asarray(back.call(x))
            self.assertEqual(got.shape, (shape[0], (shape[1] - 2) // 2 + 1))
            np.testing.assert_array_equal(got, np.asarray(f(x)))

    def test_symbolic_shapes_refused_as_rust_refuses_them(self):
        """The rule's refusals hold for every size the symbolic dimensions stand for: mean_pool
        divides `n - k`, so `n >= k` must follow from the constraints, or the export is refused
        naming the constraint (before: exported, and at n = 1 the program returned an empty
        result where every eager call refuses); a stride of 0 or below is refused by name
        (before: Python's ZeroDivisionError, and a program of size `3 - n`)."""
        b, n = jax.export.symbolic_shape("b, n")
        spec = jax.ShapeDtypeStruct((b, n), np.float32)
        with self.assertRaisesRegex(SchemaError, r"example::mean_pool: output `y`: .*"
                                                 r"the constraint `n - 2 >= 0`"):
            export(lambda x: OPS.example.mean_pool(x, k=2, stride=2), spec, lib=LIB)
        b, n = jax.export.symbolic_shape("b, n", constraints=("n >= 2",))
        spec = jax.ShapeDtypeStruct((b, n), np.float32)
        for stride, refusal in ((0, "divides by zero"), (-1, "divides a negative number")):
            with self.assertRaisesRegex(SchemaError, r"example::mean_pool: .*" + refusal):
                export(lambda x: OPS.example.mean_pool(x, k=2, stride=stride), spec, lib=LIB)

    def test_annotated_serialised_deserialised_and_run(self):
        exp = export(self.model, self.blob, self.x, lib=LIB)
        want = [{"index": 0, "name": "blob", "descriptor": "my_lib::Blob", "size": 56,
                 "mutable": False, "fingerprint": LIB.layout("my_lib::Blob").fingerprint_hex}]
        got = [e.__dict__ for e in externals(exp)]
        self.assertEqual(got, want)
        text = exp.mlir_module()
        self.assertIn('customop.external = {descriptor = "my_lib::Blob", fingerprint = "%s", '
                      'mutable = false, name = "blob", size = 56 : i64}' % want[0]["fingerprint"],
                      text)
        self.assertIn("stablehlo.custom_call @my_custom_library.custom_op_external(", text)
        back = jax.export.deserialize(exp.serialize())
        self.assertEqual([e.__dict__ for e in externals(back)], want)
        for a, b in zip(back.call(self.blob, self.x), jax.jit(self.model)(self.blob, self.x)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    def test_names_with_an_unused_argument_a_nested_jit_and_a_loop(self):
        """The annotation names the function's parameter, also when jax.export drops an unused
        argument; a call in a nested jit (a private function) or in vmap's loop (a while body)
        is traced back to the entry argument."""
        taps = np.frombuffer(LIB.pack("example::Taps", {"bias": 1.0, "taps": [2.0] * 16}),
                             np.uint8)
        xs = np.ones((3, 2, 4), np.float32)
        inner = jax.jit(lambda b, x: OPS.example.passthrough(b, x))

        def f(unused, blob, taps, xs):
            looped = jax.vmap(lambda x: OPS.example.apply_taps(taps, x))(xs)
            return inner(blob, xs[0]), looped

        exp = export(f, np.zeros(2, np.float32), self.blob, taps, xs, lib=LIB)
        got = {e.name: e.descriptor for e in externals(exp)}
        self.assertEqual(got, {"blob": "my_lib::Blob", "taps": "example::Taps"})
        back = jax.export.deserialize(exp.serialize())
        for a, b in zip(back.call(np.zeros(2, np.float32), self.blob, taps, xs),
                        jax.jit(f)(np.zeros(2, np.float32), self.blob, taps, xs)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    def test_only_the_library_targets_are_allowed(self):
        # jax's safety check stays on for other custom call targets.
        def other(x):
            return jax.ffi.ffi_call("not_customop", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

        with self.assertRaises(ValueError) as cm:
            export(other, self.x, lib=LIB)
        self.assertIn("not_customop", str(cm.exception))

    def test_an_external_of_the_wrong_type_or_size_is_refused(self):
        f = lambda blob, x: OPS.example.passthrough(blob, x)  # noqa: E731
        for blob, needle in [
            (self.blob[:-1], "external `blob` of example::passthrough is argument `blob`, 55 "
                             "bytes, but descriptor my_lib::Blob packs to 56 bytes"),
            (self.blob.reshape(2, 28), "is argument `blob`, a tensor<2x28xui8>: an external is "
                                       "a 1-D uint8 array"),
            (self.blob.view(np.int8), "is argument `blob`, a tensor<56xi8>"),
        ]:
            with self.subTest(shape=blob.shape, dtype=blob.dtype):
                with self.assertRaises(ExportError) as cm:
                    export(f, blob, self.x, lib=LIB)
                self.assertIn(needle, str(cm.exception))

    def test_a_computed_external_is_refused(self):
        with self.assertRaises(ExportError) as cm:
            export(lambda blob, x: OPS.example.passthrough(blob + 1, x), self.blob, self.x,
                   lib=LIB)
        self.assertIn("external `blob` is computed", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
