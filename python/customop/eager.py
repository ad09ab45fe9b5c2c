"""Running an op's handler on host memory, without XLA: `customop_call`, which every kernel
cdylib exports, builds an XLA FFI call frame from plain tensors and attributes and runs the
op's generated handler on it. The handler checks everything it checks under XLA (element
types, shapes, descriptor bytes, attribute types) and refuses with `[code]` messages, raised
here as `KernelError`. No jax or torch here: front ends pass `HostBuffer`s.

    from customop.library import KernelLibrary
    from customop.eager import Handlers

    run = Handlers(KernelLibrary(path))
    y = np.empty(2, np.float32)
    run.call_numpy("example::checked_sqrt", [np.array([4.0, 9.0], np.float32)], [y])
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .library import KernelLibrary
from .manifest import ElementType, OpEntry
from .schema import check_attrs, normalize, refuse_extra_attrs

if TYPE_CHECKING:
    import numpy as np

__all__ = ["KernelError", "HostBuffer", "Handlers", "ctype_of"]

# XLA FFI attribute kinds (`XLA_FFI_AttrType`) that `CallAttr.kind` takes.
_ATTR_ARRAY, _ATTR_SCALAR, _ATTR_STRING = 1, 3, 4


class KernelError(RuntimeError):
    """An eager call that the handler refused, or whose kernel failed or panicked. `code` is
    XLA's error code (3: invalid argument, 13: internal, ...); the message starts with the op
    and the refusal code, e.g. "custom op `example::checked_sqrt` [kernel_error]: ..."."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class _CallTensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("data", ctypes.c_void_p), ("rank", ctypes.c_int64),
                ("dims", ctypes.POINTER(ctypes.c_int64))]


class _CallAttr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("name_len", ctypes.c_size_t),
                ("kind", ctypes.c_int32), ("dtype", ctypes.c_int32),
                ("data", ctypes.c_void_p), ("len", ctypes.c_size_t)]


_INTS = {1: (ctypes.c_int8, ctypes.c_uint8), 2: (ctypes.c_int16, ctypes.c_uint16),
         4: (ctypes.c_int32, ctypes.c_uint32), 8: (ctypes.c_int64, ctypes.c_uint64)}
_FLOATS = {4: ctypes.c_float, 8: ctypes.c_double}


def ctype_of(t: ElementType) -> Any:
    """The C type of one element of `t`, from its kind and byte size (bool: one byte, 0 or 1);
    a TypeError for the types XLA's FFI passes no attribute of (f16, bf16, fp8, complex)."""
    if t.kind == "complex" or (t.kind == "float" and t.byte_size not in _FLOATS):
        raise TypeError("XLA FFI attributes cannot be %s (scalars and arrays are bool, integers, "
                        "f32 or f64)" % t.name)
    if t.kind == "float":
        return _FLOATS[t.byte_size]
    signed, unsigned = _INTS[t.byte_size]
    return signed if t.kind == "signed" else unsigned


@dataclass(frozen=True)
class HostBuffer:
    """A dense row-major tensor in host memory: its element type, the address of its first
    element, and its shape. The caller keeps the memory alive during the call."""
    dtype: ElementType
    data: int
    shape: tuple[int, ...]


