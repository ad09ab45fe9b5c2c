"""The descriptor field contract: every primitive field type a descriptor takes
(`example::FieldTypes`: bool, the eight integers, f16, bf16, f32, f64, the eight 8-bit floats)
given in-range, edge, out-of-range and non-finite values through every front end that packs
from a value: Python's `lib.pack` (the library's Rust code, through its C ABI) and `customop
run --external` from JSON and from TOML (the command line's copy of the same Rust code). Each
value is either packed alike by all three, and read back by the handler (`field_values`, run
by jaxlib and by the command line's runner) as the value numpy and ml_dtypes round it to (an
independent reference; the bits, copied by the handler, never converted), or refused by all
three, naming the field. The derive's bytes for the
same values are checked in Rust (runtime/src/descriptor/value/tests.rs).

Run: CUSTOMOP_CLI=target/debug/customop \\
     CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_field_contract.py
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import jax
import ml_dtypes
import numpy as np

from customop.descriptors import PackError, to_json
from customop.xla import Library, export

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from samples import FIELD_TYPES  # noqa: E402

CLI = os.environ["CUSTOMOP_CLI"]
PATH = os.environ["CUSTOMOP_KERNELS"]
LIB = Library(PATH)
LIB.register()
NAME = "example::FieldTypes"
X = np.zeros(2, np.float32)

INTS = ["flag", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = {"half": np.float16, "brain": ml_dtypes.bfloat16, "single": np.float32,
          "double": np.float64, "f8e4m3fn": ml_dtypes.float8_e4m3fn,
          "f8e5m2": ml_dtypes.float8_e5m2, "f8e4m3": ml_dtypes.float8_e4m3,
          "f8e3m4": ml_dtypes.float8_e3m4, "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
          "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
          "f8e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz, "f8e8m0fnu": ml_dtypes.float8_e8m0fnu}
FLOAT_VALUES = [0.0, -0.0, 3, 1 / 3, 1.0625 + 2.0 ** -40, 0.1, -1.0, 1.5, 448.0, 464.0, 500.0,
                57344.0, 61440.0, 65504.0, 65520.0, 1e6, 3.4e38, 3.4028235e38, 3.5e38, 1e39,
                2.0 ** -127, 2.0 ** 127, 2.0 ** 128, 1e-45, 1e-320, 1e308, math.inf, -math.inf,
                math.nan]


def int_cases(field):
    if field == "flag":
        return [(True, 1), (False, 0), (1, None), ("yes", None)]
    info = np.iinfo(getattr(np, field))
    lo, hi = int(info.min), int(info.max)
    cases = [(lo, lo), (hi, hi), (0, 0), (lo - 1, None), (hi + 1, None), (1.0, None),
             (True, None)]
    # uint64 reads back as its bits, an i64.
    return [(v, None if w is None else int(np.array(w, np.uint64).view(np.int64))
             if field == "uint64" else w) for v, w in cases]


def float_case(dtype, v):
    """(value, the bits the field holds) by numpy / ml_dtypes rounding, None if refused: a
    finite value that rounds past the type's range, an infinity where it has none."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        rounded = np.array(float(v), np.float64).astype(dtype)
    r = float(rounded.astype(np.float64))
    if math.isfinite(v) and not math.isfinite(r):
        return v, None
    if math.isinf(v) and math.isnan(r):
        return v, None
    size = np.dtype(dtype).itemsize
    return v, int(rounded.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size]))


def cases():
    """(field, value, expected read-back or None for a refusal, index in ints / floats)."""
    out = []
    for i, f in enumerate(INTS):
        out += [(f, v, w, ("ints", i)) for v, w in int_cases(f)]
    for i, (f, t) in enumerate(FLOATS.items()):
        out += [(f, *float_case(t, v), ("floats", i)) for v in FLOAT_VALUES]
        out += [(f, "1.0", None, ("floats", i)), (f, None, None, ("floats", i))]
    return out


def toml_of(value):
    """`value` (a dict of scalars) as TOML, or None where TOML cannot write one of them (an
    integer beyond i64, a null)."""
    lines = []
    for k, v in value.items():
        if v is None or (isinstance(v, int) and not isinstance(v, bool) and
                         not -2 ** 63 <= v < 2 ** 63):
            return None
        if isinstance(v, bool):
            text = "true" if v else "false"
        elif isinstance(v, str):
            text = json.dumps(v)
        elif isinstance(v, float) and math.isnan(v):
            text = "nan"
        elif isinstance(v, float) and math.isinf(v):
            text = "inf" if v > 0 else "-inf"
        else:
            text = repr(v)
            if isinstance(v, float) and "." not in text and "e" not in text:
                text += ".0"
        lines.append("%s = %s" % (k, text))
    return "\n".join(lines) + "\n"


def cli(*args):
    p = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


