"""`TorchLibrary`: a kernel cdylib's ops registered with torch as `torch.ops.<ns>.<op>`: schema
from the manifest, a fake implementation from the shape rules, a CPU kernel (native, or the
Python path through `customop.eager`), an XLA kernel for torch_xla, an autograd kernel and a
vmap rule. Each op is defined and registered in a fragment of its own: if any step fails, the
fragment is destroyed, so the op is either fully registered or not defined at all."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import torch

from ..eager import Handlers, HostBuffer
from ..library import KernelLibrary
from ..manifest import UPDATED, DtypeVar, ElementType, OpEntry, OpSchema, UpdatedExternal
from ..schema import ResultSpec, SchemaError, backend_config, operand_names, result_specs
from .autograd import autograd_kernel
from .cache_key import include as include_in_cache_key
from .packed import AS_BYTES, logical_shape, packed_shape
from .sharding import register_shardings
from .native import (AS_TENSOR, NativeRegistrar, NativeUnavailable, adapter,
                     native_unsupported_reason, register_fake_only, shim_has_dtype,
                     unregister_fake_only)
from .vmap import vmap_rule

__all__ = ["TorchLibrary"]

log = logging.getLogger("customop.torch")


def torch_refusal(sch: Any) -> str | None:
    """Why torch cannot call an op, if it cannot: a dictionary of every attribute (`#[attrs]`),
    which a torch schema cannot express; or no tensor operand, from which torch's dispatcher
    would take the device (such an op has no dispatch key to run on)."""
    if sch.dictionary is not None:
        return ("%s takes every attribute of its call as a dictionary (`#[attrs] %s`), which a "
                "torch schema cannot express" % (sch.name, sch.dictionary.name))
    if not sch.operands:
        return ("%s takes no tensor, and torch's dispatcher picks a kernel by its tensors' "
                "devices" % sch.name)
    for v in {p.dtype for p in sch.operands if isinstance(getattr(p, "dtype", None), DtypeVar)}:
        held = [t.name for t in v.allowed if t.name in AS_BYTES]
        if len(held) > 1:
            return ("%s takes packed sub-byte tensors of a type parameter, %s, whose types torch "
                    "holds alike, as uint8 bytes (%s), so that a call cannot say which"
                    % (sch.name, v.describe(), ", ".join(held)))
    return None


class TorchLibrary:
    """A kernel cdylib's ops, registered with torch: schema from the manifest's schema string,
    a fake (meta) implementation from the shape rules, a CPU implementation that runs the Rust
    kernel, an XLA implementation that emits `stablehlo_custom_call` to the op's target, and an
    autograd kernel that runs the declared backward or refuses `backward()`."""

    def __init__(self, path: str, native: bool = True) -> None:
        self.library = KernelLibrary(path)
        self.path = self.library.path
        self.native = native
        self._native: NativeRegistrar | None = None
        if native:
            reason = native_unsupported_reason()
            if reason is not None:
                raise NativeUnavailable(reason + "; load(path, native=False) runs ops through "
                                        "the Python path")
            self._native = NativeRegistrar(self.library.cdll, self.path)
        self._handlers = Handlers(self.library)
        include_in_cache_key(self.library.manifest_bytes)
        types = self.library.manifest.element_types.values()
        # torch's dtype of each element type, by its numpy name (torch spells them alike).
        # (Only those this torch has: 2.9 has no float8_e8m0fnu, none has float8_e4m3.)
        # torch's own sub-byte dtypes (torch.int4, ...) hold one element a byte and have no
        # kernels: never those. A packed type travels as its packed bytes instead (`uint8`,
        # or `float4_e2m1fn_x2` pairs for f4E2M1FN), see `packed_shape`.
        self._torch_dtypes = {t.name: getattr(torch, t.numpy) for t in types
                              if not t.is_packed
                              and isinstance(getattr(torch, t.numpy, None), torch.dtype)}
        self._element_of = {d: t for t in types for d in [self._torch_dtypes.get(t.name)]
                            if d is not None}
        for t in types:
            if t.is_packed:
                # (A torch whose C shim has no float4_e2m1fn_x2, 2.9, can neither copy nor
                # compare such tensors, nor pass them to a native kernel: f4E2M1FN is bytes
                # there.)
                pair = (getattr(torch, "float4_e2m1fn_x2", None)
                        if t.name == "f4E2M1FN" and shim_has_dtype("float4_e2m1fn_x2") else None)
                self._torch_dtypes[t.name] = pair if pair is not None else torch.uint8
                if pair is not None:
                    self._element_of[pair] = t
        # One fragment per op (kept alive: destroying a fragment unregisters what it holds).
        self._fragments: dict[str, torch.library.Library] = {}
        adapted = []
        try:
            for op in self.library.entries():
                if self._define(op):
                    adapted.append(op.name)
        except BaseException:
            # All or nothing: the ops defined so far go too, so that a later load() can redo
            # them.
            for op_name in list(self._fragments):
                self._undo(op_name, self._fragments.pop(op_name))
            raise
        # DTensor shardings from each op's partition (ops torch cannot call have none).
        register_shardings([(op.schema, self.op(op.name).default)
                            for op in self.library.entries()
                            if torch_refusal(op.schema) is None])
        if native:
            log.info("customop: %s: %d ops with native CPU and Meta kernels (torch's stable C "
                     "ABI%s)%s", self.path, len(self.library.entries()),
                     ", str and lists passed as they are" if self._native and self._native.direct
                     else "",
                     "; through a Python adapter (str or list attributes): " + ", ".join(adapted)
                     if adapted else "")
        else:
            log.info("customop: %s: %d ops on the Python path (native=False)", self.path,
                     len(self.library.entries()))

    # --- registration ------------------------------------------------------------------------

    def _define(self, op: OpEntry) -> bool:
        """Defines and registers op `op` in a fragment of its own, destroyed (with the
        definition and every kernel registered through it) if a step fails; True when its native
        kernel sits behind a Python adapter."""
        sch = op.schema
        ns, _, name = sch.name.partition("::")
        frag = torch.library.Library(ns, "FRAGMENT")
        signature = op.schema_string[len(ns) + 2:]
        try:
            frag.define(signature)
        except RuntimeError as e:
            frag._destroy()
            raise RuntimeError("cannot register %s from %s: %s (is it defined by another "
                               "library loaded in this process?)" % (sch.name, self.path, e)) from None
        reason = torch_refusal(sch)
        if reason is not None:
            self._refuse(frag, reason, name)
            self._fragments[sch.name] = frag
            return False
        try:
            adapted = self._register(frag, op, ns, name)
        except BaseException:
            self._undo(sch.name, frag)
            raise
        self._fragments[sch.name] = frag
        return adapted

    @staticmethod
    def _refuse(frag: torch.library.Library, reason: str, name: str) -> None:
        """An op torch cannot call (`torch_refusal`): defined (with its named parameters) so
        that a call finds it, and every call refused by name."""
        message = "customop: %s; call it from JAX or the Rust runner" % reason

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(message)

        # Also under BackendSelect: an op without tensor arguments has no other dispatch key.
        for key in ("CompositeImplicitAutograd", "BackendSelect"):
            frag.impl(name, refuse, key)

    def _undo(self, op_name: str, frag: torch.library.Library) -> None:
        """Unregisters op `op_name`: its native kernels (under its name and its hidden one), then
        its fragment, which takes its definition and Python kernels with it."""
        if self._native is not None:
            ns, _, name = op_name.partition("::")
            self._native.unregister(op_name)
            self._native.unregister("%s::_native_%s" % (ns, name))
            unregister_fake_only(op_name)
        frag._destroy()

    def _register(self, frag: torch.library.Library, op: OpEntry, ns: str, name: str) -> bool:
        """Registers the kernels of op `op`, defined in `frag`."""
        sch = op.schema

        def xla(*args: Any, **kwargs: Any) -> Any:
            return self._xla(sch, args, kwargs)

        def fake(*args: Any, **kwargs: Any) -> Any:
            return self._fake(sch, args, kwargs)

        adapted = False
        if self._native is None:
            def cpu(*args: Any, **kwargs: Any) -> Any:
                return self._eager(op, args, kwargs)

            frag.impl(name, cpu, "CPU")
            torch.library.register_fake(sch.name, fake, lib=frag)
        else:
            # torch 2.9 passes no str or list to a kernel: those attributes travel as tensors,
            # through a hidden op; from 2.10 on they reach the kernel as they are.
            carried = {} if self._native.direct else {
                p.name: p for p in sch.attributes if p.type.kind in AS_TENSOR}
            if not carried:
                # CPU and Meta kernels in Rust; the fake implementation (which FakeTensorMode
                # prefers, and which takes symbolic sizes) stays in Python, without the Meta
                # kernel `register_fake` would add.
                self._native.register(frag, op, sch.name, define=False)
                register_fake_only(sch.name, fake)
            else:
                adapted = True
                hidden = "%s::_native_%s" % (ns, name)
                self._native.register(frag, op, hidden, define=True)
                frag.impl(name, adapter(sch, carried, getattr(getattr(torch.ops, ns),
                                                              "_native_" + name).default),
                          "CPU")
                torch.library.register_fake(sch.name, fake, lib=frag)
        frag.impl(name, xla, "XLA")
        packet = getattr(getattr(torch.ops, ns), name)
        frag.impl(name, autograd_kernel(packet.default, sch, self.library.manifest.element_types),
                  "Autograd", with_keyset=True)
        torch.library.register_vmap(sch.name, vmap_rule(sch, packet.default), lib=frag)
        if sch.side_effect:
            # Keeps an op whose result is unused in torch.export's graph, so that `export` can
            # tell when torch_xla drops it.
            torch.fx.node.has_side_effect(packet.default)
        return adapted

    def op(self, name: str) -> Any:
        """The torch op packet of op `name` (`ns::op`): `torch.ops.ns.op`, what model code
        calls. (`lib.library.op(name)` is the op's manifest entry, an `OpEntry`.)"""
        self.library.op(name)
        ns, _, op = name.partition("::")
        return getattr(getattr(torch.ops, ns), op)

    def torch_dtype(self, t: ElementType) -> torch.dtype:
        """torch's dtype of element type `t`; `SchemaError` naming it where this torch has
        none."""
        d = self._torch_dtypes.get(t.name)
        if d is None:
            raise SchemaError("torch %s has no dtype for %s (`torch.%s`): an op's %s tensors "
                              "run from JAX or the Rust runner"
                              % (torch.__version__, t.name, t.numpy, t.name))
        return d

    # --- descriptors --------------------------------------------------------------------------

    def pack(self, descriptor: str, value: dict[str, Any]) -> torch.Tensor:
        """Packs `value` (a dict) as descriptor `descriptor`: a 1-D `torch.uint8` tensor, the
        bytes an external parameter takes (a buffer, or a forward input)."""
        data = self.library.pack(descriptor, value)
        return torch.frombuffer(bytearray(data), dtype=torch.uint8)

    def pack_attr(self, descriptor: str, value: dict[str, Any]) -> str:
        """Packs `value` as descriptor `descriptor` for a descriptor attribute (`&T` with
        `#[attr]`, a `str` in the op's torch schema): one character per byte."""
        return self.library.pack(descriptor, value).decode("latin-1")

    def unpack(self, descriptor: str, tensor: torch.Tensor) -> dict[str, Any]:
        """Unpacks and validates the bytes of `tensor` (uint8 or int8) as `descriptor`."""
        return self.library.unpack(descriptor, _as_bytes(tensor).numpy().tobytes())

    # --- implementations ----------------------------------------------------------------------

    def _split(self, sch: OpSchema,
               args: Sequence[torch.Tensor]) -> tuple[list[str], dict[str, tuple[int, ...]]]:
        names = operand_names(sch)
        if len(args) != len(names):
            raise SchemaError("%s takes %d tensors (%s), got %d"
                              % (sch.name, len(names), ", ".join(names), len(args)))
        return names, {n: tuple(a.shape) for n, a in zip(names, args)}

    def _specs(self, sch: OpSchema, args: Sequence[torch.Tensor],
               kwargs: dict[str, Any]) -> tuple[list[str], list[ResultSpec]]:
        """The operand names and the result specs of a call (shapes from the shape rules, a
        generic op's types from its operands')."""
        names, shapes = self._split(sch, args)
        dtypes = {n: self._operand_element(sch, p, a) for n, p, a in zip(names, sch.operands, args)}
        for n, e in dtypes.items():
            if e is not None and e.is_packed:
                shapes[n] = logical_shape(sch, n, e, shapes[n])
        return names, result_specs(sch, shapes, kwargs, dtypes)

    def _operand_element(self, sch: OpSchema, p: Any, a: torch.Tensor) -> ElementType | None:
        """The element type of operand `p` given as `a`: its torch dtype's, or, for a `uint8`
        tensor where `p` is of a packed sub-byte type, that type (its packed bytes)."""
        declared = getattr(p, "dtype", None)
        if a.dtype == torch.uint8 and p.kind != "external":
            # A fixed packed type, or the one type of a parameter torch holds as bytes (more
            # than one is refused, `torch_refusal`).
            held = [t for t in getattr(declared, "allowed", (declared,))
                    if isinstance(t, ElementType) and t.name in AS_BYTES]
            if len(held) == 1:
                return held[0]
        return self._element_of.get(a.dtype)

    def _empties(self, sch: OpSchema, specs: Sequence[ResultSpec],
                 device: Any = None) -> list[torch.Tensor]:
        """New tensors for results `specs` of op `sch`, in torch's dtypes and shapes for them."""
        return [torch.empty(packed_shape(sch, r.name, s), dtype=self.torch_dtype(s.dtype),
                            device=device) for r, s in zip(sch.results, specs)]

    def _fake(self, sch: OpSchema, args: Sequence[torch.Tensor], kwargs: dict[str, Any]) -> Any:
        _, specs = self._specs(sch, args, kwargs)
        device = args[0].device if args else None
        outs = [t for s, t in zip(specs, self._empties(sch, specs, device))
                if s.kind not in {u.kind for u in UPDATED}]
        return _returned(outs)

    def _eager(self, op: OpEntry, args: Sequence[torch.Tensor], kwargs: dict[str, Any]) -> Any:
        sch = op.schema
        names, specs = self._specs(sch, args, kwargs)
        keep = []

        def buffer(t: torch.Tensor, what: str, element: ElementType | None = None,
                   shape: tuple[int, ...] | None = None) -> HostBuffer:
            element = element or self._element_of.get(t.dtype)
            if element is None:
                raise SchemaError("%s: %s is %s, which no customop kernel takes"
                                  % (sch.name, what, t.dtype))
            t = t.detach().contiguous()
            keep.append(t)
            return HostBuffer(element, t.data_ptr(), tuple(t.shape) if shape is None else shape)

        operands = []
        for p, a in zip(sch.operands, args):
            if a.device.type != "cpu":
                raise SchemaError("%s: operand `%s` is on %s; eager calls take CPU tensors"
                                  % (sch.name, p.name, a.device))
            if p.kind == "external":
                operands.append(buffer(_as_bytes(a), "operand `%s`" % p.name))
                continue
            e = self._operand_element(sch, p, a)
            operands.append(buffer(a, "operand `%s`" % p.name, e,
                                   logical_shape(sch, p.name, e, tuple(a.shape))
                                   if e is not None and e.is_packed else None))
        results = self._empties(sch, specs)
        self._handlers.call(op, operands, [buffer(r, "result", s.dtype, tuple(s.shape))
                                           for r, s in zip(results, specs)], kwargs)
        return _write_back(sch, names, args, results)

    def _xla(self, sch: OpSchema, args: Sequence[torch.Tensor], kwargs: dict[str, Any]) -> Any:
        from torch_xla.experimental.stablehlo_custom_call import stablehlo_custom_call

        names, specs = self._specs(sch, args, kwargs)
        packed = [s.name for s in specs if s.dtype.is_packed] + [
            n for n, a, p in zip(names, args, sch.operands)
            if self._operand_element(sch, p, a) is not None
            and self._operand_element(sch, p, a).is_packed]
        if packed:
            raise SchemaError("%s: `%s` holds packed sub-byte elements, which torch_xla would "
                              "pass to XLA as bytes of another shape; run the op from JAX or "
                              "the Rust runner" % (sch.name, packed[0]))
        config = backend_config(sch, kwargs)
        outs = stablehlo_custom_call(list(args), sch.target, [list(s.shape) for s in specs],
                                     [self.torch_dtype(s.dtype) for s in specs],
                                     sch.side_effect, config, 4)
        outs = [outs] if len(specs) == 1 else list(outs)
        return _write_back(sch, names, args, outs)


def _write_back(sch: OpSchema, names: list[str], args: Sequence[torch.Tensor],
                results: Sequence[torch.Tensor]) -> Any:
    """Copies each updated external's new state, and each `#[inout]` tensor's new values, into
    its operand (the schema's `Tensor(a!)`) and returns the other results, as torch expects
    them: one tensor, or a tuple."""
    returned = []
    for spec, r in zip(sch.results, results):
        if isinstance(spec, UpdatedExternal):
            target = args[names.index(spec.param)]
            target.copy_(r.view(target.dtype))
        elif isinstance(spec, UPDATED):
            args[names.index(spec.param)].copy_(r)
        else:
            returned.append(r)
    return _returned(returned)


def _returned(outs: list[torch.Tensor]) -> Any:
    """What a kernel returns to torch: None for no result (an op that only updates its
    arguments, `-> ()`), the tensor for one, a tuple for several."""
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    """An external's tensor as uint8 (an int8 buffer is viewed, not converted)."""
    if t.dtype == torch.int8:
        return t.view(torch.uint8)
    return t
