"""Shape expressions, as Rust's `customop-shape` crate defines them: an output dimension computed
from tensor dimensions (`x.dim(1)`), integer attributes (`k`), lengths of array attributes
(`taps.len()`) and integer literals, with `+ - * / %`, `min`, `max` and `ceil_div`.

Evaluated exactly as Rust does: 64-bit signed integers, an overflow, a division by zero or a
division (`/`, `%`, `ceil_div`) of or by a negative number is an error (never a wrapped or
truncated value); `/` rounds down, `ceil_div` up. `eval_size` also refuses a negative size, and zero from a computed expression.
The manifest carries each expression as a JSON tree; `parse` reads it.

On a symbolic size (a torch `SymInt`, a JAX shape-polymorphic dimension) the same refusals hold
for every size the trace stands for, never by forcing the size to a value: a concrete divisor
or operand is checked as it is; a condition on a symbolic value is the front end's own (torch:
`torch._check`, a guard that `torch.export` reports against its `Dim` ranges; JAX: a decision
from the dimension's bounds and constraints, refused when it is not known for every size)."""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["Lit", "Dim", "Attr", "Len", "Bin", "Expr", "ShapeExprError", "parse", "apply",
           "OPS", "as_int", "concrete", "require"]

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
    arithmetic runs on the front end's symbolic values, with the same refusals of a division
    (see the module documentation; overflow is not checked there); `min` and `max` of a
    symbolic size are refused (they would need the front end's own)."""
    ca, cb = concrete(a), concrete(b)
    if ca is None or cb is None:
        if op in ("div", "rem", "ceil_div"):
            text = lambda: _symbolic_text(op, a, b)  # noqa: E731
            if cb == 0:
                raise ShapeExprError("`%s` divides by zero" % text())
            for v in (a, b):
                if concrete(v) is not None and concrete(v) < 0:
                    raise ShapeExprError("`%s` divides a negative number (a size expression "
                                         "divides only sizes)" % text())
            if cb is None:
                require(b, 1, lambda: "`%s` divides by zero or by a negative number" % text())
            if ca is None:
                require(a, 0, lambda: "`%s` divides a negative number (a size expression "
                                      "divides only sizes)" % text())
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


def require(v: Any, low: int, message: Callable[[], str]) -> None:
    """Requires symbolic size `v >= low` for every size it stands for, by the front end's own
    means, never forcing `v` to a value: a torch `SymInt` by `torch._check` (a guard, or a
    refusal when the traced size breaks it; `torch.export` reports a guard that a `Dim`'s range
    does not satisfy, with the range that would); a JAX dimension by its bounds and the
    constraints of `jax.export.symbolic_shape`, refused when they do not decide it. Another
    front end's symbolic value is not compared here. `ShapeExprError(message())` on refusal."""
    module = type(v).__module__
    if module == "torch" or module.startswith("torch."):
        # A torch value: torch is loaded; the core imports no front end itself.
        sys.modules["torch"]._check_with(ShapeExprError, v >= low, message)
    elif module.startswith("jax."):
        try:
            holds = v >= low
        except Exception as e:
            # jax.errors.InconclusiveDimensionOperation (jax 0.12; jax 0.10 has it only in
            # jax._src.core): by name.
            if not any(c.__name__ == "InconclusiveDimensionOperation" for c in type(e).__mro__):
                raise
            raise ShapeExprError(
                "%s for some sizes of the symbolic dimensions: give jax.export.symbolic_shape "
                "the constraint `%s >= %d` (or constraints that imply it)"
                % (message(), v, low)) from None
        if not holds:
            raise ShapeExprError(message())


def _symbolic_text(op: str, a: Any, b: Any) -> str:
    """`a op b` as a message shows it, symbolic operands by the front end's text."""
    def operand(v: Any) -> str:
        t = str(v)
        return "(%s)" % t if " " in t else t

    symbol = OPS[op][0]
    if symbol is None:
        return "%s(%s, %s)" % (op, a, b)
    return "%s %s %s" % (operand(a), symbol, operand(b))


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
        # Symbolic: the same refusals, by the front end's own means (`require`). A dimension
        # as it is (`x.dim(1)`) is a size already.
        if is_computed(e):
            require(v, 1, lambda: "it is %s, below 1 (a computed size is at least 1)" % v)
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
