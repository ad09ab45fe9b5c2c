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

Eager calls run natively by default (`load(path)`, torch 2.9): the cdylib registers each op's
CPU and Meta kernels in torch's dispatcher through torch's stable C ABI
(`customop_torch_register`), so a call goes from the dispatcher straight to Rust, which reads
the tensors, allocates the results and runs the op's generated handler on them. An op with a
`str`, descriptor or list attribute (which torch 2.9's stable ABI cannot pass to a kernel) is
registered natively under a hidden name, `<ns>::_native_<op>`, whose schema carries those
attributes as tensors; its public CPU kernel is a short Python adapter that converts them.

`load(path, native=False)` chooses the Python path instead: the CPU kernel is a Python function
calling `customop_call` (`customop.eager`) through ctypes. Both paths run the op's handler on a
call frame, so a call is checked exactly as an XLA call is (operand and result types and shapes,
descriptor bytes, attribute types); a refusal, kernel error or panic raises `KernelError`. The
choice is logged (logger `customop.torch`, level INFO) and never made silently: on a torch the
native path does not support, `load` raises `NativeUnavailable`.

An op that declares a backward op (`#[custom_op(vjp = ...)]`) is differentiable: its autograd
kernel saves the residuals the backward names and runs the backward op in `backward()`. Through
any other op, `backward()` raises `NoGradientError`, naming the op. `torch.func.vmap` runs each
op by its batching rule (`customop.jax_ops.batching_rule`: the batch folded into the rows, or
one call per element).
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .eager import Handlers, HostBuffer, KernelError
from .manifest import ElementType, OpEntry, OpSchema, TensorParam, UpdatedExternal
from .schema import (ResultSpec, SchemaError, attr_bytes, backend_config, operand_names,
                     result_specs)
# The torch_xla export rewriter, re-exported (it shares only imports with the registration).
from .torch_export import Exported, ExportError, External, export
from .xla import Library

__all__ = ["load", "export", "TorchLibrary", "Exported", "External", "KernelError",
           "ExportError", "NoGradientError", "NativeUnavailable", "NATIVE_TORCH"]

log = logging.getLogger("customop.torch")

# The torch versions whose stable C ABI the native kernels are written against: >= 2.9, < 2.10.
NATIVE_TORCH = ((2, 9), (2, 10))


class NoGradientError(RuntimeError):
    """`backward()` reached a customop op, which declares no gradient."""


class NativeUnavailable(RuntimeError):
    """`load(path)` asked for native kernels on a torch whose stable C ABI customop does not
    support; `load(path, native=False)` uses the Python path."""


_LOADED: dict[str, TorchLibrary] = {}


def load(path: str | os.PathLike[str], native: bool = True) -> TorchLibrary:
    """Registers every op of the kernel cdylib at `path` as `torch.ops.<ns>.<op>` (once per
    process and library) and returns the `TorchLibrary`. `native` (the default) registers
    the Rust kernels in torch's dispatcher through torch's stable C ABI (torch 2.9; anything
    else raises `NativeUnavailable`); `native=False` runs eager calls through the Python
    path. Loading one library twice with different `native` raises `ValueError`."""
    key = os.path.realpath(str(path))
    if key not in _LOADED:
        _LOADED[key] = TorchLibrary(key, native=native)
    elif _LOADED[key].native != native:
        raise ValueError("%s is already registered with native=%s in this process"
                         % (key, _LOADED[key].native))
    return _LOADED[key]


def native_unsupported_reason() -> str | None:
    """Why this torch cannot take native kernels, or None when it can."""
    m = re.match(r"(\d+)\.(\d+)", torch.__version__)
    version = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    low, high = NATIVE_TORCH
    if not low <= version < high:
        return ("customop's native torch kernels support torch >= %d.%d, < %d.%d (its stable C "
                "ABI); this is torch %s" % (*low, *high, torch.__version__))
    return None


_KERNEL_ERROR = re.compile(r"customop\[(kernel):(\d+)\] |customop\[(schema)\] ")


def _reraise(e: RuntimeError) -> None:
    """Raises the customop error a native kernel's torch exception carries (`KernelError`
    with its code, or `SchemaError`), if it carries one."""
    m = _KERNEL_ERROR.search(str(e))
    if m is None:
        return
    message = str(e)[m.end():].split("\nException raised from", 1)[0]
    if m.group(1):
        raise KernelError(message, int(m.group(2))) from None
    raise SchemaError(message) from None


class TorchLibrary:
    """A kernel cdylib's ops, registered with torch: schema from the manifest's schema string,
    a fake (meta) implementation from the shape rules, a CPU implementation that runs the Rust
    kernel, an XLA implementation that emits `stablehlo_custom_call` to the op's target, and an
    autograd kernel that refuses `backward()`."""

    def __init__(self, path: str, native: bool = True) -> None:
        self.library = Library(path)
        self.path = self.library.path
        self.native = native
        if native:
            reason = native_unsupported_reason()
            if reason is not None:
                raise NativeUnavailable(reason + "; load(path, native=False) runs ops through "
                                        "the Python path")
            self._native_init()
        self._handlers = Handlers(self.library)
        types = self.library.manifest.element_types.values()
        # torch's dtype of each element type, by its numpy name (torch spells them alike).
        self._torch_dtypes = {t.name: getattr(torch, t.numpy) for t in types}
        self._element_of = {getattr(torch, t.numpy): t for t in types}
        self._fragments: dict[str, torch.library.Library] = {}
        self._registered_with_jax = False
        adapted = []
        for op in self.library.entries():
            if self._define(op):
                adapted.append(op.name)
        if native:
            log.info("customop: %s: %d ops with native CPU and Meta kernels (torch's stable C "
                     "ABI)%s", self.path, len(self.library.entries()),
                     "; through a Python adapter (str or list attributes): " + ", ".join(adapted)
                     if adapted else "")
        else:
            log.info("customop: %s: %d ops on the Python path (native=False)", self.path,
                     len(self.library.entries()))

    def _native_init(self) -> None:
        cdll = self.library.cdll
        self._libtorch = os.path.join(os.path.dirname(torch.__file__), "lib",
                                      "libtorch_cpu.so").encode()
        reg = cdll.customop_torch_register
        reg.restype = ctypes.c_int32
        reg.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                        ctypes.c_size_t]
        schema = cdll.customop_torch_native_schema
        schema.restype = ctypes.c_int32
        schema.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        self._c_register, self._c_native_schema = reg, schema

    def _register_native(self, frag: torch.library.Library, op: OpEntry, name: str,
                         define: bool) -> None:
        """Registers op `op`'s native kernels for the torch op `name` (defining it first with
        the native schema when `define`)."""
        buf = ctypes.create_string_buffer(8192)
        if define:
            if self._c_native_schema(op.name.encode(), name.encode(), buf, len(buf)) != 0:
                raise RuntimeError("%s: %s" % (op.name, buf.value.decode()))
            frag.define(buf.value.decode().split("::", 1)[1])
        if self._c_register(self._libtorch, op.name.encode(), name.encode(), buf, len(buf)) != 0:
            raise RuntimeError("cannot register native kernels of %s from %s: %s"
                               % (op.name, self.path, buf.value.decode()))

    # --- registration ------------------------------------------------------------------------

    def _define(self, op: OpEntry) -> bool:
        """Defines and registers op `op`; True when its native kernel sits behind a Python
        adapter."""
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

        def xla(*args: Any, **kwargs: Any) -> Any:
            return self._xla(sch, args, kwargs)

        def fake(*args: Any, **kwargs: Any) -> Any:
            return self._fake(sch, args, kwargs)

        adapted = False
        if not self.native:
            def cpu(*args: Any, **kwargs: Any) -> Any:
                return self._eager(op, args, kwargs)

            frag.impl(name, cpu, "CPU")
            torch.library.register_fake(sch.name, fake, lib=frag)
        else:
            carried = {p.name: p for p in sch.attributes if p.type.kind in _AS_TENSOR}
            if not carried:
                # CPU and Meta kernels in Rust; the fake implementation (which FakeTensorMode
                # prefers, and which takes symbolic sizes) stays in Python, without the Meta
                # kernel `register_fake` would add.
                self._register_native(frag, op, sch.name, define=False)
                _register_fake_only(sch.name, fake)
            else:
                adapted = True
                hidden = "%s::_native_%s" % (ns, name)
                self._register_native(frag, op, hidden, define=True)
                frag.impl(name, _adapter(sch, carried, getattr(getattr(torch.ops, ns),
                                                               "_native_" + name).default),
                          "CPU")
                torch.library.register_fake(sch.name, fake, lib=frag)
        frag.impl(name, xla, "XLA")
        packet = getattr(getattr(torch.ops, ns), name)
        frag.impl(name, _autograd_kernel(packet.default, sch), "Autograd", with_keyset=True)
        torch.library.register_vmap(sch.name, _vmap_rule(sch, packet.default), lib=frag)
        if sch.side_effect:
            # Keeps an op whose result is unused in torch.export's graph, so that `export` can
            # tell when torch_xla drops it.
            torch.fx.node.has_side_effect(getattr(getattr(torch.ops, ns), name).default)
        return adapted

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


