"""customop ops in PyTorch: registered from a kernel cdylib's manifest as `torch.ops.<ns>.<op>`,
run eagerly on CPU tensors by the Rust kernel, exported by torch_xla to StableHLO whose external
arguments carry the `customop.external` annotation (`customop.torch.exporter`, re-exported here),
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

An op that declares a backward op (`#[custom_op(vjp = ...)]`) is differentiable in reverse mode:
its autograd kernel saves the residuals the backward names and runs the backward op in
`backward()` (torch.func.grad, vjp and jacrev too). One that declares a tangent op
(`jvp = ...`) is differentiable in forward mode (torch.func.jvp, jacfwd, forward_ad). Without
the rule a transform needs, `backward()` raises `NoGradientError` and a forward-mode tangent
`NoForwardRuleError`, naming the op, instead of a missing or zero derivative. `torch.func.vmap`
runs each
op by its batching rule (`customop.batching.batching_rule`: the batch folded into the rows, or
one call per element).

Modules: `library` (TorchLibrary: definition and registration), `native` (native kernels),
`autograd`, `vmap`, `exporter` (torch_xla export annotated). They import customop's core,
never `customop.xla`.
"""

from __future__ import annotations

import os

from ..eager import KernelError
from .autograd import NoForwardRuleError, NoGradientError, NotDifferentiableError
from .exporter import Exported, ExportError, External, TorchXlaUnavailable, export
from .library import TorchLibrary
from .native import NATIVE_TORCH, NativeUnavailable, native_unsupported_reason
from .unloaded import OpNotLoadedError, install

__all__ = ["load", "export", "TorchLibrary", "Exported", "External", "KernelError",
           "ExportError", "TorchXlaUnavailable", "NoGradientError", "NoForwardRuleError", "NotDifferentiableError",
           "NativeUnavailable", "NATIVE_TORCH", "native_unsupported_reason", "OpNotLoadedError"]

_LOADED: dict[str, TorchLibrary] = {}
# `torch.ops.ns.op` of an op torch does not have says to load its library (OpNotLoadedError).
install(lambda: _LOADED.values())


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
