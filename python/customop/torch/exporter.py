"""The torch_xla export rewriter: a `torch.export` program lowered by torch_xla to StableHLO,
with customop's annotations added (`customop.external = {...}` on each external argument of
the entry function, API version 4 and a dictionary `backend_config` on each call of the
library's ops), and run on XLA CPU with the library's handlers (`Exported.run`).

`customop.torch` re-exports `export`, `Exported`, `External` and `ExportError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ..annotate import (ExportError, find_main, record_external, set_arg_attrs, set_signature,
                        trace_external, walk)
from ..crosscheck import cross_check
from ..library import jax_registered, note_jax_registered, stages
from ..manifest import ExternalParam, OpSchema, numpy_dtype
from .library import TorchLibrary

if TYPE_CHECKING:
    import numpy as np

__all__ = ["export", "Exported", "External", "ExportError", "TorchXlaUnavailable"]


class TorchXlaUnavailable(ImportError):
    """`export` needs torch_xla, which this Python cannot import: torch_xla's last release
    (2.9) runs on torch 2.9 only. On torch 2.10 and later, `customop.torchax.export` exports
    through torchax instead."""


@dataclass(frozen=True)
class External:
    """An external argument of an exported program: its entry argument index, its name (the
    buffer's name, or `input_arg N` for a forward input), its source (`parameter`,
    `input_arg`, `constant`), descriptor, fingerprint (`0x...`), packed size, and whether an
    op updates it."""
    index: int
    name: str
    source: str
    descriptor: str
    fingerprint: str
    size: int
    mutable: bool


class Exported:
    """An annotated StableHLO program: `.text`, `.bytecode` (a portable StableHLO artifact),
    `.externals`, and `.run(*inputs)` on XLA CPU with the library's handlers."""

    def __init__(self, text: str, externals: list[External], lib: TorchLibrary,
                 locations: Any, bundle: Any) -> None:
        self.text = text
        self.externals = externals
        self._lib = lib
        self._locations = locations
        self._bundle = bundle

    @property
    def bytecode(self) -> bytes:
        """The program as a portable StableHLO artifact (StableHLO's compatibility format, at
        the current version of jaxlib's StableHLO), which XLA compiles as it does the text."""
        from jaxlib.mlir.dialects import stablehlo

        return stablehlo.serialize_portable_artifact_str(self.text,
                                                         stablehlo.get_current_version())

    def bytecode_for(self, version: str) -> bytes:
        """The portable artifact for a consumer that reads StableHLO up to `version`
        ("1.13.3": the PJRT CPU plugin's `stablehlo_current_version`). A consumer refuses an
        artifact newer than it reads; the text is downgraded as far as its ops allow."""
        from jaxlib.mlir.dialects import stablehlo

        return stablehlo.serialize_portable_artifact_str(self.text, version)

    def arguments(self, *inputs: Any, externals: Mapping[str, Any] | None = None) -> list[np.ndarray]:
        """The entry function's arguments as numpy arrays: forward inputs from `inputs`,
        buffers from the exported program's state dict, unless `externals` (a dict by external
        name) gives other bytes. An unknown external name, or an external whose bytes are not
        its descriptor's packed size, raises `ExportError` naming it (before XLA sees it)."""
        import numpy as np

        externals = dict(externals or {})
        unknown = sorted(set(externals) - {e.name for e in self.externals})
        if unknown:
            raise ExportError(
                "the program has no external %s (its externals: %s)"
                % (", ".join("`%s`" % n for n in unknown),
                   ", ".join("`%s` (%s)" % (e.name, e.descriptor) for e in self.externals)
                   or "none"))
        by_index = {e.index: e for e in self.externals}
        out = []
        for i, loc in enumerate(self._locations):
            ext = by_index.get(i)
            if ext is not None and ext.name in externals:
                t = externals[ext.name]
            elif loc.type_.value == "input_arg":
                if loc.position >= len(inputs):
                    raise TypeError("the program takes %d inputs, got %d"
                                    % (1 + max(l.position for l in self._locations
                                               if l.type_.value == "input_arg"), len(inputs)))
                t = inputs[loc.position]
            elif loc.type_.value == "parameter":
                t = self._bundle.state_dict[loc.name]
            else:
                t = self._bundle.additional_constants[loc.position]
            a = to_numpy(t) if isinstance(t, torch.Tensor) else np.asarray(t)
            if ext is not None:
                a = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
                if a.size != ext.size:
                    raise ExportError(
                        "external `%s` (descriptor %s) is %d bytes, but the program takes %d "
                        "(the descriptor's packed size): pack it with lib.pack(%r, {...})"
                        % (ext.name, ext.descriptor, a.size, ext.size, ext.descriptor))
            out.append(a)
        return out

    def run(self, *inputs: Any, externals: Mapping[str, Any] | None = None) -> Any:
        """Compiles the program with jaxlib's XLA CPU client and runs it on `inputs` (the
        forward's inputs), the library's handlers registered; returns torch tensors. The
        arguments are checked first, as `arguments` does."""
        import jax
        import jax.extend.backend
        import numpy as np

        args = self.arguments(*inputs, externals=externals)
        _register_with_jax(self._lib)
        backend = jax.extend.backend.get_backend("cpu")
        device = backend.local_devices()[0]
        # Compile and execute apart: a failure is cross-checked against the runner's at its stage.
        try:
            exe = backend.compile_and_load(self.text, [device])
        except Exception as e:
            cross_check(self._lib.path, self.text, args, None, e, stage="compile")
            raise
        try:
            arrays = [np.array(o) for o in exe.execute([jax.device_put(a, device) for a in args])]
        except Exception as e:
            cross_check(self._lib.path, self.text, args, None, e, stage="execute")
            raise
        cross_check(self._lib.path, self.text, args, arrays, None)
        outs = [from_numpy(a) for a in arrays]
        return outs[0] if len(outs) == 1 else tuple(outs)


