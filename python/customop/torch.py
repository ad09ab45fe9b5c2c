"""customop ops in PyTorch: registered from a kernel cdylib's manifest as `torch.ops.<ns>.<op>`,
run eagerly on CPU tensors by the Rust kernel, exported by torch_xla to StableHLO whose external
arguments carry the `customop.external` annotation (`customop.torch_export`, re-exported here),
and run on XLA CPU with the Rust handlers.

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

Eager calls go through `customop_call` (`customop.eager`), which every cdylib exports: it
builds an XLA FFI call frame from the tensors and attributes and runs the op's generated
handler on it, so an eager call is checked exactly as an XLA call is (operand and result types
and shapes, descriptor bytes, attribute types); a kernel error or panic raises `KernelError`.

The ops have no gradient: `backward()` through one raises `NoGradientError`, naming the op.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch

from .eager import Handlers, HostBuffer, KernelError
from .manifest import ElementType, OpEntry, OpSchema, UpdatedExternal
from .schema import ResultSpec, SchemaError, backend_config, operand_names, result_specs
# The torch_xla export rewriter, re-exported (it shares only imports with the registration).
from .torch_export import Exported, ExportError, External, export
from .xla import Library

__all__ = ["load", "export", "TorchLibrary", "Exported", "External", "KernelError",
           "ExportError", "NoGradientError"]


class NoGradientError(RuntimeError):
    """`backward()` reached a customop op, which declares no gradient."""


_LOADED: dict[str, TorchLibrary] = {}


def load(path: str | os.PathLike[str]) -> TorchLibrary:
    """Registers every op of the kernel cdylib at `path` as `torch.ops.<ns>.<op>` (once per
    process and library) and returns the `TorchLibrary`."""
    key = os.path.realpath(str(path))
    if key not in _LOADED:
        _LOADED[key] = TorchLibrary(key)
    return _LOADED[key]


class TorchLibrary:
    """A kernel cdylib's ops, registered with torch: schema from the manifest's schema string,
    a fake (meta) implementation from the shape rules, a CPU implementation that runs the Rust
    kernel, an XLA implementation that emits `stablehlo_custom_call` to the op's target, and an
    autograd kernel that refuses `backward()`."""

    def __init__(self, path: str) -> None:
        self.library = Library(path)
        self.path = self.library.path
        self._handlers = Handlers(self.library)
        types = self.library.manifest.element_types.values()
        # torch's dtype of each element type, by its numpy name (torch spells them alike).
        self._torch_dtypes = {t.name: getattr(torch, t.numpy) for t in types}
        self._element_of = {getattr(torch, t.numpy): t for t in types}
        self._fragments: dict[str, torch.library.Library] = {}
        self._registered_with_jax = False
        for op in self.library.ops():
            self._define(op)

    # --- registration ------------------------------------------------------------------------

    def _define(self, op: OpEntry) -> None:
        sch = op.schema
        ns, _, name = sch.name.partition("::")
        frag = self._fragments.get(ns)
        if frag is None:
            frag = self._fragments[ns] = torch.library.Library(ns, "FRAGMENT")
        signature = op.schema_string[len(ns) + 2:]
        try:
            frag.define(signature)
        except RuntimeError as e:
            raise RuntimeError("cannot register %s from %s: %s (is it defined by another "
                               "library loaded in this process?)" % (sch.name, self.path, e)) from None

        def cpu(*args: Any, **kwargs: Any) -> Any:
            return self._eager(op, args, kwargs)

        def xla(*args: Any, **kwargs: Any) -> Any:
            return self._xla(sch, args, kwargs)

        def fake(*args: Any, **kwargs: Any) -> Any:
            return self._fake(sch, args, kwargs)

        frag.impl(name, cpu, "CPU")
        frag.impl(name, xla, "XLA")
        frag.impl(name, _autograd_kernel(getattr(getattr(torch.ops, ns), name).default, sch.name),
                  "Autograd", with_keyset=True)
        torch.library.register_fake(sch.name, fake, lib=frag)
        if sch.side_effect:
            # Keeps an op whose result is unused in torch.export's graph, so that `export` can
            # tell when torch_xla drops it.
            torch.fx.node.has_side_effect(getattr(getattr(torch.ops, ns), name).default)

    def op(self, name: str) -> Any:
        """The torch op packet of op `name` (`ns::op`): `torch.ops.ns.op`, what model code
        calls. (`lib.library.op(name)` is the op's manifest entry, an `OpEntry`.)"""
        self.library.op(name)
        ns, _, op = name.partition("::")
        return getattr(getattr(torch.ops, ns), op)

    def torch_dtype(self, t: ElementType) -> torch.dtype:
        """torch's dtype of element type `t`."""
        return self._torch_dtypes[t.name]

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
        dtypes = {n: self._element_of.get(a.dtype) for n, a in zip(names, args)}
        return names, result_specs(sch, shapes, kwargs, dtypes)

    def _fake(self, sch: OpSchema, args: Sequence[torch.Tensor], kwargs: dict[str, Any]) -> Any:
        _, specs = self._specs(sch, args, kwargs)
        device = args[0].device if args else None
        outs = [torch.empty(s.shape, dtype=self.torch_dtype(s.dtype), device=device)
                for s in specs if s.kind != UpdatedExternal.kind]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _eager(self, op: OpEntry, args: Sequence[torch.Tensor], kwargs: dict[str, Any]) -> Any:
        sch = op.schema
        names, specs = self._specs(sch, args, kwargs)
        keep = []

        def buffer(t: torch.Tensor, what: str) -> HostBuffer:
            element = self._element_of.get(t.dtype)
            if element is None:
                raise SchemaError("%s: %s is %s, which no customop kernel takes"
                                  % (sch.name, what, t.dtype))
            t = t.detach().contiguous()
            keep.append(t)
            return HostBuffer(element, t.data_ptr(), tuple(t.shape))

        operands = []
        for p, a in zip(sch.operands, args):
            if a.device.type != "cpu":
                raise SchemaError("%s: operand `%s` is on %s; eager calls take CPU tensors"
                                  % (sch.name, p.name, a.device))
            operands.append(buffer(_as_bytes(a) if p.kind == "external" else a,
                                   "operand `%s`" % p.name))
        results = [torch.empty(s.shape, dtype=self.torch_dtype(s.dtype)) for s in specs]
        self._handlers.call(op, operands, [buffer(r, "result") for r in results], kwargs)
        return _write_back(sch, names, args, results)

    def _xla(self, sch: OpSchema, args: Sequence[torch.Tensor], kwargs: dict[str, Any]) -> Any:
        from torch_xla.experimental.stablehlo_custom_call import stablehlo_custom_call

        names, specs = self._specs(sch, args, kwargs)
        config = backend_config(sch, kwargs)
        outs = stablehlo_custom_call(list(args), sch.target, [list(s.shape) for s in specs],
                                     [self.torch_dtype(s.dtype) for s in specs],
                                     sch.side_effect, config, 4)
        outs = [outs] if len(specs) == 1 else list(outs)
        return _write_back(sch, names, args, outs)

    def _register_with_jax(self) -> None:
        if not self._registered_with_jax:
            self.library.register()
            self._registered_with_jax = True


def _no_gradient_message(op: str) -> str:
    return ("%s has no gradient: customop ops declare no backward, so backward() cannot go "
            "through it. Call it on detached inputs (x.detach()) or under torch.no_grad() when "
            "no gradient needs to flow through it." % op)


@torch.library.custom_op("customop::no_gradient", mutates_args=())
def _no_gradient(grad: torch.Tensor, shape: list[int], op: str) -> torch.Tensor:
    """What backward through a customop op computes: an error. An op, not a Python `raise` in
    the autograd node, so that torch.compile (which traces the backward ahead of time) compiles
    it into the backward graph, and only running that backward raises."""
    raise NoGradientError(_no_gradient_message(op))


@_no_gradient.register_fake
def _(grad: torch.Tensor, shape: list[int], op: str) -> torch.Tensor:
    return grad.new_empty(shape)


def _autograd_kernel(op: Any, name: str) -> Any:
    """The op's autograd kernel: the op runs below autograd as usual, and when an input needs a
    gradient its outputs are tied to a node whose backward raises `NoGradientError` (without
    it, torch only warns and leaves `.grad` None)."""

    def below_autograd(keyset: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with torch._C._AutoDispatchBelowAutograd():
            return op.redispatch(keyset & torch._C._after_autograd_keyset, *args, **kwargs)

    class NoGradient(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, keyset: Any, kwargs: dict[str, Any], *args: Any) -> Any:
            ctx.shapes = [list(a.shape) if isinstance(a, torch.Tensor) else None for a in args]
            return below_autograd(keyset, args, kwargs)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            grad = next(g for g in grads if g is not None)
            return (None, None, *[
                _no_gradient(grad, shape, name) if needed else None
                for shape, needed in zip(ctx.shapes, ctx.needs_input_grad[2:])])

    def kernel(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        if torch.is_grad_enabled() and any(
                isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return NoGradient.apply(keyset, kwargs, *args)
        return below_autograd(keyset, args, kwargs)

    return kernel


def _write_back(sch: OpSchema, names: list[str], args: Sequence[torch.Tensor],
                results: Sequence[torch.Tensor]) -> Any:
    """Copies each updated external's new state into its operand (the schema's `Tensor(a!)`)
    and returns the other results, as torch expects them: one tensor, or a tuple."""
    returned = []
    for spec, r in zip(sch.results, results):
        if isinstance(spec, UpdatedExternal):
            target = args[names.index(spec.param)]
            target.copy_(r.view(target.dtype))
        else:
            returned.append(r)
    return returned[0] if len(returned) == 1 else tuple(returned)


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    """An external's tensor as uint8 (an int8 buffer is viewed, not converted)."""
    if t.dtype == torch.int8:
        return t.view(torch.uint8)
    return t
