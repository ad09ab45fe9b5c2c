"""DTensor sharding of customop ops, from each op's declaration: `partition(...)` becomes the
op's sharding strategies (`torch.distributed.tensor.experimental.register_sharding`), so that an
op called on DTensors runs on each rank's shard where the declaration says the shards are
independent, and on replicated inputs otherwise.

Per op, the strategies DTensor may pick from (each a placement per result, then per positional
argument; attributes are keyword-only and take none):
- all replicated: every op has it (an op with no partition has only it: DTensor gathers its
  inputs, runs it whole on every rank, and its results are replicated);
- per factor of the partition that every result carries: each operand and result that names
  the factor at dimension d is `Shard(d)`, every other operand `Replicate()`. The op then runs
  on local shards with no collective, as it does under XLA's SPMD partitioner. A factor that
  does not reach every result gives none (its shards' results would need combining).
An op with a side effect, or one that updates an external or a tensor in place, is refused by
name on DTensors: on every rank it would run once each, where one run is what its caller asked
for."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any

from ..manifest import OpSchema

__all__ = ["register_shardings", "sharding_unavailable_reason"]


def sharding_unavailable_reason() -> str | None:
    """Why this torch cannot take customop's DTensor shardings, or None."""
    import torch.distributed as dist

    if not dist.is_available():
        return "this torch is built without torch.distributed"
    try:
        from torch.distributed.tensor.experimental import register_sharding  # noqa: F401
    except ImportError as e:  # pragma: no cover (every supported torch has it)
        return "this torch has no torch.distributed.tensor.experimental.register_sharding (%s)" % e
    return None


def strategies(sch: OpSchema, n_args: int) -> list[tuple[list[Any], list[Any]]]:
    """The acceptable (result placements, argument placements) of op `sch` with `n_args`
    positional arguments (its operands, in order), as `register_sharding` takes them."""
    from torch.distributed.tensor import Replicate, Shard

    replicated = ([Replicate() for _ in sch.results], [Replicate() for _ in range(n_args)])
    out = [replicated]
    rule = sch.partition
    if rule is None:
        return out
    for factor in rule.factors:
        results: list[Any] = [None for _ in sch.results]
        for r in rule.results:
            if factor in r.dims and r.index < len(results):
                results[r.index] = Shard(r.dims.index(factor))
        if any(p is None for p in results):
            # A result the factor does not reach would be each rank's value from its own
            # shard, which no placement describes (Replicate() would call rank 0's partial
            # value the whole): that factor gives no strategy, and the op runs replicated for
            # it. (Rust refuses such a rule; a manifest is checked where it is used, anyway.)
            continue
        args: list[Any] = [Replicate() for _ in range(n_args)]
        for o in rule.operands:
            if factor in o.dims and o.index < n_args:
                args[o.index] = Shard(o.dims.index(factor))
        out.append((results, args))
    return out


def refusal(sch: OpSchema) -> str | None:
    """Why op `sch` cannot run on DTensors, or None."""
    if sch.side_effect:
        return "it has a side effect"
    for p in sch.operands:
        if getattr(p, "mutable", False):
            return "it updates its external `%s`" % p.name
        if getattr(p, "updated", False):
            return "it updates its tensor `%s` in place" % p.name
    return None


def register_shardings(ops: list[tuple[OpSchema, Any]]) -> None:
    """Registers each op's sharding strategies with DTensor (`ops`: schema and torch overload):
    now if `torch.distributed.tensor` is imported, else when it is (importing it costs 0.6-0.8 s,
    which a load that never meets a DTensor does not pay). Nothing for a torch without DTensor:
    DTensor then never reaches the ops."""
    _pending.extend(ops)
    if "torch.distributed.tensor" in sys.modules:
        _register_pending()
    elif not any(isinstance(f, _AfterDTensorImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterDTensorImport())


_pending: list[tuple[OpSchema, Any]] = []


def _register_pending() -> None:
    if sharding_unavailable_reason() is not None:
        _pending.clear()
        return
    from torch.distributed.tensor.experimental import register_sharding

    from ..schema import SchemaError

    while _pending:
        sch, overload = _pending.pop(0)
        n_args = sum(1 for a in overload._schema.arguments if not a.kwarg_only)
        why = refusal(sch)

        def sharding(*args: Any, _sch: OpSchema = sch, _n: int = n_args, _why: str | None = why,
                     **kwargs: Any) -> list[tuple[list[Any], list[Any]]]:
            if _why is not None:
                raise SchemaError("%s cannot run on DTensors: %s, which would happen once on "
                                  "every rank; call it on local tensors (DTensor.to_local()) "
                                  "where one run is meant" % (_sch.name, _why))
            return strategies(_sch, _n)

        register_sharding(overload)(sharding)


class _AfterDTensorImport(importlib.abc.MetaPathFinder):
    """On the import of `torch.distributed.tensor`: the module is found and run as usual, then
    the pending ops' shardings are registered, and this finder leaves `sys.meta_path`."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "torch.distributed.tensor":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            _register_pending()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
