"""Python's shape-rule evaluation (customop.schema.result_specs over the manifest) against
Rust's, on a table of cases: each op of the example kernel cdylibs is called through
`customop_call` (customop.eager) with result buffers of exactly the shapes Python computed,
which the Rust handler checks against its own evaluation of the rules; then each result, one
dimension off by one, must be refused with `[wrong_shape]`.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \
     CUSTOMOP_C_KERNEL=target/kernels/debug/libcustomop_example_c_kernel.so \
     target/xla-venv/bin/python -m unittest tests/xla/test_shape_rules.py
(scripts/test.sh does; both cdylibs are required, none is skipped).
"""

import os
import unittest

import numpy as np

from customop.eager import Handlers, KernelError
from customop.manifest import ConstDim, DimOf, DimsOf, DtypeVar, ExprDim, ShapeOf, TensorResult
from customop.schema import SchemaError, result_specs
from customop.xla import Library

KERNELS = Library(os.environ["CUSTOMOP_KERNELS"])
C_KERNEL = Library(os.environ["CUSTOMOP_C_KERNEL"])

# A valid value of each descriptor an external takes (the kernels must accept it, so that a
# call with the right shapes succeeds).
DESCRIPTORS = {
    "my_lib::Blob": {"gain": 2.0, "bias": -1, "seed": 7, "tag": b"shape rules test"},
    "example::Offset": {"add": 0.5},
    "example::Taps": {"bias": 1.0, "taps": [float(i) for i in range(16)]},
    "example::Counter": {"calls": 0, "total": 0.0},
    "example::Histogram": {"lo": 0.0, "width": 1.0, "counts": [0] * 12},
    "example::Stats": {"mean": 1.0, "spread": 2.0},
    "example::Table4k": {"scale": 0.5, "len": 3, "values": [1.0] * 1022},
    "example::Fp8Scale": {"scale": 0.5},
    "c_kernel::params": {"flags": 1, "scale": 2.0, "version": 3, "taps": [1.0] * 5,
                         "name": b"shapes\0\0", "offset": 4},
}

NORM_CFG = {"scale": 2.0, "shift": 0.5, "mode": "ScaleShift"}
AFFINE = dict(factor=1.5, label="l", offsets=[1, -2], flag=True, small=3)

