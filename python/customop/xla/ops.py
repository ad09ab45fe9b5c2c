"""customop ops as JAX functions: `lib.ops.<ns>.<op>(*operands, **attributes)`, with the
signature and docstring of the op's schema, differentiable in reverse mode where the op
declares a backward (`#[custom_op(vjp = ...)]`) and in forward mode where it declares a tangent
op (`jvp = ...`), through `customop.xla.derivatives`, and batched under `jax.vmap` by a rule
(`jax.custom_batching.custom_vmap`).

    lib = Library(path); lib.register()
    y = lib.ops.example.rms_norm_t(x, eps=1e-6)
    g = jax.grad(lambda x: lib.ops.example.rms_norm_t(x, eps=1e-6).sum())(x)
    ys = jax.vmap(lambda x: lib.ops.example.rms_norm_t(x, eps=1e-6))(xs)

Derivatives. The backward op takes what it names of the forward call (inputs, attributes,
outputs, and the outputs' cotangents) and returns the gradient of each differentiable input;
the tangent op takes the forward call's values and the inputs' tangents and returns the
outputs' tangents. Externals and integer or bool tensors get none (a zero cotangent). An op
without the rule a transform needs raises `NoGradientError` (reverse mode) or
`NoForwardRuleError` (forward mode) when the transform reaches it, naming the op.

Batching. `jax.vmap` of an op runs one of two rules:
- `rows`: when the op's partition rule splits every tensor operand and result along its
  leading dimension by one factor (`partition(x = [rows, _])`, the rows are independent),
  the batch is folded into that dimension, `(B, R, ...)` to `(B * R, ...)`, and the op is
  called once (an unbatched tensor operand is broadcast first; a batched external falls back
  to the loop);
- `sequential`: otherwise one call per batch element (`jax.lax.map`).
`Op.batching` says which rule an op gets.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from ..batching import batching_rule
from ..library import KernelLibrary, jax_registered
from ..manifest import ExternalParam, TensorParam, UpdatedTensor
from ..schema import checked_attrs, operand_names, result_specs
from .derivatives import (NoForwardRuleError, NoGradientError, NotDifferentiableError,
                          refuse_perturbed, refuse_used, tangent_primitive, with_derivatives)

__all__ = ["Ops", "Op", "NoGradientError", "NoForwardRuleError", "NotDifferentiableError",
           "NotRegisteredError", "batching_rule", "call_op", "require_registered"]


class NotRegisteredError(RuntimeError):
    """An op of a library whose handlers are not registered with jax was called (XLA would
    say only "No FFI handler registered ..." when it compiles the program)."""


def require_registered(lib: KernelLibrary, name: str) -> None:
    """Raises `NotRegisteredError` naming op `name` and the fix, unless customop registered the
    handlers of `lib`'s library with jax in this process."""
    if not jax_registered(lib):
        raise NotRegisteredError(
            "%s: the handlers of %s are not registered with jax, so XLA would find no handler "
            "for `%s`: call `lib.register()` once (before the op is called or traced; "
            "`lib.register(\"cuda\")` for NVIDIA GPUs)" % (name, lib.path, lib.op(name).target))



class Op:
    """One op as a JAX function: call it with the op's operands (tensors, and externals as
    bytes or uint8 arrays) positionally and its attributes by keyword."""

    def __init__(self, lib: KernelLibrary, name: str) -> None:
        self._lib = lib
        self.name = name
        self.schema = lib.op(name).schema
        self.batching = batching_rule(self.schema)
        sch = self.schema
        params = [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                  for p in sch.operands]
        params += [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY)
                   for p in sch.attributes]
        if sch.dictionary is not None:
            params.append(inspect.Parameter(sch.dictionary.name, inspect.Parameter.VAR_KEYWORD))
        self.__signature__ = inspect.Signature(params)
        self.__name__ = name.partition("::")[2]
        self.__qualname__ = self.__name__
        grad = ("differentiable: its backward is %s" % sch.vjp.op if sch.vjp is not None
                else "not differentiable (declares no backward)")
        self.__doc__ = ("customop op `%s`: %s\n\nOperands: %s. Attributes (keyword): %s.\n"
                        "Gradient: %s. Batching under jax.vmap: %s."
                        % (name, lib.op(name).schema_string,
                           ", ".join(p.name for p in sch.operands) or "none",
                           ", ".join(p.name for p in sch.attributes) or "none", grad,
                           self.batching))

    def __repr__(self) -> str:
        return "<customop op %s%s>" % (self.name, self.__signature__)

    def __call__(self, *operands: Any, **attrs: Any) -> Any:
        sch = self.schema
        names = [p.name for p in sch.operands]
        if len(operands) > len(names):
            raise TypeError("%s takes %d operands (%s), got %d positional arguments; attributes "
                            "are keyword arguments (%s)"
                            % (self.name, len(names), ", ".join(names), len(operands),
                               ", ".join(p.name for p in sch.attributes) or "none"))
        if len(operands) < len(names):
            # Operands given by name.
            missing = [n for n in names[len(operands):] if n not in attrs]
            if missing:
                raise TypeError("%s takes %d operands (%s); missing %s"
                                % (self.name, len(names), ", ".join(names), ", ".join(missing)))
            operands = (*operands, *(attrs.pop(n) for n in names[len(operands):]))
        # Before any tracing: the same checks as `lib.call`'s (SchemaError, a TypeError).
        require_registered(self._lib, self.name)
        attrs = checked_attrs(sch, attrs)
        operands = tuple(_as_operand(p, o) for p, o in zip(sch.operands, operands))
        return _differentiable(self._lib, self.name, attrs)(*operands)


