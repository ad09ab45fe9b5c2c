"""A kernel cdylib's manifest (`customop_manifest()`), parsed once into typed, immutable objects.

The manifest is JSON written by the Rust runtime: the element-type table, and per op its name,
FFI target, handler symbol, schema (parameters, results with their shape rules, partition rule)
and PyTorch schema string; descriptor layouts travel inside the schemas. Everything else in
this package reads these objects, never the raw JSON.

    m = Manifest.from_json(json.loads(text))
    op = m.op("example::rms_norm")
    op.schema.params[0]             # TensorParam(name='x', dtype=ElementType('f32'), rank=2)
    m.element_types["f32"].numpy    # 'float32'

Element types are not spelled here: their names, XLA FFI codes, numpy names, byte sizes and
kinds come from the manifest's `element_types`, which the runtime writes from its own table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import shape
from .differentiation import Derivatives
from .elements import BYTES, PRED, ElementKind, ElementType, ElementTypes, numpy_dtype
from .layout import (ArrayType, EnumType, EnumVariant, Field, FieldType, Json, Layout,
                     ManifestError, PrimType, StringType, StructType, VecType, json_field)
from .params import (AttributeParam, AttributesParam, AttrType, ConstDim, DimOf, DimRule, DimsOf,
                     DtypeVar, ExprDim, ExternalParam, FactorDims, OpaqueResult, Param,
                     PartitionRule, Result,
                     ShapeOf, TensorParam, TensorResult, UpdatedExternal, UpdatedTensor,
                     UPDATED)

__all__ = [
    "ManifestError", "ElementKind", "ElementType", "ElementTypes", "numpy_dtype", "BYTES", "PRED",
    "PrimType", "ArrayType", "StructType", "EnumType", "EnumVariant", "VecType", "StringType",
    "FieldType", "Field", "Layout",
    "AttrType", "DtypeVar", "TensorParam", "AttributeParam", "AttributesParam", "ExternalParam",
    "Param",
    "ConstDim", "DimOf", "ShapeOf", "DimsOf", "ExprDim", "DimRule",
    "TensorResult", "OpaqueResult", "UpdatedExternal", "UpdatedTensor", "UPDATED", "Result",
    "FactorDims", "PartitionRule", "VjpInput", "Vjp", "Jvp", "Derivatives", "OpSchema", "OpEntry",
    "Manifest",
]


@dataclass(frozen=True)
class VjpInput:
    """One input of a backward op: its parameter, where its value comes from (`input`: a
    forward tensor or external as given; `attribute`; `output`: a forward output as computed;
    `cotangent`: an output's cotangent) and the forward parameter or output it is."""
    param: str
    source: str
    of: str


def _rule_arguments(inputs: Sequence[VjpInput], forward: OpSchema, operands: Sequence[Any],
                    outputs: Sequence[Any], derivatives: Mapping[str, Sequence[Any]],
                    attrs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """A backward or tangent op's operands and attributes, by each input's source: a forward
    operand or output, an attribute, or (`derivatives`) the outputs' cotangents
    (`"cotangent"`, by result) or the operands' tangents (`"tangent"`, by operand)."""
    names = [p.name for p in forward.operands]
    results = [r.name for r in forward.results]
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for i in inputs:
        if i.source == "input":
            args.append(operands[names.index(i.of)])
        elif i.source == "output":
            args.append(outputs[results.index(i.of)])
        elif i.source == "cotangent":
            args.append(derivatives["cotangent"][results.index(i.of)])
        elif i.source == "tangent":
            args.append(derivatives["tangent"][names.index(i.of)])
        else:
            kwargs[i.param] = attrs[i.of]
    return args, kwargs


@dataclass(frozen=True)
class Vjp:
    """A forward op's declared backward (`#[custom_op(vjp = ...)]`): the backward op's name,
    its inputs in declaration order, and per output (`result`) the forward input it is the
    gradient of, as `(result, input)` pairs."""
    op: str
    inputs: tuple[VjpInput, ...]
    gradients: tuple[tuple[str, str], ...]

    def backward_arguments(self, forward: OpSchema, operands: Sequence[Any],
                           outputs: Sequence[Any], cotangents: Sequence[Any],
                           attrs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """The backward op's operands and attributes, from a forward call of `forward`: its
        operands and attributes as given, its outputs and their cotangents (by result index)."""
        return _rule_arguments(self.inputs, forward, operands, outputs, {"cotangent": cotangents},
                               attrs)

    def input_gradients(self, forward: OpSchema, results: Sequence[Any]) -> list[Any]:
        """Per operand of `forward`, its gradient among the backward op's `results`, or None."""
        by_input = {of: results[k] for k, (_, of) in enumerate(self.gradients)}
        return [by_input.get(p.name) for p in forward.operands]


@dataclass(frozen=True)
class Jvp:
    """A forward op's declared forward-mode rule (`#[custom_op(jvp = ...)]`): the tangent op's
    name, its inputs in declaration order (`VjpInput`s whose source is `input`, `attribute`,
    `output` or `tangent`: an input's tangent), and per output (`result`) the forward output it
    is the tangent of, as `(result, output)` pairs."""
    op: str
    inputs: tuple[VjpInput, ...]
    tangents: tuple[tuple[str, str], ...]

    def tangent_arguments(self, forward: OpSchema, operands: Sequence[Any],
                          outputs: Sequence[Any], tangents: Sequence[Any],
                          attrs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """The tangent op's operands and attributes, from a forward call of `forward`: its
        operands, attributes and outputs, and its operands' tangents (by operand index)."""
        return _rule_arguments(self.inputs, forward, operands, outputs, {"tangent": tangents},
                               attrs)

    def output_tangents(self, forward: OpSchema, results: Sequence[Any]) -> list[Any]:
        """Per result of `forward`, its tangent among the tangent op's `results`, or None."""
        by_output = {of: results[k] for k, (_, of) in enumerate(self.tangents)}
        return [by_output.get(r.name) for r in forward.results]


@dataclass(frozen=True)
class OpSchema:
    """One op's schema: parameters in declaration order, results in the custom call's order."""
    name: str
    target: str
    api_version: int
    side_effect: bool
    params: tuple[Param, ...]
    results: tuple[Result, ...]
    partition: PartitionRule | None
    vjp: Vjp | None = None
    jvp: Jvp | None = None
    # Which inputs and results have a derivative, at which types (Rust's decision).
    derivatives: Derivatives = Derivatives({}, {})

    @property
    def operands(self) -> tuple[TensorParam | ExternalParam, ...]:
        """The custom call's operands (tensors and externals), in declaration order."""
        return tuple(p for p in self.params
                     if isinstance(p, (TensorParam, ExternalParam)))

    @property
    def attributes(self) -> tuple[AttributeParam, ...]:
        return tuple(p for p in self.params if isinstance(p, AttributeParam))

    @property
    def dictionary(self) -> AttributesParam | None:
        """The `#[attrs]` parameter, if the op takes every attribute of its call as one
        dictionary (then attributes it does not name are allowed)."""
        return next((p for p in self.params if isinstance(p, AttributesParam)), None)

    @property
    def externals(self) -> tuple[ExternalParam, ...]:
        return tuple(p for p in self.params if isinstance(p, ExternalParam))

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError("%s has no parameter %r" % (self.name, name))

    def layouts(self) -> Iterator[Layout]:
        """Every descriptor layout the op names (externals, descriptor attributes, opaque
        results), in declaration order."""
        for p in self.params:
            if isinstance(p, ExternalParam):
                yield p.descriptor
            elif isinstance(p, AttributeParam) and p.type.descriptor is not None:
                yield p.type.descriptor
        for r in self.results:
            if isinstance(r, OpaqueResult):
                yield r.descriptor

    @staticmethod
    def from_json(j: Json, types: ElementTypes) -> OpSchema:
        name = str(json_field(j, "name", "op schema"))

        def dtype(entry: Json, what: str) -> ElementType | DtypeVar:
            spelled = json_field(entry, "dtype", what)
            try:
                if isinstance(spelled, dict):
                    return DtypeVar(str(json_field(spelled, "var", what)),
                                    tuple(types[t] for t in json_field(spelled, "allowed", what)))
                return types[spelled]
            except KeyError as e:
                raise ManifestError("%s: %s" % (what, e.args[0])) from None

        params: list[Param] = []
        for p in json_field(j, "params", name):
            pname = str(json_field(p, "name", name))
            what = "%s, parameter `%s`" % (name, pname)
            kind = json_field(p, "kind", what)
            if kind == "tensor":
                rank = p.get("rank")
                params.append(TensorParam(pname, dtype(p, what), None if rank is None else int(rank),
                                          bool(p.get("updated", False))))
            elif kind == "attribute":
                t = json_field(p, "type", what)
                tkind = json_field(t, "kind", what)
                if tkind in ("scalar", "array"):
                    params.append(AttributeParam(pname, AttrType(tkind, dtype=dtype(t, what))))
                elif tkind == "descriptor":
                    params.append(AttributeParam(pname, AttrType(
                        tkind, descriptor=Layout.from_json(json_field(t, "descriptor", what)))))
                elif tkind == "bool":
                    params.append(AttributeParam(pname, AttrType(tkind, dtype=types[PRED])))
                elif tkind == "str":
                    params.append(AttributeParam(pname, AttrType(tkind)))
                else:
                    raise ManifestError("%s: unknown attribute type %r" % (what, tkind))
            elif kind == "attributes":
                params.append(AttributesParam(pname))
            elif kind == "external":
                params.append(ExternalParam(pname, bool(json_field(p, "mutable", what)),
                                            Layout.from_json(json_field(p, "descriptor", what))))
            else:
                raise ManifestError("%s: unknown parameter kind %r" % (what, kind))

        results: list[Result] = []
        for r in json_field(j, "results", name):
            rname = str(json_field(r, "name", name))
            what = "%s, result `%s`" % (name, rname)
            kind = json_field(r, "kind", what)
            if kind == "tensor":
                results.append(TensorResult(rname, dtype(r, what),
                                            tuple(_dim_rule(d, what) for d in json_field(r, "shape", what))))
            elif kind == "opaque":
                results.append(OpaqueResult(rname, Layout.from_json(json_field(r, "descriptor", what)),
                                            types[BYTES]))
            elif kind == "updated_external":
                results.append(UpdatedExternal(rname, str(json_field(r, "param", what)),
                                               int(json_field(r, "operand", what)), types[BYTES]))
            elif kind == "updated_tensor":
                param = str(json_field(r, "param", what))
                of = next((q for q in params if q.name == param and isinstance(q, TensorParam)
                           and q.updated), None)
                if of is None:
                    raise ManifestError("%s: updates `%s`, not an #[inout] tensor" % (what, param))
                results.append(UpdatedTensor(rname, param, int(json_field(r, "operand", what)),
                                             of.dtype))
            else:
                raise ManifestError("%s: unknown result kind %r" % (what, kind))

        rule = j.get("partition")
        partition = None
        if rule is not None:
            def entries(key: str) -> tuple[FactorDims, ...]:
                return tuple(FactorDims(str(e["name"]), int(e["index"]), tuple(e["dims"]))
                             for e in json_field(rule, key, name))
            partition = PartitionRule(tuple(json_field(rule, "factors", name)), entries("operands"),
                                      entries("results"))
        vjp = _rule(Vjp, j, "vjp", "gradients", name)
        jvp = _rule(Jvp, j, "jvp", "tangents", name)
        if "derivatives" not in j:
            raise ManifestError(
                "%s: the schema has no `derivatives` (which inputs and outputs have one): the "
                "cdylib was built with a customop older than this Python package; rebuild it"
                % name)
        derivatives = Derivatives.from_json(j["derivatives"], types, name)
        return OpSchema(name, str(json_field(j, "target", name)), int(json_field(j, "api_version", name)),
                        bool(json_field(j, "side_effect", name)), tuple(params), tuple(results),
                        partition, vjp, jvp, derivatives)


def _rule(cls: Any, j: Json, key: str, outputs: str, name: str) -> Any:
    """An op's declared `vjp` or `jvp` (`cls`) from its JSON, or None: the rule op's name, its
    inputs, and its outputs (`gradients` or `tangents`) as `(result, of)` pairs."""
    r = j.get(key)
    if r is None:
        return None
    what = "%s, %s" % (name, key)
    return cls(str(json_field(r, "op", what)),
               tuple(VjpInput(str(json_field(i, "param", what)), str(json_field(i, "source", what)),
                              str(json_field(i, "of", what)))
                     for i in json_field(r, "inputs", what)),
               tuple((str(json_field(o, "result", what)), str(json_field(o, "of", what)))
                     for o in json_field(r, outputs, what)))


def _dim_rule(j: Json, where: str) -> DimRule:
    kind = json_field(j, "kind", where)
    if kind == "const":
        return ConstDim(int(json_field(j, "size", where)))
    if kind == "dim_of":
        return DimOf(str(json_field(j, "param", where)), int(json_field(j, "dim", where)))
    if kind == "shape_of":
        return ShapeOf(str(json_field(j, "param", where)))
    if kind == "dims_of":
        stop = j.get("stop")
        return DimsOf(str(json_field(j, "param", where)), int(json_field(j, "start", where)),
                      None if stop is None else int(stop))
    if kind == "expr":
        try:
            expr = shape.parse(json_field(j, "expr", where), where)
        except (ValueError, KeyError, TypeError) as e:
            raise ManifestError("%s: %s" % (where, e)) from None
        return ExprDim(expr, str(json_field(j, "text", where)))
    raise ManifestError("%s: unknown shape rule %r" % (where, kind))


@dataclass(frozen=True)
class OpEntry:
    """One op of a cdylib: its name (`ns::op`), FFI target, exported handler symbol, schema,
    the schema in PyTorch FunctionSchema syntax (`schema_string`), and the symbol of its CUDA
    handler (`cuda_handler_symbol`), None for an op with no CUDA side."""
    name: str
    target: str
    handler_symbol: str
    schema: OpSchema
    schema_string: str
    cuda_handler_symbol: str | None = None


@dataclass(frozen=True)
class Manifest:
    """A cdylib's manifest: the customop version that wrote it, the descriptor wire format
    version, the element-type table, and the ops sorted by name."""
    customop_version: str
    wire_format_version: int
    element_types: ElementTypes = field(repr=False)
    ops: tuple[OpEntry, ...]

    def op(self, name: str) -> OpEntry:
        for op in self.ops:
            if op.name == name:
                return op
        raise KeyError("no op %r (the manifest has: %s)"
                       % (name, ", ".join(o.name for o in self.ops)))

    def layouts(self) -> dict[str, Layout]:
        """Every descriptor layout named by an op, by descriptor name."""
        return {layout.name: layout for op in self.ops for layout in op.schema.layouts()}

    @staticmethod
    def from_json(j: Json) -> Manifest:
        if "element_types" not in j:
            raise ManifestError(
                "the manifest has no element-type table (`element_types`): the cdylib was "
                "built with a customop older than this Python package; rebuild it")
        types = ElementTypes([ElementType.from_json(t) for t in j["element_types"]])
        ops = []
        for op in json_field(j, "ops", "manifest"):
            name = str(json_field(op, "name", "manifest"))
            ops.append(OpEntry(name, str(json_field(op, "target", name)),
                               str(json_field(op, "handler_symbol", name)),
                               OpSchema.from_json(json_field(op, "schema", name), types),
                               str(json_field(op, "schema_string", name)),
                               _optional_str(op.get("cuda_handler_symbol"))))
        return Manifest(str(json_field(j, "customop_version", "manifest")),
                        int(json_field(j, "wire_format_version", "manifest")), types, tuple(ops))


def _optional_str(v: Json) -> str | None:
    return None if v is None else str(v)
