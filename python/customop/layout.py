"""Descriptor layouts, typed: what `Descriptor::layout()` exports (`Layout::to_json()`), inside
the manifest's schemas and on its own. `customop.manifest` re-exports everything here; the
library's Rust code packs and unpacks values (`customop.descriptors`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["ManifestError", "PrimType", "ArrayType", "StructType", "EnumType", "EnumVariant",
           "VecType", "StringType", "FieldType", "Field", "Layout"]

Json = Any  # a value decoded by `json.loads`


class ManifestError(ValueError):
    """A manifest this package cannot read (missing or ill-typed entries)."""


def json_field(obj: Json, key: str, where: str) -> Json:
    if not isinstance(obj, dict) or key not in obj:
        raise ManifestError("%s: no `%s` in the manifest entry %.200r" % (where, key, obj))
    return obj[key]


@dataclass(frozen=True)
class PrimType:
    """A scalar field: `kind` is its Rust spelling (`bool`, `i8` .. `u64`, `f16`, `bf16`, `f32`,
    `f64`), or for the 8-bit floats their element type's (`f8E4M3FN`, ..., `f8E8M0FNU`)."""
    kind: str


@dataclass(frozen=True)
class ArrayType:
    """`[element; len]`."""
    len: int
    element: FieldType
    kind: ClassVar[str] = "array"


@dataclass(frozen=True)
class StructType:
    """A nested descriptor, stored inline."""
    layout: Layout
    kind: ClassVar[str] = "struct"


@dataclass(frozen=True)
class EnumVariant:
    name: str
    value: int


@dataclass(frozen=True)
class EnumType:
    """A fieldless enum stored as its `repr` integer (`u8`, `u16`, `u32`, `i32`)."""
    name: str
    repr: str
    variants: tuple[EnumVariant, ...]
    kind: ClassVar[str] = "enum"


@dataclass(frozen=True)
class VecType:
    """`Vec<element>`: a tail (u32 count, then the elements)."""
    element: FieldType
    kind: ClassVar[str] = "vec"


@dataclass(frozen=True)
class StringType:
    """`String`: a tail (u32 byte length, then UTF-8)."""
    kind: ClassVar[str] = "string"


FieldType = PrimType | ArrayType | StructType | EnumType | VecType | StringType


def _field_type(j: Json, where: str) -> FieldType:
    kind = json_field(j, "kind", where)
    if not isinstance(kind, str):
        raise ManifestError("%s: field type kind %r is not a name" % (where, kind))
    if kind == "array":
        return ArrayType(int(json_field(j, "len", where)), _field_type(json_field(j, "element", where), where))
    if kind == "struct":
        return StructType(Layout.from_json(json_field(j, "layout", where)))
    if kind == "enum":
        return EnumType(str(json_field(j, "name", where)), str(json_field(j, "repr", where)),
                        tuple(EnumVariant(str(v["name"]), int(v["value"]))
                              for v in json_field(j, "variants", where)))
    if kind == "vec":
        return VecType(_field_type(json_field(j, "element", where), where))
    if kind == "string":
        return StringType()
    # Any other kind is a primitive, spelled as Rust's layout spells it (`f32`, `f8E4M3FN`):
    # the library's Rust code packs it, so its list is not repeated here.
    return PrimType(kind)


@dataclass(frozen=True)
class Field:
    """A field of a layout: its offset in the payload's fixed part (None for a tail) and size
    there (0 for a tail)."""
    name: str
    offset: int | None
    size: int
    type: FieldType

    @property
    def is_tail(self) -> bool:
        return isinstance(self.type, (VecType, StringType))


@dataclass(frozen=True)
class Layout:
    """A descriptor's layout, as `Descriptor::layout()` exports it. `fingerprint` is the
    FNV-1a 64 of `canonical` (`fingerprint_hex` spells it as the manifest and annotations do);
    `packed_size` is None when the descriptor has tails."""
    name: str
    canonical: str
    fingerprint: int
    align: int
    fixed_size: int
    packed_size: int | None
    fields: tuple[Field, ...]

    @property
    def fingerprint_hex(self) -> str:
        return "0x%016x" % self.fingerprint

    @staticmethod
    def from_json(j: Json) -> Layout:
        """A layout from its JSON form (the manifest's, or `Layout::to_json()`)."""
        name = str(json_field(j, "name", "descriptor layout"))
        where = "descriptor %s" % name
        fp = json_field(j, "fingerprint", where)
        try:
            fingerprint = int(fp, 16) if isinstance(fp, str) else int(fp)
        except ValueError:
            raise ManifestError("%s: fingerprint %r is not hexadecimal" % (where, fp)) from None
        packed = json_field(j, "packed_size", where)
        fields = tuple(Field(str(json_field(f, "name", where)), json_field(f, "offset", where),
                             int(json_field(f, "size", where)),
                             _field_type(json_field(f, "type", where), "%s, field %s" % (where, f["name"])))
                       for f in json_field(j, "fields", where))
        return Layout(name, str(json_field(j, "canonical", where)), fingerprint,
                      int(json_field(j, "align", where)), int(json_field(j, "fixed_size", where)),
                      None if packed is None else int(packed), fields)
