"""What the torch test files share: the example library loaded on the path the run asks for
(CUSTOMOP_TORCH_NATIVE: 1, native kernels, the default; 0, the Python path), the seed op's
external and its arithmetic by hand, and a module wrapping a function."""

import math
import os

import numpy as np
import torch

import customop.torch as ct

LIB = ct.load(os.environ["CUSTOMOP_KERNELS"],
              native=os.environ.get("CUSTOMOP_TORCH_NATIVE", "1") == "1")
ops = torch.ops


def blob(**kw):
    value = {"gain": 2.0, "bias": -1, "seed": 42, "tag": b"customop seed!!!"}
    value.update(kw)
    return LIB.pack("my_lib::Blob", value)


def seed_expected(x, b):
    """saturate_i8(round(gain * row sum) + bias), by hand."""
    out = []
    for row in x.tolist():
        v = b["gain"] * sum(np.float32(r) for r in row)
        v = int(math.copysign(math.floor(abs(v) + 0.5), v)) + b["bias"]
        out.append(max(-128, min(127, v)))
    return out


class Wrap(torch.nn.Module):
    """A module whose forward is `fn(self, *inputs)`, with `buffers` registered by name."""

    def __init__(self, fn, **buffers):
        super().__init__()
        self.fn = fn
        for k, v in buffers.items():
            self.register_buffer(k, v)

    def forward(self, *xs):
        return self.fn(self, *xs)
