"""Wire format v1 of customop descriptors, written from the book's specification.

This module does not call Rust. Given a descriptor layout (a `manifest.Layout`, or the JSON
that `Descriptor::layout().to_json()` and the manifest export), it packs Python values into
the exact bytes Rust's `Descriptor::pack` writes, and unpacks and validates them as
`Descriptor::unpack` does.

Values: bool -> bool, integers -> int, floats (f16, bf16, f32, f64) -> float, rounded to the
field's type to nearest, ties to even (a finite value beyond its range is a `PackError`), arrays and Vec -> list, nested
descriptors -> dict, enums -> the variant's name (str), String -> str. A `[u8; N]` or `[i8; N]`
array (C's `char[N]`) also takes `bytes`, `bytearray` or `str` (its UTF-8 bytes) of exactly N
bytes.

The 8-bit floats (`f8E4M3FN`, ..., `f8E8M0FNU`) -> float, rounded by ml_dtypes, which Rust's
`from_f64` equals bit for bit: beyond the largest finite value, infinity where the type has one
and NaN where it has none, as ml_dtypes gives (no error). They need ml_dtypes (jax installs
it); without it, packing or unpacking one raises `MissingMlDtypes` naming the field, and every
other field works as before.
"""

from __future__ import annotations

import math
import numbers
import struct
from typing import Any

from .layout import (ArrayType, EnumType, FieldType, Layout, PrimType, StringType, StructType,
                     VecType)
# The layout rules, re-exported: `descriptors.check_layout`, `descriptors.fingerprint`.
from .wire import (_PRIMS, FORMAT_VERSION, HEADER_SIZE, MAGIC, DescriptorError, _align_up,
                   _is_tail, as_layout, canonical, check_layout, fingerprint, layout_canonical,
                   size_align, struct_fixed)

__all__ = ["pack", "unpack", "PackError", "DescriptorError", "bf16_bits", "bf16_value",
           "F8_TYPES", "MissingMlDtypes", "f8_bits", "f8_value", "check_layout", "fingerprint",
           "canonical", "layout_canonical", "size_align",
           "struct_fixed", "as_layout", "MAGIC", "FORMAT_VERSION", "HEADER_SIZE"]


def bf16_bits(x: float) -> int:
    """The bits of bfloat16 nearest to `x` (ties to even; NaN -> 0x7FC0 with `x`'s sign). An
    OverflowError when finite `x` rounds beyond the largest bfloat16, as `struct` raises for
    f16 and f32."""
    sign = 0x8000 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | 0x7FC0
    a = abs(x)
    if a == math.inf:
        return sign | 0x7F80
    if a == 0.0:
        return sign
    _, e = math.frexp(a)                   # 2**(e-1) <= a < 2**e
    p = e - 1
    ulp = max(p, -126) - 7                 # bfloat16 has 7 fraction bits, min exponent -126
    n = round(math.ldexp(a, -ulp))         # exact scaling; round() ties to even
    # Normal numbers: n in [128, 256] (256 carries into the next binade, which the
    # contiguous encoding gets right); subnormals: n in [0, 128].
    code = ((p + 127) << 7) + n - 128 if p >= -126 else n
    if code >= 0x7F80:
        raise OverflowError("%r is beyond the largest bfloat16" % x)
    return sign | code


def bf16_value(bits: int) -> float:
    """The value of bfloat16 `bits` (exact)."""
    return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]


# The 8-bit float field types (their element types' MLIR names) and ml_dtypes' names for them.
F8_TYPES = {
    "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2", "f8E4M3": "float8_e4m3",
    "f8E3M4": "float8_e3m4", "f8E4M3FNUZ": "float8_e4m3fnuz", "f8E5M2FNUZ": "float8_e5m2fnuz",
    "f8E4M3B11FNUZ": "float8_e4m3b11fnuz", "f8E8M0FNU": "float8_e8m0fnu",
}


class MissingMlDtypes(ImportError):
    """An 8-bit float field packed or unpacked where ml_dtypes (or its type for the field) cannot
    be imported: customop rounds and reads those values with ml_dtypes, so that they are Rust's
    bit for bit. The message names the descriptor, the field and its type."""


