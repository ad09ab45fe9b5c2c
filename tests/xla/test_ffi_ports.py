"""What JAX's own FFI examples check on CPU, for customop ports of their handlers (declared in
Rust, `examples/kernels/src/attributes.rs` and `in_place.rs`): array and dictionary attributes
with their error cases; tensors updated in place (an array and a scalar), aliased, donated
without a copy; through `lib.ops`, under `jax.jit` (cross-checked by the Rust runner in the
suite), and through a raw `jax.ffi.ffi_call` of the op's target.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_ffi_ports.py
"""

import os
import unittest

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from customop.schema import SchemaError
from customop.xla import Library, NoGradientError, crosscheck, export
from jax.test_util import check_grads

jax.config.update("jax_enable_x64", True)

PATH = os.environ["CUSTOMOP_KERNELS"]
LIB = Library(PATH)
LIB.register()
OPS = LIB.ops.example
I64 = jax.ShapeDtypeStruct((), np.int64)


def raw_dictionary_attr(**attrs):
    """The op through jax.ffi.ffi_call alone: what a user of jax.ffi writes."""
    return jax.ffi.ffi_call(LIB.target("example::dictionary_attr"), (I64, I64))(**attrs)


class JaxsCpuExamples(unittest.TestCase):
    """The other two of JAX's CPU FFI examples, ported (their tests: jax's
    examples/ffi/tests/cpu_examples_test.py, run unchanged by scripts/jax_ffi_tests.sh)."""

    def test_a_counter_per_index_kept_for_the_process_under_jit_too(self):
        self.assertEqual([int(OPS.counter(index=101)) for _ in range(3)], [0, 1, 2])
        self.assertEqual(int(OPS.counter(index=102)), 0)
        self.assertEqual(int(OPS.counter(index=101)), 3)
        f = jax.jit(lambda x: (x, OPS.counter(index=103)))
        self.assertEqual([int(f(0)[1]), int(f(0)[1]), int(f(1)[1])], [0, 1, 2])
        f.clear_cache()
        self.assertEqual(int(f(0)[1]), 3)

    def test_aliasing_gives_its_input_back_of_any_type_and_rank(self):
        for x in (np.linspace(0, 0.5, 10), np.int32(6), np.array([[True, False]]),
                  np.array([1 - 2j], np.complex64), np.arange(6, dtype=np.uint16).reshape(2, 3)):
            with self.subTest(dtype=np.asarray(x).dtype.name):
                got = jax.jit(lambda x: OPS.aliasing(x), donate_argnums=0)(jnp.asarray(x))
                np.testing.assert_array_equal(np.asarray(got), x)
                np.testing.assert_array_equal(np.asarray(OPS.aliasing(x)), x)


