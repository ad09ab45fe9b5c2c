"""Element types: the manifest's table of tensor element types (names, XLA FFI codes, numpy
names, byte sizes and kinds), written by the runtime from its own table, and numpy's (or
ml_dtypes') dtype of each."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .layout import Json, ManifestError, json_field

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ElementKind", "ElementType", "ElementTypes", "numpy_dtype", "BYTES", "PRED"]


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The numpy dtype named `name` (`float32`, `bfloat16`, `float8_e4m3fn`): numpy's, else
    the `ml_dtypes` type of that name. A TypeError names the dtype when neither has it."""
    import numpy as np

    try:
        return np.dtype(name)
    except TypeError:
        pass
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError("numpy has no dtype %r, and ml_dtypes (which defines it) is not "
                        "installed: pip install ml_dtypes" % name) from None
    t = getattr(ml_dtypes, name, None)
    if t is None:
        raise TypeError("neither numpy nor ml_dtypes has a dtype %r" % name)
    return np.dtype(t)


ElementKind = Literal["bool", "signed", "unsigned", "float", "complex"]

# The element type of packed descriptor bytes (externals, opaque results): `tensor<Nxui8>`.
BYTES = "ui8"
# The element type a bool attribute travels as (XLA FFI's PRED).
PRED = "i1"


@dataclass(frozen=True)
class ElementType:
    """A tensor element type: `name` is its MLIR spelling (`f32`, `i1`, `ui8`), as schemas
    write it; `xla_code` its `XLA_FFI_DataType`; `numpy` the numpy dtype name (`bfloat16` and
    the fp8 names are ml_dtypes'; `numpy_dtype` resolves them); `kind` one of bool, signed,
    unsigned, float, complex; `differentiable` whether a tensor of it has a derivative (Rust's
`ElementType::is_differentiable`)."""

    name: str
    xla_code: int
    numpy: str
    byte_size: int
    kind: ElementKind
    bits: int = 0
    differentiable: bool = False

    @property
    def is_packed(self) -> bool:
        """A sub-byte type (`i4`, `ui4`, `i2`, `ui2`, `f4E2M1FN`): one element a byte in
        numpy, packed in XLA's device buffers."""
        return 0 < self.bits < 8

    @property
    def is_float(self) -> bool:
        """A real floating-point type (f16, bf16, f32, f64, fp8); complex types are not."""
        return self.kind == "float"

    @property
    def numpy_dtype(self) -> np.dtype[Any]:
        """The numpy dtype: numpy's own, else ml_dtypes' (`bfloat16`, `float8_e4m3fn`,
        `float8_e5m2`), which jax and torch_xla install."""
        return numpy_dtype(self.numpy)

    @property
    def int_range(self) -> tuple[int, int] | None:
        """`(lowest, highest)` of an integer type; None for bool and floats."""
        bits = 8 * self.byte_size
        if self.kind == "signed":
            return -2 ** (bits - 1), 2 ** (bits - 1) - 1
        if self.kind == "unsigned":
            return 0, 2 ** bits - 1
        return None

    def __repr__(self) -> str:
        return "ElementType(%r)" % self.name

    @staticmethod
    def from_json(j: Json) -> ElementType:
        kind = json_field(j, "kind", "element type")
        if kind not in ("bool", "signed", "unsigned", "float", "complex"):
            raise ManifestError("element type %r has kind %r" % (j.get("name"), kind))
        return ElementType(str(json_field(j, "name", "element type")),
                           int(json_field(j, "xla_code", "element type")),
                           str(json_field(j, "numpy", "element type")),
                           int(json_field(j, "byte_size", "element type")), kind,
                           int(j.get("bits", 8 * int(json_field(j, "byte_size", "element type")))),
                           bool(json_field(j, "differentiable", "element type")))


class ElementTypes(Mapping[str, ElementType]):
    """The manifest's element-type table, by MLIR name; also looked up by XLA code or numpy name."""

    def __init__(self, types: list[ElementType]) -> None:
        self._by_name = {t.name: t for t in types}
        self._by_code = {t.xla_code: t for t in types}
        self._by_numpy = {t.numpy: t for t in types}

    def __getitem__(self, name: str) -> ElementType:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError("no element type %r (the manifest has: %s)"
                           % (name, ", ".join(self._by_name))) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def by_xla_code(self, code: int) -> ElementType | None:
        return self._by_code.get(code)

    def by_numpy(self, name: str) -> ElementType | None:
        """The element type of numpy dtype name `name` (`float32`), if there is one."""
        return self._by_numpy.get(name)

    def __repr__(self) -> str:
        return "ElementTypes(%s)" % ", ".join(self._by_name)
