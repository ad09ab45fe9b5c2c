"""What customop adds to an exported StableHLO module, for every front end that exports one
(torch_xla's, `customop.torch.exporter`; jax.export's, `customop.xla.exporter`): each external
operand of a call traced to its entry argument, and that argument annotated
`customop.external = {descriptor, fingerprint, mutable, name, size}`. Parsed and edited with
jaxlib's MLIR bindings; no torch."""

from __future__ import annotations

from typing import Any

from .manifest import ExternalParam, Layout, OpaqueResult, OpSchema, UpdatedExternal

__all__ = ["ExportError", "find_main", "record_external", "walk", "trace_external", "bytes_made", "whole_bytes", "set_signature",
           "set_arg_attrs"]


class ExportError(ValueError):
    """A torch_xla export that customop cannot annotate or run, with why and what to do."""


def find_main(ir: Any, module: Any, producer: str) -> Any:
    """The module's `@main` function; `producer` names who made the module, for the error."""
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(
                op.attributes["sym_name"]).value == "main":
            return op
    raise ExportError("%s's module has no @main function" % producer)


def record_external(found: dict[int, tuple[ExternalParam, str]], index: int,
                    param: ExternalParam, op: str) -> None:
    """Records that entry argument `index` is external `param` of op `op`; one argument cannot
    be two descriptors."""
    prev = found.get(index)
    if prev and prev[0].descriptor.fingerprint != param.descriptor.fingerprint:
        raise ExportError(
            "entry argument %d is external `%s` of %s (%s) and `%s` of %s (%s): one buffer "
            "cannot be two descriptors" % (index, prev[0].name, prev[1], prev[0].descriptor.name,
                                           param.name, op, param.descriptor.name))
    found[index] = (param, op)


def walk(op: Any) -> Any:
    for region in op.regions:
        for block in region.blocks:
            for o in block.operations:
                yield o.operation
                yield from walk(o.operation)


def trace_external(ir: Any, value: Any, block: Any, sch: OpSchema, param: ExternalParam,
                   by_target: dict[str, OpSchema], module: Any = None) -> int | None:
    """The entry argument index that `value` (an external operand) is, through converts and
    reshapes of a whole buffer, and, given the `module`, through calls of private functions
    (`func.call`) and loops that carry it unchanged (`stablehlo.while`); None when it is the
    packed result of another call of the library (an opaque result or updated external of the
    same descriptor); an ExportError for anything else."""
    v = value
    while True:
        if isinstance(v, ir.BlockArgument):
            arg = ir.BlockArgument(v)
            if arg.owner == block:
                return arg.arg_number
            parent = arg.owner.owner.operation
            if module is not None and parent.name == "stablehlo.while":
                # A loop's argument: the loop's operand, if every iteration passes it on.
                body = parent.regions[1].blocks[0]
                ret = list(body.operations)[-1]
                if ret.operands[arg.arg_number] == body.arguments[arg.arg_number]:
                    v = parent.operands[arg.arg_number]
                    continue
                raise ExportError(
                    "%s: external `%s` is changed by the loop around the call: an external "
                    "operand must be passed in whole" % (sch.name, param.name))
            if module is not None and parent.name == "func.func":
                # A private function's argument: what its callers pass, all the same argument.
                callee = ir.StringAttr(parent.attributes["sym_name"]).value
                found = set()
                for f in module.body.operations:
                    for op in walk(f.operation):
                        if op.name == "func.call" and ir.FlatSymbolRefAttr(
                                op.attributes["callee"]).value == callee:
                            found.add(trace_external(ir, op.operands[arg.arg_number], block, sch,
                                                     param, by_target, module))
                if len(found) == 1:
                    return found.pop()
                if len(found) > 1:
                    raise ExportError(
                        "%s: external `%s` is in function @%s, whose callers pass it different "
                        "arguments" % (sch.name, param.name, callee))
            break
        result = ir.OpResult(v)
        owner = result.owner
        name = owner.name
        if name == "stablehlo.custom_call":
            producer = by_target.get(ir.StringAttr(owner.attributes["call_target_name"]).value)
            if producer is not None:
                made = bytes_made(producer, result.result_number)
                if made is not None and made.fingerprint == param.descriptor.fingerprint:
                    return None
        if name in ("stablehlo.convert", "stablehlo.reshape"):
            src = owner.operands[0]
            if whole_bytes(ir, src.type, v.type):
                v = src
                continue
        raise ExportError(
            "%s: external `%s` is computed (by %s), not passed in: an external operand must be "
            "a buffer or forward input of descriptor %s, passed whole (no slicing or "
            "arithmetic)" % (sch.name, param.name, name, param.descriptor.name))
    raise ExportError("%s: external `%s` is not an argument of the entry function"
                      % (sch.name, param.name))


def bytes_made(producer: OpSchema, index: int) -> Layout | None:
    """The descriptor whose packed bytes result `index` of `producer` is (an opaque result, or
    an updated external), if it is one."""
    r = producer.results[index]
    if isinstance(r, OpaqueResult):
        return r.descriptor
    if isinstance(r, UpdatedExternal):
        p = producer.param(r.param)
        return p.descriptor if isinstance(p, ExternalParam) else None
    return None


def whole_bytes(ir: Any, a: Any, b: Any) -> bool:
    """Whether a convert or reshape from type `a` to `b` keeps a byte buffer whole: both
    8-bit integer tensors with the same number of elements."""
    def count(ty: Any) -> int | None:
        t = ir.RankedTensorType(ty)
        if str(t.element_type) not in ("i8", "ui8"):
            return None
        n = 1
        for d in t.shape:
            n *= d
        return n

    return count(a) is not None and count(a) == count(b)


def set_signature(ir: Any, func: Any, block: Any) -> None:
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    inputs = [a.type for a in block.arguments]
    func.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(inputs, list(ftype.results)))


def set_arg_attrs(ir: Any, func: Any, block: Any, externals: list[Any]) -> None:
    n = len(block.arguments)
    old = func.attributes["arg_attrs"] if "arg_attrs" in func.attributes else None
    dicts = []
    for i in range(n):
        entries = {}
        if old is not None:
            d = ir.DictAttr(ir.ArrayAttr(old)[i])
            for j in range(len(d)):
                na = d[j]
                entries[na.name] = na.attr
        dicts.append(entries)
    for e in externals:
        dicts[e.index]["customop.external"] = ir.Attribute.parse(
            '{descriptor = "%s", fingerprint = "%s", mutable = %s, name = "%s", size = %d : i64}'
            % (e.descriptor, e.fingerprint, "true" if e.mutable else "false", e.name, e.size))
    func.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(d) for d in dicts])