class FieldContract(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.cases = cases()
        cls.accepted = [c for c in cls.cases if c[2] is not None]
        cls.refused = [c for c in cls.cases if c[2] is None]

    def value(self, field, v):
        return {**FIELD_TYPES, field: v}

    def test_the_cases_cover_every_field_and_both_outcomes(self):
        fields = {c[0] for c in self.cases}
        self.assertEqual(fields, set(FIELD_TYPES))
        for f in fields:
            outcomes = {c[2] is None for c in self.cases if c[0] == f}
            self.assertEqual(outcomes, {True, False}, f)
        self.assertGreater(len(self.accepted), 200)

    def test_python_packs_what_the_handler_reads_as_the_reference(self):
        """lib.pack, then `field_values` under jax.jit: the reference value, or a PackError
        naming the field."""
        f = jax.jit(lambda blob: LIB.ops.example.field_values(blob, X))
        for field, v, want, (side, i) in self.cases:
            with self.subTest(field=field, value=v):
                if want is None:
                    with self.assertRaises(PackError) as cm:
                        LIB.pack(NAME, self.value(field, v))
                    self.assertIn("field `%s`" % field, str(cm.exception))
                    continue
                blob = np.frombuffer(LIB.pack(NAME, self.value(field, v)), np.uint8)
                ints, bits = f(blob)
                got = (np.asarray(ints) if side == "ints" else np.asarray(bits))[i]
                self.assertEqual(int(got), want)

    def run_all(self, suffix, write):
        """The accepted cases as externals of one exported program, run by `customop run`
        with each packed from a file written by `write` (None: the format cannot write it):
        each equals the reference and jaxlib's run of the same program."""
        runnable = [(k, c) for k, c in enumerate(self.accepted)
                    if write(self.value(c[0], c[1])) is not None]
        blobs = [np.frombuffer(LIB.pack(NAME, self.value(c[0], c[1])), np.uint8)
                 for _, c in runnable]

        def f(x, *blobs):
            return tuple(LIB.ops.example.field_values(b, x) for b in blobs)

        names = ["x"] + ["c%d" % k for k, _ in runnable]
        exp = export(f, X, *blobs, lib=LIB, names=names)
        text = os.path.join(self.dir, "fields%s.mlir" % suffix)
        with open(text, "w") as out:
            out.write(exp.mlir_module())
        x = os.path.join(self.dir, "x.npy")
        np.save(x, X)
        args = ["run", text, "--ops", PATH, "--input", x]
        for k, c in runnable:
            path = os.path.join(self.dir, "c%d%s" % (k, suffix))
            with open(path, "w") as out:
                out.write(write(self.value(c[0], c[1])))
            args += ["--external", "c%d=%s" % (k, path)]
        npz = os.path.join(self.dir, "out%s.npz" % suffix)
        code, _, err = cli(*args, "--out", npz)
        self.assertEqual(code, 0, err)
        got = np.load(npz)
        jaxlib = [np.asarray(o) for o in jax.tree.leaves(exp.call(X, *blobs))]
        for j, (k, (field, v, want, (side, i))) in enumerate(runnable):
            ints, bits = got["result%d" % (2 * j)], got["result%d" % (2 * j + 1)]
            np.testing.assert_array_equal(ints, jaxlib[2 * j])
            np.testing.assert_array_equal(bits, jaxlib[2 * j + 1])
            self.assertEqual(int((bits if side == "floats" else ints)[i]), want, (field, v))
        return len(runnable)

    def test_the_command_line_from_json(self):
        self.assertEqual(self.run_all(".json", to_json), len(self.accepted))

    def test_the_command_line_from_toml(self):
        # TOML writes every case but integers beyond i64 (uint64's largest).
        self.assertGreaterEqual(self.run_all(".toml", toml_of), len(self.accepted) - 1)

    def test_the_command_line_refuses_what_python_refuses(self):
        x = os.path.join(self.dir, "x.npy")
        np.save(x, X)
        exp = export(lambda x, c: LIB.ops.example.field_values(c, x), X,
                     np.frombuffer(LIB.pack(NAME, FIELD_TYPES), np.uint8), lib=LIB,
                     names=["x", "c"])
        text = os.path.join(self.dir, "one.mlir")
        with open(text, "w") as out:
            out.write(exp.mlir_module())
        checked = 0
        for k, (field, v, _, _) in enumerate(self.refused):
            for suffix, write in ((".json", to_json), (".toml", toml_of)):
                try:
                    content = write(self.value(field, v))
                except PackError:
                    content = None  # a value JSON cannot carry at all: Python refused it
                if content is None:
                    continue
                with self.subTest(field=field, value=v, format=suffix):
                    path = os.path.join(self.dir, "r%d%s" % (k, suffix))
                    with open(path, "w") as out:
                        out.write(content)
                    code, _, err = cli("run", text, "--ops", PATH, "--input", x, "--external",
                                       "c=" + path)
                    self.assertEqual(code, 3, err)
                    self.assertIn("field `%s`" % field, err)
                    checked += 1
        self.assertGreater(checked, 100)


if __name__ == "__main__":
    unittest.main()