class DictionaryAttributes(unittest.TestCase):
    def test_the_kernel_sees_every_attribute_and_counts_them(self):
        for call in (OPS.dictionary_attr, raw_dictionary_attr,
                     lambda **a: jax.jit(lambda: OPS.dictionary_attr(**a))()):
            secret, count = call(secret=5)
            self.assertEqual((int(secret), int(count)), (5, 1))
            secret, count = call(secret=3, a_string="hello", flag=True, ratio=0.5,
                                 sizes=np.arange(4, dtype=np.int32))
            self.assertEqual((int(secret), int(count)), (3, 5))

    def test_nested_dictionaries_reach_the_kernel(self):
        x = np.array([1.0, -2.0])
        out, strings = OPS.sum_attrs(x, scale=2.0, a=1, inner={"b": 2.5, "deeper": {"c": 10},
                                                               "s": "x"}, w=[0.25, 0.5])
        np.testing.assert_array_equal(np.asarray(out), x * 2.0 + (1 + 2.5 + 10 + 0.75))
        self.assertEqual(int(strings), 1)
        f = jax.jit(lambda x: OPS.sum_attrs(x, scale=1.0, inner={"b": 1, "more": {"c": 2}}))
        np.testing.assert_array_equal(np.asarray(f(x)[0]), x + 3)

    def test_a_missing_or_ill_typed_entry_is_the_calls_error(self):
        with self.assertRaisesRegex(Exception, r"\[missing_attribute\].*`secret`"):
            OPS.dictionary_attr()
        with self.assertRaisesRegex(Exception, r"\[missing_attribute\].*`secret`"):
            raw_dictionary_attr(other=1)
        with self.assertRaisesRegex(Exception, r"\[wrong_attribute_type\].*`secret`: expected "
                                               r"i64, got f64"):
            OPS.dictionary_attr(secret=1.5)
        with self.assertRaisesRegex(Exception, r"\[wrong_attribute_type\].*`secret` is not a "
                                               r"scalar"):
            raw_dictionary_attr(secret="5")

    def test_the_messages_carry_xlas_words_too(self):
        """As jax's own FFI example tests (examples/ffi/tests/cpu_examples_test.py) expect
        them of a handler made with XLA's C++ FFI, so that those tests pass unchanged against
        a customop port."""
        with self.assertRaisesRegex(Exception, "Unexpected attribute: secret"):
            OPS.dictionary_attr()
        with self.assertRaisesRegex(Exception, "Wrong attribute type: expected scalar but got "
                                               "string"):
            OPS.dictionary_attr(secret="invalid")
        with self.assertRaisesRegex(Exception, "Wrong scalar data type: expected S64 but got "
                                               "F64"):
            raw_dictionary_attr(secret=1.5)

    def test_values_jax_cannot_pass_are_refused_before_tracing(self):
        with self.assertRaisesRegex(SchemaError, r"attribute `bad`: object cannot be"):
            OPS.dictionary_attr(secret=1, bad=object())
        with self.assertRaisesRegex(SchemaError, r"attribute `grid`: an array attribute is 1-D"):
            OPS.dictionary_attr(secret=1, grid=np.zeros((2, 2)))
        with self.assertRaisesRegex(SchemaError, r"does not fit an i64"):
            OPS.dictionary_attr(secret=2**64)

    def test_named_attributes_stay_checked_beside_the_dictionary(self):
        with self.assertRaisesRegex(SchemaError, r"missing attribute scale"):
            OPS.sum_attrs(np.ones(2), a=1)
        with self.assertRaisesRegex(SchemaError, r"`scale` takes a float"):
            OPS.sum_attrs(np.ones(2), scale="2")

    def test_an_op_without_a_dictionary_still_refuses_undeclared_attributes(self):
        with self.assertRaisesRegex(SchemaError, r"has no attribute extra"):
            OPS.array_attr(array=np.arange(3, dtype=np.int32), extra=1)
        with self.assertRaisesRegex(Exception, r"\[unknown_attribute\].*`extra`"):
            jax.ffi.ffi_call(LIB.target("example::array_attr"),
                             jax.ShapeDtypeStruct((), np.int32))(
                array=np.arange(3, dtype=np.int32), extra=1)


class ArrayAttributes(unittest.TestCase):
    def test_the_sum_of_an_array_attribute(self):
        for n in (0, 1, 5, 100):
            a = np.arange(n, dtype=np.int32)
            self.assertEqual(int(OPS.array_attr(array=a)), a.sum())
            raw = jax.ffi.ffi_call(LIB.target("example::array_attr"),
                                   jax.ShapeDtypeStruct((), np.int32))(array=a)
            self.assertEqual(int(raw), a.sum())
        self.assertEqual(int(jax.jit(lambda: OPS.array_attr(array=[1, 2, 3]))()), 6)

    def test_an_array_of_another_type_is_refused_by_name(self):
        with self.assertRaisesRegex(Exception, r"\[wrong_attribute_type\].*`array`: expected an "
                                               r"array of i32, got i64"):
            jax.ffi.ffi_call(LIB.target("example::array_attr"),
                             jax.ShapeDtypeStruct((), np.int32))(
                array=np.arange(3, dtype=np.int64))
        with self.assertRaisesRegex(SchemaError, r"`array`"):
            OPS.array_attr(array=[1.5])


