"""`torch.func.vmap` of a customop op, by the same batching rule as in JAX
(`customop.batching`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..batching import batching_rule
from ..manifest import UPDATED, OpSchema, TensorParam

__all__ = ["vmap_rule"]


def vmap_rule(sch: OpSchema, op: Any) -> Callable[..., Any]:
    """The op's `torch.func.vmap` rule (`register_vmap`), as in JAX (`customop.xla.ops`): the
    batch folded into the leading dimension when the op's partition rule says its rows are
    independent (`rows`), one call per batch element otherwise (`sequential`)."""
    rule = batching_rule(sch)
    kinds = [isinstance(p, TensorParam) for p in sch.operands]
    n_operands = len(kinds)
    returned = sum(1 for r in sch.results if not isinstance(r, UPDATED))
    # The operands an `#[inout]` op updates in place.
    updated = [i for i, p in enumerate(sch.operands) if getattr(p, "updated", False)]

    def vmap(info: Any, in_dims: tuple[Any, ...], *args: Any, **kwargs: Any) -> Any:
        size = info.batch_size
        dims = list(in_dims[:n_operands])
        externals_batched = any(d is not None for d, t in zip(dims, kinds) if not t)
        unbatched = [sch.operands[i].name for i in updated if dims[i] is None]
        if unbatched and any(d is not None for d in dims):
            # Each element's call would update the one shared tensor: the last would win.
            raise ValueError(
                "vmap: %s updates `%s` in place, which is not batched while other operands "
                "are: each batch element would write the same tensor. Batch it too (expand "
                "it along the batch dimension)." % (sch.name, unbatched[0]))
        if size == 0:
            # No call: the result shapes of one element, from the op's Meta kernel.
            one = [torch.empty([n for k, n in enumerate(a.shape) if k != d], dtype=a.dtype,
                               device="meta") if d is not None else a.to("meta")
                   for a, d in zip(args, dims)]
            out = op(*one, *args[n_operands:], **kwargs)
            device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
            outs = [torch.empty((0, *r.shape), dtype=r.dtype, device=device)
                    for r in _listed(out)]
        elif rule == "rows" and not externals_batched:
            flat = []
            for a, d, tensor in zip(args, dims, kinds):
                if tensor:
                    a = a.movedim(d, 0) if d is not None else a.expand(size, *a.shape)
                    a = a.reshape(size * a.shape[1], *a.shape[2:])
                flat.append(a)
            out = op(*flat, *args[n_operands:], **kwargs)
            outs = _listed(out)
            outs = [r.reshape(size, r.shape[0] // size, *r.shape[1:]) for r in outs]
        else:
            per = []
            for b in range(size):
                one = [a.select(d, b) if d is not None else a for a, d in zip(args, dims)]
                out = op(*one, *args[n_operands:], **kwargs)
                per.append(_listed(out))
            outs = [torch.stack([p[k] for p in per]) for k in range(returned)]
        if returned == 0:
            # An op that only updates its arguments in place (each row's, by its own call).
            return None, None
        if returned == 1:
            return outs[0], 0
        return tuple(outs), tuple(0 for _ in outs)

    return vmap


def _listed(out: Any) -> list[Any]:
    """An op's results as a list: none (None), one, or a tuple's."""
    if out is None:
        return []
    return list(out) if isinstance(out, tuple) else [out]
