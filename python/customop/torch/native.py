"""Native torch kernels: the checks that decide whether this torch can take them, and the
Python pieces around the Rust kernels the cdylib registers through torch's stable C ABI
(`customop_torch_register`): the hidden-op adapter for attributes torch 2.9 cannot pass,
the fake implementation without a Python Meta kernel, and the errors a native kernel raises."""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Callable
from typing import Any

import torch

from ..eager import KernelError
from ..manifest import OpEntry, OpSchema
from ..schema import SchemaError, attr_bytes

__all__ = ["NATIVE_TORCH", "NativeUnavailable", "native_unsupported_reason", "abi_version",
           "shim_has_dtype", "reraise",
           "AS_TENSOR", "NativeRegistrar", "register_fake_only", "unregister_fake_only",
           "adapter"]

# The torch versions whose stable C ABI the native kernels are written against: >= 2.9 (the
# oldest tested, with torch_xla), < 2.16 (2.15, the newest tested). The version is the one the
# running libtorch reports (`aoti_torch_abi_version()`), not the Python package's string.
NATIVE_TORCH = ((2, 9), (2, 16))


class NativeUnavailable(RuntimeError):
    """`load(path)` asked for native kernels on a torch whose stable C ABI customop does not
    support; `load(path, native=False)` uses the Python path."""


def libtorch_path() -> str:
    """The `libtorch_cpu.so` of the imported torch."""
    return os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")


def abi_version() -> tuple[int, int, int]:
    """(major, minor, patch) of the running libtorch, from `aoti_torch_abi_version()` (one
    byte each, at the top of the 64-bit `TORCH_ABI_VERSION`)."""
    fn = ctypes.CDLL(libtorch_path()).aoti_torch_abi_version
    fn.restype = ctypes.c_uint64
    fn.argtypes = []
    v = int(fn())
    return (v >> 56) & 0xFF, (v >> 48) & 0xFF, (v >> 40) & 0xFF


def shim_has_dtype(name: str) -> bool:
    """Whether the running libtorch's C shim names dtype `name` (`aoti_torch_dtype_<name>`):
    torch 2.9's has no `float8_e8m0fnu` nor `float4_e2m1fn_x2`, which its Python has."""
    return hasattr(ctypes.CDLL(libtorch_path()), "aoti_torch_dtype_" + name)


def native_unsupported_reason() -> str | None:
    """Why this torch cannot take native kernels, or None when it can."""
    try:
        version = abi_version()
    except (OSError, AttributeError) as e:
        return "this torch's libtorch_cpu has no stable C ABI version (%s)" % e
    low, high = NATIVE_TORCH
    if not low <= version[:2] < high:
        return ("customop's native torch kernels support torch >= %d.%d, < %d.%d (its stable C "
                "ABI); this is torch %s (ABI %d.%d.%d)"
                % (*low, *high, torch.__version__, *version))
    return None


_KERNEL_ERROR = re.compile(r"customop\[(kernel):(\d+)\] |customop\[(schema)\] ")


def reraise(e: RuntimeError) -> None:
    """Raises the customop error a native kernel's torch exception carries (`KernelError`
    with its code, or `SchemaError`), if it carries one."""
    m = _KERNEL_ERROR.search(str(e))
    if m is None:
        return
    message = str(e)[m.end():].split("\nException raised from", 1)[0]
    if m.group(1):
        raise KernelError(message, int(m.group(2))) from None
    raise SchemaError(message) from None


# The attribute kinds torch 2.9's stable ABI cannot pass to a kernel, carried as tensors.
AS_TENSOR = ("str", "descriptor", "array")


