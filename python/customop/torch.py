"""customop ops in PyTorch: registered from a kernel cdylib's manifest as `torch.ops.<ns>.<op>`,
run eagerly on CPU tensors by the Rust kernel, exported by torch_xla to StableHLO whose external
arguments carry the `customop.external` annotation, and run on XLA CPU with the Rust handlers.

    import torch, customop.torch as ct

    lib = ct.load("target/kernels/debug/libcustomop_example_kernels.so")
    blob = lib.pack("my_lib::Blob", {"gain": 2.0, "bias": -1, "seed": 0, "tag": b"x" * 16})
    y = torch.ops.my_custom_library.custom_op_external(blob, torch.ones(3, 3))   # eager, CPU

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("external", blob)
        def forward(self, x):
            return torch.ops.my_custom_library.custom_op_external(self.external, torch.sin(x)) + 1

    exported = ct.export(torch.export.export(M(), (torch.ones(3, 3),)), lib)
    exported.text           # the annotated StableHLO
    exported.run(torch.ones(3, 3))

Eager calls go through `customop_call`, which every cdylib exports: it builds an XLA FFI call
frame from the tensors and attributes and runs the op's generated handler on it, so an eager
call is checked exactly as an XLA call is (operand and result types and shapes, descriptor
bytes, attribute types); a kernel error or panic raises `KernelError`.
"""

import ctypes
import os

import torch

from . import descriptors
from .schema import (NUMPY_DTYPES, XLA_CODES, SchemaError, attribute_params, backend_config,
                     check_attrs, normalize, operand_names, result_specs)
from .xla import Library

__all__ = ["load", "export", "TorchLibrary", "Exported", "KernelError", "ExportError"]

TORCH_DTYPES = {"i1": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
                "i64": torch.int64, "ui8": torch.uint8, "ui16": torch.uint16,
                "ui32": torch.uint32, "ui64": torch.uint64, "f32": torch.float32,
                "f64": torch.float64}
_DTYPE_NAMES = {v: k for k, v in TORCH_DTYPES.items()}

_ATTR_ARRAY, _ATTR_SCALAR, _ATTR_STRING = 1, 3, 4
_CTYPES = {"i1": ctypes.c_uint8, "i8": ctypes.c_int8, "i16": ctypes.c_int16,
           "i32": ctypes.c_int32, "i64": ctypes.c_int64, "ui8": ctypes.c_uint8,
           "ui16": ctypes.c_uint16, "ui32": ctypes.c_uint32, "ui64": ctypes.c_uint64,
           "f32": ctypes.c_float, "f64": ctypes.c_double}


