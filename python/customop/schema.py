"""What every front end reads from an op's schema (the manifest's form): element types, result
shapes from the shape rules, and attribute values as MLIR text. No jax or torch here."""

import math
import struct

# The schema's element type names (MLIR's) as numpy dtype names.
NUMPY_DTYPES = {"i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64",
                "f32": "float32", "f64": "float64"}

# XLA FFI data type codes (`XLA_FFI_DataType` in xla/ffi/api/c_api.h).
XLA_CODES = {"i1": 1, "i8": 2, "i16": 3, "i32": 4, "i64": 5, "ui8": 6, "ui16": 7, "ui32": 8,
             "ui64": 9, "f32": 11, "f64": 12}

_INT_RANGES = {"i8": (-2**7, 2**7 - 1), "i16": (-2**15, 2**15 - 1), "i32": (-2**31, 2**31 - 1),
               "i64": (-2**63, 2**63 - 1), "ui8": (0, 2**8 - 1), "ui16": (0, 2**16 - 1),
               "ui32": (0, 2**32 - 1), "ui64": (0, 2**64 - 1)}


class SchemaError(TypeError):
    """A call that does not fit the op's schema: wrong operand count, attribute type or value."""


def operand_names(schema):
    """The names of the op's operands (tensors and externals), in declaration order."""
    return [p["name"] for p in schema["params"] if p["kind"] in ("tensor", "external")]


def attribute_params(schema):
    """The op's attribute parameters, in declaration order."""
    return [p for p in schema["params"] if p["kind"] == "attribute"]


def result_specs(schema, shapes):
    """`(kind, shape, dtype_name)` of each result, in the schema's order, given the operands'
    shapes by name: tensors from their shape rules, opaque results as `ui8[packed_size]`,
    updated externals as their operand's shape."""
    out = []
    for r in schema["results"]:
        if r["kind"] == "tensor":
            dims = []
            for rule in r["shape"]:
                if rule["kind"] == "const":
                    dims.append(rule["size"])
                elif rule["kind"] == "dim_of":
                    dims.append(shapes[rule["param"]][rule["dim"]])
                else:
                    dims.extend(shapes[rule["param"]])
            out.append(("tensor", tuple(dims), r["dtype"]))
        elif r["kind"] == "opaque":
            size = r["descriptor"]["packed_size"]
            if size is None:
                raise SchemaError("%s: its result descriptor %s has tails, so no fixed size"
                                  % (schema["name"], r["descriptor"]["name"]))
            out.append(("opaque", (size,), "ui8"))
        else:
            out.append(("updated", tuple(shapes[r["param"]]), "ui8"))
    return out


def _float_text(value, dtype):
    v = float(value)
    if dtype == "f32":
        if math.isfinite(v):
            return "%.9e" % v
        return "0x%08X" % struct.unpack("<I", struct.pack("<f", v))[0]
    if math.isfinite(v):
        return "%.17e" % v
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", v))[0]


def _string_text(data):
    out = ['"']
    for b in data:
        c = chr(b)
        if c in '"\\' or b < 0x20 or b >= 0x7F:
            out.append("\\%02X" % b)
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def attr_bytes(schema, param, value):
    """The bytes of a `str` or descriptor attribute. A descriptor attribute's value is its
    packed bytes (`bytes`), or a `str` of them one character per byte (latin-1), which is how
    a `str` schema argument carries them through torch."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        if param["type"]["kind"] == "str":
            return value.encode("utf-8")
        return value.encode("latin-1")
    raise SchemaError("%s: attribute `%s` takes %s, got %s"
                      % (schema["name"], param["name"],
                         "a str" if param["type"]["kind"] == "str" else
                         "the packed bytes of descriptor " + param["type"]["descriptor"]["name"],
                         type(value).__name__))


def check_attrs(schema, attrs):
    """Checks that `attrs` (a dict) gives exactly the op's attributes; returns them in
    declaration order as `(param, value)` pairs."""
    params = attribute_params(schema)
    names = [p["name"] for p in params]
    unknown = sorted(set(attrs) - set(names))
    if unknown:
        raise SchemaError("%s has no attribute %s (its attributes: %s)"
                          % (schema["name"], ", ".join(unknown), ", ".join(names) or "none"))
    missing = [n for n in names if n not in attrs]
    if missing:
        raise SchemaError("%s: missing attribute %s" % (schema["name"], ", ".join(missing)))
    return [(p, attrs[p["name"]]) for p in params]


def _scalar(schema, param, dtype, value):
    name = "%s: attribute `%s`" % (schema["name"], param["name"])
    if dtype in ("f32", "f64"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SchemaError("%s takes a float, got %r" % (name, value))
        return float(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError("%s takes an int, got %r" % (name, value))
    lo, hi = _INT_RANGES[dtype]
    if not lo <= value <= hi:
        raise SchemaError("%s is %s: %d is out of range %d..%d" % (name, dtype, value, lo, hi))
    return value


def normalize(schema, param, value):
    """`(kind, dtype, value)` of one attribute value, checked against its schema type: kind is
    "scalar" (value an int or float), "bool", "array" (a list), or "bytes"."""
    t = param["type"]
    if t["kind"] == "scalar":
        return "scalar", t["dtype"], _scalar(schema, param, t["dtype"], value)
    if t["kind"] == "bool":
        if not isinstance(value, bool):
            raise SchemaError("%s: attribute `%s` takes a bool, got %r"
                              % (schema["name"], param["name"], value))
        return "bool", "i1", value
    if t["kind"] == "array":
        return "array", t["dtype"], [_scalar(schema, param, t["dtype"], v) for v in value]
    return "bytes", None, attr_bytes(schema, param, value)


def backend_config(schema, attrs):
    """The attributes as the MLIR dictionary a custom call's `backend_config` carries (API
    version 4): `{eps = 9.999999747e-06 : f32, label = "..."}`, each value typed as the schema
    says; `{}` for none."""
    entries = []
    for param, value in check_attrs(schema, attrs):
        kind, dtype, v = normalize(schema, param, value)
        if kind == "scalar":
            text = "%s : %s" % (_float_text(v, dtype) if dtype in ("f32", "f64") else str(v), dtype)
        elif kind == "bool":
            text = "true" if v else "false"
        elif kind == "array":
            items = [_float_text(x, dtype) if dtype in ("f32", "f64") else str(x) for x in v]
            text = "array<%s%s>" % (dtype, (": " + ", ".join(items)) if items else "")
        else:
            text = _string_text(v)
        entries.append("%s = %s" % (param["name"], text))
    return "{" + ", ".join(entries) + "}"