def _f8_dtype(kind: str) -> Any:
    """ml_dtypes' type for the 8-bit float field type `kind`, imported on first use."""
    try:
        import ml_dtypes
    except ImportError:
        raise MissingMlDtypes("%s values are packed and read with ml_dtypes (Rust's rounding, "
                              "bit for bit), which cannot be imported: pip install ml_dtypes"
                              % kind) from None
    t = getattr(ml_dtypes, F8_TYPES[kind], None)
    if t is None:
        raise MissingMlDtypes("%s values are packed and read with ml_dtypes.%s, which ml_dtypes "
                              "%s lacks: pip install 'ml_dtypes>=0.5'"
                              % (kind, F8_TYPES[kind], ml_dtypes.__version__))
    return t


def f8_bits(kind: str, x: float) -> int:
    """The bits of the 8-bit float type `kind` (`f8E4M3FN`, ...) nearest to `x`, as ml_dtypes
    rounds a float64 (and Rust's `F8E4M3FN::from_f64`): ties to even; beyond the largest finite
    value, infinity or NaN as the type has. `MissingMlDtypes` without ml_dtypes."""
    import numpy as np

    t = _f8_dtype(kind)
    # Beyond the range is a documented result, not an accident: no overflow warning.
    with np.errstate(over="ignore", invalid="ignore"):
        return int(np.array(x, np.float64).astype(t).view(np.uint8))


def f8_value(kind: str, bits: int) -> float:
    """The value of the 8-bit float `bits` of type `kind` (exact; NaN and infinities too)."""
    import numpy as np

    return float(np.array(bits & 0xFF, np.uint8).view(_f8_dtype(kind)).astype(np.float64))


# --- packing --------------------------------------------------------------------------------

class PackError(DescriptorError, TypeError):
    """A Python value that does not fit the layout: a missing or unknown field, a value of the
    wrong type or out of range. The message names the descriptor and the field."""


def _fields(layout: Layout, value: Any, root: str, path: str) -> dict[str, Any]:
    """The dict `value` checked against `layout`'s fields (at `path` inside descriptor `root`):
    every field given, no other key."""
    if not isinstance(value, dict):
        raise PackError("%s: expected a dict of the fields of `%s`, got %s"
                        % (_where(root, path), layout.name, type(value).__name__))
    known = [f.name for f in layout.fields]
    for f in known:
        if f not in value:
            raise PackError("descriptor `%s` has no value for field `%s`" % (root, _join(path, f)))
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise PackError("descriptor `%s` has no field `%s` (%s: %s)"
                        % (root, _join(path, unknown[0]),
                           "its fields" if not path else "fields of `%s`" % path, ", ".join(known)))
    return value


def _join(path: str, name: str) -> str:
    return "%s.%s" % (path, name) if path else name


def _where(root: str, path: str) -> str:
    return "descriptor `%s`, field `%s`" % (root, path) if path else "descriptor `%s`" % root


def _spelled(t: FieldType) -> str:
    """A type as Rust spells it (`[i16; 3]`; a struct or enum by its name)."""
    if isinstance(t, ArrayType):
        return "[%s; %d]" % (_spelled(t.element), t.len)
    if isinstance(t, StructType):
        return t.layout.name
    if isinstance(t, EnumType):
        return t.name
    return canonical(t)


def _byte_array(t: ArrayType, value: bytes | bytearray | str, root: str, path: str) -> list[int]:
    """A `[u8; N]` or `[i8; N]` (C `char[N]`) field given as `bytes`/`bytearray`, or as `str`
    (its UTF-8 bytes): exactly N bytes, as the elements' values."""
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    if len(data) != t.len:
        hint = ""
        if len(data) < t.len:
            hint = "; pad it, e.g. `%r.ljust(%d, b\"\\0\")`" % (data, t.len)
        raise PackError("%s: a %s takes exactly %d bytes, got %d%s"
                        % (_where(root, path), _spelled(t), t.len, len(data), hint))
    if t.element == PrimType("i8"):
        return [b - 256 if b > 127 else b for b in data]
    return list(data)


