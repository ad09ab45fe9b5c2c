"""What every front end reads from an op's schema (`manifest.OpSchema`): result shapes from
the shape rules, attribute values checked against their types, and attributes as MLIR text.
No jax or torch here; element types come from the manifest's table, not from this module."""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from .manifest import (AttributeParam, ConstDim, DimOf, DimsOf, DtypeVar, ElementType, ExprDim,
                       OpaqueResult, OpSchema, ShapeOf, TensorParam, TensorResult)
from .shape import Dim, Env, Lit, ShapeExprError, as_int, eval_size


class SchemaError(TypeError):
    """A call that does not fit the op's schema: wrong operand count or shape, attribute type
    or value."""


def operand_names(schema: OpSchema) -> list[str]:
    """The names of the op's operands (tensors and externals), in declaration order."""
    return [p.name for p in schema.operands]


def attribute_params(schema: OpSchema) -> list[AttributeParam]:
    """The op's attribute parameters, in declaration order."""
    return list(schema.attributes)


class ResultSpec(NamedTuple):
    """One result of a call: `kind` is "tensor", "opaque", "updated_external" or
    "updated_tensor" (the result's kind), its shape, and its element type."""
    kind: str
    shape: tuple[int, ...]
    dtype: ElementType


def resolve_dtypes(schema: OpSchema,
                   dtypes: Mapping[str, ElementType | None]) -> dict[str, ElementType]:
    """The element type of each of a generic op's type parameters, from its operands' element
    types by name (`None`: no customop element type): each tensor a parameter types must be one
    of its allowed types, and all the same. A mismatch raises `SchemaError` naming the allowed
    types."""
    chosen: dict[str, tuple[str, ElementType]] = {}
    for p in schema.params:
        if not isinstance(p, TensorParam) or not isinstance(p.dtype, DtypeVar):
            continue
        var = p.dtype
        got = dtypes.get(p.name)
        if got is None or got not in var.allowed:
            raise SchemaError("%s: parameter `%s` takes a tensor of %s, got %s"
                              % (schema.name, p.name, var.describe(),
                                 "no element type" if got is None else got.name))
        first = chosen.setdefault(var.name, (p.name, got))
        if first[1] != got:
            raise SchemaError("%s: `%s` is %s and `%s` is %s, but both are `%s`: one type per call"
                              % (schema.name, first[0], first[1].name, p.name, got.name, var.name))
    return {v: t for v, (_, t) in chosen.items()}


