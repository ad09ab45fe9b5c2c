"""Which inputs and outputs of an op have a derivative, as the Rust runtime decided it (the
manifest's `derivatives`), and the refusal both front ends raise when a derivative is asked
through one that has none.

Rust decides once, from the declared types (`ElementType::is_differentiable`: f16, bf16, f32
and f64; a type parameter only when every type it allows is one), and a declared backward or
tangent op carries a derivative for exactly those. An input of another type that carries a
tangent (a complex or fp8 input, an f32 call of `dtypes(T = [f32, i32])`), or an output of
another floating type whose derivative is used, has no rule that could give its derivative:
customop raises `NotDifferentiableError` naming the op, the input or output and its type,
never a zero. Inputs and outputs of integer and bool types have no tangent in JAX or torch
to begin with (JAX's `float0`), which is not an error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .elements import ElementType, ElementTypes
from .layout import Json, ManifestError, json_field

__all__ = ["Derivatives", "NotDifferentiableError", "input_refusal", "output_refusal",
           "in_place_refusal"]


class NotDifferentiableError(TypeError):
    """A derivative was asked through an op's input or output that has none at its element
    type: the op's declared backward and tangent ops carry none for it, and customop refuses
    rather than give a zero."""


@dataclass(frozen=True)
class Derivatives:
    """Per tensor input (by parameter name) and per result (by result name), the element types
    at which it has a derivative; absent or empty: none."""
    inputs: Mapping[str, tuple[ElementType, ...]]
    outputs: Mapping[str, tuple[ElementType, ...]]

    def input_has(self, name: str, numpy_name: str) -> bool:
        """Whether input `name` of numpy dtype `numpy_name` has a derivative."""
        return any(t.numpy == numpy_name for t in self.inputs.get(name, ()))

    def output_has(self, name: str, numpy_name: str) -> bool:
        """Whether result `name` of numpy dtype `numpy_name` has a derivative."""
        return any(t.numpy == numpy_name for t in self.outputs.get(name, ()))

    @staticmethod
    def from_json(j: Json, types: ElementTypes, where: str) -> Derivatives:
        def side(key: str) -> dict[str, tuple[ElementType, ...]]:
            entries = json_field(j, key, where)
            try:
                return {str(k): tuple(types[t] for t in v) for k, v in entries.items()}
            except (KeyError, AttributeError, TypeError) as e:
                raise ManifestError("%s: derivatives: %s" % (where, e)) from None

        return Derivatives(side("inputs"), side("outputs"))


def _with_derivatives(types: ElementTypes) -> str:
    names = [t.name for t in types.values() if t.differentiable]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def _why(declared: Any, name: str, types: ElementTypes) -> str:
    # A tensor updated in place: its parameter (`updated`) or its result (which names it).
    if getattr(declared, "updated", False) or hasattr(declared, "operand"):
        return "it is updated in place (`#[inout]`), which declares no derivative"
    dtype = getattr(declared, "dtype", None)
    spelled = dtype.describe() if hasattr(dtype, "describe") else getattr(dtype, "name", "?")
    allowed = getattr(dtype, "allowed", None)
    if allowed is not None:
        others = [t.name for t in allowed if not t.differentiable]
        return ("it is declared %s, which also allows %s: one backward serves every type the "
                "parameter allows, so it carries no derivative for `%s` at any of them"
                % (spelled, ", ".join(others), name))
    if dtype is not None and not getattr(dtype, "differentiable", True):
        return ("it is declared %s, which has no derivative in customop (only %s do)"
                % (spelled, _with_derivatives(types)))
    return "the op's manifest lists no derivative for it"


def input_refusal(sch: Any, types: ElementTypes, name: str, dtype: Any, stop: str) -> str:
    """The message for a tangent or gradient asked through input `name` (of runtime dtype
    `dtype`) of op `sch` (a `manifest.OpSchema`), which has none there; `stop` says how the front end stops one
    (`jax.lax.stop_gradient(x)`, `x.detach()`)."""
    declared = next((p for p in sch.params if p.name == name), None)
    return ("%s: input `%s` (%s here) has no derivative: %s. customop refuses rather than give "
            "a zero. Stop the derivative of `%s` where it enters the op (%s), or declare the op "
            "with f16, bf16, f32 or f64 inputs only (a second op for the other types)."
            % (sch.name, name, dtype, _why(declared, name, types), name, stop))


def output_refusal(sch: Any, types: ElementTypes, name: str, dtype: Any) -> str:
    """The message for a derivative asked through output `name` (of runtime dtype `dtype`) of
    op `sch`, which has none there."""
    declared = next((r for r in sch.results if r.name == name), None)
    return ("%s: output `%s` (%s here) has no derivative: %s, so the op's declared backward "
            "takes no cotangent of it and its tangent op gives no tangent of it. customop "
            "refuses rather than give a zero: use the output without differentiating through "
            "it (stop its gradient), or declare it with f16, bf16, f32 or f64 only."
            % (sch.name, name, dtype, _why(declared, name, types)))


def in_place_refusal(sch: Any, updated: str, name: str, stop: str) -> str:
    """The message for a call of op `sch`, which updates tensor `updated` in place
    (`#[inout]`), on input `name`, which carries a derivative: such an op has no gradient (Rust
    refuses a `vjp` or `jvp` for it), and the updated tensor would carry the old derivative, or
    none, with the new values."""
    return ("%s has no gradient: it updates `%s` in place (`#[inout]`), and an op that "
            "updates a tensor in place declares no backward: its input `%s` requires a gradient, which would be "
            "lost (the updated `%s` would keep the derivative of its old values, or none). "
            "customop refuses rather than give a wrong gradient, as torch's own `out=` "
            "functions do. Call it on inputs that need no gradient (%s), or declare an op that "
            "returns its result, with a backward (`vjp = ...`)."
            % (sch.name, updated, name, updated, stop))