def _register_with_jax(lib: TorchLibrary) -> None:
    """Registers `lib`'s handlers with jax as typed-FFI targets on CPU, once per process (jax
    keeps them; recorded where `customop.xla.Library.register` records its own)."""
    import jax

    if jax_registered(lib.library):
        return
    for op in lib.library.entries():
        jax.ffi.register_ffi_target(op.target, stages(jax.ffi.pycapsule(lib.library.handler(op.name))),
                                    platform="cpu", api_version=1)
    note_jax_registered(lib.library)


# The dtypes that torch and numpy do not convert between (`Tensor.numpy()` and
# `torch.from_numpy` refuse them): numpy has them through ml_dtypes. They cross as the unsigned
# integers of their size, reinterpreted on both sides.
_VIA_BITS = {getattr(torch, name): name for name in (
    "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e8m0fnu") if hasattr(torch, name)}
_BITS = {1: (torch.uint8, "uint8"), 2: (torch.int16, "int16")}


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A CPU copy of `t` as a numpy array, bfloat16 and fp8 as ml_dtypes' types."""
    t = t.detach().cpu()
    name = _VIA_BITS.get(t.dtype)
    if name is None:
        return t.numpy()
    bits, _ = _BITS[t.element_size()]
    return t.contiguous().view(bits).numpy().view(numpy_dtype(name))


def from_numpy(a: np.ndarray) -> torch.Tensor:
    """`a` as a torch tensor (sharing memory), ml_dtypes' bfloat16 and fp8 as torch's."""
    import numpy as np

    dtype = next((d for d, n in _VIA_BITS.items() if n == a.dtype.name), None)
    if dtype is None:
        return torch.from_numpy(a)
    _, bits = _BITS[a.dtype.itemsize]
    return torch.from_numpy(np.ascontiguousarray(a).view(bits)).view(dtype)


def refuse_packed(sch: OpSchema, exporter: str) -> None:
    """Raises `ExportError` naming the first packed sub-byte tensor of op `sch`: torch holds
    it as bytes of half (or a quarter) the last dimension, which `exporter` would put in the
    program as they are, where the op takes the packed type's own tensor."""
    for p in (*sch.operands, *sch.results):
        dtype = getattr(p, "dtype", None)
        if any(t.is_packed for t in getattr(dtype, "allowed", (dtype,)) if t is not None):
            raise ExportError(
                "%s: `%s` holds packed sub-byte elements, which torch holds as uint8 bytes of "
                "another shape and %s would pass to the program as they are: export the model "
                "from JAX, or build it with the Rust builder" % (sch.name, p.name, exporter))