def result_specs(schema: OpSchema, shapes: Mapping[str, Sequence[int]],
                 attrs: Mapping[str, Any] | None = None,
                 dtypes: Mapping[str, ElementType | None] | None = None) -> list[ResultSpec]:
    """The shape and element type of each result, in the schema's order, given the operands'
    shapes and the attribute values by name: tensors from their shape rules (evaluated as Rust
    evaluates them), opaque results as `ui8[packed_size]`, updated externals as their operand's
    shape. A rule with no value (a dimension the operand does not have, an overflow, a division
    by zero, a size below zero) raises `SchemaError` naming the op, the output and the values.
    A generic op's outputs take their type parameter's type from the operands' element types
    (`dtypes`, by name; see `resolve_dtypes`)."""
    generic = any(isinstance(p, TensorParam) and isinstance(p.dtype, DtypeVar)
                  for p in schema.params)
    if generic and dtypes is None:
        raise SchemaError("%s is generic over its element types: its result types need the "
                          "operands' (dtypes=...)" % schema.name)
    var_types = resolve_dtypes(schema, dtypes) if generic and dtypes is not None else {}
    env = Env(lambda p: tuple(shapes[p]) if p in shapes else None, dict(attrs or {}))
    out = []
    for r in schema.results:
        if isinstance(r, TensorResult):
            dims: list[int] = []
            for i, rule in enumerate(r.shape):
                if isinstance(rule, ShapeOf):
                    dims.extend(shapes[rule.param])
                    continue
                if isinstance(rule, DimsOf):
                    of = tuple(shapes[rule.param])
                    b = rule.bounds(len(of))
                    if b is None:
                        raise SchemaError("%s: output `%s`: `%s` of a rank-%d `%s` has no value "
                                          "(`%s` is %s)" % (schema.name, r.name, rule.text(),
                                                            len(of), rule.param, rule.param,
                                                            list(of)))
                    dims.extend(of[b[0]:b[1]])
                    continue
                expr = (Lit(rule.size) if isinstance(rule, ConstDim)
                        else Dim(rule.param, rule.dim) if isinstance(rule, DimOf) else rule.expr)
                try:
                    dims.append(eval_size(expr, env))
                except ShapeExprError as e:
                    # An expression as the declaration wrote it (the manifest's text).
                    text = rule.text if isinstance(rule, ExprDim) else expr.text()
                    raise SchemaError(
                        "%s: output `%s`: dimension %d, `%s`: %s; the operands' shapes are %s%s"
                        % (schema.name, r.name, i, text, e,
                           ", ".join("%s %s" % (n, list(s)) for n, s in shapes.items()),
                           "".join("; %s = %d" % (n, as_int(v)) for n, v in sorted(env.attrs.items())
                                   if as_int(v) is not None))) from None
            dtype = var_types[r.dtype.name] if isinstance(r.dtype, DtypeVar) else r.dtype
            out.append(ResultSpec(r.kind, tuple(dims), dtype))
        elif isinstance(r, OpaqueResult):
            size = r.descriptor.packed_size
            if size is None:
                raise SchemaError("%s: its result descriptor %s has tails, so no fixed size"
                                  % (schema.name, r.descriptor.name))
            out.append(ResultSpec(r.kind, (size,), r.dtype))
        else:
            # An updated external or tensor: its operand's shape (and type).
            dtype = var_types[r.dtype.name] if isinstance(r.dtype, DtypeVar) else r.dtype
            out.append(ResultSpec(r.kind, tuple(shapes[r.param]), dtype))
    return out


def _float_text(value: float, dtype: ElementType) -> str:
    v = float(value)
    if dtype.byte_size == 4:
        if math.isfinite(v):
            return "%.9e" % v
        return "0x%08X" % struct.unpack("<I", struct.pack("<f", v))[0]
    if math.isfinite(v):
        return "%.17e" % v
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", v))[0]


def _string_text(data: bytes) -> str:
    out = ['"']
    for b in data:
        c = chr(b)
        if c in '"\\' or b < 0x20 or b >= 0x7F:
            out.append("\\%02X" % b)
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def attr_bytes(schema: OpSchema, param: AttributeParam, value: Any) -> bytes:
    """The bytes of a `str` or descriptor attribute. A descriptor attribute's value is its
    packed bytes (`bytes`), or a `str` of them one character per byte (latin-1), which is how
    a `str` schema argument carries them through torch."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        if param.type.kind == "str":
            return value.encode("utf-8")
        try:
            return value.encode("latin-1")
        except UnicodeEncodeError:
            raise SchemaError("%s: attribute `%s` is not a descriptor's packed bytes, one "
                              "character per byte (lib.pack_attr)"
                              % (schema.name, param.name)) from None
    raise SchemaError("%s: attribute `%s` takes %s, got %s"
                      % (schema.name, param.name,
                         "a str" if param.type.descriptor is None else
                         "the packed bytes of descriptor " + param.type.descriptor.name,
                         type(value).__name__))


def check_attrs(schema: OpSchema,
                attrs: Mapping[str, Any]) -> list[tuple[AttributeParam, Any]]:
    """Checks that `attrs` (a dict) gives exactly the op's attributes (at least them, for an op
    that takes its attributes as a dictionary: `extra_attrs` has the others); returns them in
    declaration order as `(param, value)` pairs."""
    params = schema.attributes
    names = [p.name for p in params]
    unknown = sorted(set(attrs) - set(names))
    if unknown and schema.dictionary is None:
        raise SchemaError("%s has no attribute %s (its attributes: %s)"
                          % (schema.name, ", ".join(unknown), ", ".join(names) or "none"))
    missing = [n for n in names if n not in attrs]
    if missing:
        raise SchemaError("%s: missing attribute %s" % (schema.name, ", ".join(missing)))
    return [(p, attrs[p.name]) for p in params]


def refuse_extra_attrs(schema: OpSchema, attrs: Mapping[str, Any], where: str) -> None:
    """Raises `SchemaError` if `attrs` has attributes the op does not name (allowed only for an
    op with an `#[attrs]` dictionary, and only where the call goes through `jax.ffi.ffi_call`
    or the Rust lowering)."""
    if schema.dictionary is None:
        return
    extra = sorted(set(attrs) - {p.name for p in schema.attributes})
    if extra:
        raise SchemaError("%s: %s carries only the op's named attributes; %s would go to its "
                          "`#[attrs] %s` dictionary (call it through JAX or the Rust lowering)"
                          % (schema.name, where, ", ".join(extra), schema.dictionary.name))


class _AttrDict(dict):  # type: ignore[type-arg]
    """A nested dictionary attribute: a `dict` (which jax writes as an MLIR dictionary) that
    hashes by its items, as the parameters of a jaxpr equation must; never mutated."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))


