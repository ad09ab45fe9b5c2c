"""The quantizers' references in numpy and ml_dtypes, written independently of customop, and
XLA's packing of sub-byte elements as numpy writes it, shared by the JAX and the torch tests of
the quantized kernels."""

import ml_dtypes
import numpy as np

BITS = {"int4": 4, "uint4": 4, "float4_e2m1fn": 4, "int2": 2, "uint2": 2}


def packed_bytes(a: np.ndarray) -> np.ndarray:
    """ml_dtypes' sub-byte array `a` (one element a byte) as XLA packs it: `8 // bits` elements
    a byte along the last dimension (a multiple of them), low bits first."""
    bits = BITS[a.dtype.name]
    per = 8 // bits
    codes = np.array(a, order="C").view(np.uint8) & ((1 << bits) - 1)
    lanes = codes.reshape(*a.shape[:-1], a.shape[-1] // per, per).astype(np.uint16)
    return (lanes << (bits * np.arange(per))).sum(-1).astype(np.uint8)


def quantize_i4_ref(w, group):
    """numpy's quantization of `w` ([K, N]) to i4 with a scale per `group` rows."""
    k, n = w.shape
    blocks = w.reshape(k // group, group, n)
    mx = np.abs(blocks).max(axis=1)
    scales = np.where(mx > 0, mx / np.float32(7), np.float32(1)).astype(np.float32)
    q = np.clip(np.round(blocks / scales[:, None, :]), -8, 7).astype(np.int32)
    return q.reshape(k, n).astype(ml_dtypes.int4), scales


def quantize_mxfp4_ref(w):
    """OCP MX v1.0 in numpy and ml_dtypes: per 32 rows, 2^(floor(log2(max|w|)) - 2)."""
    k, n = w.shape
    blocks = w.reshape(k // 32, 32, n)
    mx = np.abs(blocks).max(axis=1)
    e = np.where(mx > 0, np.floor(np.log2(np.where(mx > 0, mx, 1))), -125).astype(np.int64)
    shared = np.clip(e - 2, -127, 127)
    scales = np.exp2(shared.astype(np.float64)).astype(ml_dtypes.float8_e8m0fnu)
    q = (blocks.astype(np.float64) / np.exp2(shared)[:, None, :]).astype(np.float32)
    return q.astype(ml_dtypes.float4_e2m1fn).reshape(k, n), scales