def _write(t: FieldType, value: Any, buf: bytearray, at: int, root: str, path: str) -> None:
    if isinstance(t, PrimType) and t.kind == "bool":
        if not isinstance(value, bool):
            raise PackError("%s: expected bool, got %r" % (_where(root, path), value))
        buf[at] = 1 if value else 0
    elif isinstance(t, PrimType):
        k = t.kind
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise PackError("%s: expected a number (%s), got %r" % (_where(root, path), k, value))
        if k[0] in "iu":
            if not isinstance(value, numbers.Integral):
                raise PackError("%s: expected an integer (%s), got %r"
                                % (_where(root, path), k, value))
            value = int(value)
        else:
            value = float(value)
        if k in F8_TYPES:
            try:
                value = f8_bits(k, value)
            except MissingMlDtypes as e:
                raise MissingMlDtypes("%s: %s" % (_where(root, path), e)) from None
        try:
            if k == "bf16":
                value = bf16_bits(value)
            struct.pack_into("<" + _PRIMS[k][0], buf, at, value)
        except (struct.error, OverflowError) as e:
            raise PackError("%s: %r does not fit %s (%s)"
                            % (_where(root, path), value, k, e)) from None
    elif isinstance(t, EnumType):
        by_name = {v.name: v.value for v in t.variants}
        if value not in by_name:
            raise PackError("%s: %r is not a variant of %s (its variants: %s)"
                            % (_where(root, path), value, t.name, ", ".join(by_name)))
        struct.pack_into("<" + _PRIMS[t.repr][0], buf, at, by_name[value])
    elif isinstance(t, ArrayType):
        if t.element in (PrimType("u8"), PrimType("i8")) and isinstance(
                value, (bytes, bytearray, str)):
            value = _byte_array(t, value, root, path)
        elif isinstance(value, (str, bytes, bytearray)):
            raise PackError("%s: a %s takes a list, got %s"
                            % (_where(root, path), _spelled(t), type(value).__name__))
        s, _ = size_align(t.element)
        if len(value) != t.len:
            raise PackError("%s: expected %d elements, got %d"
                            % (_where(root, path), t.len, len(value)))
        for i, v in enumerate(value):
            _write(t.element, v, buf, at + i * s, root, "%s[%d]" % (path, i))
    elif isinstance(t, StructType):
        _write_fixed(t.layout, value, buf, at, root, path)
    else:
        raise DescriptorError("%s cannot be written in the fixed part" % t.kind)


def _write_fixed(layout: Layout, value: Any, buf: bytearray, at: int, root: str,
                 path: str = "") -> None:
    value = _fields(layout, value, root, path)
    offsets, _, _ = struct_fixed(layout)
    for f in layout.fields:
        if not _is_tail(f.type):
            _write(f.type, value[f.name], buf, at + offsets[f.name], root, _join(path, f.name))


def pack(layout: Layout | dict[str, Any], value: dict[str, Any]) -> bytes:
    """Packs `value` (a dict of field name -> value) as wire format v1. A missing or unknown
    field, or a value that does not fit its field, raises `PackError` naming both."""
    layout = as_layout(layout)
    fp = check_layout(layout)
    _, fixed, _ = struct_fixed(layout)
    payload = bytearray(fixed)
    root = layout.name
    _write_fixed(layout, value, payload, 0, root)
    for f in layout.fields:
        t = f.type
        if not _is_tail(t):
            continue
        v = value[f.name]
        payload.extend(b"\0" * (_align_up(len(payload), 4) - len(payload)))
        if isinstance(t, StringType):
            if not isinstance(v, str):
                raise PackError("%s: expected str, got %r" % (_where(root, f.name), v))
            data = v.encode("utf-8")
            payload.extend(struct.pack("<I", len(data)))
            payload.extend(data)
        else:
            assert isinstance(t, VecType)
            payload.extend(struct.pack("<I", len(v)))
            s, a = size_align(t.element)
            payload.extend(b"\0" * (_align_up(len(payload), a) - len(payload)))
            start = len(payload)
            payload.extend(b"\0" * (s * len(v)))
            for i, x in enumerate(v):
                _write(t.element, x, payload, start + i * s, root, "%s[%d]" % (f.name, i))
    header = MAGIC + struct.pack("<HHIIQ", FORMAT_VERSION, 0, len(payload), 0, fp)
    return bytes(header) + bytes(payload)


# --- unpacking ------------------------------------------------------------------------------