def extra_attrs(schema: OpSchema, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of a call that the op does not name, for an op that takes every
    attribute as a dictionary (`#[attrs]`), as `jax.ffi.ffi_call` passes them on: a Python
    `int` is an i64 scalar, a `float` an f64, a `bool` a pred, a `str` a string, a numpy scalar
    its own type, a 1-D numpy array or a list of numbers an array (i64 or f64 for a list), a
    `dict` a nested dictionary (of scalars, strings and dictionaries). Anything else is a
    `SchemaError` naming the attribute."""
    import numpy as np

    named = {p.name for p in schema.attributes}

    def value(name: str, v: Any, nested: bool) -> Any:
        what = "%s: attribute `%s`" % (schema.name, name)
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, int):
            if not -2**63 <= v < 2**63:
                raise SchemaError("%s: %d does not fit an i64" % (what, v))
            return np.int64(v)
        if isinstance(v, float):
            return np.float64(v)
        if isinstance(v, np.generic) and v.dtype.kind in "iuf":
            return v
        if isinstance(v, str):
            return v
        if isinstance(v, dict):
            if not all(isinstance(k, str) and k for k in v):
                raise SchemaError("%s: a dictionary's keys are non-empty strings" % what)
            return _AttrDict((k, value("%s.%s" % (name, k), x, True)) for k, x in v.items())
        if not nested and isinstance(v, (list, tuple, np.ndarray)):
            a = np.asarray(v)
            if a.dtype.kind in "iu" and isinstance(v, (list, tuple)):
                a = a.astype(np.int64)
            elif a.dtype.kind == "f" and isinstance(v, (list, tuple)):
                a = a.astype(np.float64)
            if a.ndim != 1 or a.dtype.kind not in "iuf":
                raise SchemaError("%s: an array attribute is 1-D, of integers or floats; got %s"
                                  % (what, a.dtype if a.ndim == 1 else "%d-D" % a.ndim))
            return a
        raise SchemaError("%s: %s cannot be an attribute (bool, int, float, str, a 1-D array or "
                          "list of numbers, or a dict%s)"
                          % (what, type(v).__name__, " of those" if not nested
                             else " of scalars and strings"))

    return {k: value(k, v, False) for k, v in attrs.items() if k not in named}


def _scalar(schema: OpSchema, param: AttributeParam, dtype: ElementType,
            value: Any) -> int | float:
    name = "%s: attribute `%s`" % (schema.name, param.name)
    if dtype.is_float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SchemaError("%s takes a float, got %r" % (name, value))
        return float(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError("%s takes an int, got %r" % (name, value))
    bounds = dtype.int_range
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise SchemaError("%s is %s: %d is out of range %d..%d"
                          % (name, dtype.name, value, bounds[0], bounds[1]))
    return value


class AttrValue(NamedTuple):
    """One attribute value checked against its type: `kind` is "scalar" (`value` an int or
    float of element type `dtype`), "bool" (`dtype` i1), "array" (a list of `dtype`), or
    "bytes" (a str or descriptor attribute's bytes; `dtype` None)."""
    kind: Literal["scalar", "bool", "array", "bytes"]
    dtype: ElementType | None
    value: Any


def normalize(schema: OpSchema, param: AttributeParam, value: Any) -> AttrValue:
    """One attribute value, checked against its schema type."""
    t = param.type
    if t.kind == "scalar" and t.dtype is not None:
        return AttrValue("scalar", t.dtype, _scalar(schema, param, t.dtype, value))
    if t.kind == "bool":
        if not isinstance(value, bool):
            raise SchemaError("%s: attribute `%s` takes a bool, got %r"
                              % (schema.name, param.name, value))
        return AttrValue("bool", t.dtype, value)
    if t.kind == "array" and t.dtype is not None:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise SchemaError("%s: attribute `%s` takes a list of %s, got %r"
                              % (schema.name, param.name, t.dtype.name, value))
        return AttrValue("array", t.dtype, [_scalar(schema, param, t.dtype, v) for v in value])
    return AttrValue("bytes", None, attr_bytes(schema, param, value))


def backend_config(schema: OpSchema, attrs: Mapping[str, Any]) -> str:
    """The attributes as the MLIR dictionary a custom call's `backend_config` carries (API
    version 4): `{eps = 9.999999747e-06 : f32, label = "..."}`, each value typed as the schema
    says; `{}` for none."""
    entries = []
    refuse_extra_attrs(schema, attrs, "a backend_config written here")
    for param, value in check_attrs(schema, attrs):
        kind, dtype, v = normalize(schema, param, value)
        if kind == "scalar" and dtype is not None:
            text = "%s : %s" % (_float_text(v, dtype) if dtype.is_float else str(v), dtype.name)
        elif kind == "bool":
            text = "true" if v else "false"
        elif kind == "array" and dtype is not None:
            items = [_float_text(x, dtype) if dtype.is_float else str(x) for x in v]
            text = "array<%s%s>" % (dtype.name, (": " + ", ".join(items)) if items else "")
        else:
            text = _string_text(v)
        entries.append("%s = %s" % (param.name, text))
    return "{" + ", ".join(entries) + "}"


def checked_attrs(schema: OpSchema, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of one call, the same check for every entry (`lib.call`, `lib.ops`,
    `customop.xla.export`): unknown, missing and ill-typed ones are a `SchemaError` naming the
    op and the attribute; each value converted to its declared type (a Python float to an f32
    attribute's `numpy.float32`, a list to an array of the element type, a descriptor's value
    to its packed bytes), strings as given."""
    import numpy as np

    out: dict[str, Any] = {}
    for param, value in check_attrs(schema, attrs):
        plain = value
        if isinstance(value, np.generic):  # np.float32(1e-3), np.int64(4), np.True_
            plain = value.item()
        elif isinstance(value, np.ndarray) and param.type.kind == "array":
            plain = value.tolist()
        kind, dtype, v = normalize(schema, param, plain)
        if kind == "scalar" and dtype is not None:
            out[param.name] = dtype.numpy_dtype.type(v)
        elif kind == "array" and dtype is not None:
            out[param.name] = np.asarray(v, dtype.numpy_dtype)
        elif param.type.kind == "descriptor":
            # Its packed bytes (a str of them, torch's spelling, is latin-1, which jax would
            # send as UTF-8).
            out[param.name] = v
        else:
            out[param.name] = value
    if schema.dictionary is not None:
        out.update(extra_attrs(schema, attrs))
    return out
