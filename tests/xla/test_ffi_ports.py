"""What JAX's own FFI examples check on CPU, for customop ports of their handlers (declared here
in Rust, `examples/kernels/src/attributes.rs`): array and dictionary attributes with their
error cases, through `lib.ops`, under `jax.jit`, and through a raw `jax.ffi.ffi_call` of the
op's target (XLA passes the attributes as it will for any caller).

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_ffi_ports.py
"""

import os
import unittest

import jax
import numpy as np

from customop.schema import SchemaError
from customop.xla import Library

jax.config.update("jax_enable_x64", True)

PATH = os.environ["CUSTOMOP_KERNELS"]
LIB = Library(PATH)
LIB.register()
OPS = LIB.ops.example
I64 = jax.ShapeDtypeStruct((), np.int64)


def raw_dictionary_attr(**attrs):
    """The op through jax.ffi.ffi_call alone: what a user of jax.ffi writes."""
    return jax.ffi.ffi_call(LIB.target("example::dictionary_attr"), (I64, I64))(**attrs)


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


if __name__ == "__main__":
    unittest.main()
