"""A kernel cdylib loaded in Python: its manifest (parsed once), its handlers as ctypes
functions, and its descriptor layouts, packed and unpacked by its own Rust code. The front ends build on it:
`customop.xla.Library` (JAX) and `customop.torch.TorchLibrary` (PyTorch); the eager handlers
(`customop.eager.Handlers`) call through it. Imports neither jax nor torch."""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any

from . import descriptors
from .manifest import Layout, Manifest, OpEntry, PartitionRule

__all__ = ["KernelLibrary", "LibraryLoadError"]


class LibraryLoadError(OSError):
    """A kernel library that cannot be loaded: no file at the path, a file that is not a shared
    library for this machine, or a shared library that is not a customop kernel library (no
    `customop_manifest`)."""


# The kernel libraries (by real path) whose handlers customop registered with jax in this
# process (`customop.xla.Library.register`, torch's export runner): jax keeps a registration for
# the process. A set of paths only: this module imports neither jax nor torch.
_JAX_REGISTERED: set[str] = set()


def note_jax_registered(lib: KernelLibrary) -> None:
    """Records that the handlers of `lib`'s library are registered with jax."""
    _JAX_REGISTERED.add(lib.real_path)


def jax_registered(lib: KernelLibrary) -> bool:
    """Whether customop registered the handlers of `lib`'s library with jax in this process
    (through this object or another of the same file)."""
    return lib.real_path in _JAX_REGISTERED


def stages(capsule):
    """The handler bundle to register with jax (`jax.ffi.register_ffi_target`): the same
    handler for XLA's instantiate stage, where an op with `#[state]` builds it once per call
    site (every other op does nothing there), and for execution."""
    return {"instantiate": capsule, "execute": capsule}


class KernelLibrary:
    """A customop cdylib: its manifest (parsed once, `manifest.Manifest`), handlers and
    descriptor layouts."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        # (A bare name, `libmy_ops.so`, is the dynamic loader's to find.)
        if os.sep in self.path and not os.path.isfile(self.path):
            raise LibraryLoadError(
                "customop: no kernel library at %s (%s): give the path of the cdylib your kernel "
                "crate builds (`cargo build` writes target/debug/lib<crate>.so; an installed "
                "wheel's is `customop.installed.library_in(package)`)"
                % (self.path, "no such file" if not os.path.exists(self.path) else "not a file"))
        try:
            self.cdll = ctypes.CDLL(self.path)
        except OSError as e:
            raise LibraryLoadError("customop: %s is not a shared library this process can load "
                                   "(%s): a kernel library is the cdylib a kernel crate builds "
                                   "for this machine" % (self.path, e)) from None
        try:
            fn = self.cdll.customop_manifest
        except AttributeError:
            raise LibraryLoadError("customop: %s is a shared library but not a customop kernel "
                                   "library (it exports no `customop_manifest`): build the kernel "
                                   "crate as a cdylib with customop (`crate-type = [\"cdylib\"]`)"
                                   % self.path) from None
        fn.restype = ctypes.c_char_p
        #: The library's path with links resolved: one file, however it was named.
        self.real_path = os.path.realpath(self.path)
        #: The manifest as the library wrote it (bytes): what a cache keyed on the ops hashes.
        self.manifest_bytes: bytes = fn()
        self.manifest = Manifest.from_json(json.loads(self.manifest_bytes.decode("utf-8")))
        self._layouts = self.manifest.layouts()

    @property
    def cpu_level(self) -> str:
        """The vector instructions the library's kernels take in this process: `avx512`, `avx2`
        or `portable` (the best the CPU has, capped by `CUSTOMOP_CPU`, read once)."""
        fn = self.cdll.customop_cpu_level
        fn.restype = ctypes.c_char_p
        return fn().decode("ascii")

    def entries(self) -> list[OpEntry]:
        """The manifest's ops (`OpEntry`: name, target, handler_symbol, schema, schema_string),
        sorted by name."""
        return list(self.manifest.ops)

    def op(self, name: str) -> OpEntry:
        """The manifest's entry of op `name` (`ns::op`): an `OpEntry`."""
        try:
            return self.manifest.op(name)
        except KeyError:
            raise KeyError("no op %r in %s (it has: %s)"
                           % (name, self.path, ", ".join(o.name for o in self.manifest.ops))) from None

    def target(self, name: str) -> str:
        """The FFI target name of op `name` (`ns::op`)."""
        return self.op(name).target

    def handler(self, name: str) -> Any:
        """The handler of op `name`, as a ctypes function."""
        return getattr(self.cdll, self.op(name).handler_symbol)

    def partition(self, name: str) -> PartitionRule | None:
        """How op `name` may be split across devices (its `partition(...)` rule: `factors`, and
        per listed operand and result its `index` and the factor of each dimension), or None."""
        return self.op(name).schema.partition

    def layout(self, descriptor: str) -> Layout:
        """The layout of descriptor `descriptor` (its name), as exported."""
        try:
            return self._layouts[descriptor]
        except KeyError:
            raise KeyError("no descriptor %r in %s" % (descriptor, self.path)) from None

    def pack(self, descriptor: str, value: dict[str, Any]) -> bytes:
        """Packs `value` (a dict) as descriptor `descriptor`, wire format v1, by the library's
        own Rust code (`customop.descriptors`); `PackError` names the field that does not fit."""
        self.layout(descriptor)
        return descriptors.pack(self.cdll, descriptor, value)

    def unpack(self, descriptor: str, data: bytes) -> dict[str, Any]:
        """Unpacks and validates `data` as descriptor `descriptor` (the library's Rust code);
        `DescriptorError` names what is wrong."""
        return descriptors.unpack(self.cdll, descriptor, bytes(data), self.layout(descriptor))
