"""Shape expressions, as Rust's `customop-shape` crate defines them: an output dimension computed
from tensor dimensions (`x.dim(1)`), integer attributes (`k`), lengths of array attributes
(`taps.len()`) and integer literals, with `+ - * / %`, `min`, `max` and `ceil_div`.

Evaluated exactly as Rust does: 64-bit signed integers, an overflow, a division by zero or a
division (`/`, `%`, `ceil_div`) of or by a negative number is an error (never a wrapped or
truncated value); `/` rounds down, `ceil_div` up. `eval_size` also refuses a negative size, and zero from a computed expression.
The manifest carries each expression as a JSON tree; `parse` reads it."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["Lit", "Dim", "Attr", "Len", "Bin", "Expr", "ShapeExprError", "parse", "apply",
           "OPS", "as_int", "concrete"]

_I64_MIN, _I64_MAX = -2**63, 2**63 - 1


class ShapeExprError(ValueError):
    """An expression with no value: overflow, division by zero, a missing dimension or
    attribute, or a size that is not one."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# name -> (infix symbol or None, function)
OPS: dict[str, tuple[str | None, Callable[[int, int], int]]] = {
    "add": ("+", lambda a, b: a + b),
    "sub": ("-", lambda a, b: a - b),
    "mul": ("*", lambda a, b: a * b),
    "div": ("/", operator.floordiv),
    "rem": ("%", operator.mod),
    "min": (None, min),
    "max": (None, max),
    "ceil_div": (None, _ceil_div),
}
_PRECEDENCE = {"add": 1, "sub": 1, "mul": 2, "div": 2, "rem": 2}


def concrete(v: Any) -> int | None:
    """`v` as a Python int when it is a concrete size (an int or numpy integer), or None for a
    symbolic one (a JAX shape-polymorphic dimension, a torch `SymInt`), which is never forced
    to a value here: forcing it fails in `jax.export` and specialises a `torch.compile` graph."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if type(v).__module__ == "numpy":
        return as_int(v)
    return None


def apply(op: str, a: Any, b: Any) -> Any:
    """`a op b` on 64-bit integers, as Rust's `BinOp::apply`. On a symbolic size the same
    arithmetic runs on the front end's symbolic values, unchecked here (the handler checks the
    sizes it is given at run time); `min` and `max` of a symbolic size are refused (they would
    need the front end's own)."""
    ca, cb = concrete(a), concrete(b)
    if ca is None or cb is None:
        return _apply_symbolic(op, a, b)
    a, b = ca, cb
    if op in ("div", "rem", "ceil_div") and b == 0:
        raise ShapeExprError("`%s` divides by zero" % Bin(op, Lit(a), Lit(b)).text())
    if op in ("div", "rem", "ceil_div") and (a < 0 or b < 0):
        raise ShapeExprError("`%s` divides a negative number (a size expression divides only "
                             "sizes)" % Bin(op, Lit(a), Lit(b)).text())
    r = OPS[op][1](a, b)
    if not _I64_MIN <= r <= _I64_MAX:
        raise ShapeExprError("`%s` overflows a 64-bit integer" % Bin(op, Lit(a), Lit(b)).text())
    return r


def _apply_symbolic(op: str, a: Any, b: Any) -> Any:
    if op == "ceil_div":
        return -((-a) // b)
    if op in ("min", "max"):
        raise ShapeExprError("`%s` of a symbolic size is not supported: give this dimension a "
                             "concrete size" % op)
    return OPS[op][1](a, b)


def as_int(v: Any) -> int | None:
    """`v` as an integer attribute value (a Python or numpy integer, not a bool), or None."""
    if v is None or isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


class Env:
    """What an expression reads: `dims(param)` gives a tensor's shape, `attrs` the attribute
    values by name (an int, or a sequence for `.len()`)."""

    def __init__(self, dims: Callable[[str], tuple[int, ...] | None], attrs: dict[str, Any]):
        self.dims = dims
        self.attrs = attrs


@dataclass(frozen=True)
class Lit:
    value: int
    op: ClassVar[str] = "lit"

    def eval(self, env: Env) -> int:
        return self.value

    def text(self, outer: int = 0, right: bool = False) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Dim:
    param: str
    dim: int
    op: ClassVar[str] = "dim"

    def eval(self, env: Env) -> int:
        shape = env.dims(self.param)
        if shape is None or self.dim >= len(shape):
            raise ShapeExprError("`%s` has no value" % self.text())
        d = shape[self.dim]
        c = concrete(d)
        return c if c is not None else d

    def text(self, outer: int = 0, right: bool = False) -> str:
        return "%s.dim(%d)" % (self.param, self.dim)


@dataclass(frozen=True)
class Attr:
    name: str
    op: ClassVar[str] = "attr"

    def eval(self, env: Env) -> int:
        v = as_int(env.attrs.get(self.name))
        if v is None:
            raise ShapeExprError("attribute `%s` has no value" % self.name)
        return v

    def text(self, outer: int = 0, right: bool = False) -> str:
        return self.name


@dataclass(frozen=True)
class Len:
    name: str
    op: ClassVar[str] = "len"

    def eval(self, env: Env) -> int:
        v = env.attrs.get(self.name)
        if v is None or isinstance(v, (int, float, str, bytes)):
            raise ShapeExprError("`%s.len()` has no value" % self.name)
        return len(v)

    def text(self, outer: int = 0, right: bool = False) -> str:
        return "%s.len()" % self.name


@dataclass(frozen=True)
class Bin:
    op: str  # type: ignore[misc]
    lhs: Expr
    rhs: Expr

    def eval(self, env: Env) -> int:
        return apply(self.op, self.lhs.eval(env), self.rhs.eval(env))

    def text(self, outer: int = 0, right: bool = False) -> str:
        symbol = OPS[self.op][0]
        if symbol is None:
            return "%s(%s, %s)" % (self.op, self.lhs.text(), self.rhs.text())
        p = _PRECEDENCE[self.op]
        s = "%s %s %s" % (self.lhs.text(p, False), symbol, self.rhs.text(p, True))
        return "(%s)" % s if p < outer or (p == outer and right) else s


Expr = Lit | Dim | Attr | Len | Bin


def is_computed(e: Expr) -> bool:
    """Whether `e` computes anything (not a literal, not a plain `x.dim(k)`)."""
    return not isinstance(e, (Lit, Dim))


def eval_size(e: Expr, env: Env) -> int:
    """The value of `e` as a dimension size (see the module documentation)."""
    v = e.eval(env)
    c = concrete(v)
    if c is None:
        # Symbolic: the front end's value, checked by the handler on the sizes it gets.
        return v
    if c < 0 or (c == 0 and is_computed(e)):
        raise ShapeExprError("it is %d, not a size" % c)
    return c


def parse(j: Any, where: str) -> Expr:
    """An expression from its manifest JSON tree."""
    if not isinstance(j, dict) or "op" not in j:
        raise ValueError("%s: not a shape expression: %r" % (where, j))
    op = j["op"]
    if op == "lit":
        return Lit(int(j["value"]))
    if op == "dim":
        return Dim(str(j["param"]), int(j["dim"]))
    if op == "attr":
        return Attr(str(j["name"]))
    if op == "len":
        return Len(str(j["name"]))
    if op in OPS:
        return Bin(op, parse(j["lhs"], where), parse(j["rhs"], where))
    raise ValueError("%s: unknown shape expression operation %r" % (where, op))
