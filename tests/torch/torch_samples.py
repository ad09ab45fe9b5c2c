"""The example ops' samples (tests/xla/samples.py, numpy and ml_dtypes) as torch tensors: the
types torch has, by value; the packed sub-byte types as customop's torch ops take them; and what
this torch cannot hold, named. Needs tests/xla on sys.path (as the test files set it)."""

import numpy as np
import torch

from customop.torch.native import shim_has_dtype
from quant_refs import BITS, packed_bytes
from samples import Descriptor
from torch_helpers import LIB, ops

F4 = LIB.torch_dtype(LIB.library.manifest.element_types["f4E2M1FN"])


def to_torch(a: np.ndarray) -> torch.Tensor:
    """numpy to torch, ml_dtypes' bfloat16 and float8 through float32 (float8_e8m0fnu by its
    bits), the packed sub-byte types as torch holds them (`packed`)."""
    name = a.dtype.name
    if name in BITS:
        return packed(a)
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return torch.from_numpy(a.astype(np.float32)).to(getattr(torch, name))
    if name == "float8_e8m0fnu":
        return torch.from_numpy(np.array(a, order="C").view(np.uint8)).view(
            torch.float8_e8m0fnu)
    # (np.ascontiguousarray would make a 0-d array 1-d.)
    return torch.from_numpy(np.array(a, order="C"))


def packed(a: np.ndarray) -> torch.Tensor:
    """ml_dtypes' sub-byte array `a` as customop's torch ops take it: XLA's packing, in
    `uint8`, or `float4_e2m1fn_x2` for float4_e2m1fn where torch has it (F4)."""
    data = torch.from_numpy(packed_bytes(a))
    return data.view(F4) if a.dtype.name == "float4_e2m1fn" else data


def missing_dtype(call) -> bool:
    """Whether the op of `call` has a tensor of a type this torch's native kernels have no C
    dtype for (torch 2.9 has no float8_e8m0fnu): then every call is refused by name."""
    sch = LIB.library.op(call.op).schema
    names = {getattr(getattr(p, "dtype", None), "name", None) for p in (*sch.operands,
                                                                       *sch.results)}
    return LIB.native and "f8E8M0FNU" in names and not shim_has_dtype("float8_e8m0fnu")


def bits(t: torch.Tensor) -> torch.Tensor:
    """`t`, or its bytes for the dtypes torch compares and stacks no values of."""
    if t.dtype in (torch.float4_e2m1fn_x2, torch.float8_e8m0fnu):
        return t.view(torch.uint8)
    return t


def any_tensor(a: np.ndarray) -> torch.Tensor:
    """`a` in torch, or (a type torch cannot take from numpy: the newer fp8 ones) bytes of its
    shape: enough to reach an op's refusal."""
    if a.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", *BITS) or a.dtype.kind in "biufc":
        return to_torch(a)
    return torch.zeros(a.shape, dtype=torch.uint8)


def torch_attrs(attrs):
    """A call's attributes as torch takes them: descriptors packed as `str`, numpy scalars as
    Python numbers."""
    out = {}
    for k, v in attrs.items():
        if isinstance(v, Descriptor):
            v = LIB.pack_attr(v.name, v.value)
        elif isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


def packet(name):
    """The op overload of `ns::op`, `torch.ops.ns.op.default`."""
    ns, _, op = name.partition("::")
    return getattr(getattr(ops, ns), op).default
