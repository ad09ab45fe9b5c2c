"""`customop.xla.export`: a JAX function exported with `jax.export`, its custom calls to a
library's ops allowed (only those targets: jax's safety check stays on for every other), and
each external entry argument annotated `customop.external = {...}` as the Rust builder and
`customop.torch.export` annotate theirs.

    lib = Library(path); lib.register()
    exp = export(lambda blob, x: lib.ops.example.passthrough(blob, x), blob, x, lib=lib)
    externals(exp)                              # [External(index=0, name='blob', ...)]
    data = exp.serialize()                      # a jax.export artifact
    jax.export.deserialize(data).call(blob, x)  # runs with the library's handlers
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ..annotate import (ExportError, find_main, record_external, set_arg_attrs, trace_external,
                        walk)
from ..library import KernelLibrary
from ..manifest import ExternalParam, OpSchema

__all__ = ["export", "externals", "External", "ExportError"]


@dataclasses.dataclass(frozen=True)
class External:
    """An annotated external argument of an exported function: its entry argument index, its
    name (the function's parameter, with the path into it for a pytree), descriptor,
    fingerprint (`0x...`), packed size, and whether an op updates it."""
    index: int
    name: str
    descriptor: str
    fingerprint: str
    size: int
    mutable: bool


def export(fn: Callable[..., Any], *args: Any,
           lib: KernelLibrary | Sequence[KernelLibrary],
           names: Sequence[str] | None = None,
           stablehlo_version: str | None = None,
           platforms: Sequence[str] | None = None) -> Any:
    """Exports `fn` (jitted here unless it is already) at `args` with `jax.export`, allowing
    custom calls to the ops of `lib` (a `Library` or several), and annotates every entry
    argument that a call takes as an external. Returns the `jax.export.Exported`, whose
    `serialize()` keeps the annotation. `names`, when given, names the flattened arguments
    (an external's annotation takes its name from there); otherwise each is the function's
    parameter name, with the path into it for a pytree. Raises `ExportError` when an external
    operand is computed rather than passed in, or is not a 1-D uint8 array of the
    descriptor's size.

    `stablehlo_version` ("1.13.3"), when given, is the StableHLO version the serialization
    (`serialize()`) is written for, in place of jax's own choice (a version some weeks old:
    1.18.0 for jax 0.12): for a consumer that reads no newer, such as an older PJRT plugin
    (`customop plugin list` says what each reads). jax itself reads it back as any.

    `platforms` (`["cpu", "cuda"]`), when given, are the platforms the one artifact runs on
    (jax's own choice is the default backend's): an op called in `fn` that has no CUDA side
    (`#[cuda(...)]`) is refused for "cuda" here, by name, rather than on the GPU."""
    import jax
    from jax import export as jexport
    from jax._src.export._export import _module_to_bytecode
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir

    libs = [lib] if not isinstance(lib, (list, tuple)) else list(lib)
    by_target: dict[str, OpSchema] = {}
    host_only: set[str] = set()
    for one in libs:
        by_target.update({op.target: op.schema for op in one.entries()})
        host_only.update(op.target for op in one.entries() if op.cuda_handler_symbol is None)
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    checks = [jexport.DisabledSafetyCheck.custom_call(t) for t in sorted(by_target)]
    if platforms is None:
        exp = jexport.export(jitted, disabled_checks=checks)(*args)
    else:
        exp = jexport.export(jitted, platforms=list(platforms), disabled_checks=checks)(*args)
    names = list(names) if names is not None else _argument_names(fn, args)

    ctx = jmlir.make_ir_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(exp.mlir_module())
        main = find_main(ir, module, "jax.export")
        block = main.regions[0].blocks[0]
        found: dict[int, tuple[ExternalParam, str]] = {}
        # Every function: a call may sit in a private one (a nested jit, a loop body).
        calls = [op for f in module.body.operations for op in walk(f.operation)
                 if op.name == "stablehlo.custom_call"]
        for op in calls:
            target = ir.StringAttr(op.attributes["call_target_name"]).value
            sch = by_target.get(target)
            if sch is None:
                continue
            if target in host_only and "cuda" in exp.platforms:
                raise ExportError("%s has no CUDA side (declare one with #[cuda(...)]): an "
                                  "export for platforms %s would fail on a GPU"
                                  % (sch.name, list(exp.platforms)))
            for k, p in enumerate(sch.operands):
                if not isinstance(p, ExternalParam):
                    continue
                index = trace_external(ir, op.operands[k], block, sch, p, by_target, module)
                if index is None:
                    continue  # bytes another call of the library made
                record_external(found, index, p, sch.name)
        annotated = []
        for index in sorted(found):
            p, opname = found[index]
            ty = ir.RankedTensorType(block.arguments[index].type)
            name = _name_of(exp, names, index, len(block.arguments))
            size = p.descriptor.packed_size
            if ty.rank != 1 or str(ty.element_type) != "ui8":
                raise ExportError("external `%s` of %s is argument `%s`, a %s: an external is a "
                                  "1-D uint8 array (lib.pack(%r, {...}))"
                                  % (p.name, opname, name, ty, p.descriptor.name))
            if size is not None and ty.shape[0] != size:
                raise ExportError("external `%s` of %s is argument `%s`, %d bytes, but "
                                  "descriptor %s packs to %d bytes"
                                  % (p.name, opname, name, ty.shape[0], p.descriptor.name, size))
            annotated.append(External(index, name, p.descriptor.name,
                                      p.descriptor.fingerprint_hex, ty.shape[0], p.mutable))
        set_arg_attrs(ir, main, block, annotated)
        if stablehlo_version is None:
            serialized = _module_to_bytecode(module)
        else:
            serialized = _portable_artifact(module, stablehlo_version)
    return dataclasses.replace(exp, mlir_module_serialized=serialized)


def _portable_artifact(module: Any, version: str) -> bytes:
    """`module` as a StableHLO portable artifact for `version`, as jax.export writes one for its
    own choice of version (jax's `_module_to_bytecode`: XLA's serializer, with Shardy as the
    backend wants). jax 0.12's serializer takes the module, 0.10's its bytecode."""
    from jax._src import xla_bridge as xb
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib import _jax

    sdy = xb.get_backend().serialize_with_sdy
    try:
        return _jax.mlir.serialize_portable_artifact(module, version, sdy)
    except TypeError:
        return _jax.mlir.serialize_portable_artifact(jmlir.module_to_bytecode(module), version,
                                                     sdy)


def externals(exp: Any) -> list[External]:
    """The `customop.external` annotations of an exported function's entry arguments (read
    from its module: also after `jax.export.deserialize`)."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir

    out = []
    with jmlir.make_ir_context(), ir.Location.unknown():
        main = find_main(ir, ir.Module.parse(exp.mlir_module()), "jax.export")
        if "arg_attrs" not in main.attributes:
            return out
        for i, d in enumerate(ir.ArrayAttr(main.attributes["arg_attrs"])):
            d = ir.DictAttr(d)
            if "customop.external" not in d:
                continue
            e = ir.DictAttr(d["customop.external"])
            out.append(External(i, ir.StringAttr(e["name"]).value,
                                ir.StringAttr(e["descriptor"]).value,
                                ir.StringAttr(e["fingerprint"]).value,
                                ir.IntegerAttr(e["size"]).value,
                                ir.BoolAttr(e["mutable"]).value))
    return out


def _name_of(exp: Any, names: list[str], index: int, n_args: int) -> str:
    """The name of @main's argument `index`. @main's arguments end with the arrays the function
    uses (`module_kept_var_idx`: jax.export drops unused ones); what comes before them (a
    platform index when exporting for several platforms, effect tokens) has no name here."""
    kept = exp.module_kept_var_idx
    k = index - (n_args - len(kept))
    if 0 <= k < len(kept) and kept[k] < len(names):
        return names[kept[k]]
    return "arg %d" % index


def _argument_names(fn: Callable[..., Any], args: Sequence[Any]) -> list[str]:
    """The name of each flattened argument: the function's parameter name, with the path into
    it for a pytree argument."""
    import jax

    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        params = []
    names = []
    for path, _ in jax.tree_util.tree_flatten_with_path(tuple(args))[0]:
        top = path[0].idx if hasattr(path[0], "idx") else None
        base = params[top] if top is not None and top < len(params) else "arg %s" % top
        names.append(base + jax.tree_util.keystr(path[1:]))
    return names