class Handlers:
    """The handlers of a `KernelLibrary`'s ops (a `customop.xla.Library` is one), called
    through its `customop_call`."""

    def __init__(self, library: KernelLibrary) -> None:
        self.library = library
        call = library.cdll.customop_call
        call.restype = ctypes.c_int32
        call.argtypes = [ctypes.c_void_p, ctypes.POINTER(_CallTensor), ctypes.c_size_t,
                         ctypes.POINTER(_CallTensor), ctypes.c_size_t,
                         ctypes.POINTER(_CallAttr), ctypes.c_size_t, ctypes.c_char_p,
                         ctypes.c_size_t]
        self._call = call
        self._addresses = {op.name: ctypes.cast(getattr(library.cdll, op.handler_symbol),
                                                ctypes.c_void_p).value
                           for op in library.manifest.ops}

    def call(self, op: OpEntry | str, operands: Sequence[HostBuffer],
             results: Sequence[HostBuffer], attrs: Mapping[str, Any]) -> None:
        """Runs op `op`'s handler: `operands` are its tensors and externals' bytes in
        declaration order, `results` the buffers it writes (in the schema's result order),
        `attrs` its attributes by name (checked against the schema first: `SchemaError`).
        A refusal, kernel error or panic raises `KernelError`."""
        entry = self.library.op(op) if isinstance(op, str) else op
        keep: list[Any] = []

        def tensor(b: HostBuffer) -> _CallTensor:
            dims = (ctypes.c_int64 * max(len(b.shape), 1))(*b.shape)
            keep.append(dims)
            return _CallTensor(b.dtype.xla_code, b.data, len(b.shape), dims)

        args = [tensor(b) for b in operands]
        rets = [tensor(b) for b in results]
        cattrs = []
        refuse_extra_attrs(entry.schema, attrs, "an eager call")
        for param, value in check_attrs(entry.schema, attrs):
            kind, dtype, v = normalize(entry.schema, param, value)
            name = param.name.encode("utf-8")
            keep.append(name)
            if kind in ("scalar", "bool") and dtype is not None:
                cell = ctype_of(dtype)(int(v) if kind == "bool" else v)
                keep.append(cell)
                cattrs.append(_CallAttr(name, len(name), _ATTR_SCALAR, dtype.xla_code,
                                        ctypes.addressof(cell), 1))
            elif kind == "array" and dtype is not None:
                cells = (ctype_of(dtype) * max(len(v), 1))(*v)
                keep.append(cells)
                cattrs.append(_CallAttr(name, len(name), _ATTR_ARRAY, dtype.xla_code,
                                        ctypes.addressof(cells), len(v)))
            else:
                buf = ctypes.create_string_buffer(v, max(len(v), 1))
                keep.append(buf)
                cattrs.append(_CallAttr(name, len(name), _ATTR_STRING, 0,
                                        ctypes.addressof(buf), len(v)))
        message = ctypes.create_string_buffer(4096)
        code = self._call(self._addresses[entry.name],
                          (_CallTensor * max(len(args), 1))(*args), len(args),
                          (_CallTensor * max(len(rets), 1))(*rets), len(rets),
                          (_CallAttr * max(len(cattrs), 1))(*cattrs), len(cattrs),
                          message, len(message))
        if code != 0:
            raise KernelError(message.value.decode("utf-8", "replace"), code)

    def host_buffer(self, array: np.ndarray) -> HostBuffer:
        """A C-contiguous numpy array as a `HostBuffer` (its element type from the manifest's
        table, by numpy name)."""
        if not array.flags["C_CONTIGUOUS"]:
            raise ValueError("a HostBuffer needs a C-contiguous array")
        t = self.library.manifest.element_types.by_numpy(array.dtype.name)
        if t is None:
            raise TypeError("numpy dtype %s is no customop element type" % array.dtype)
        if t.is_packed:
            # numpy keeps one element a byte; the handler reads XLA's packing.
            raise TypeError("numpy dtype %s is a packed sub-byte type (%s): eager calls take "
                            "none; call the op through JAX or the Rust runner" % (array.dtype,
                                                                                  t.name))
        return HostBuffer(t, array.ctypes.data, tuple(array.shape))

    def call_numpy(self, op: OpEntry | str, operands: Sequence[np.ndarray],
                   results: Sequence[np.ndarray], attrs: Mapping[str, Any] | None = None) -> None:
        """`call` over numpy arrays: the handler writes into `results`, which must be writeable
        (a read-only array, such as one over `bytes`, is refused with a ValueError before the
        call)."""
        for k, r in enumerate(results):
            if not r.flags["WRITEABLE"]:
                raise ValueError("%s: result %d is a read-only array; the handler would write "
                                 "into memory that must not change (pass np.empty(...) or a copy)"
                                 % (op if isinstance(op, str) else op.name, k))
        self.call(op, [self.host_buffer(a) for a in operands],
                  [self.host_buffer(r) for r in results], attrs or {})