class KernelError(RuntimeError):
    """An eager call that the handler refused, or whose kernel failed or panicked. `code` is
    XLA's error code (3: invalid argument, 13: internal, ...)."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


class ExportError(ValueError):
    """A torch_xla export that customop cannot annotate or run, with why and what to do."""


class _Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("data", ctypes.c_void_p), ("rank", ctypes.c_int64),
                ("dims", ctypes.POINTER(ctypes.c_int64))]


class _Attr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("name_len", ctypes.c_size_t),
                ("kind", ctypes.c_int32), ("dtype", ctypes.c_int32),
                ("data", ctypes.c_void_p), ("len", ctypes.c_size_t)]


_LOADED = {}


def load(path):
    """Registers every op of the kernel cdylib at `path` as `torch.ops.<ns>.<op>` (once per
    process and library) and returns the `TorchLibrary`."""
    key = os.path.realpath(str(path))
    if key not in _LOADED:
        _LOADED[key] = TorchLibrary(key)
    return _LOADED[key]


class TorchLibrary:
    """A kernel cdylib's ops, registered with torch: schema from the manifest's schema string,
    a fake (meta) implementation from the shape rules, a CPU implementation that runs the Rust
    kernel, and an XLA implementation that emits `stablehlo_custom_call` to the op's target."""

    def __init__(self, path):
        self.library = Library(path)
        self.path = self.library.path
        call = self.library._lib.customop_call
        call.restype = ctypes.c_int32
        call.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Tensor), ctypes.c_size_t,
                         ctypes.POINTER(_Tensor), ctypes.c_size_t, ctypes.POINTER(_Attr),
                         ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
        self._call = call
        self._fragments = {}
        self._handlers = {}
        self._registered_with_jax = False
        for op in self.library.ops():
            self._define(op)

    # --- registration ------------------------------------------------------------------------

    def _define(self, op):
        sch = op["schema"]
        ns, _, name = sch["name"].partition("::")
        frag = self._fragments.get(ns)
        if frag is None:
            frag = self._fragments[ns] = torch.library.Library(ns, "FRAGMENT")
        signature = op["schema_string"][len(ns) + 2:]
        try:
            frag.define(signature)
        except RuntimeError as e:
            raise RuntimeError("cannot register %s from %s: %s (is it defined by another "
                               "library loaded in this process?)" % (sch["name"], self.path, e)) from None
        self._handlers[sch["name"]] = ctypes.cast(
            getattr(self.library._lib, op["handler_symbol"]), ctypes.c_void_p).value

        def cpu(*args, **kwargs):
            return self._eager(sch, args, kwargs)

        def xla(*args, **kwargs):
            return self._xla(sch, args, kwargs)

        def fake(*args, **kwargs):
            return self._fake(sch, args)

        frag.impl(name, cpu, "CPU")
        frag.impl(name, xla, "XLA")
        torch.library.register_fake(sch["name"], fake, lib=frag)
        if sch["side_effect"]:
            # Keeps an op whose result is unused in torch.export's graph, so that `export` can
            # tell when torch_xla drops it.
            torch.fx.node.has_side_effect(getattr(getattr(torch.ops, ns), name).default)

    def op(self, name):
        """The torch op packet of op `name` (`ns::op`): `torch.ops.ns.op`."""
        self.library.op(name)
        ns, _, op = name.partition("::")
        return getattr(getattr(torch.ops, ns), op)

    # --- descriptors --------------------------------------------------------------------------

    def pack(self, descriptor, value):
        """Packs `value` (a dict) as descriptor `descriptor`: a 1-D `torch.uint8` tensor, the
        bytes an external parameter takes (a buffer, or a forward input)."""
        data = self.library.pack(descriptor, value)
        return torch.frombuffer(bytearray(data), dtype=torch.uint8)

    def pack_attr(self, descriptor, value):
        """Packs `value` as descriptor `descriptor` for a descriptor attribute (`&T` with
        `#[attr]`, a `str` in the op's torch schema): one character per byte."""
        return self.library.pack(descriptor, value).decode("latin-1")

    def unpack(self, descriptor, tensor):
        """Unpacks and validates the bytes of `tensor` (uint8 or int8) as `descriptor`."""
        return self.library.unpack(descriptor, _as_bytes(tensor).numpy().tobytes())

    # --- implementations ----------------------------------------------------------------------

    def _split(self, sch, args):
        names = operand_names(sch)
        if len(args) != len(names):
            raise SchemaError("%s takes %d tensors (%s), got %d"
                              % (sch["name"], len(names), ", ".join(names), len(args)))
        return names, {n: tuple(a.shape) for n, a in zip(names, args)}

    def _fake(self, sch, args):
        _, shapes = self._split(sch, args)
        device = args[0].device if args else None
        outs = [torch.empty(shape, dtype=TORCH_DTYPES[dtype], device=device)
                for kind, shape, dtype in result_specs(sch, shapes) if kind != "updated"]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _eager(self, sch, args, kwargs):
        names, shapes = self._split(sch, args)
        kinds = {p["name"]: p for p in sch["params"]}
        keep = []

        def tensor(t, what):
            if t.dtype not in _DTYPE_NAMES:
                raise SchemaError("%s: %s is %s, which no customop kernel takes"
                                  % (sch["name"], what, t.dtype))
            t = t.detach().contiguous()
            dims = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
            keep.extend([t, dims])
            return _Tensor(XLA_CODES[_DTYPE_NAMES[t.dtype]], t.data_ptr(), t.dim(), dims)

        operands = []
        for n, a in zip(names, args):
            if a.device.type != "cpu":
                raise SchemaError("%s: operand `%s` is on %s; eager calls take CPU tensors"
                                  % (sch["name"], n, a.device))
            operands.append(tensor(_as_bytes(a) if kinds[n]["kind"] == "external" else a,
                                   "operand `%s`" % n))
        specs = result_specs(sch, shapes)
        results = [torch.empty(shape, dtype=TORCH_DTYPES[dtype]) for _, shape, dtype in specs]
        rets = [tensor(r, "result") for r in results]
        attrs = []
        for param, value in check_attrs(sch, kwargs):
            kind, dtype, v = normalize(sch, param, value)
            name = param["name"].encode("utf-8")
            keep.append(name)
            if kind in ("scalar", "bool"):
                cell = _CTYPES[dtype](int(v) if kind == "bool" else v)
                keep.append(cell)
                attrs.append(_Attr(name, len(name), _ATTR_SCALAR, XLA_CODES[dtype],
                                   ctypes.addressof(cell), 1))
            elif kind == "array":
                cells = (_CTYPES[dtype] * max(len(v), 1))(*v)
                keep.append(cells)
                attrs.append(_Attr(name, len(name), _ATTR_ARRAY, XLA_CODES[dtype],
                                   ctypes.addressof(cells), len(v)))
            else:
                buf = ctypes.create_string_buffer(v, max(len(v), 1))
                keep.append(buf)
                attrs.append(_Attr(name, len(name), _ATTR_STRING, 0, ctypes.addressof(buf),
                                   len(v)))
        message = ctypes.create_string_buffer(4096)
        code = self._call(self._handlers[sch["name"]],
                          (_Tensor * max(len(operands), 1))(*operands), len(operands),
                          (_Tensor * max(len(rets), 1))(*rets), len(rets),
                          (_Attr * max(len(attrs), 1))(*attrs), len(attrs),
                          message, len(message))
        if code != 0:
            raise KernelError(message.value.decode("utf-8", "replace"), code)
        return _write_back(sch, names, args, results)

    def _xla(self, sch, args, kwargs):
        from torch_xla.experimental.stablehlo_custom_call import stablehlo_custom_call

        names, shapes = self._split(sch, args)
        specs = result_specs(sch, shapes)
        config = backend_config(sch, kwargs)
        outs = stablehlo_custom_call(list(args), sch["target"], [list(s) for _, s, _ in specs],
                                     [TORCH_DTYPES[d] for _, _, d in specs],
                                     sch["side_effect"], config, 4)
        outs = [outs] if len(specs) == 1 else list(outs)
        return _write_back(sch, names, args, outs)

    def _register_with_jax(self):
        if not self._registered_with_jax:
            self.library.register()
            self._registered_with_jax = True


