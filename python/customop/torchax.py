"""StableHLO export of a PyTorch program on a torch that torch_xla does not support (2.10 and
later), through torchax (PyTorch programs run on JAX): each op of a customop library is
registered with torchax as its JAX call (`customop.xla`), torchax turns the `torch.export`
program into a JAX function, and `customop.xla.export` exports that with the library's custom
calls allowed and every external argument annotated, named after the module's buffer (or the
forward's input) it is.

    lib = customop.torch.load(path)
    ep = torch.export.export(model, (x,))
    exp = customop.torchax.export(ep, lib)     # a jax.export.Exported
    customop.xla.externals(exp)                # [External(index=0, name='external', ...)]
    y = exp.call(*customop.torchax.arguments(ep, x))

A bridge between the two front ends: it imports `customop.torch`'s registration (the ops must
be `torch.ops` ops, `customop.torch.load`) and `customop.xla`; neither imports it. An op that
updates an external (`&mut`) is refused: torch writes the new state in place, which a JAX
function cannot. Importing torchax (0.0.14.dev20261026, torch 2.15) breaks `torch.compile` for the
rest of the process ("PyTorch is not linked with support for jax devices"): export in a process
of its own, or after the process's compiling is done.
"""

from __future__ import annotations

from typing import Any

from .annotate import ExportError
from .torch import TorchLibrary
from .xla import Library
from .xla import export as xla_export

__all__ = ["export", "arguments", "ExportError"]

# The customop libraries registered with torchax, by cdylib path (a registration is for the
# process).
_REGISTERED: dict[str, Library] = {}


def _register(lib: TorchLibrary) -> Library:
    """`lib`'s ops as torchax ops (their JAX calls) and its handlers with jax; once."""
    import torch
    from torchax.ops import ops_registry

    xla = _REGISTERED.get(lib.path)
    if xla is not None:
        return xla
    xla = Library(lib.path)
    xla.register()
    for entry in xla.entries():
        ns, _, short = entry.name.partition("::")
        packet = getattr(getattr(torch.ops, ns), short)

        def call(*args: Any, _name: str = entry.name, **kwargs: Any) -> Any:
            out = xla.call(_name, *args, **kwargs)
            return tuple(out) if isinstance(out, list) else out

        ops_registry.register_torch_dispatch_op(packet.default, call)
    _REGISTERED[lib.path] = xla
    return xla


def _state_names(ep: Any) -> list[str]:
    """The names of the program's states, in the order torchax passes them: parameters,
    buffers, then lifted constants."""
    sig = ep.graph_signature
    names = list(sig.parameters) + list(sig.buffers)
    names += list(getattr(sig, "lifted_tensor_constants", []))
    return names


def arguments(ep: Any, *inputs: Any) -> list[Any]:
    """The exported function's arguments for a call with the forward's `inputs`: the module's
    states (parameters, buffers: externals among them) as jax arrays, then the inputs."""
    import torchax.export as tx

    states, _ = tx.exported_program_to_jax(ep)
    return [*states, *(_to_jax(i) for i in inputs)]


def export(ep: Any, lib: TorchLibrary) -> Any:
    """Exports `ep` (a `torch.export.ExportedProgram` calling ops of `lib`, a
    `customop.torch.TorchLibrary`) through torchax and `jax.export`: a `jax.export.Exported`
    whose custom calls are the library's ops and whose external arguments are annotated
    `customop.external = {...}`, named after the buffer or input they are. Refuses, with an
    `ExportError`, an op that updates an external in place."""
    import torch
    import torchax.export as tx

    if not isinstance(lib, TorchLibrary):
        raise TypeError("export(ep, lib): lib is what customop.torch.load returned")
    by_name = {op.name: op.schema for op in lib.library.entries()}
    for node in ep.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            sch = by_name.get(node.target._schema.name)
            mutable = [p.name for p in sch.externals if p.mutable] if sch is not None else []
            if mutable:
                raise ExportError(
                    "%s updates its external `%s` (`&mut`) in place, which a JAX function "
                    "cannot: call this op from JAX (Library.call returns the new state) or "
                    "from the Rust builder" % (sch.name, mutable[0]))
            updated = ([p.name for p in sch.operands if getattr(p, "updated", False)]
                       if sch is not None else [])
            if updated:
                raise ExportError(
                    "%s updates tensor `%s` in place (`#[inout]`), which a JAX function cannot "
                    "do to a torch tensor: call this op from JAX (its result is the updated "
                    "tensor) or from the Rust builder" % (sch.name, updated[0]))
            if sch is not None:
                from .torch.exporter import refuse_packed

                refuse_packed(sch, "torchax")
    xla = _register(lib)
    states, fn = tx.exported_program_to_jax(ep)
    avals = tx.extract_avals(ep)
    n_states = len(states)

    def program(*flat: Any) -> Any:
        out = fn(list(flat[:n_states]), tuple(flat[n_states:]))
        # One result as itself, as the module's forward returns it.
        return out[0] if isinstance(out, (list, tuple)) and len(out) == 1 else out

    inputs = [s.arg.name for s in ep.graph_signature.input_specs
              if s.kind == torch.export.graph_signature.InputKind.USER_INPUT]
    names = _state_names(ep)[:n_states] + inputs
    return xla_export(program, *states, *avals, lib=xla, names=names)


def _to_jax(value: Any) -> Any:
    """A torch tensor (or anything numpy takes) as a jax array."""
    import jax.numpy as jnp
    import numpy as np
    import torch

    from .torch.exporter import to_numpy

    if isinstance(value, torch.Tensor):
        return jnp.asarray(to_numpy(value))
    return jnp.asarray(np.asarray(value))