def _read(t: FieldType, data: bytes, at: int, path: str) -> Any:
    if isinstance(t, PrimType) and t.kind == "bool":
        b = data[at]
        if b not in (0, 1):
            raise DescriptorError("%s: invalid bool byte 0x%02x" % (path, b))
        return b == 1
    if isinstance(t, PrimType):
        v = struct.unpack_from("<" + _PRIMS[t.kind][0], data, at)[0]
        if t.kind in F8_TYPES:
            try:
                return f8_value(t.kind, v)
            except MissingMlDtypes as e:
                raise MissingMlDtypes("field `%s`: %s" % (path, e)) from None
        return bf16_value(v) if t.kind == "bf16" else v
    if isinstance(t, EnumType):
        v = struct.unpack_from("<" + _PRIMS[t.repr][0], data, at)[0]
        for var in t.variants:
            if var.value == v:
                return var.name
        raise DescriptorError("%s: %d is not a discriminant of enum %s" % (path, v, t.name))
    if isinstance(t, ArrayType):
        s, _ = size_align(t.element)
        return [_read(t.element, data, at + i * s, "%s[%d]" % (path, i)) for i in range(t.len)]
    if isinstance(t, StructType):
        return _read_fixed(t.layout, data, at, path + ".")
    raise DescriptorError("%s cannot be read from the fixed part" % t.kind)


def _read_fixed(layout: Layout, data: bytes, at: int, prefix: str = "") -> dict[str, Any]:
    offsets, fixed, _ = struct_fixed(layout)
    out: dict[str, Any] = {}
    used: set[int] = set()
    for f in layout.fields:
        if _is_tail(f.type):
            continue
        off = at + offsets[f.name]
        out[f.name] = _read(f.type, data, off, prefix + f.name)
        used.update(range(off, off + size_align(f.type)[0]))
    if any(data[i] != 0 for i in range(at, at + fixed) if i not in used):
        raise DescriptorError("%snonzero padding byte" % prefix)
    return out


def unpack(layout: Layout | dict[str, Any], data: bytes) -> dict[str, Any]:
    """Validates `data` as a packing of `layout` and returns the value as a dict."""
    layout = as_layout(layout)
    fp = check_layout(layout)
    data = bytes(data)
    if len(data) < HEADER_SIZE:
        raise DescriptorError("too short: %d bytes" % len(data))
    magic = data[:4]
    version, flags, plen, reserved, found = struct.unpack_from("<HHIIQ", data, 4)
    if magic != MAGIC:
        raise DescriptorError("bad magic %r" % magic)
    if version != FORMAT_VERSION:
        raise DescriptorError("unsupported format version %d" % version)
    if flags or reserved:
        raise DescriptorError("reserved header fields must be zero")
    if found != fp:
        raise DescriptorError("fingerprint mismatch: expected 0x%016x, found 0x%016x" % (fp, found))
    payload = data[HEADER_SIZE:]
    if plen != len(payload):
        raise DescriptorError("payload length %d, %d bytes follow" % (plen, len(payload)))
    _, fixed, _ = struct_fixed(layout)
    if len(payload) < fixed:
        raise DescriptorError("too short for the fixed part")
    out = _read_fixed(layout, payload, 0)
    at = fixed
    for f in layout.fields:
        t = f.type
        if not _is_tail(t):
            continue
        count_at = _align_up(at, 4)
        if len(payload) < count_at + 4 or any(payload[at:count_at]):
            raise DescriptorError("%s: bad tail header" % f.name)
        (n,) = struct.unpack_from("<I", payload, count_at)
        at = count_at + 4
        if isinstance(t, StringType):
            if n > len(payload) - at:
                raise DescriptorError("%s: tail length %d out of range" % (f.name, n))
            try:
                out[f.name] = payload[at:at + n].decode("utf-8")
            except UnicodeDecodeError as e:
                raise DescriptorError("%s: invalid UTF-8" % f.name) from e
            at += n
        else:
            assert isinstance(t, VecType)
            s, a = size_align(t.element)
            start = _align_up(at, a)
            if start > len(payload) or any(payload[at:start]):
                raise DescriptorError("%s: bad tail padding" % f.name)
            if n * max(s, 1) > len(payload) - start:
                raise DescriptorError("%s: tail length %d out of range" % (f.name, n))
            out[f.name] = [_read(t.element, payload, start + i * s, "%s[%d]" % (f.name, i))
                           for i in range(n)]
            at = start + n * s
    if at != len(payload):
        raise DescriptorError("too long: %d bytes left over" % (len(payload) - at))
    return out
