"""The parts of an op schema: parameters (tensors, attributes, externals), results with their
shape rules, and the partition rule (`customop.manifest.OpSchema` holds them, with the declared
backward, `Vjp`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from . import shape
from .elements import ElementType
from .layout import Layout

__all__ = [
    "AttrType", "DtypeVar", "TensorParam", "AttributeParam", "AttributesParam", "ExternalParam",
    "Param",
    "ConstDim", "DimOf", "ShapeOf", "DimsOf", "ExprDim", "DimRule",
    "TensorResult", "OpaqueResult", "UpdatedExternal", "UpdatedTensor", "UPDATED", "Result",
    "FactorDims", "PartitionRule",
]

@dataclass(frozen=True)
class AttrType:
    """An attribute's type: kind `bool` (`dtype` i1, as XLA carries it), `scalar` (of
    `dtype`), `str`, `array` (of `dtype`) or `descriptor` (a whole descriptor's packed bytes,
    layout `descriptor`)."""
    kind: Literal["bool", "scalar", "str", "array", "descriptor"]
    dtype: ElementType | None = None
    descriptor: Layout | None = None


@dataclass(frozen=True)
class DtypeVar:
    """A type parameter of a generic op (`dtypes(T = [f32, bf16])`): a tensor typed by it may
    be any of `allowed`, the same for every tensor it types in one call."""
    name: str
    allowed: tuple[ElementType, ...]

    def describe(self) -> str:
        names = [t.name for t in self.allowed]
        return "%s (%s)" % (self.name, names[0] if len(names) == 1
                            else ", ".join(names[:-1]) + " or " + names[-1])


@dataclass(frozen=True)
class TensorParam:
    """A tensor operand; its element type, fixed or a `DtypeVar`; `rank` when the signature
    fixes it; `updated` when the op updates it in place (`#[inout]`: also a result,
    `UpdatedTensor`, aliased to it)."""
    name: str
    dtype: ElementType | DtypeVar
    rank: int | None
    updated: bool = False
    kind: ClassVar[str] = "tensor"


@dataclass(frozen=True)
class AttributeParam:
    """A compile-time attribute (an entry of the custom call's `backend_config`)."""
    name: str
    type: AttrType
    kind: ClassVar[str] = "attribute"


@dataclass(frozen=True)
class AttributesParam:
    """Every attribute of the call as one dictionary (`#[attrs]`): the named attributes and any
    others the call passes by keyword."""
    name: str
    kind: ClassVar[str] = "attributes"


@dataclass(frozen=True)
class ExternalParam:
    """An `#[external]` operand: the packed bytes of descriptor `descriptor`, updated by the op
    when `mutable` (`&mut`)."""
    name: str
    mutable: bool
    descriptor: Layout
    kind: ClassVar[str] = "external"


Param = TensorParam | AttributeParam | AttributesParam | ExternalParam


@dataclass(frozen=True)
class ConstDim:
    """An output dimension of constant size."""
    size: int
    kind: ClassVar[str] = "const"


@dataclass(frozen=True)
class DimOf:
    """An output dimension: dimension `dim` of tensor parameter `param`."""
    param: str
    dim: int
    kind: ClassVar[str] = "dim_of"


@dataclass(frozen=True)
class ShapeOf:
    """Every dimension of tensor parameter `param` (the output has its shape)."""
    param: str
    kind: ClassVar[str] = "shape_of"


@dataclass(frozen=True)
class DimsOf:
    """A run of tensor parameter `param`'s dimensions, `..x.dims(start..stop)`: Python's
    `shape[start:stop]` (negative bounds from the rank, `stop` None the rank), except that a
    bound outside the rank is an error, never clamped (`bounds`)."""
    param: str
    start: int
    stop: int | None
    kind: ClassVar[str] = "dims_of"

    def bounds(self, rank: int) -> tuple[int, int] | None:
        """The dimensions `[s, e)` it takes of a rank-`rank` input, or None (out of range)."""
        def norm(v: int) -> int:
            return rank + v if v < 0 else v
        s, e = norm(self.start), rank if self.stop is None else norm(self.stop)
        return (s, e) if 0 <= s <= e <= rank else None

    def text(self) -> str:
        return "..%s.dims(%s..%s)" % (self.param, self.start or "",
                                      "" if self.stop is None else self.stop)


@dataclass(frozen=True)
class ExprDim:
    """An output dimension computed by a shape expression (`customop.shape`), with its text as
    the declaration wrote it: `(x.dim(1) + 2 * pad - k) / stride + 1`."""
    expr: shape.Expr
    text: str
    kind: ClassVar[str] = "expr"


DimRule = ConstDim | DimOf | ShapeOf | DimsOf | ExprDim


@dataclass(frozen=True)
class TensorResult:
    """A tensor output: its element type (fixed, or a `DtypeVar`: the type of the first tensor
    input it types), and one shape rule per dimension."""
    name: str
    dtype: ElementType | DtypeVar
    shape: tuple[DimRule, ...]
    kind: ClassVar[str] = "tensor"


@dataclass(frozen=True)
class OpaqueResult:
    """A descriptor returned as its packed bytes (`Opaque<T>`); `dtype` is the bytes' (ui8)."""
    name: str
    descriptor: Layout
    dtype: ElementType
    kind: ClassVar[str] = "opaque"


@dataclass(frozen=True)
class UpdatedExternal:
    """The new bytes of `&mut` external `param`, aliased to operand `operand`; `dtype` is the
    bytes' (ui8)."""
    name: str
    param: str
    operand: int
    dtype: ElementType
    kind: ClassVar[str] = "updated_external"


@dataclass(frozen=True)
class UpdatedTensor:
    """Tensor `param` updated in place (`#[inout]`): a result of its operand's type and shape,
    aliased to operand `operand`."""
    name: str
    param: str
    operand: int
    dtype: ElementType | DtypeVar
    kind: ClassVar[str] = "updated_tensor"


Result = TensorResult | OpaqueResult | UpdatedExternal | UpdatedTensor
# The results that are an operand updated (torch writes them back into the argument).
UPDATED = (UpdatedExternal, UpdatedTensor)


@dataclass(frozen=True)
class FactorDims:
    """The factor (or None: never split) of each dimension of one operand or result, by its
    index among the custom call's operands (or results)."""
    name: str
    index: int
    dims: tuple[str | None, ...]


@dataclass(frozen=True)
class PartitionRule:
    """How an op may be split across devices (`partition(...)`): its factors, and the operands
    and results that have a rule. Those not listed are replicated."""
    factors: tuple[str, ...]
    operands: tuple[FactorDims, ...]
    results: tuple[FactorDims, ...]