def _write_back(sch, names, args, results):
    """Copies each updated external's new state into its operand (the schema's `Tensor(a!)`)
    and returns the other results, as torch expects them: one tensor, or a tuple."""
    returned = []
    for spec, r in zip(sch["results"], results):
        if spec["kind"] == "updated_external":
            target = args[names.index(spec["param"])]
            target.copy_(r.view(target.dtype))
        else:
            returned.append(r)
    return returned[0] if len(returned) == 1 else tuple(returned)


def _as_bytes(t):
    """An external's tensor as uint8 (an int8 buffer is viewed, not converted)."""
    if t.dtype == torch.int8:
        return t.view(torch.uint8)
    return t


# --- export ---------------------------------------------------------------------------------

class External:
    """An external argument of an exported program: its entry argument index, its name (the
    buffer's name, or `input_arg N` for a forward input), its source (`parameter`,
    `input_arg`, `constant`), descriptor, fingerprint, packed size, and mutability."""

    def __init__(self, index, name, source, descriptor, fingerprint, size, mutable):
        self.index, self.name, self.source = index, name, source
        self.descriptor, self.fingerprint, self.size, self.mutable = (
            descriptor, fingerprint, size, mutable)

    def __repr__(self):
        return ("External(index=%d, name=%r, source=%r, descriptor=%r, size=%d)"
                % (self.index, self.name, self.source, self.descriptor, self.size))


