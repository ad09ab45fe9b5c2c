"""Load a customop kernel cdylib in Python: read its manifest, register its handlers with jax,
and pack descriptors byte for byte as Rust does.

    import jax, numpy as np
    from customop.xla import Library

    lib = Library("target/debug/libcustomop_example_kernels.so")
    lib.register()                                  # every op, as a typed-FFI target on CPU
    blob = lib.pack("my_lib::Blob", {"gain": 2.0, "bias": 1, "seed": 0, "tag": [0] * 16})
    y = jax.ffi.ffi_call(lib.target("my_custom_library::custom_op_external"),
                         jax.ShapeDtypeStruct((3,), np.int8), has_side_effect=True)(
        np.frombuffer(blob, np.uint8), x)
"""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any

from . import descriptors
from .manifest import Layout, Manifest, OpEntry, PartitionRule
from .schema import checked_attrs, operand_names, result_specs


class Library:
    """A customop cdylib: its manifest (parsed once, `manifest.Manifest`), handlers and
    descriptor layouts."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.cdll = ctypes.CDLL(self.path)
        fn = self.cdll.customop_manifest
        fn.restype = ctypes.c_char_p
        self.manifest = Manifest.from_json(json.loads(fn().decode("utf-8")))
        self._layouts = self.manifest.layouts()
        self._ops: Any = None

    @property
    def ops(self) -> Any:
        """The ops as JAX functions by namespace, `lib.ops.example.rms_norm_t(x, eps=1e-6)`:
        signature and docstring from the schema, differentiable where the op declares a
        backward, batched under `jax.vmap` by a rule (`customop.jax_ops`). Register the
        handlers first (`register()`)."""
        if self._ops is None:
            from .jax_ops import Ops
            self._ops = Ops(self)
        return self._ops

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

    def call(self, name: str, *operands: Any, **attrs: Any) -> Any:
        """Calls op `name` on `operands` (its tensors and externals' bytes, in declaration
        order) with `jax.ffi.ffi_call`, result types from the schema's shape rules; keyword
        arguments are the op's attributes, checked and converted to their declared types first
        (a `SchemaError` names an unknown, missing or ill-typed one). Returns one array, or a
        list for several results."""
        import jax
        import numpy as np

        sch = self.op(name).schema
        attrs = checked_attrs(sch, attrs)
        names = operand_names(sch)
        if len(operands) != len(names):
            raise TypeError("%s takes %d operands (%s), got %d"
                            % (name, len(names), ", ".join(names), len(operands)))
        shapes = dict(zip(names, (tuple(np.shape(o)) for o in operands)))
        types = self.manifest.element_types
        dtypes = {n: types.by_numpy(_numpy_dtype(o).name) for n, o in zip(names, operands)}
        results = [jax.ShapeDtypeStruct(spec.shape, spec.dtype.numpy_dtype)
                   for spec in result_specs(sch, shapes, attrs, dtypes)]
        out = jax.ffi.ffi_call(sch.target, results if len(results) != 1 else results[0],
                               has_side_effect=sch.side_effect)(*operands, **attrs)
        return out

    def sharded(self, name: str, mesh: Any, axes: dict[str, str], **attrs: Any) -> Any:
        """Op `name` as a function of its operands that runs once per device of `mesh`, on its
        shard, as the op's partition rule says: `jax.shard_map` over `self.call`, with each
        factor split along the mesh axes `axes` gives it (`{"rows": "x"}`; a factor not in
        `axes` stays whole). Operands and results the rule does not list are replicated."""
        import jax
        from jax.sharding import PartitionSpec as P

        sch = self.op(name).schema
        rule = sch.partition
        if rule is None:
            raise ValueError("%s declares no partition rule" % name)
        unknown = sorted(set(axes) - set(rule.factors))
        if unknown:
            raise ValueError("%s has no factor %s (its factors: %s)"
                             % (name, ", ".join(unknown), ", ".join(rule.factors)))

        def spec(entries: tuple[Any, ...], index: int) -> Any:
            for e in entries:
                if e.index == index:
                    return P(*[axes.get(f) if f else None for f in e.dims])
            return P()

        in_specs = tuple(spec(rule.operands, i) for i in range(len(sch.operands)))
        out_specs = [spec(rule.results, i) for i in range(len(sch.results))]
        return jax.shard_map(lambda *ops: self.call(name, *ops, **attrs), mesh=mesh,
                             in_specs=in_specs,
                             out_specs=out_specs[0] if len(out_specs) == 1 else out_specs)

    def register(self, platform: str = "cpu") -> None:
        """Registers every op's handler with jax as a typed-FFI target (api_version=1)."""
        import jax

        for op in self.manifest.ops:
            fn = getattr(self.cdll, op.handler_symbol)
            jax.ffi.register_ffi_target(op.target, jax.ffi.pycapsule(fn),
                                        platform=platform, api_version=1)

    def layout(self, descriptor: str) -> Layout:
        """The layout of descriptor `descriptor` (its name), as exported."""
        try:
            return self._layouts[descriptor]
        except KeyError:
            raise KeyError("no descriptor %r in %s" % (descriptor, self.path)) from None

    def pack(self, descriptor: str, value: dict[str, Any]) -> bytes:
        """Packs `value` (a dict) as descriptor `descriptor`, wire format v1."""
        return descriptors.pack(self.layout(descriptor), value)

    def unpack(self, descriptor: str, data: bytes) -> dict[str, Any]:
        """Unpacks and validates `data` as descriptor `descriptor`."""
        return descriptors.unpack(self.layout(descriptor), bytes(data))


def _numpy_dtype(value: Any) -> Any:
    """The numpy dtype of an array, a jax array or tracer (its `dtype`), or anything else numpy
    takes."""
    import numpy as np

    dtype = getattr(value, "dtype", None)
    return np.dtype(dtype) if dtype is not None else np.asarray(value).dtype


# `customop.xla.export`: jax.export with the library's custom calls allowed and externals
# annotated (see customop.jax_export).
from .jax_export import External, ExportError, export, externals  # noqa: E402

__all__ = ["Library", "export", "externals", "External", "ExportError"]
