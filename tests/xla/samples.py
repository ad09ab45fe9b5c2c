"""One valid call of every op of the example kernel library, for the tests that run every op
through a transform (jax.vmap, torch.func.vmap, torch.library.opcheck): its operands as numpy
arrays (externals as packed uint8 arrays), its attributes, and a batch of operands for vmap.

`calls(lib)` needs a `customop.xla.Library` (to pack descriptors); descriptor attributes are
given as `Descriptor(name, value)` for each front end to pack its own way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class Descriptor:
    """A descriptor attribute's value, packed by each front end (bytes in JAX, a latin-1
    string in torch)."""
    name: str
    value: dict[str, Any]


@dataclass
class Call:
    """One op call: `operands` in the op's operand order, `attrs` by name, and `batched`: the
    operand indices that vmap batches (the others, externals among them, stay unbatched; an op
    with none, which takes no tensor, has nothing to batch). `torch` is False for an op that
    torch refuses by name (an `#[attrs]` dictionary, which no torch schema expresses, no tensor
    operand to dispatch on, a type parameter of several packed types, which torch holds alike as
    bytes). Packed sub-byte operands have an even last dimension, so that
    torch can hold them as bytes."""
    op: str
    operands: list[np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    batched: tuple[int, ...] = ()
    torch: bool = True

    def batch(self, size: int = 3) -> list[np.ndarray]:
        """The operands with a leading batch of `size` on the batched ones: element b is the
        operand with its values shifted by 0.25 b (positive values stay positive, casts keep
        the dtype)."""
        out = []
        for i, o in enumerate(self.operands):
            if i in self.batched:
                out.append(np.stack([_shift(o, 0.25 * b) for b in range(size)]))
            else:
                out.append(o)
        return out


def _shift(a: np.ndarray, by: float) -> np.ndarray:
    if a.dtype == np.bool_:
        return a if by == 0 else ~a
    if np.issubdtype(a.dtype, np.complexfloating):
        return (a + by).astype(a.dtype)
    return (a.astype(np.float64) + by).astype(a.dtype)


def _pos(shape: tuple[int, ...], dtype: Any = np.float32, seed: int = 0) -> np.ndarray:
    """Small positive values (1 to 4, never 13: `unlucky` panics on it)."""
    return np.random.default_rng(seed).uniform(1.0, 4.0, size=shape).astype(dtype)


# A value of every primitive descriptor field type (`example::FieldTypes`).
FIELD_TYPES = {"flag": True, "int8": -8, "int16": -16, "int32": -32, "int64": -64, "uint8": 8,
               "uint16": 16, "uint32": 32, "uint64": 64, "half": 0.5, "brain": 1.5,
               "single": 2.5, "double": 3.5, "f8e4m3fn": 4.0, "f8e5m2": 5.0, "f8e4m3": 6.0,
               "f8e3m4": 7.0, "f8e4m3fnuz": 8.0, "f8e5m2fnuz": 9.0, "f8e4m3b11fnuz": 10.0,
               "f8e8m0fnu": 16.0}

NORM_CFG = Descriptor("example::NormCfg", {"scale": 2.0, "shift": 0.5, "mode": "ScaleShift"})


def jax_attrs(lib: Any, attrs: dict[str, Any]) -> dict[str, Any]:
    """A call's attributes as `lib.ops` takes them: descriptors packed by `lib` (bytes)."""
    return {k: lib.pack(v.name, v.value) if isinstance(v, Descriptor) else v
            for k, v in attrs.items()}


