"""The StableHLO export of a torch program as the running torch has it: torch_xla's
(`customop.torch.export`, torch 2.9) or torchax's (`customop.torchax.export`, torch 2.10 and
later, where torch_xla does not run). Either gives the program's text and a run on XLA that
returns torch tensors (also through the Rust runner when the test command's cross-check is
on), so the tests that export a torch program run on every torch they run on."""

import importlib.util

import numpy as np

import customop.torch as ct
from customop.crosscheck import cross_check
from customop.torch.exporter import from_numpy

TORCH_XLA = importlib.util.find_spec("torch_xla") is not None
NAME = "torch_xla" if TORCH_XLA else "torchax"


class _Torchax:
    def __init__(self, ep, lib):
        import customop.torchax as cx

        self._cx, self._ep, self._lib = cx, ep, lib
        self.exported = cx.export(ep, lib)
        self.text = self.exported.mlir_module()

    def run(self, *inputs):
        args = [np.asarray(a) for a in self._cx.arguments(self._ep, *inputs)]
        out = self.exported.call(*args)
        outs = [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
        cross_check(self._lib.path, self.text, args, outs, None)
        tensors = [from_numpy(np.array(o)) for o in outs]
        return tensors[0] if len(tensors) == 1 else tuple(tensors)


def export(ep, lib):
    """`ep` exported for `lib`'s ops by the running torch's exporter: `.text`, `.run(*inputs)`."""
    if TORCH_XLA:
        return ct.export(ep, lib)
    return _Torchax(ep, lib)