class InPlace(unittest.TestCase):
    def test_values_and_the_input_left_alone_without_donation(self):
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        for call in (lambda x: OPS.scale_in_place(x, factor=2.5),
                     crosscheck.jit(PATH, lambda x: OPS.scale_in_place(x, factor=2.5))):
            xa = jax.numpy.asarray(x)
            np.testing.assert_array_equal(np.asarray(call(xa)), x * np.float32(2.5))
            # Not donated: XLA copied it into the result first; the caller's array is intact.
            np.testing.assert_array_equal(np.asarray(xa), x)

    def test_a_donated_buffer_is_updated_without_a_copy(self):
        cache = jax.numpy.zeros((8, 4), np.float32)
        at = cache.unsafe_buffer_pointer()
        write = jax.jit(lambda c, r: OPS.cache_write(c, r, at=5), donate_argnums=0)
        out = write(cache, np.full(4, 7.0, np.float32))
        self.assertEqual(out.unsafe_buffer_pointer(), at)
        self.assertTrue(cache.is_deleted())
        want = np.zeros((8, 4), np.float32)
        want[5] = 7.0
        np.testing.assert_array_equal(np.asarray(out), want)
        # Again, on the result: the same buffer each step, as a KV cache is used.
        out2 = jax.jit(lambda c, r: OPS.cache_write(c, r, at=0), donate_argnums=0)(
            out, np.ones(4, np.float32))
        self.assertEqual(out2.unsafe_buffer_pointer(), at)
        want[0] = 1.0
        np.testing.assert_array_equal(np.asarray(out2), want)

    def test_an_array_and_a_scalar_in_place(self):
        x = np.array([0.1, 0.5, 0.95, 2.0, -1.0, 0.5], np.float32)
        counts = np.array([10, 0, 0, 0], np.int64)
        total = np.array(1.0, np.float64)
        f = crosscheck.jit(PATH, lambda x, c, t: OPS.histogram_add(x, c, t, lo=0.0, hi=1.0))
        c, t = f(x, counts, total)
        np.testing.assert_array_equal(np.asarray(c), [11, 0, 2, 1])
        inside = x[(x >= 0) & (x < 1)].astype(np.float64)
        self.assertEqual(float(t), 1.0 + float(np.sum(inside)))
        self.assertEqual(np.asarray(t).shape, ())

    def test_through_a_raw_ffi_call_with_and_without_aliases(self):
        x = np.arange(4, dtype=np.float32)
        out = jax.ShapeDtypeStruct((4,), np.float32)
        for aliases in ({0: 0}, None):
            got = jax.ffi.ffi_call(LIB.target("example::scale_in_place"), out,
                                   input_output_aliases=aliases)(x, factor=np.float32(4.0))
            np.testing.assert_array_equal(np.asarray(got), x * 4)

    def test_vmap_updates_each_row(self):
        xs = np.arange(12, dtype=np.float32).reshape(3, 4)
        got = jax.vmap(lambda x: OPS.scale_in_place(x, factor=0.5))(xs)
        np.testing.assert_array_equal(np.asarray(got), xs * 0.5)

    def test_undeclared_aliasing_is_still_refused(self):
        """An op that does not update `x` in place, called with its output aliased to `x`:
        the handler refuses the overlap before the kernel runs."""
        x = np.array([1.0, 4.0, 9.0], np.float32)
        with self.assertRaisesRegex(Exception, r"\[overlap\].*overlaps input buffer 0"):
            jax.ffi.ffi_call(LIB.target("example::checked_sqrt"),
                             jax.ShapeDtypeStruct((3,), np.float32),
                             input_output_aliases={0: 0})(x)

    def test_a_shape_the_op_does_not_take_is_refused(self):
        with self.assertRaisesRegex(Exception, r"\[wrong_rank\]"):
            OPS.cache_write(np.zeros(4, np.float32), np.zeros(4, np.float32), at=0)
        with self.assertRaisesRegex(Exception, r"row 9 is outside 0\.\.2"):
            OPS.cache_write(np.zeros((2, 3), np.float32), np.zeros(3, np.float32), at=9)

    def test_no_derivative_through_an_update_in_place(self):
        with self.assertRaisesRegex(NoGradientError, "scale_in_place"):
            jax.grad(lambda x: OPS.scale_in_place(x, factor=2.0).sum())(np.ones(3, np.float32))