class Exported:
    """An annotated StableHLO program: `.text`, `.bytecode` (a portable StableHLO artifact),
    `.externals`, and `.run(*inputs)` on XLA CPU with the library's handlers."""

    def __init__(self, text, externals, lib, locations, bundle):
        self.text = text
        self.externals = externals
        self._lib = lib
        self._locations = locations
        self._bundle = bundle

    @property
    def bytecode(self):
        """The program as a portable StableHLO artifact (StableHLO's compatibility format, at
        the current version of jaxlib's StableHLO), which XLA compiles as it does the text."""
        from jaxlib.mlir.dialects import stablehlo

        return stablehlo.serialize_portable_artifact_str(self.text,
                                                         stablehlo.get_current_version())

    def arguments(self, *inputs, externals=None):
        """The entry function's arguments as numpy arrays: forward inputs from `inputs`,
        buffers from the exported program's state dict, unless `externals` (a dict by external
        name) gives other bytes."""
        import numpy as np

        externals = externals or {}
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
            a = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
            if ext is not None:
                a = np.ascontiguousarray(a).view(np.uint8)
            out.append(a)
        return out

    def run(self, *inputs, externals=None):
        """Compiles the program with jaxlib's XLA CPU client and runs it on `inputs` (the
        forward's inputs), the library's handlers registered; returns torch tensors."""
        import jax
        import jax.extend.backend
        import numpy as np

        self._lib._register_with_jax()
        backend = jax.extend.backend.get_backend("cpu")
        device = backend.local_devices()[0]
        exe = backend.compile_and_load(self.text, [device])
        args = [jax.device_put(a, device) for a in self.arguments(*inputs, externals=externals)]
        outs = [torch.from_numpy(np.array(o)) for o in exe.execute(args)]
        return outs[0] if len(outs) == 1 else tuple(outs)


def export(ep, lib, method="forward"):
    """Exports `ep` (a `torch.export.ExportedProgram`) with torch_xla and annotates it for
    customop: every external operand of a call to one of `lib`'s ops is traced to its entry
    argument (through what torch_xla emits for a whole buffer: identity, convert, reshape),
    checked against the descriptor's packed size, retyped `tensor<Nxui8>` when it was int8, and
    annotated `customop.external = {...}`; every such call is made API version 4 with a
    dictionary config. Refuses, with an `ExportError`, what torch_xla cannot carry."""
    from torch_xla.stablehlo import exported_program_to_stablehlo

    if not isinstance(lib, TorchLibrary):
        raise TypeError("export(ep, lib): lib is what customop.torch.load returned")
    by_target = {op["target"]: op["schema"] for op in lib.library.ops()}
    by_name = {op["name"]: op["schema"] for op in lib.library.ops()}

    in_graph = {}
    for node in ep.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            name = node.target._schema.name
            if name in by_name:
                in_graph[name] = in_graph.get(name, 0) + 1
                sch = by_name[name]
                mutable = [p["name"] for p in sch["params"]
                           if p["kind"] == "external" and p["mutable"]]
                if mutable:
                    raise ExportError(
                        "%s updates its external `%s` (`&mut`), and torch_xla drops the new "
                        "state of a mutated buffer (mhlo.input_output_alias = []), so the "
                        "program would lose it. Call this op from JAX (Library.call returns "
                        "the new state) or from the Rust builder, where the update is kept."
                        % (name, mutable[0]))

    shlo = exported_program_to_stablehlo(ep)
    text = shlo.get_stablehlo_text(method)
    metas = [f.meta for f in shlo._bundle.stablehlo_funcs if f.meta.name == method]
    if not metas:
        raise ExportError("the exported program has no method %r" % method)
    locations = metas[0].input_locations
    text, externals, in_module = _annotate(text, by_target, locations)

    for name, n in sorted(in_graph.items()):
        sch = by_name[name]
        if sch["side_effect"] and in_module.get(name, 0) < n:
            raise ExportError(
                "%s has side effects, and the exported graph calls it %d time(s), but torch_xla "
                "emitted %d: it lowers only what reaches an output, so a call whose result is "
                "unused is dropped. Use the op's result (return it from forward, or combine it "
                "into an output)." % (name, n, in_module.get(name, 0)))
    return Exported(text, externals, lib, locations, shlo._bundle)


