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

import ctypes
import json

from . import descriptors
from .schema import NUMPY_DTYPES, operand_names, result_specs


class Library:
    """A customop cdylib: its manifest, handlers and descriptor layouts."""

    def __init__(self, path):
        self.path = str(path)
        self._lib = ctypes.CDLL(self.path)
        fn = self._lib.customop_manifest
        fn.restype = ctypes.c_char_p
        self.manifest = json.loads(fn().decode("utf-8"))
        self._layouts = {}
        for op in self.manifest["ops"]:
            sch = op["schema"]
            for p in sch["params"]:
                if p["kind"] == "external":
                    self._layouts[p["descriptor"]["name"]] = p["descriptor"]
                elif p["kind"] == "attribute" and p["type"]["kind"] == "descriptor":
                    self._layouts[p["type"]["descriptor"]["name"]] = p["type"]["descriptor"]
            for r in sch["results"]:
                if r["kind"] == "opaque":
                    self._layouts[r["descriptor"]["name"]] = r["descriptor"]

    def ops(self):
        """The manifest's ops: name, target, handler_symbol, schema, schema_string."""
        return list(self.manifest["ops"])

    def op(self, name):
        for op in self.manifest["ops"]:
            if op["name"] == name:
                return op
        raise KeyError("no op %r in %s (it has: %s)"
                       % (name, self.path, ", ".join(o["name"] for o in self.manifest["ops"])))

    def target(self, name):
        """The FFI target name of op `name` (`ns::op`)."""
        return self.op(name)["target"]

    def handler(self, name):
        """The handler of op `name`, as a ctypes function."""
        return getattr(self._lib, self.op(name)["handler_symbol"])

    def partition(self, name):
        """How op `name` may be split across devices (its `partition(...)` rule: `factors`, and
        per listed operand and result its `index` and the factor of each dimension), or None."""
        return self.op(name)["schema"]["partition"]

    def call(self, name, *operands, **attrs):
        """Calls op `name` on `operands` (its tensors and externals' bytes, in declaration
        order) with `jax.ffi.ffi_call`, result types from the schema's shape rules; keyword
        arguments are the op's attributes. Returns one array, or a list for several results."""
        import jax
        import numpy as np

        sch = self.op(name)["schema"]
        names = operand_names(sch)
        if len(operands) != len(names):
            raise TypeError("%s takes %d operands (%s), got %d"
                            % (name, len(names), ", ".join(names), len(operands)))
        shapes = dict(zip(names, (tuple(np.shape(o)) for o in operands)))
        results = [jax.ShapeDtypeStruct(shape, np.dtype(NUMPY_DTYPES[dtype]))
                   for _, shape, dtype in result_specs(sch, shapes)]
        out = jax.ffi.ffi_call(sch["target"], results if len(results) != 1 else results[0],
                               has_side_effect=sch["side_effect"])(*operands, **attrs)
        return out

    def sharded(self, name, mesh, axes, **attrs):
        """Op `name` as a function of its operands that runs once per device of `mesh`, on its
        shard, as the op's partition rule says: `jax.shard_map` over `self.call`, with each
        factor split along the mesh axes `axes` gives it (`{"rows": "x"}`; a factor not in
        `axes` stays whole). Operands and results the rule does not list are replicated."""
        import jax
        from jax.sharding import PartitionSpec as P

        sch = self.op(name)["schema"]
        rule = sch["partition"]
        if rule is None:
            raise ValueError("%s declares no partition rule" % name)
        unknown = sorted(set(axes) - set(rule["factors"]))
        if unknown:
            raise ValueError("%s has no factor %s (its factors: %s)"
                             % (name, ", ".join(unknown), ", ".join(rule["factors"])))

        def spec(entries, index):
            for e in entries:
                if e["index"] == index:
                    return P(*[axes.get(f) if f else None for f in e["dims"]])
            return P()

        n_operands = sum(p["kind"] in ("tensor", "external") for p in sch["params"])
        in_specs = tuple(spec(rule["operands"], i) for i in range(n_operands))
        out_specs = [spec(rule["results"], i) for i in range(len(sch["results"]))]
        return jax.shard_map(lambda *ops: self.call(name, *ops, **attrs), mesh=mesh,
                             in_specs=in_specs,
                             out_specs=out_specs[0] if len(out_specs) == 1 else out_specs)

    def register(self, platform="cpu"):
        """Registers every op's handler with jax as a typed-FFI target (api_version=1)."""
        import jax

        for op in self.manifest["ops"]:
            fn = getattr(self._lib, op["handler_symbol"])
            jax.ffi.register_ffi_target(op["target"], jax.ffi.pycapsule(fn),
                                        platform=platform, api_version=1)

    def layout(self, descriptor):
        """The layout of descriptor `descriptor` (its name), as exported."""
        try:
            return self._layouts[descriptor]
        except KeyError:
            raise KeyError("no descriptor %r in %s" % (descriptor, self.path)) from None

    def pack(self, descriptor, value):
        """Packs `value` (a dict) as descriptor `descriptor`, wire format v1."""
        return descriptors.pack(self.layout(descriptor), value)

    def unpack(self, descriptor, data):
        """Unpacks and validates `data` as descriptor `descriptor`."""
        return descriptors.unpack(self.layout(descriptor), bytes(data))


def manifest_op_names(path):
    """The names of the ops in the cdylib at `path`, sorted (used by the tests)."""
    return sorted(op["name"] for op in Library(path).ops())


def manifest_partition(path, name):
    """The partition rule of op `name` in the cdylib at `path` (used by the tests)."""
    return Library(path).partition(name)


def pack_with_library(path, descriptor, value):
    """Packs `value` with the layout the cdylib at `path` exports (used by the tests)."""
    return Library(path).pack(descriptor, value)