EPS = np.float32(1e-5)
DTYPES = (np.float64, np.float32, ml_dtypes.bfloat16, np.float16)
# Per dtype: the tolerance against the f64 reference (the kernel computes in f64 and rounds
# once; the reference's rounding of its own result is what remains).
TOL = {np.float64: 1e-12, np.float32: 1e-6, ml_dtypes.bfloat16: 1e-2, np.float16: 1e-3}


def rms_ref(x):
    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + np.float64(EPS))


@jax.custom_vjp
def rms_norm_example(x):
    """JAX's example, written with the ports: the forward with residuals, the backward."""
    return OPS.rms_norm_fwd(x, eps=EPS)[0]


def _fwd(x):
    y, res = OPS.rms_norm_fwd(x, eps=EPS)
    return y, (res, x)


def _bwd(r, ct):
    res, x = r
    return (OPS.rms_norm_bwd(res, x, ct),)


rms_norm_example.defvjp(_fwd, _bwd)
SHAPES = [(5,), (3, 5), (2, 3, 5), (2, 1, 3, 4)]


class RmsNormAnyRank(unittest.TestCase):
    def test_ranks_1_to_4_in_four_dtypes(self):
        rng = np.random.default_rng(3)
        for dtype in DTYPES:
            for shape in SHAPES:
                with self.subTest(dtype=np.dtype(dtype).name, shape=shape):
                    x = rng.normal(size=shape).astype(dtype)
                    y = crosscheck.jit(PATH, lambda x: OPS.rms_norm_nd(x, eps=EPS))(x)
                    self.assertEqual((y.shape, y.dtype), (shape, np.dtype(dtype)))
                    np.testing.assert_allclose(np.asarray(y, np.float64), rms_ref(x),
                                               rtol=TOL[dtype], atol=TOL[dtype])
                    y2, res = OPS.rms_norm_fwd(x, eps=EPS)
                    self.assertEqual(res.shape, shape[:-1])
                    np.testing.assert_array_equal(np.asarray(y2), np.asarray(y))
                    want = 1 / np.sqrt(np.mean(np.asarray(x, np.float64) ** 2, -1) + EPS)
                    np.testing.assert_allclose(np.asarray(res, np.float64), want,
                                               rtol=TOL[dtype])

    def test_gradients_declared_and_as_jaxs_example_writes_them(self):
        rng = np.random.default_rng(4)
        for shape in SHAPES:
            with self.subTest(shape=shape):
                x = rng.normal(size=shape)
                w = np.arange(1, shape[-1] + 1, dtype=np.float64)
                ref = jax.grad(lambda x: jnp.sum(
                    x / jnp.sqrt(jnp.mean(x ** 2, -1, keepdims=True) + np.float64(EPS)) * w))(x)
                declared = crosscheck.jit(PATH, jax.grad(
                    lambda x: jnp.sum(OPS.rms_norm_nd(x, eps=EPS) * w)))(x)
                example = crosscheck.jit(PATH, jax.grad(
                    lambda x: jnp.sum(rms_norm_example(x) * w)))(x)
                np.testing.assert_allclose(np.asarray(declared), ref, rtol=1e-11, atol=1e-12)
                np.testing.assert_allclose(np.asarray(example), np.asarray(declared),
                                           rtol=1e-12, atol=1e-13)
                check_grads(lambda x: OPS.rms_norm_nd(x, eps=EPS), (x,), order=1,
                            modes=["rev"])

    def test_vmap_over_every_rank(self):
        rng = np.random.default_rng(5)
        for shape in SHAPES:
            xs = rng.normal(size=(3, *shape))
            got = jax.vmap(lambda x: OPS.rms_norm_fwd(x, eps=EPS))(xs)
            self.assertEqual(got[1].shape, (3, *shape[:-1]))
            np.testing.assert_allclose(np.asarray(got[0]), rms_ref(xs), rtol=1e-12)
            g = jax.vmap(jax.grad(lambda x: jnp.sum(OPS.rms_norm_nd(x, eps=EPS) ** 3)))(xs)
            for b in range(3):
                one = jax.grad(lambda x: jnp.sum(OPS.rms_norm_nd(x, eps=EPS) ** 3))(xs[b])
                np.testing.assert_array_equal(np.asarray(g[b]), np.asarray(one))

    def test_exported_once_for_any_leading_dimensions(self):
        b, n = jax.export.symbolic_shape("b, n")
        spec = jax.ShapeDtypeStruct((b, n, 4), np.float32)
        exp = export(lambda x: OPS.rms_norm_fwd(x, eps=EPS), spec, lib=LIB)
        self.assertEqual(str(exp.out_avals[1].shape), "(b, n)")
        back = jax.export.deserialize(exp.serialize())
        for shape in ((1, 1, 4), (2, 3, 4), (5, 7, 4)):
            x = np.random.default_rng(6).normal(size=shape).astype(np.float32)
            y, res = back.call(x)
            self.assertEqual(res.shape, shape[:-1])
            np.testing.assert_allclose(np.asarray(y), rms_ref(x), rtol=1e-6, atol=1e-6)

    def test_complex_values_as_jaxs_example_computes_them(self):
        """complex64 and complex128 through the forward with residuals and its backward, as
        JAX's C++ example computes them (`x * x`, not `|x|^2`; the principal square root),
        against numpy; the gradient of JAX's custom_vjp written with them against numerical
        differences (check_grads, reverse mode, as jax's own example test)."""
        rng = np.random.default_rng(7)
        for dtype, tol in ((np.complex64, 1e-5), (np.complex128, 1e-12)):
            for shape in SHAPES:
                with self.subTest(dtype=np.dtype(dtype).name, shape=shape):
                    x = (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
                    y, res = crosscheck.jit(PATH, lambda x: OPS.rms_norm_fwd(x, eps=EPS))(x)
                    z = x.astype(np.complex128)
                    scale = 1 / np.sqrt(np.mean(z * z, -1, keepdims=True) + np.float64(EPS))
                    np.testing.assert_allclose(np.asarray(y), z * scale, rtol=tol, atol=tol)
                    np.testing.assert_allclose(np.asarray(res), scale[..., 0], rtol=tol)
        x = (rng.normal(size=(3, 5)) + 1j * rng.normal(size=(3, 5))).astype(np.complex128)
        check_grads(rms_norm_example, (x,), order=1, modes=["rev"])

    def test_rank_0_is_refused_by_name(self):
        with self.assertRaisesRegex(SchemaError, r"output `res`: `\.\.x\.dims\(\.\.-1\)` of "
                                                 r"a rank-0 `x` has no value"):
            OPS.rms_norm_fwd(np.float32(1.0), eps=EPS)
        with self.assertRaisesRegex(Exception, r"\[kernel_error\].*rank 0"):
            OPS.rms_norm_nd(np.float32(1.0), eps=EPS)
        # A raw call with a residual of the wrong rank is the handler's refusal.
        with self.assertRaisesRegex(Exception, r"\[wrong_rank\].*`res`: expected rank 1"):
            jax.ffi.ffi_call(LIB.target("example::rms_norm_fwd"),
                             (jax.ShapeDtypeStruct((2, 3), np.float32),
                              jax.ShapeDtypeStruct((2, 1), np.float32)))(
                np.ones((2, 3), np.float32), eps=EPS)


if __name__ == "__main__":
    unittest.main()