def _location_name(loc):
    kind = loc.type_.value
    if kind == "parameter":
        return loc.name, "parameter"
    if kind == "input_arg":
        return "input_arg %d" % loc.position, "input_arg"
    return "constant %d" % loc.position, "constant"


def _annotate(text, by_target, locations):
    """Parses torch_xla's text with jaxlib's MLIR, annotates it, and returns (text, externals,
    calls per op name)."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir

    ctx = jmlir.make_ir_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        main = None
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(
                    op.attributes["sym_name"]).value == "main":
                main = op
        if main is None:
            raise ExportError("torch_xla's module has no @main function")
        block = main.regions[0].blocks[0]
        found = {}      # arg index -> (schema param, op name)
        in_module = {}
        calls = []
        for op in _walk(main.operation):
            if op.name != "stablehlo.custom_call":
                continue
            target = ir.StringAttr(op.attributes["call_target_name"]).value
            sch = by_target.get(target)
            if sch is None:
                continue
            in_module[sch["name"]] = in_module.get(sch["name"], 0) + 1
            calls.append((op, sch))
            _make_api4(ir, op, sch)
            ops = [p for p in sch["params"] if p["kind"] in ("tensor", "external")]
            if len(op.operands) != len(ops):
                raise ExportError("%s: the custom call has %d operands, the op takes %d"
                                  % (sch["name"], len(op.operands), len(ops)))
            for k, p in enumerate(ops):
                if p["kind"] != "external":
                    continue
                index = _trace(ir, op.operands[k], block, sch, p, by_target)
                if index is None:
                    continue  # the bytes another call of the library made (an opaque result)
                prev = found.get(index)
                if prev and prev[0]["descriptor"]["fingerprint"] != p["descriptor"]["fingerprint"]:
                    raise ExportError(
                        "entry argument %d is external `%s` of %s (%s) and `%s` of %s (%s): one "
                        "buffer cannot be two descriptors" % (
                            index, prev[0]["name"], prev[1], prev[0]["descriptor"]["name"],
                            p["name"], sch["name"], p["descriptor"]["name"]))
                found[index] = (p, sch["name"])
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
            size = p["descriptor"]["packed_size"]
            elem = str(ty.element_type)
            if ty.rank != 1 or elem not in ("ui8", "i8"):
                raise ExportError(
                    "external `%s` of %s comes from %s, a %s: an external is a 1-D uint8 buffer "
                    "(pack it with lib.pack(%r, {...}))" % (p["name"], opname, name, ty,
                                                           p["descriptor"]["name"]))
            n = ty.shape[0]
            if size is not None and n != size:
                raise ExportError(
                    "external `%s` of %s comes from %s, %d bytes, but descriptor %s packs to %d "
                    "bytes" % (p["name"], opname, name, n, p["descriptor"]["name"], size))
            if elem == "i8":
                # Only calls may read it: any other use would read the bytes as int8.
                others = sorted({u.owner.name for u in arg.uses
                                 if u.owner.name != "stablehlo.custom_call"})
                if others:
                    raise ExportError(
                        "external `%s` of %s comes from %s, an int8 buffer that %s also use: "
                        "register it as torch.uint8 (lib.pack gives one)"
                        % (p["name"], opname, name, ", ".join(others)))
                arg.set_type(ir.RankedTensorType.get([n], ir.IntegerType.get_unsigned(8)))
            externals.append(External(index, name, source, p["descriptor"]["name"],
                                      p["descriptor"]["fingerprint"], n, p["mutable"]))

        _set_signature(ir, main, block)
        _set_arg_attrs(ir, main, block, externals)
        text = module.operation.get_asm(enable_debug_info=False)
    return text, externals, in_module


def _walk(op):
    for region in op.regions:
        for block in region.blocks:
            for o in block.operations:
                yield o.operation
                yield from _walk(o.operation)


def _trace(ir, value, block, sch, param, by_target):
    """The entry argument index that `value` (an external operand) is, through converts and
    reshapes of a whole buffer; None when it is the packed result of another call of the
    library (an opaque result or updated external of the same descriptor); an ExportError for
    anything else."""
    v = value
    while True:
        if isinstance(v, ir.BlockArgument):
            arg = ir.BlockArgument(v)
            if arg.owner == block:
                return arg.arg_number
            break
        result = ir.OpResult(v)
        owner = result.owner
        name = owner.name
        if name == "stablehlo.custom_call":
            producer = by_target.get(ir.StringAttr(owner.attributes["call_target_name"]).value)
            if producer is not None:
                r = producer["results"][result.result_number]
                made = r.get("descriptor") or next(
                    (p["descriptor"] for p in producer["params"] if p["name"] == r.get("param")),
                    None)
                if made is not None and made["fingerprint"] == param["descriptor"]["fingerprint"]:
                    return None
        if name in ("stablehlo.convert", "stablehlo.reshape"):
            src = owner.operands[0]
            if _whole_bytes(ir, src.type, v.type):
                v = src
                continue
        raise ExportError(
            "%s: external `%s` is computed (by %s), not passed in: an external operand must be "
            "a buffer or forward input of descriptor %s, passed whole (no slicing or "
            "arithmetic)" % (sch["name"], param["name"], name, param["descriptor"]["name"]))
    raise ExportError("%s: external `%s` is not an argument of the entry function"
                      % (sch["name"], param["name"]))


def _whole_bytes(ir, a, b):
    """Whether a convert or reshape from type `a` to `b` keeps a byte buffer whole: both
    8-bit integer tensors with the same number of elements."""
    def count(ty):
        t = ir.RankedTensorType(ty)
        if str(t.element_type) not in ("i8", "ui8"):
            return None
        n = 1
        for d in t.shape:
            n *= d
        return n

    return count(a) is not None and count(a) == count(b)


def _make_api4(ir, op, sch):
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
                          "stablehlo_custom_call" % (sch["name"], cfg))
    op.attributes["has_side_effect"] = ir.BoolAttr.get(bool(sch["side_effect"]))


def _erase_dead(func):
    """Erases converts and reshapes left without uses (what stood between a buffer and a call)."""
    changed = True
    while changed:
        changed = False
        for op in list(_walk(func)):
            if op.name in ("stablehlo.convert", "stablehlo.reshape") and all(
                    len(list(r.uses)) == 0 for r in op.results):
                op.erase()
                changed = True


def _set_signature(ir, func, block):
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    inputs = [a.type for a in block.arguments]
    func.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(inputs, list(ftype.results)))


def _set_arg_attrs(ir, func, block, externals):
    n = len(block.arguments)
    old = func.attributes["arg_attrs"] if "arg_attrs" in func.attributes else None
    dicts = []
    for i in range(n):
        entries = {}
        if old is not None:
            d = ir.DictAttr(ir.ArrayAttr(old)[i])
            for j in range(len(d)):
                na = d[j]
                entries[na.name] = na.attr
        dicts.append(entries)
    for e in externals:
        dicts[e.index]["customop.external"] = ir.Attribute.parse(
            '{descriptor = "%s", fingerprint = "%s", mutable = %s, size = %d : i64}'
            % (e.descriptor, e.fingerprint, "true" if e.mutable else "false", e.size))
    func.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(d) for d in dicts])