# (library, op, tensor operand shapes by name, attributes). Externals are packed from
# DESCRIPTORS; tensors hold small positive values (valid for every kernel).
CASES = [
    (KERNELS, "example::checked_sqrt", {"x": ()}, {}),
    (KERNELS, "example::checked_sqrt", {"x": (0,)}, {}),
    (KERNELS, "example::checked_sqrt", {"x": (5,)}, {}),
    (KERNELS, "example::checked_sqrt", {"x": (2, 1, 4)}, {}),
    (KERNELS, "example::unlucky", {"x": (3, 2)}, {}),
    (KERNELS, "example::doubled", {"x": (4, 3)}, {}),
    (KERNELS, "example::masked_split", {"x": (2, 3), "mask": (2, 3)}, {}),
    (KERNELS, "example::row_scale", {"x": (3, 4), "w": (3,)}, {}),
    (KERNELS, "example::row_scale", {"x": (1, 7), "w": (1,)}, {}),
    (KERNELS, "example::rms_norm", {"x": (2, 5)}, {"eps": 1e-5, "cfg": NORM_CFG}),
    (KERNELS, "example_lib::affine", {"x": (2, 3)}, AFFINE),
    (KERNELS, "my_custom_library::custom_op_external", {"x": (3, 3)}, {}),
    (KERNELS, "my_custom_library::custom_op_external", {"x": (1, 7)}, {}),
    (KERNELS, "my_custom_library::custom_op_external", {"x": (6, 1)}, {}),
    (KERNELS, "example::table_dot", {"x": (4, 6)}, {}),
    (KERNELS, "example::table_dot_copy", {"x": (2, 9)}, {}),
    (KERNELS, "example::add_offset", {"x": (2, 2, 2)}, {}),
    (KERNELS, "example::apply_taps", {"x": (17,)}, {}),
    (KERNELS, "example::apply_stats", {"x": (3, 1)}, {}),
    (KERNELS, "example::passthrough", {"x": (4,)}, {}),
    (KERNELS, "example::make_stats", {"x": (6,)}, {}),
    (KERNELS, "example::make_stats", {"x": (2, 3)}, {}),
    (KERNELS, "example::counter_step", {"x": (2,)}, {}),
    (KERNELS, "example::histogram", {"x": (3, 4)}, {}),
    (C_KERNEL, "c_kernel::scale_rows", {"x": (3, 5)}, {}),
    # Shapes computed from dimensions and attributes.
    (KERNELS, "example::avg_pool", {"x": (2, 7)}, {"k": 3, "stride": 2, "pad": 1}),
    (KERNELS, "example::avg_pool", {"x": (1, 5)}, {"k": 5, "stride": 1, "pad": 0}),
    (KERNELS, "example::avg_pool", {"x": (3, 10)}, {"k": 2, "stride": 3, "pad": 2}),
    (KERNELS, "example::concat_rows", {"a": (2, 3), "b": (4, 3)}, {}),
    (KERNELS, "example::concat_rows", {"a": (0, 2), "b": (1, 2)}, {}),
    (KERNELS, "example::top_k", {"x": (6,)}, {"k": 4}),
    (KERNELS, "example::top_k", {"x": (3,)}, {"k": 3}),
    # Element types beyond the primitives: complex64, f8E4M3FN, bf16, f16.
    (KERNELS, "example::cmul", {"a": (2, 3), "b": (2, 3)}, {}),
    (KERNELS, "example::quantize_fp8", {"x": (5,)}, {}),
    (KERNELS, "example::dequantize_fp8", {"q": (2, 2)}, {}),
    (KERNELS, "example::scale_bf16", {"x": (3,)}, {"factor": 1.5}),
    (KERNELS, "example::scale_f16", {"x": (1, 4)}, {"factor": -2.0}),
    # Kernels on the caller's pool: a constant dimension, a rank-0 result.
    (KERNELS, "example::pool_probe", {"x": (8,)}, {"panic_at": -1}),
    (KERNELS, "example::sum_squares", {"x": (3, 4)}, {}),
    (KERNELS, "example::layer_norm_par", {"x": (3, 5), "w": (5,), "b": (5,)}, {"eps": 1e-5}),
    # Tensors updated in place: the result is the operand's shape.
    (KERNELS, "example::histogram_add", {"x": (5,), "counts": (4,), "total": ()},
     {"lo": 0.0, "hi": 8.0}),
    (KERNELS, "example::cache_write", {"cache": (3, 2), "row": (2,)}, {"at": 1}),
    # Outputs whose rank follows an input's (`[..x.dims(..-1)]`), generic over f32 and more.
    (KERNELS, "example::rms_norm_fwd", {"x": (2, 3, 5)}, {"eps": 1e-5}),
    (KERNELS, "example::rms_norm_fwd", {"x": (4,)}, {"eps": 1e-5}),
    # A `#[state]` parameter is not an operand.
    (KERNELS, "example::windowed", {"x": (2, 3)}, {"n": 4}),
]


def operands(lib, sch, shapes):
    """numpy operands of the op: externals packed, tensors of the given shapes."""
    out = []
    for p in sch.operands:
        if p.kind == "external":
            out.append(np.frombuffer(lib.pack(p.descriptor.name, DESCRIPTORS[p.descriptor.name]),
                                     np.uint8).copy())
        else:
            n = int(np.prod(shapes[p.name], dtype=np.int64))
            values = np.arange(1, n + 1) % 5 + 1
            # A generic op's tensor: the first of its type parameter's types.
            dtype = p.dtype.allowed[0] if isinstance(p.dtype, DtypeVar) else p.dtype
            out.append(values.astype(dtype.numpy_dtype).reshape(shapes[p.name]))
    return out