def export(ep: torch.export.ExportedProgram, lib: TorchLibrary,
           method: str = "forward") -> Exported:
    """Exports `ep` (a `torch.export.ExportedProgram`) with torch_xla and annotates it for
    customop: every external operand of a call to one of `lib`'s ops is traced to its entry
    argument (through what torch_xla emits for a whole buffer: identity, convert, reshape),
    checked against the descriptor's packed size, retyped `tensor<Nxui8>` when it was int8, and
    annotated `customop.external = {...}`; every such call is made API version 4 with a
    dictionary config. Refuses, with an `ExportError`, what torch_xla cannot carry, and
    raises `TorchXlaUnavailable` where torch_xla cannot be imported (any torch but 2.9)."""
    try:
        from torch_xla.stablehlo import exported_program_to_stablehlo
    except ImportError as e:
        raise TorchXlaUnavailable(
            "customop.torch.export lowers through torch_xla, which cannot be imported here (%s). "
            "torch_xla's last release, 2.9, runs on torch 2.9 only, and this is torch %s. On "
            "torch 2.10 and later, export with customop.torchax.export(ep, lib) (customop's "
            "package with its torchax extra: pip install --pre \"$CUSTOMOP/python[torchax]\", "
            "$CUSTOMOP being customop's checkout); on torch 2.9, its torch-xla extra: pip "
            "install \"$CUSTOMOP/python[torch-xla]\"."
            % (e, torch.__version__)) from e

    if not isinstance(lib, TorchLibrary):
        raise TypeError("export(ep, lib): lib is what customop.torch.load returned")
    by_target = {op.target: op.schema for op in lib.library.entries()}
    by_name = {op.name: op.schema for op in lib.library.entries()}

    in_graph: dict[str, int] = {}
    for node in ep.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            name = node.target._schema.name
            if name in by_name:
                in_graph[name] = in_graph.get(name, 0) + 1
                mutable = [p.name for p in by_name[name].externals if p.mutable]
                if mutable:
                    raise ExportError(
                        "%s updates its external `%s` (`&mut`), and torch_xla drops the new "
                        "state of a mutated buffer (mhlo.input_output_alias = []), so the "
                        "program would lose it. Call this op from JAX (Library.call returns "
                        "the new state) or from the Rust builder, where the update is kept."
                        % (name, mutable[0]))
                updated = [p.name for p in by_name[name].operands
                           if getattr(p, "updated", False)]
                if updated:
                    raise ExportError(
                        "%s updates tensor `%s` in place (`#[inout]`), and torch_xla drops the "
                        "new values of a mutated buffer, so the program would lose them. Call "
                        "this op from JAX (its result is the updated tensor) or from the Rust "
                        "builder." % (name, updated[0]))
                refuse_packed(by_name[name], "torch_xla")

    shlo = exported_program_to_stablehlo(ep)
    text = shlo.get_stablehlo_text(method)
    metas = [f.meta for f in shlo._bundle.stablehlo_funcs if f.meta.name == method]
    if not metas:
        raise ExportError("the exported program has no method %r" % method)
    locations = metas[0].input_locations
    text, externals, in_module = _annotate(text, by_target, locations)

    for name, n in sorted(in_graph.items()):
        sch = by_name[name]
        if sch.side_effect and in_module.get(name, 0) < n:
            raise ExportError(
                "%s has side effects, and the exported graph calls it %d time(s), but torch_xla "
                "emitted %d: it lowers only what reaches an output, so a call whose result is "
                "unused is dropped. Use the op's result (return it from forward, or combine it "
                "into an output)." % (name, n, in_module.get(name, 0)))
    return Exported(text, externals, lib, locations, shlo._bundle)


def _location_name(loc: Any) -> tuple[str, str]:
    kind = loc.type_.value
    if kind == "parameter":
        return loc.name, "parameter"
    if kind == "input_arg":
        return "input_arg %d" % loc.position, "input_arg"
    return "constant %d" % loc.position, "constant"