def calls(lib: Any) -> list[Call]:
    """A call of every op in the example kernel library (the list is checked complete against
    the manifest by the tests that use it)."""
    def pack(name: str, value: dict[str, Any]) -> np.ndarray:
        return np.frombuffer(lib.pack(name, value), np.uint8).copy()

    x23 = _pos((2, 3))
    x24 = _pos((2, 4), seed=22)
    x46 = _pos((4, 6), seed=1)
    blob = pack("my_lib::Blob", {"gain": 2.0, "bias": -1, "seed": 7, "tag": [1] * 16})
    table = pack("example::Table4k", {"scale": 0.5, "len": 3, "values": [1.0] * 1022})
    scale = pack("example::Fp8Scale", {"scale": 0.5})
    q = (x23 / 0.5).astype(ml_dtypes.float8_e4m3fn)
    cplx = (x23 + 1j * x23[::-1]).astype(np.complex64)
    mask = np.array([[True, False, True], [False, True, False]])
    return [
        Call("example::array_attr", [], {"array": np.arange(4, dtype=np.int32)}, torch=False),
        Call("example::counter", [], {"index": 7}, torch=False),
        Call("example::aliasing", [x23.copy()], batched=(0,)),
        Call("example::dictionary_attr", [], {"secret": 3, "s": "x"}, torch=False),
        Call("example::unpack_int", [(np.arange(8) % 16 - 8).astype(ml_dtypes.int4).reshape(2, 4)],
             batched=(0,), torch=False),
        Call("example::matmul_i4", [x23, (np.arange(12) % 16 - 8).astype(ml_dtypes.int4)
                                    .reshape(3, 4), np.full((1, 4), 0.5, np.float32)],
             batched=(0,)),
        Call("example::matmul_i4_bwd", [x23, (np.arange(12) % 16 - 8).astype(ml_dtypes.int4)
                                        .reshape(3, 4), np.full((1, 4), 0.5, np.float32),
                                        _pos((2, 4), seed=21)], batched=(0, 3)),
        Call("example::matmul_u4_zp", [x23, (np.arange(12) % 16).astype(ml_dtypes.uint4)
                                       .reshape(3, 4), np.full((1, 4), 0.5, np.float32),
                                       np.full((1, 4), 8.0, np.float32)],
             batched=(0,)),
        Call("example::matmul_mxfp4", [_pos((2, 32), seed=18),
                                       (np.arange(32 * 4) % 16).astype(np.uint8).view(
                                           ml_dtypes.float4_e2m1fn).reshape(32, 4),
                                       np.full((1, 4), 127, np.uint8).view(
                                           ml_dtypes.float8_e8m0fnu)],
             batched=(0,)),
        Call("example::dequantize_mxfp4", [(np.arange(32 * 4) % 16).astype(np.uint8).view(
            ml_dtypes.float4_e2m1fn).reshape(32, 4), np.full((1, 4), 126, np.uint8).view(
                ml_dtypes.float8_e8m0fnu)], batched=(0,)),
        Call("example::quantize_i4", [_pos((4, 6), seed=19)], {"group": 2}, batched=(0,)),
        Call("example::quantize_mxfp4", [_pos((32, 4), seed=20)], batched=(0,)),
        Call("example::pack_i4", [np.arange(-4, 4, dtype=np.int32).reshape(2, 4)], batched=(0,)),
        Call("example::round_f4", [x24 - 2.0], batched=(0,)),
        Call("example::widen_f4", [(x24 - 2.0).astype(ml_dtypes.float4_e2m1fn)], batched=(0,)),
        Call("example::round_f8", [x23, np.zeros((2, 3), ml_dtypes.float8_e4m3fn)], batched=(0, 1)),
        Call("example::widen_f8", [q], batched=(0,)),
        Call("example::rms_norm_nd", [_pos((2, 2, 3), seed=13)], {"eps": np.float32(1e-5)},
             batched=(0,)),
        Call("example::rms_norm_nd_bwd", [x23, _pos((2, 3), seed=14)], {"eps": np.float32(1e-5)},
             batched=(0, 1)),
        Call("example::rms_norm_fwd", [_pos((2, 2, 3), seed=15)], {"eps": np.float32(1e-5)},
             batched=(0,)),
        Call("example::rms_norm_bwd", [_pos((2,), seed=16), x23, _pos((2, 3), seed=17)],
             batched=(0, 1, 2)),
        Call("example::scale_in_place", [x23.copy()], {"factor": np.float32(1.5)}, batched=(0,)),
        Call("example::cache_write", [_pos((4, 3), seed=11), _pos((3,), seed=12)], {"at": 2},
             batched=(0, 1)),
        Call("example::myadd_out", [x23, x23[::-1].copy(), np.zeros((2, 3), np.float32)],
             batched=(0, 1, 2)),
        Call("example::histogram_add", [x23, np.zeros(5, np.int64), np.array(0.5)],
             {"lo": np.float32(0.0), "hi": np.float32(5.0)}, batched=(0, 1, 2)),
        Call("example::sum_attrs", [x23.astype(np.float64)], {"scale": 2.0, "a": 1, "b": [0.5]},
             batched=(0,), torch=False),
        Call("example::add_offset", [pack("example::Offset", {"add": 0.5}), x23], batched=(1,)),
        Call("example::apply_stats", [pack("example::Stats", {"mean": 1.0, "spread": 2.0}), x23],
             batched=(1,)),
        Call("example::apply_taps", [pack("example::Taps", {"bias": 1.0,
                                                            "taps": [float(i) for i in range(16)]}),
                                     x23], batched=(1,)),
        Call("example::apply_taps_bwd", [pack("example::Taps", {"bias": 1.0, "taps": [
            float(i) for i in range(16)]}), x23], batched=(1,)),
        Call("example::mulw", [x23, x23[::-1].copy()], batched=(0, 1)),
        Call("example::mulw_bwd", [x23, x23[::-1].copy()], batched=(0, 1)),
        Call("example::mulw_jvp", [x23, x23[::-1].copy()], batched=(0, 1)),
        Call("example::wnorm", [cplx, x23], batched=(0, 1)),
        Call("example::wnorm_bwd", [cplx, x23], batched=(0, 1)),
        Call("example::wnorm_jvp", [cplx, x23], batched=(0, 1)),
        Call("example::fp8_affine", [q, x23], batched=(0, 1)),
        Call("example::fp8_affine_bwd", [q, x23], batched=(0, 1)),
        Call("example::fp8_affine_jvp", [q, x23], batched=(0, 1)),
        Call("example::field_values", [pack("example::FieldTypes", FIELD_TYPES), x23],
             batched=(1,)),
        Call("example::gather_rows", [x23, np.array([1, 0, 1], np.int32)], batched=(0, 1)),
        Call("example::gather_rows_bwd", [x23, np.array([1, 0, 1], np.int32),
                                          _pos((3, 3))], batched=(0, 1, 2)),
        Call("example::tap_rows", [pack("example::Taps", {"bias": 0.5, "taps": [
            0.25 * i for i in range(16)]}), x23], batched=(1,)),
        Call("example::avg_pool", [x46], {"k": 3, "stride": 2, "pad": 1}, batched=(0,)),
        Call("example::checked_sqrt", [x23], batched=(0,)),
        Call("example::cmul", [cplx, cplx[::-1].copy()], batched=(0, 1)),
        Call("example::concat_rows", [x23, x23[:1].copy()], batched=(0, 1)),
        Call("example::counter_step", [pack("example::Counter", {"calls": 2, "total": 0.0}), x23],
             batched=(1,)),
        Call("example::dequantize_fp8", [scale, q], batched=(1,)),
        Call("example::doubled", [x23.astype(np.float64)], batched=(0,)),
        Call("example::histogram", [pack("example::Histogram", {"lo": 0.0, "width": 0.5,
                                                                 "counts": [0] * 12}), x23],
             batched=(1,)),
        Call("example::layer_norm_par", [x46, _pos((6,), seed=6), _pos((6,), seed=7)],
             {"eps": np.float32(1e-5)}, batched=(0,)),
        Call("example::layer_norm_serial", [x46, _pos((6,), seed=6), _pos((6,), seed=7)],
             {"eps": np.float32(1e-5)}, batched=(0,)),
        Call("example::make_stats", [x23], batched=(0,)),
        Call("example::masked_split", [x23, mask], batched=(0, 1)),
        Call("example::mean_pool", [x46], {"k": 2, "stride": 2}, batched=(0,)),
        Call("example::mean_pool_bwd", [x46, _pos((4, 3), seed=2)], {"k": 2, "stride": 2},
             batched=(0, 1)),
        Call("example::passthrough", [blob, x23], batched=(1,)),
        Call("example::quantize_fp8", [scale, x23], batched=(1,)),
        Call("example::pool_probe", [x46[0].copy()], {"panic_at": -1}, batched=(0,)),
        Call("example::rms_norm", [x46], {"eps": np.float32(1e-3), "cfg": NORM_CFG},
             batched=(0,)),
        Call("example::rms_norm_t", [x46], {"eps": np.float32(1e-3)}, batched=(0,)),
        Call("example::rms_norm_t_bwd", [x46, _pos((4, 6), seed=3)], {"eps": np.float32(1e-3)},
             batched=(0, 1)),
        Call("example::rms_norm_t_bwd_jvp", [x46, _pos((4, 6), seed=3), _pos((4, 6), seed=4),
                                             _pos((4, 6), seed=5)],
             {"eps": np.float32(1e-3)}, batched=(0, 1, 2, 3)),
        Call("example::rms_norm_t_jvp", [x46, _pos((4, 6), seed=3)], {"eps": np.float32(1e-3)},
             batched=(0, 1)),
        Call("example::rms_norm_t_bwd_bwd", [x46, _pos((4, 6), seed=3), _pos((4, 6), seed=4)],
             {"eps": np.float32(1e-3)}, batched=(0, 1, 2)),
        Call("example::row_scale", [x46, _pos((4,), seed=4)], batched=(0, 1)),
        Call("example::scale_bf16", [x23.astype(ml_dtypes.bfloat16)], {"factor": np.float32(2.0)},
             batched=(0,)),
        Call("example::scale_f16", [x23.astype(np.float16)], {"factor": np.float32(2.0)},
             batched=(0,)),
        Call("example::scale_rows", [x46, _pos((4,), seed=4)], batched=(0, 1)),
        Call("example::scale_rows_bwd", [x46, _pos((4,), seed=4), _pos((4, 6), seed=5)],
             batched=(0, 1, 2)),
        Call("example::shift_by", [x23], {"k": 2}, batched=(0,)),
        Call("example::softplus", [x23 - 2.5], batched=(0,)),
        Call("example::softplus_bwd", [x23 - 2.5, _pos((2, 3), seed=8)], batched=(0, 1)),
        Call("example::softplus_bwd_bwd", [x23 - 2.5, _pos((2, 3), seed=8),
                                           _pos((2, 3), seed=9)], batched=(0, 1, 2)),
        Call("example::softplus_bwd_jvp", [x23 - 2.5, _pos((2, 3), seed=8), _pos((2, 3), seed=9),
                                           _pos((2, 3), seed=10)], batched=(0, 1, 2, 3)),
        Call("example::softplus_jvp", [x23 - 2.5, _pos((2, 3), seed=8)], batched=(0, 1)),
        Call("example::sum_squares", [x46], batched=(0,)),
        Call("example::table_dot", [table, x23], batched=(1,)),
        Call("example::table_dot_copy", [table, x23], batched=(1,)),
        Call("example::toggle", [mask.copy()], batched=(0,)),
        Call("example::top_k", [x46[0].copy()], {"k": 2}, batched=(0,)),
        Call("example::unlucky", [x23], batched=(0,)),
        Call("example::windowed", [x23], {"n": 4}, batched=(0,)),
        Call("example::windowed_rebuild", [x23], {"n": 4}, batched=(0,)),
        Call("example_lib::affine", [x23], {"factor": 1.5, "label": "l", "offsets": [1, -2],
                                            "flag": True, "small": 3}, batched=(0,)),
        Call("my_custom_library::custom_op_external", [blob, x23.reshape(3, 2).copy()],
             batched=(1,)),
    ]