def attributes(lib, sch, attrs):
    out = {}
    for p in sch.attributes:
        v = attrs[p.name]
        out[p.name] = lib.pack(p.type.descriptor.name, v) if p.type.descriptor else v
    return out


def empty(shape, dtype):
    return np.zeros(shape, dtype.numpy_dtype)


class ShapeRules(unittest.TestCase):
    def run_case(self, lib, name, shapes, attrs):
        run = Handlers(lib)
        sch = lib.op(name).schema
        args = operands(lib, sch, shapes)
        attrs = attributes(lib, sch, attrs)
        types = lib.manifest.element_types
        specs = result_specs(sch, {p.name: a.shape for p, a in zip(sch.operands, args)}, attrs,
                             {p.name: types.by_numpy(a.dtype.name)
                              for p, a in zip(sch.operands, args)})
        # The shapes Python computed are the ones the handler accepts.
        results = [empty(s.shape, s.dtype) for s in specs]
        run.call_numpy(name, args, results, attrs)
        # Each result one off in its last dimension is refused, naming the result.
        for i, s in enumerate(specs):
            if not s.shape:
                continue
            for delta in (1, -1):
                wrong = s.shape[:-1] + (s.shape[-1] + delta,)
                if wrong[-1] < 0:
                    continue
                results = [empty(w.shape if j != i else wrong, w.dtype)
                           for j, w in enumerate(specs)]
                with self.assertRaises(KernelError, msg="%s result %d as %s" % (name, i, wrong)) as cm:
                    run.call_numpy(name, operands(lib, sch, shapes), results, attrs)
                self.assertIn("custom op `%s` [wrong_shape]" % name, str(cm.exception))
                self.assertEqual(cm.exception.code, 3)
        return specs

    def test_python_shapes_are_rusts(self):
        for lib, name, shapes, attrs in CASES:
            with self.subTest(op=name, shapes=shapes):
                self.run_case(lib, name, shapes, attrs)

    def test_python_computes_the_expected_shapes(self):
        # A few by hand, so that the two sides cannot agree on something wrong.
        cases = {
            ("my_custom_library::custom_op_external", (1, 7)): [(1,)],
            ("example::table_dot", (4, 6)): [(4,)],
            ("example::masked_split", (2, 3)): [(2, 3), (2, 3)],
            ("example::make_stats", (2, 3)): [(32,)],
            ("example::counter_step", (2,)): [(2,), (40,)],
            ("example::avg_pool", (2, 7)): [(2, 4)],      # (7 + 2 * 1 - 3) / 2 + 1
            ("example::avg_pool", (3, 10)): [(3, 5)],     # (10 + 2 * 2 - 2) / 3 + 1
            ("example::concat_rows", (2, 3)): [(6, 3)],
            ("example::top_k", (6,)): [(4,), (4,)],
            ("example::pool_probe", (8,)): [(1,)],
            ("example::sum_squares", (3, 4)): [()],
        }
        for lib, name, shapes, attrs in CASES:
            key = (name, shapes.get("x", shapes.get("a")))
            if key in cases:
                got = [s.shape for s in self.run_case(lib, name, shapes, attrs)]
                self.assertEqual(got, cases.pop(key))
        self.assertEqual(cases, {})

    def test_every_kind_of_rule_in_the_manifests_is_in_the_table(self):
        kinds = set()
        for lib in (KERNELS, C_KERNEL):
            for op in lib.entries():
                for r in op.schema.results:
                    if isinstance(r, TensorResult):
                        kinds.update(type(d).__name__ for d in r.shape)
                    else:
                        kinds.add(r.kind)
        covered = set()
        for lib, name, _, _ in CASES:
            for r in lib.op(name).schema.results:
                if isinstance(r, TensorResult):
                    covered.update(type(d).__name__ for d in r.shape)
                else:
                    covered.add(r.kind)
        self.assertTrue(kinds <= covered, "rule kinds without a case: %s" % (kinds - covered))
        self.assertTrue({ShapeOf.__name__, DimOf.__name__, ExprDim.__name__, DimsOf.__name__,
                         "opaque",
                         "updated_external", "updated_tensor"} <= covered)

    def test_const_dims_and_bad_rules(self):
        # ConstDim beside another rule: the evaluation on a schema made here.
        from dataclasses import replace

        sch = KERNELS.op("example::table_dot").schema
        r = sch.results[0]
        made = replace(sch, results=(replace(r, shape=(ConstDim(4), DimOf("x", 1))),))
        self.assertEqual(result_specs(made, {"table": (4120,), "x": (3, 5)})[0].shape, (4, 5))
        bad = replace(sch, results=(replace(r, shape=(DimOf("x", 2),)),))
        with self.assertRaises(SchemaError) as cm:
            result_specs(bad, {"table": (4120,), "x": (3, 5)})
        self.assertIn("example::table_dot: output `y`: dimension 0, `x.dim(2)`: `x.dim(2)` has no "
                      "value; the operands' shapes are table [4120], x [3, 5]", str(cm.exception))

    def test_expressions_without_a_size_name_the_op_output_and_values(self):
        sch = KERNELS.op("example::avg_pool").schema
        rule = "output `y`: dimension 1, `(x.dim(1) + 2 * pad - k) / stride + 1`"
        for attrs, why in [
            ({"k": 10, "stride": 1, "pad": 0},
             "`-3 / 1` divides a negative number (a size expression divides only sizes)"),
            # A window longer than the row by less than a stride: truncating, `-6 / 4 + 1`
            # would be a size of 1 and the call would reach the kernel; refused instead.
            ({"k": 13, "stride": 4, "pad": 0},
             "`-6 / 4` divides a negative number (a size expression divides only sizes)"),
            ({"k": 3, "stride": 0, "pad": 0}, "`4 / 0` divides by zero"),
            ({"k": -2**63, "stride": 1, "pad": 1},
             "`9 - -9223372036854775808` overflows a 64-bit integer"),
        ]:
            with self.assertRaises(SchemaError) as cm:
                result_specs(sch, {"x": (2, 7)}, attrs)
            self.assertIn("example::avg_pool: %s: %s; the operands' shapes are x [2, 7]"
                          % (rule, why), str(cm.exception))
        with self.assertRaises(SchemaError) as cm:
            result_specs(KERNELS.op("example::top_k").schema, {"x": (6,)}, {"k": 0})
        self.assertIn("output `values`: dimension 0, `k`: it is 0, not a size", str(cm.exception))

    def test_integer_semantics_are_rusts(self):
        # The same table as customop-shape's `integer_semantics` test (i64 arithmetic, checked;
        # a division of or by a negative number refused).
        from customop.shape import ShapeExprError, apply

        cases = [("div", 7, 2, 3), ("div", 0, 4, 0), ("rem", 7, 2, 1),
                 ("ceil_div", 7, 2, 4), ("ceil_div", 8, 2, 4), ("ceil_div", 0, 2, 0),
                 ("min", 3, -2, -2), ("max", 3, -2, 3)]
        for op, a, b, want in cases:
            self.assertEqual(apply(op, a, b), want, (op, a, b))
        for op, a, b in [("div", 1, 0), ("rem", 1, 0), ("ceil_div", 1, 0), ("add", 2**63 - 1, 1),
                         ("mul", 2**63 - 1, 2), ("div", -2**63, -1), ("div", -2, 4),
                         ("div", 7, -2), ("rem", -7, 2), ("ceil_div", -7, 2),
                         ("ceil_div", -7, -2)]:
            with self.assertRaises(ShapeExprError, msg=(op, a, b)):
                apply(op, a, b)


if __name__ == "__main__":
    unittest.main()
