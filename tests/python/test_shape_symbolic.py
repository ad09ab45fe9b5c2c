"""Shape rules on symbolic sizes (`customop.shape`): evaluated by the size's own arithmetic,
never forced to an int nor compared (either would fail in `jax.export` with shape
polymorphism, or specialise a `torch.compile` graph); concrete sizes are checked as before;
`min`/`max` of a symbolic size refused by name; a division by a constant zero or negative
number, or of a constant negative one, refused as on concrete sizes. A stand-in symbolic size that raises on any
comparison or conversion stands for JAX's and torch's (their own are tested through the front
ends: tests/xla/test_computed_shapes.py, tests/torch/test_transforms.py).

Run: target/xla-venv/bin/python -m unittest tests/python/test_shape_symbolic.py
"""

import unittest

from customop.shape import Attr, Bin, Dim, Env, Lit, ShapeExprError, eval_size


class Sym:
    """A symbolic size: arithmetic builds its text; comparing or forcing it fails the test."""

    def __init__(self, text):
        self.text = text

    def _bin(self, op, other, swap=False):
        a, b = (getattr(other, "text", other), self.text) if swap else (self.text,
                                                                       getattr(other, "text", other))
        return Sym("(%s %s %s)" % (a, op, b))

    def __add__(self, o):
        return self._bin("+", o)

    def __radd__(self, o):
        return self._bin("+", o, True)

    def __sub__(self, o):
        return self._bin("-", o)

    def __rsub__(self, o):
        return self._bin("-", o, True)

    def __mul__(self, o):
        return self._bin("*", o)

    def __rmul__(self, o):
        return self._bin("*", o, True)

    def __floordiv__(self, o):
        return self._bin("//", o)

    def __rfloordiv__(self, o):
        return self._bin("//", o, True)

    def __neg__(self):
        return Sym("-%s" % self.text)

    def _refuse(self, *_):
        raise AssertionError("a symbolic size was compared or forced")

    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __bool__ = __int__ = __index__ = _refuse
    __hash__ = None


def env(n):
    return Env(lambda p: (4, n) if p == "x" else None, {"k": 2, "stride": 2})


POOL = Bin("add", Bin("div", Bin("sub", Dim("x", 1), Attr("k")), Attr("stride")), Lit(1))


class SymbolicSizes(unittest.TestCase):
    def test_a_rule_on_a_symbolic_size_is_the_sizes_own_arithmetic(self):
        self.assertEqual(eval_size(POOL, env(Sym("n"))).text, "(((n - 2) // 2) + 1)")
        self.assertEqual(eval_size(Dim("x", 1), env(Sym("n"))).text, "n")
        self.assertEqual(eval_size(Dim("x", 0), env(Sym("n"))), 4)
        ceil = Bin("ceil_div", Dim("x", 1), Lit(3))
        self.assertEqual(eval_size(ceil, env(Sym("n"))).text, "-(-n // 3)")

    def test_concrete_sizes_are_still_checked(self):
        self.assertEqual(eval_size(POOL, env(10)), 5)
        with self.assertRaisesRegex(ShapeExprError, "divides a negative number"):
            eval_size(POOL, env(1))

    def test_a_division_by_zero_or_a_negative_constant_is_refused(self):
        """Known when the rule is evaluated, whatever the symbolic size (never compared): Rust
        refuses these for every size. Before: `n // 0` raised Python's ZeroDivisionError, and a
        negative stride gave a negative size."""
        for stride, refusal in ((0, "divides by zero"), (-2, "divides a negative number")):
            e = Env(lambda p: (4, Sym("n")) if p == "x" else None, {"k": 2, "stride": stride})
            with self.assertRaisesRegex(ShapeExprError, refusal):
                eval_size(POOL, e)
        with self.assertRaisesRegex(ShapeExprError, "divides a negative number"):
            eval_size(Bin("div", Lit(-1), Dim("x", 1)), env(Sym("n")))

    def test_min_and_max_of_a_symbolic_size_are_refused_by_name(self):
        for op in ("min", "max"):
            with self.assertRaisesRegex(ShapeExprError, "`%s` of a symbolic size is not "
                                                        "supported" % op):
                eval_size(Bin(op, Dim("x", 1), Lit(3)), env(Sym("n")))


if __name__ == "__main__":
    unittest.main()