# The attribute kinds torch 2.9's stable ABI cannot pass to a kernel, carried as tensors.
_AS_TENSOR = ("str", "descriptor", "array")


def _register_fake_only(qualname: str, fake: Callable[..., Any]) -> None:
    """Registers `fake` as the op's fake implementation (used by FakeTensorMode, and so by
    torch.compile and torch.export) without the Python Meta kernel `torch.library.register_fake`
    adds: the op's Meta kernel is the native one."""
    from torch._library.fake_impl import Kernel
    from torch._library.simple_registry import singleton

    singleton.find(qualname).fake_impl.kernels.append(Kernel(fake, "customop.torch"))


def _adapter(sch: OpSchema, carried: dict[str, Any], native: Any) -> Callable[..., Any]:
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


def _autograd_kernel(op: Any, sch: OpSchema) -> Any:
    """The op's autograd kernel: the op runs below autograd as usual, and when an input needs a
    gradient its outputs are tied to a node whose backward runs the op's declared backward op
    (`vjp = ...`, with the forward inputs, attributes and outputs it names as residuals, saved
    with `save_for_backward`), or, for an op that declares none, raises `NoGradientError`
    (without it, torch only warns and leaves `.grad` None)."""
    name = sch.name
    vjp = sch.vjp

    def below_autograd(keyset: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            with torch._C._AutoDispatchBelowAutograd():
                return op.redispatch(keyset & torch._C._after_autograd_keyset, *args, **kwargs)
        except RuntimeError as e:
            # A native kernel's error, raised as customop's own.
            _reraise(e)
            raise

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

    class WithGradient(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, keyset: Any, kwargs: dict[str, Any], *args: Any) -> Any:
            output = below_autograd(keyset, args, kwargs)
            outs = list(output) if isinstance(output, tuple) else [output]
            ctx.kwargs = dict(kwargs)
            ctx.n_args = len(args)
            # The residuals: every operand and output (the backward op reads those it names).
            ctx.save_for_backward(*args, *outs)
            return output

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            assert vjp is not None
            # Looked up here: the backward op may be defined after the forward.
            ns, _, short = vjp.op.partition("::")
            backward_op = getattr(getattr(torch.ops, ns), short).default
            saved = ctx.saved_tensors
            args, outs = saved[:ctx.n_args], saved[ctx.n_args:]
            # A cotangent autograd did not materialise is zero.
            cts = [g.contiguous() if g is not None else torch.zeros_like(o)
                   for g, o in zip(grads, outs)]
            bargs, battrs = vjp.backward_arguments(sch, args, outs, cts, ctx.kwargs)
            got = backward_op(*bargs, **battrs)
            got = list(got) if isinstance(got, tuple) else [got]
            return (None, None, *vjp.input_gradients(sch, got))

    function = NoGradient if vjp is None else WithGradient

    def kernel(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        if torch.is_grad_enabled() and any(
                isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return function.apply(keyset, kwargs, *args)
        return below_autograd(keyset, args, kwargs)

    return kernel


def _vmap_rule(sch: OpSchema, op: Any) -> Callable[..., Any]:
    """The op's `torch.func.vmap` rule (`register_vmap`), as in JAX (`customop.jax_ops`): the
    batch folded into the leading dimension when the op's partition rule says its rows are
    independent (`rows`), one call per batch element otherwise (`sequential`)."""
    from .jax_ops import batching_rule

    rule = batching_rule(sch)
    kinds = [isinstance(p, TensorParam) for p in sch.operands]
    n_operands = len(kinds)
    returned = sum(1 for r in sch.results if not isinstance(r, UpdatedExternal))

    def vmap(info: Any, in_dims: tuple[Any, ...], *args: Any, **kwargs: Any) -> Any:
        size = info.batch_size
        dims = list(in_dims[:n_operands])
        externals_batched = any(d is not None for d, t in zip(dims, kinds) if not t)
        if size == 0:
            # No call: the result shapes of one element, from the op's Meta kernel.
            one = [torch.empty([n for k, n in enumerate(a.shape) if k != d], dtype=a.dtype,
                               device="meta") if d is not None else a.to("meta")
                   for a, d in zip(args, dims)]
            out = op(*one, *args[n_operands:], **kwargs)
            device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
            outs = [torch.empty((0, *r.shape), dtype=r.dtype, device=device)
                    for r in (list(out) if isinstance(out, tuple) else [out])]
        elif rule == "rows" and not externals_batched:
            flat = []
            for a, d, tensor in zip(args, dims, kinds):
                if tensor:
                    a = a.movedim(d, 0) if d is not None else a.expand(size, *a.shape)
                    a = a.reshape(size * a.shape[1], *a.shape[2:])
                flat.append(a)
            out = op(*flat, *args[n_operands:], **kwargs)
            outs = list(out) if isinstance(out, tuple) else [out]
            outs = [r.reshape(size, r.shape[0] // size, *r.shape[1:]) for r in outs]
        else:
            per = []
            for b in range(size):
                one = [a.select(d, b) if d is not None else a for a, d in zip(args, dims)]
                out = op(*one, *args[n_operands:], **kwargs)
                per.append(list(out) if isinstance(out, tuple) else [out])
            outs = [torch.stack([p[k] for p in per]) for k in range(returned)]
        if returned == 1:
            return outs[0], 0
        return tuple(outs), tuple(0 for _ in outs)

    return vmap


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