class _Namespace:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return "<customop ops %s: %s>" % (
            self._name, ", ".join(sorted(k for k in self.__dict__ if not k.startswith("_"))))


class Ops:
    """A library's ops by namespace: `ops.example.rms_norm_t`; `ops["example::rms_norm_t"]`."""

    def __init__(self, lib: KernelLibrary) -> None:
        tangent_primitive()
        self._ops: dict[str, Op] = {}
        for entry in lib.entries():
            ns, _, short = entry.name.partition("::")
            space = self.__dict__.get(ns)
            if space is None:
                space = self.__dict__[ns] = _Namespace(ns)
            op = self._ops[entry.name] = Op(lib, entry.name)
            setattr(space, short, op)

    def __getitem__(self, name: str) -> Op:
        return self._ops[name]

    def __iter__(self) -> Any:
        return iter(self._ops.values())


def _as_operand(p: Any, value: Any) -> Any:
    """An external given as bytes becomes a uint8 array."""
    import numpy as np

    if isinstance(p, ExternalParam) and isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(value), np.uint8)
    return value


def _results(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _batched(lib: KernelLibrary, name: str, attrs: dict[str, Any]) -> Any:
    """Op `name` with attributes `attrs`, as a function of its operands with the op's batching
    rule."""
    import jax
    import jax.numpy as jnp

    sch = lib.op(name).schema
    rule = batching_rule(sch)

    @jax.custom_batching.custom_vmap
    def call(*operands: Any) -> Any:
        return call_op(lib, name, *operands, **attrs)

    @call.def_vmap
    def vmap_rule(axis_size: int, in_batched: Sequence[bool], *operands: Any) -> Any:
        n_results = len(sch.results)
        externals_batched = any(b for p, b in zip(sch.operands, in_batched)
                                if isinstance(p, ExternalParam))
        # An empty batch goes through the loop too (jax.lax.map of no element: shapes only).
        if rule == "rows" and not externals_batched and axis_size > 0:
            flat = []
            for p, o, b in zip(sch.operands, operands, in_batched):
                if isinstance(p, TensorParam):
                    if not b:
                        o = jnp.broadcast_to(o, (axis_size, *jnp.shape(o)))
                    o = jnp.reshape(o, (axis_size * o.shape[1], *o.shape[2:]))
                flat.append(o)
            outs = _results(call(*flat))
            outs = [jnp.reshape(r, (axis_size, r.shape[0] // axis_size, *r.shape[1:]))
                    for r in outs]
        else:
            def one(sliced: Sequence[Any]) -> Any:
                it = iter(sliced)
                args = [next(it) if b else o for o, b in zip(operands, in_batched)]
                return tuple(_results(call(*args)))

            outs = list(jax.lax.map(one, tuple(o for o, b in zip(operands, in_batched) if b)))
        if n_results == 1:
            return outs[0], True
        return outs, [True] * n_results

    return call


def _differentiable(lib: KernelLibrary, name: str, attrs: dict[str, Any]) -> Any:
    """Op `name` with attributes `attrs` as a differentiable function of its operands: in
    forward mode by its declared tangent op, in reverse mode by its declared backward op, each
    refusing by name where the op declares none (`customop.xla.derivatives`). An op with side
    effects is a `jax.custom_vjp` function (its backward, or `NoGradientError`)."""
    import jax

    sch = lib.op(name).schema
    forward = _batched(lib, name, attrs)
    if not sch.side_effect:
        return with_derivatives(lib, sch, attrs, forward, _differentiable)
    from jax.custom_derivatives import SymbolicZero

    f = jax.custom_vjp(forward)

    def fwd(*primals: Any) -> Any:
        # Which operands carry a tangent (symbolic zeros): each must have a derivative.
        operands = tuple(p.value for p in primals)
        refuse_perturbed(lib, sch, list(operands), [p.perturbed for p in primals])
        # The op itself, not its bare forward: under an outer derivative (grad of grad), JAX
        # differentiates this function too, through the op's own rule.
        out = f(*operands)
        return out, (operands, out)

    def bwd(res: Any, cts: Any) -> Any:
        operands, out = res
        outs, cts = _results(out), _results(cts)
        vjp = sch.vjp
        if vjp is None:
            raise NoGradientError(
                "%s has no gradient: it declares no backward op (`#[custom_op(vjp = ...)]`), so "
                "jax.grad cannot go through it. Apply jax.lax.stop_gradient to its inputs when "
                "no gradient needs to flow through it." % name)
        refuse_used(lib, sch, outs, [type(c) is not SymbolicZero for c in cts])
        cts = [jax.numpy.zeros(o.shape, o.dtype) if type(c) is SymbolicZero else c
               for c, o in zip(cts, outs)]
        args, battrs = vjp.backward_arguments(sch, operands, outs, cts, attrs)
        # The backward op differentiable in turn (by its own declared backward, or refusing
        # by name): grad of grad and Hessians in reverse mode go through it.
        grads = _results(_differentiable(lib, vjp.op, battrs)(*args))
        return tuple(vjp.input_gradients(sch, grads))

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    return f


def call_op(lib: KernelLibrary, name: str, *operands: Any, **attrs: Any) -> Any:
    """`Library.call`: op `name` of `lib` on `operands` with `jax.ffi.ffi_call`, attributes
    checked and converted first, result types from the schema's shape rules."""
    import jax
    import numpy as np

    sch = lib.op(name).schema
    attrs = checked_attrs(sch, attrs)
    names = operand_names(sch)
    if len(operands) != len(names):
        raise TypeError("%s takes %d operands (%s), got %d"
                        % (name, len(names), ", ".join(names), len(operands)))
    shapes = dict(zip(names, (tuple(np.shape(o)) for o in operands)))
    types = lib.manifest.element_types
    dtypes = {n: types.by_numpy(_numpy_dtype(o).name) for n, o in zip(names, operands)}
    operands, manual = _same_varying_axes(operands)
    results = [jax.ShapeDtypeStruct(spec.shape, spec.dtype.numpy_dtype, **manual)
               for spec in result_specs(sch, shapes, attrs, dtypes)]
    # An `#[inout]` tensor's result is its operand's buffer: no copy where XLA can reuse it
    # (a donated argument under jax.jit, an intermediate).
    aliases = {r.operand: i for i, r in enumerate(sch.results) if isinstance(r, UpdatedTensor)}
    return jax.ffi.ffi_call(sch.target, results if len(results) != 1 else results[0],
                            has_side_effect=sch.side_effect,
                            input_output_aliases=aliases or None)(*operands, **attrs)


def _same_varying_axes(operands: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Inside `jax.shard_map` (with its default `check_vma`), the operands cast to vary along
    every manual mesh axis any of them varies along, and the keyword that gives the results
    that type: an FFI call's results are typed by what it is told (nothing would make them
    invariant, and their cotangents would not match the inputs': jax.grad failed). Outside,
    the operands as they are and no keyword."""
    import jax

    def varying(o: Any) -> frozenset[Any]:
        mat = getattr(jax.typeof(o), "mat", None) if hasattr(o, "dtype") else None
        return mat.varying if mat is not None else frozenset()

    axes = frozenset().union(*(varying(o) for o in operands))
    if not axes:
        return operands, {}
    cast = tuple(o if varying(o) == axes else
                 jax.lax.pcast(o, tuple(sorted(axes - varying(o), key=str)), to="varying")
                 for o in operands)
    aval = jax.typeof(cast[0])
    # A type with manual axes names its mesh (the abstract mesh inside shard_map).
    return cast, {"manual_axis_type": aval.mat, "sharding": jax.sharding.NamedSharding(
        aval.sharding.mesh, jax.sharding.PartitionSpec())}


def _numpy_dtype(value: Any) -> Any:
    """The numpy dtype of an array, a jax array or tracer (its `dtype`), or anything else numpy
    takes."""
    import numpy as np

    dtype = getattr(value, "dtype", None)
    return np.dtype(dtype) if dtype is not None else np.asarray(value).dtype
