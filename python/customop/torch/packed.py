"""Packed sub-byte tensors in torch: torch holds `i4`, `ui4`, `i2`, `ui2` and `f4E2M1FN`
elements as XLA packs them, `8 // bits` a byte along the last dimension, low bits first, in
`uint8` tensors (or `float4_e2m1fn_x2`, two f4E2M1FN values a byte, low nibble first, on a
torch whose C shim has it): a `[K, N]` tensor of `i4` is a `uint8` tensor of `[K, N // 2]`.
torch's own `torch.int4` and its like hold one element a byte and have no kernels: never
those."""

from __future__ import annotations

from ..manifest import ElementType, OpSchema
from ..schema import ResultSpec, SchemaError

__all__ = ["AS_BYTES", "logical_shape", "packed_shape"]

# The element types torch holds as uint8 bytes: u8 itself and the packed ones (f4E2M1FN too,
# where torch has no float4_e2m1fn_x2 or a uint8 tensor is given).
AS_BYTES = ("ui8", "i4", "ui4", "i2", "ui2", "f4E2M1FN")


def logical_shape(sch: OpSchema, name: str, e: ElementType,
                  shape: tuple[int, ...]) -> tuple[int, ...]:
    """The logical shape of operand `name`, packed sub-byte elements `e` that torch holds as
    bytes of `shape`: `8 // bits` elements a byte along the last dimension, low bits first, as
    XLA packs them (`uint8`, or `float4_e2m1fn_x2` pairs for f4E2M1FN)."""
    if not shape:
        raise SchemaError("%s: operand `%s` holds packed %s elements, %d a byte along its last "
                          "dimension, so it cannot be a scalar"
                          % (sch.name, name, e.name, 8 // e.bits))
    return (*shape[:-1], shape[-1] * (8 // e.bits))


def packed_shape(sch: OpSchema, name: str, spec: ResultSpec) -> tuple[int, ...]:
    """The shape torch holds result `name` of op `sch` in: its own, or for packed sub-byte
    elements the last dimension divided by the elements a byte holds (`SchemaError` when it is
    not a multiple of them, or a scalar)."""
    shape = tuple(spec.shape)
    if not spec.dtype.is_packed:
        return shape
    per = 8 // spec.dtype.bits
    if shape and not isinstance(shape[-1], int):
        # A symbolic size (torch.compile, dynamic): a guard, as the real call refuses.
        import torch

        torch._check(shape[-1] % per == 0, lambda: "%s: output `%s` holds packed %s elements, "
                     "%d a byte: its last dimension must be a multiple of %d"
                     % (sch.name, name, spec.dtype.name, per, per))
    if not shape or (isinstance(shape[-1], int) and shape[-1] % per):
        raise SchemaError("%s: output `%s` is %s packed %s elements: torch holds them %d a byte "
                          "along the last dimension, which must be a multiple of %d"
                          % (sch.name, name, list(shape), spec.dtype.name, per, per))
    return (*shape[:-1], shape[-1] // per)