class NativeRegistrar:
    """The cdylib's native registration entry points (`customop_torch_native_schema`,
    `customop_torch_register`), bound to the running torch's `libtorch_cpu`."""

    def __init__(self, cdll: Any, path: str) -> None:
        self.path = path
        self._libtorch = libtorch_path().encode()
        reg = cdll.customop_torch_register
        reg.restype = ctypes.c_int32
        reg.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                        ctypes.c_size_t]
        unreg = cdll.customop_torch_unregister
        unreg.restype = ctypes.c_int32
        unreg.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        self._c_unregister = unreg
        direct = cdll.customop_torch_direct
        direct.restype = ctypes.c_int32
        direct.argtypes = [ctypes.c_char_p]
        # Whether this torch passes str and list arguments to a native kernel (2.10 and later):
        # then every op is registered under its own schema, with no hidden op and no adapter.
        self.direct = direct(self._libtorch) == 1
        schema = cdll.customop_torch_native_schema
        schema.restype = ctypes.c_int32
        schema.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        self._c_register, self._c_native_schema = reg, schema

    def register(self, frag: torch.library.Library, op: OpEntry, name: str,
                 define: bool) -> None:
        """Registers op `op`'s native kernels for the torch op `name` (defining it first in
        `frag` with the native schema when `define`)."""
        buf = ctypes.create_string_buffer(8192)
        if define:
            if self._c_native_schema(op.name.encode(), name.encode(), buf, len(buf)) != 0:
                raise RuntimeError("%s: %s" % (op.name, buf.value.decode()))
            frag.define(buf.value.decode().split("::", 1)[1])
        if self._c_register(self._libtorch, op.name.encode(), name.encode(), buf, len(buf)) != 0:
            raise RuntimeError("cannot register native kernels of %s from %s: %s"
                               % (op.name, self.path, buf.value.decode()))

    def unregister(self, name: str) -> None:
        """Unregisters the native kernels of torch op `name`, if it has any (undoing `register`
        when a later step of an op's registration fails)."""
        self._c_unregister(self._libtorch, name.encode())


def register_fake_only(qualname: str, fake: Callable[..., Any]) -> None:
    """Registers `fake` as the op's fake implementation (used by FakeTensorMode, and so by
    torch.compile and torch.export) without the Python Meta kernel `torch.library.register_fake`
    adds: the op's Meta kernel is the native one."""
    from torch._library.fake_impl import Kernel
    from torch._library.simple_registry import singleton

    singleton.find(qualname).fake_impl.kernels.append(Kernel(fake, "customop.torch"))


def unregister_fake_only(qualname: str) -> None:
    """Removes what `register_fake_only` added for op `qualname`."""
    from torch._library.simple_registry import singleton

    kernels = singleton.find(qualname).fake_impl.kernels
    kernels[:] = [k for k in kernels if getattr(k, "source", None) != "customop.torch"]


def adapter(sch: OpSchema, carried: dict[str, Any], native: Any) -> Callable[..., Any]:
    """The public op's CPU kernel when attributes of `carried` must travel as tensors: converts
    them (a string's bytes as uint8, a list as int64 or float64; converted values are cached)
    and calls the native kernel `native` (the hidden op)."""
    cache: dict[tuple[str, Any], torch.Tensor] = {}

    def convert(param: Any, value: Any) -> torch.Tensor:
        # Floats by their bits (0.0 and -0.0 are equal as keys, not as attributes).
        key = (param.name, tuple(v.hex() if isinstance(v, float) else v for v in value)
               if isinstance(value, (list, tuple)) else value)
        t = cache.get(key)
        if t is None:
            if param.type.kind == "array":
                t = torch.tensor(list(value), dtype=torch.float64 if param.type.dtype.is_float
                                 else torch.int64, device="cpu")
            else:
                data = attr_bytes(sch, param, value)
                t = (torch.frombuffer(bytearray(data), dtype=torch.uint8) if data
                     else torch.empty(0, dtype=torch.uint8, device="cpu"))
            if len(cache) >= 256:
                cache.clear()
            cache[key] = t
        return t

    def cpu(*args: Any, **kwargs: Any) -> Any:
        for name, param in carried.items():
            if name in kwargs:
                kwargs[name] = convert(param, kwargs[name])
        return native(*args, **kwargs)

    return cpu
