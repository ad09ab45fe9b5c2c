"""Wire format v1's layout rules, from the book's specification: the header's constants, each
scalar's size, where fields sit (size, alignment, offsets), a layout's canonical string and its
FNV-1a 64 fingerprint, and `check_layout`, which recomputes them all for an exported layout."""

from __future__ import annotations

from typing import Any

from .layout import ArrayType, EnumType, FieldType, Layout, PrimType, StringType, StructType, VecType

__all__ = ["MAGIC", "FORMAT_VERSION", "HEADER_SIZE", "DescriptorError", "as_layout", "fingerprint",
           "size_align", "struct_fixed", "canonical", "layout_canonical", "check_layout"]

MAGIC = b"CUOP"
FORMAT_VERSION = 1
HEADER_SIZE = 24

# The wire format's scalar field types (the spec's, spelled as Rust does): struct code, size.
_PRIMS = {
    "bool": ("B", 1),
    "i8": ("b", 1), "i16": ("h", 2), "i32": ("i", 4), "i64": ("q", 8),
    "u8": ("B", 1), "u16": ("H", 2), "u32": ("I", 4), "u64": ("Q", 8),
    "f16": ("e", 2), "bf16": ("H", 2), "f32": ("f", 4), "f64": ("d", 8),
    # The 8-bit floats, spelled as their element types' MLIR names: one byte, their bits.
    "f8E4M3FN": ("B", 1), "f8E5M2": ("B", 1), "f8E4M3": ("B", 1), "f8E3M4": ("B", 1),
    "f8E4M3FNUZ": ("B", 1), "f8E5M2FNUZ": ("B", 1), "f8E4M3B11FNUZ": ("B", 1),
    "f8E8M0FNU": ("B", 1),
}


def as_layout(layout: Layout | dict[str, Any]) -> Layout:
    """`layout` as a `Layout` (parsed when given as its JSON form)."""
    return layout if isinstance(layout, Layout) else Layout.from_json(layout)


class DescriptorError(ValueError):
    """Bytes that are not a valid packing of the layout."""


def fingerprint(canonical: str) -> int:
    """FNV-1a 64 of the canonical layout string's UTF-8 bytes."""
    h = 0xCBF29CE484222325
    for b in canonical.encode("utf-8"):
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def _align_up(at: int, align: int) -> int:
    return (at + align - 1) // align * align


def _is_tail(t: FieldType) -> bool:
    return isinstance(t, (VecType, StringType))


def size_align(t: FieldType) -> tuple[int, int]:
    """(size, alignment) of a fixed-layout type."""
    if isinstance(t, PrimType):
        s = _PRIMS[t.kind][1]
        return s, s
    if isinstance(t, EnumType):
        s = _PRIMS[t.repr][1]
        return s, s
    if isinstance(t, ArrayType):
        s, a = size_align(t.element)
        return s * t.len, a
    if isinstance(t, StructType):
        return struct_fixed(t.layout)[1:]
    raise DescriptorError("%s is not a fixed-layout type" % t.kind)


def struct_fixed(layout: Layout) -> tuple[dict[str, int], int, int]:
    """(offsets of fixed fields by name, fixed size rounded up, alignment)."""
    offsets, at, max_align = {}, 0, 1
    for f in layout.fields:
        if _is_tail(f.type):
            continue
        s, a = size_align(f.type)
        max_align = max(max_align, a)
        at = _align_up(at, a)
        offsets[f.name] = at
        at += s
    return offsets, _align_up(at, max_align), max_align


def canonical(t: FieldType) -> str:
    """The canonical spelling of a type (for a struct: of its layout)."""
    if isinstance(t, PrimType):
        return t.kind
    if isinstance(t, ArrayType):
        return "[%s;%d]" % (canonical(t.element), t.len)
    if isinstance(t, StructType):
        return layout_canonical(t.layout)
    if isinstance(t, EnumType):
        vs = ",".join("%s=%d" % (v.name, v.value) for v in t.variants)
        return "%s(%s){%s}" % (t.name, t.repr, vs)
    if isinstance(t, VecType):
        return "Vec<%s>" % canonical(t.element)
    return "String"


def layout_canonical(layout: Layout) -> str:
    fields = ",".join("%s:%s" % (f.name, canonical(f.type)) for f in layout.fields)
    return "%s{%s}" % (layout.name, fields)


def check_layout(layout: Layout | dict[str, Any]) -> int:
    """Recomputes the canonical string, fingerprint and offsets from the spec and checks that
    the exported layout agrees. Returns the fingerprint."""
    layout = as_layout(layout)
    c = layout_canonical(layout)
    if c != layout.canonical:
        raise DescriptorError("canonical string %r, layout says %r" % (c, layout.canonical))
    fp = fingerprint(c)
    if fp != layout.fingerprint:
        raise DescriptorError("fingerprint 0x%016x, layout says %s"
                              % (fp, layout.fingerprint_hex))
    offsets, size, align = struct_fixed(layout)
    if size != layout.fixed_size or align != layout.align:
        raise DescriptorError("fixed size/align %d/%d, layout says %d/%d"
                              % (size, align, layout.fixed_size, layout.align))
    for f in layout.fields:
        if offsets.get(f.name) != f.offset:
            raise DescriptorError("field %s at %r, layout says %r"
                                  % (f.name, offsets.get(f.name), f.offset))
    return fp
