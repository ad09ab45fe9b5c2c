"""Which batching rule an op gets under `jax.vmap` and `torch.func.vmap`, from its schema
alone: `rows` (the batch folded into the leading dimension) or `sequential` (one call per
batch element). Imports neither jax nor torch."""

from __future__ import annotations

from .manifest import OpSchema, TensorParam, TensorResult

__all__ = ["batching_rule"]


def batching_rule(sch: OpSchema) -> str:
    """`"rows"` when every tensor operand and tensor result of the op has its leading
    dimension split by one partition factor (and the op has no side effect and only tensor
    results), else `"sequential"`."""
    rule = sch.partition
    if rule is None or sch.side_effect:
        return "sequential"
    if any(not isinstance(r, TensorResult) for r in sch.results):
        return "sequential"
    lead: set[str | None] = set()
    entries = {e.name: e for e in rule.operands}
    for p in sch.operands:
        if isinstance(p, TensorParam):
            e = entries.get(p.name)
            lead.add(e.dims[0] if e is not None and e.dims else None)
    results = {e.index: e for e in rule.results}
    for i in range(len(sch.results)):
        e = results.get(i)
        lead.add(e.dims[0] if e is not None and e.dims else None)
    return "rows" if len(lead) == 1 and None not in lead else "sequential"
