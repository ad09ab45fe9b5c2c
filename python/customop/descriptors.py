"""Descriptors packed and unpacked by the kernel library's own Rust code: `KernelLibrary.pack`
and `unpack` call the library's `customop_descriptor_pack` and `customop_descriptor_unpack`
(the runtime's `descriptor::pack_value` and `unpack_value`), so that Python, the command line
and `#[derive(Descriptor)]` write the same bytes and refuse the same values, by one definition.
The wire format itself is specified in the book ("Descriptors"), for other languages.

Values: bool -> bool; integers -> int (in the field's range); floats (f16, bf16, f32, f64, the
eight 8-bit types) -> float (or int), rounded to nearest, ties to even, a finite value beyond
the type's range (and an infinity where the type has none) refused; arrays and `Vec` -> list
(or a numpy array); nested descriptors -> dict; enums -> the variant's name; `String` -> str.
A `[u8; N]` or `[i8; N]` (C's `char[N]`) also takes `bytes`, `bytearray` or `str` (its UTF-8
bytes) of exactly N bytes. Unpacked floats are Python floats (NaN and infinities too).
"""

from __future__ import annotations

import ctypes
import json
import math
import numbers
from typing import Any

__all__ = ["pack", "unpack", "PackError", "DescriptorError", "to_json", "from_json"]


class DescriptorError(ValueError):
    """Bytes that are not a packed descriptor of the layout (its message names the descriptor,
    the field and the kind, as Rust's `DescriptorError`)."""


class PackError(DescriptorError, TypeError):
    """A Python value that does not fit the layout: a missing or unknown field, a value of the
    wrong type or out of range. The message names the descriptor and the field."""


def _plain(value: Any) -> Any:
    """`value` as JSON can carry it: numpy scalars and arrays as Python's, bytes as hex, floats
    JSON has no literal for as the strings `inf`, `-inf`, `nan` (what Rust reads)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "tolist") and not isinstance(value, numbers.Number):
        return _plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if type(value).__name__ == "bool_":
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        x = float(value)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    return value


def to_json(value: Any) -> str:
    """`value` (a dict of field name -> value) as the JSON text Rust's packer reads."""
    try:
        return json.dumps(_plain(value), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise PackError("a descriptor value must be dicts, lists, numbers, bools, strings and "
                        "bytes: %s" % e) from None


def from_json(text: str, layout: Any) -> dict[str, Any]:
    """The value Rust's unpacker wrote as JSON `text`, with floats JSON cannot write (written as
    `"inf"`, `"-inf"`, `"nan"`) back as Python floats where `layout` (a `manifest.Layout`) has
    a float field."""
    from .layout import ArrayType, PrimType, StructType, VecType

    def back(t: Any, v: Any) -> Any:
        if isinstance(t, (ArrayType, VecType)):
            return [back(t.element, x) for x in v]
        if isinstance(t, StructType):
            return fields(t.layout, v)
        # A number field written as a string: a float JSON has no literal for.
        return float(v) if isinstance(t, PrimType) and isinstance(v, str) else v

    def fields(layout: Any, v: dict[str, Any]) -> dict[str, Any]:
        return {f.name: back(f.type, v[f.name]) for f in layout.fields}

    return fields(layout, json.loads(text))


def _call(fn: Any, name: str, data: bytes, cls: type[Exception]) -> bytes:
    """Calls a `customop_descriptor_*` entry point of a library: its output bytes, or `cls`
    with its message."""
    message = ctypes.create_string_buffer(2048)
    written = ctypes.c_size_t(0)
    cap = 4096
    while True:
        out = ctypes.create_string_buffer(cap)
        code = fn(name.encode("utf-8"), data, len(data), out, cap, ctypes.byref(written),
                  message, len(message))
        if code == 0:
            return out.raw[:written.value]
        if code == 2 and written.value > cap:
            cap = written.value
            continue
        raise cls(message.value.decode("utf-8", "replace"))


def _entry(cdll: Any, symbol: str) -> Any:
    fn = getattr(cdll, symbol, None)
    if fn is None:
        raise DescriptorError("the library has no `%s`: it was built with a customop older than "
                              "this Python package; rebuild it" % symbol)
    fn.restype = ctypes.c_int32
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                   ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p,
                   ctypes.c_size_t]
    return fn


def pack(cdll: Any, name: str, value: Any) -> bytes:
    """Packs `value` as descriptor `name` of the library loaded as `cdll` (its Rust code). A
    missing or unknown field, or a value that does not fit its field, raises `PackError`
    naming both."""
    return _call(_entry(cdll, "customop_descriptor_pack"), name,
                 to_json(value).encode("utf-8"), PackError)


def unpack(cdll: Any, name: str, data: bytes, layout: Any) -> dict[str, Any]:
    """Validates `data` as a packing of descriptor `name` (of `layout`) and returns the value."""
    text = _call(_entry(cdll, "customop_descriptor_unpack"), name, bytes(data), DescriptorError)
    return from_json(text.decode("utf-8"), layout)