def _annotate(text: str, by_target: dict[str, OpSchema],
              locations: Any) -> tuple[str, list[External], dict[str, int]]:
    """Parses torch_xla's text with jaxlib's MLIR, annotates it, and returns (text, externals,
    calls per op name)."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir

    ctx = jmlir.make_ir_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        main = find_main(ir, module, "torch_xla")
        block = main.regions[0].blocks[0]
        found: dict[int, tuple[ExternalParam, str]] = {}   # arg index -> (param, op name)
        in_module: dict[str, int] = {}
        for op in walk(main.operation):
            if op.name != "stablehlo.custom_call":
                continue
            target = ir.StringAttr(op.attributes["call_target_name"]).value
            sch = by_target.get(target)
            if sch is None:
                continue
            in_module[sch.name] = in_module.get(sch.name, 0) + 1
            _make_api4(ir, op, sch)
            ops = sch.operands
            if len(op.operands) != len(ops):
                raise ExportError("%s: the custom call has %d operands, the op takes %d"
                                  % (sch.name, len(op.operands), len(ops)))
            for k, p in enumerate(ops):
                if not isinstance(p, ExternalParam):
                    continue
                index = trace_external(ir, op.operands[k], block, sch, p, by_target)
                if index is None:
                    continue  # the bytes another call of the library made (an opaque result)
                record_external(found, index, p, sch.name)
                # The call takes the argument itself (the identity, converts and reshapes
                # torch_xla put between them go unused, and are erased below).
                op.operands[k] = block.arguments[index]

        _erase_dead(main.operation)
        externals = []
        for index in sorted(found):
            p, opname = found[index]
            arg = block.arguments[index]
            ty = ir.RankedTensorType(arg.type)
            name, source = _location_name(locations[index])
            size = p.descriptor.packed_size
            elem = str(ty.element_type)
            if ty.rank != 1 or elem not in ("ui8", "i8"):
                raise ExportError(
                    "external `%s` of %s comes from %s, a %s: an external is a 1-D uint8 buffer "
                    "(pack it with lib.pack(%r, {...}))" % (p.name, opname, name, ty,
                                                           p.descriptor.name))
            n = ty.shape[0]
            if size is not None and n != size:
                raise ExportError(
                    "external `%s` of %s comes from %s, %d bytes, but descriptor %s packs to %d "
                    "bytes" % (p.name, opname, name, n, p.descriptor.name, size))
            if elem == "i8":
                # Only calls may read it: any other use would read the bytes as int8.
                others = sorted({u.owner.name for u in arg.uses
                                 if u.owner.name != "stablehlo.custom_call"})
                if others:
                    raise ExportError(
                        "external `%s` of %s comes from %s, an int8 buffer that %s also use: "
                        "register it as torch.uint8 (lib.pack gives one)"
                        % (p.name, opname, name, ", ".join(others)))
                arg.set_type(ir.RankedTensorType.get([n], ir.IntegerType.get_unsigned(8)))
            externals.append(External(index, name, source, p.descriptor.name,
                                      p.descriptor.fingerprint_hex, n, p.mutable))

        set_signature(ir, main, block)
        set_arg_attrs(ir, main, block, externals)
        annotated = str(module.operation.get_asm(enable_debug_info=False))
    return annotated, externals, in_module


def _make_api4(ir: Any, op: Any, sch: OpSchema) -> None:
    i32 = ir.IntegerType.get_signless(32)
    api = op.attributes["api_version"] if "api_version" in op.attributes else None
    if api is None or ir.IntegerAttr(api).value != 4:
        op.attributes["api_version"] = ir.IntegerAttr.get(i32, 4)
    cfg = op.attributes["backend_config"] if "backend_config" in op.attributes else None
    if cfg is None or (isinstance(cfg, ir.StringAttr) and ir.StringAttr(cfg).value == ""):
        op.attributes["backend_config"] = ir.DictAttr.get({})
    elif not isinstance(cfg, ir.DictAttr):
        raise ExportError("%s: the custom call's backend_config is %s, not a dictionary of "
                          "attributes (API version 4): call the op through torch.ops, not "
                          "stablehlo_custom_call" % (sch.name, cfg))
    op.attributes["has_side_effect"] = ir.BoolAttr.get(sch.side_effect)


def _erase_dead(func: Any) -> None:
    """Erases converts and reshapes left without uses (what stood between a buffer and a call)."""
    changed = True
    while changed:
        changed = False
        for op in list(walk(func)):
            if op.name in ("stablehlo.convert", "stablehlo.reshape") and all(
                    len(list(r.uses)) == 0 for r in op.results):
                op.erase()
                changed = True
