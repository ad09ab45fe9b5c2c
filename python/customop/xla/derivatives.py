"""Derivatives of customop ops in JAX: a `jax.custom_jvp` whose tangent is one primitive,
`customop_tangent`, linear in the input tangents, with its own rules:

- evaluated (forward mode: `jax.jvp`, `jacfwd`, `linearize`'s evaluation), it runs the op's
  declared tangent op (`#[custom_op(jvp = ...)]`), or raises `NoForwardRuleError` naming the op;
- transposed (reverse mode: `jax.grad`, `vjp`, `jacrev`, which linearize and transpose), it runs
  the op's declared backward op (`vjp = ...`), or raises `NoGradientError` naming the op;
- batched, it runs the same per element under `jax.vmap` (a batched primitive carries how many
  leading batch dimensions it has);
- differentiated itself (a derivative of a tangent), it is differentiated through the tangent
  op, as an op.

Each rule calls the tangent or backward op as a differentiable op in turn, so derivatives of
any order compose from the rules each op declares: `jax.hessian` (forward over reverse) needs
the backward op's `jvp`, grad of grad the backward op's `vjp`.

Why a custom_jvp with a transposable tangent rather than a `custom_vjp`: JAX refuses forward
mode on a `custom_vjp` function outright ("can't apply forward-mode autodiff (jvp) to a
custom_vjp function"), so an op with both rules could not be used in both modes. Under `jit`
nothing of this reaches the program: a call that is not differentiated lowers to the same
custom call, and a differentiated one to the tangent or backward op's custom calls.
"""

from __future__ import annotations

from typing import Any

from ..differentiation import NotDifferentiableError, input_refusal, output_refusal
from ..library import KernelLibrary
from ..manifest import OpSchema

__all__ = ["NoGradientError", "NoForwardRuleError", "NotDifferentiableError", "tangent_primitive",
           "with_derivatives", "refuse_perturbed", "refuse_used"]


class NoGradientError(TypeError):
    """`jax.grad` (reverse-mode differentiation) reached an op that declares no backward."""


class NoForwardRuleError(TypeError):
    """Forward-mode differentiation (`jax.jvp`, `jacfwd`, `jax.hessian`) reached an op that
    declares no tangent op."""


def _inexact(dtype: Any) -> bool:
    """Whether JAX gives values of `dtype` a tangent of their own type (floating and complex
    types, the fp8 ones included); integers and bools get `float0`, which carries nothing."""
    import jax.numpy as jnp

    return bool(jnp.issubdtype(dtype, jnp.inexact))


def _dtype_name(dtype: Any) -> str:
    import numpy as np

    return np.dtype(dtype).name


_STOP = "jax.lax.stop_gradient"


def refuse_perturbed(lib: KernelLibrary, sch: OpSchema, operands: list[Any],
                     perturbed: list[bool]) -> None:
    """Raises `NotDifferentiableError` for the first operand of a call that carries a tangent
    (`perturbed`) but has no derivative at its type (Rust's `derivatives`)."""
    names = [o.name for o in sch.operands]
    for name, a, moved in zip(names, operands, perturbed):
        dtype = _dtype_name(a.dtype)
        if moved and _inexact(a.dtype) and not sch.derivatives.input_has(name, dtype):
            raise NotDifferentiableError(
                input_refusal(sch, lib.manifest.element_types, name, dtype, _STOP))


def refuse_used(lib: KernelLibrary, sch: OpSchema, outs: list[Any], used: list[bool]) -> None:
    """Raises `NotDifferentiableError` for the first output whose cotangent is used
    (`used`) but has no derivative at its type."""
    for r, o, u in zip(sch.results, outs, used):
        dtype = _dtype_name(o.dtype)
        if u and _inexact(o.dtype) and not sch.derivatives.output_has(r.name, dtype):
            raise NotDifferentiableError(
                output_refusal(sch, lib.manifest.element_types, r.name, dtype))


class _Static:
    """A value a primitive carries as a parameter, compared by identity (the library, the
    op's attributes)."""
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _results(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (list, tuple)) else [out]


_PRIMITIVE: Any = None


def tangent_primitive() -> Any:
    """The `customop_tangent` primitive, made and given its rules once per process: before
    any function calling an op is traced (`Ops` makes it), since registering its rules during a
    trace kept JAX from caching that trace (and so the executable: a second
    `jit(f).lower(x).compile()` compiled again)."""
    global _PRIMITIVE
    if _PRIMITIVE is not None:
        return _PRIMITIVE
    import jax
    from jax.extend.core import Primitive
    from jax.interpreters import ad, batching, mlir

    p = Primitive("customop_tangent")
    p.multiple_results = True

    def split(args: Any, n_primals: int, n_outs: int) -> tuple[list[Any], list[Any], list[Any]]:
        return (list(args[:n_primals]), list(args[n_primals:n_primals + n_outs]),
                list(args[n_primals + n_outs:]))

    def abstract_eval(*avals: Any, n_primals: int, n_outs: int, diff_out: tuple[int, ...],
                      undefined_out: tuple[int, ...], **_: Any) -> list[Any]:
        # Each output tangent is typed as its output (shape, dtype, manual axes), batch
        # dimensions included: those the rules give, then those they cannot (which refuse
        # when used).
        return [avals[n_primals + i] for i in (*diff_out, *undefined_out)]

    def evaluate(*args: Any, lib: _Static, op: str, attrs: _Static, again: _Static,
                 n_primals: int, n_outs: int, diff_in: tuple[int, ...],
                 diff_out: tuple[int, ...], undefined_out: tuple[int, ...],
                 batch: int) -> list[Any]:
        """Forward mode: the declared tangent op, per element of `batch` leading dims."""
        sch = lib.value.op(op).schema
        jvp = sch.jvp
        if jvp is None:
            raise NoForwardRuleError(
                "%s has no forward-mode rule: it declares no tangent op (`#[custom_op(jvp = "
                "...)]`), so forward-mode differentiation (jax.jvp, jacfwd, jax.hessian, "
                "linearize) cannot go through it. Differentiate it in reverse mode (jax.grad, "
                "jacrev; a Hessian as jacrev(jacrev(f))) with its declared `vjp`, or declare a "
                "`jvp`." % op)
        outs = list(args[n_primals:n_primals + n_outs])
        refuse_used(lib.value, sch, outs, [i in undefined_out for i in range(n_outs)])

        def one(primals: list[Any], outs: list[Any], tans: list[Any]) -> list[Any]:
            per_operand: list[Any] = [None] * len(primals)
            for k, i in enumerate(diff_in):
                per_operand[i] = tans[k]
            targs, tattrs = jvp.tangent_arguments(sch, primals, outs, per_operand, attrs.value)
            got = _results(again.value(lib.value, jvp.op, tattrs)(*targs))
            per_result = jvp.output_tangents(sch, got)
            return [per_result[i] for i in diff_out]

        fn = one
        for _ in range(batch):
            fn = jax.vmap(fn)
        return fn(*split(args, n_primals, n_outs))

    def transpose(cts: Any, *args: Any, lib: _Static, op: str, attrs: _Static, again: _Static,
                  n_primals: int, n_outs: int, diff_in: tuple[int, ...],
                  diff_out: tuple[int, ...], undefined_out: tuple[int, ...],
                  batch: int) -> list[Any]:
        """Reverse mode: the declared backward op on the cotangents of the output tangents."""
        import jax.numpy as jnp

        sch = lib.value.op(op).schema
        vjp = sch.vjp
        if vjp is None:
            raise NoGradientError(
                "%s has no gradient: it declares no backward op (`#[custom_op(vjp = ...)]`), "
                "so jax.grad cannot go through it. Apply jax.lax.stop_gradient to its inputs "
                "when no gradient needs to flow through it." % op)
        cts = list(cts)
        # A cotangent that reaches an output the backward takes none of: refused, not dropped.
        used = {i for i, ct in zip(undefined_out, cts[len(diff_out):]) if type(ct) is not ad.Zero}
        refuse_used(lib.value, sch, list(args[n_primals:n_primals + n_outs]),
                    [i in used for i in range(n_outs)])
        cts = cts[:len(diff_out)]
        primals, outs, tans = split(args, n_primals, n_outs)
        cts = [jnp.zeros(outs[i].shape, outs[i].dtype) if type(c) is ad.Zero else c
               for c, i in zip(cts, diff_out)]

        def one(primals: list[Any], outs: list[Any], cts: list[Any]) -> list[Any]:
            per_result = [jnp.zeros_like(o) for o in outs]
            for c, i in zip(cts, diff_out):
                per_result[i] = c
            bargs, battrs = vjp.backward_arguments(sch, primals, outs, per_result, attrs.value)
            grads = vjp.input_gradients(
                sch, _results(again.value(lib.value, vjp.op, battrs)(*bargs)))
            return [grads[i] for i in diff_in]

        fn = one
        for _ in range(batch):
            fn = jax.vmap(fn)
        grads = fn(primals, outs, cts)
        return ([None] * (n_primals + n_outs) +
                [g if ad.is_undefined_primal(t) else None for g, t in zip(grads, tans)])

    def jvp_rule(primals: Any, tangents: Any, **params: Any) -> Any:
        """A derivative of a tangent (jvp of jvp, grad of jvp): through the tangent op, an op
        with rules of its own."""
        tangents = [ad.instantiate_zeros(t) for t in tangents]
        return jax.jvp(lambda *a: evaluate(*a, **params), tuple(primals), tuple(tangents))

    def batch_rule(args: Any, dims: Any, *, batch: int, **params: Any) -> Any:
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        moved = [jax.numpy.broadcast_to(a, (size, *a.shape)) if d is None
                 else jax.numpy.moveaxis(a, d, 0) for a, d in zip(args, dims)]
        out = p.bind(*moved, batch=batch + 1, **params)
        return out, [0] * len(out)

    p.def_abstract_eval(abstract_eval)
    p.def_impl(evaluate)
    mlir.register_lowering(p, mlir.lower_fun(evaluate, multiple_results=True))
    ad.primitive_transposes[p] = transpose
    ad.primitive_jvps[p] = jvp_rule
    batching.primitive_batchers[p] = batch_rule
    _PRIMITIVE = p
    return p


def with_derivatives(lib: KernelLibrary, sch: OpSchema, attrs: dict[str, Any], forward: Any,
                     differentiable: Any) -> Any:
    """`forward` (the op's call on its operands) as a `jax.custom_jvp` function whose tangent
    is the `customop_tangent` primitive. `differentiable(lib, name, attrs)` makes any op such a
    function: the rules call the tangent and backward ops through it."""
    import jax
    from jax.custom_derivatives import SymbolicZero

    f = jax.custom_jvp(forward)
    p = tangent_primitive()
    lib_p, attrs_p, again = _Static(lib), _Static(attrs), _Static(differentiable)

    derivatives = sch.derivatives
    operands = [o.name for o in sch.operands]
    results = [r.name for r in sch.results]

    def rule(primals: Any, tangents: Any) -> Any:
        """The tangent of a call, from the inputs JAX perturbs (a tangent that is not a
        symbolic zero): each must have a derivative at its type (Rust's `derivatives`), or the
        call is refused by name; the outputs' tangents come from the tangent primitive, those
        of outputs without a derivative refusing when used."""
        out = f(*primals)
        outs = _results(out)
        dtypes = [_dtype_name(a.dtype) for a in primals]
        perturbed = [type(t) is not SymbolicZero and _inexact(a.dtype)
                     for a, t in zip(primals, tangents)]
        if sch.vjp is not None or sch.jvp is not None:
            refuse_perturbed(lib, sch, list(primals), perturbed)
            # Every input with a derivative takes part (the rules take each one's tangent), a
            # symbolic zero as a zero.
            diff_in = tuple(i for i in range(len(primals))
                            if derivatives.input_has(operands[i], dtypes[i]))
        else:
            # An op with no rule at all: the tangent primitive, linear in what is perturbed,
            # refuses it as such when transposed (NoGradientError) or evaluated
            # (NoForwardRuleError).
            diff_in = tuple(i for i, moved in enumerate(perturbed) if moved)
        diff_out = tuple(i for i, o in enumerate(outs)
                         if derivatives.output_has(results[i], _dtype_name(o.dtype)))
        undefined_out = tuple(i for i, o in enumerate(outs)
                              if i not in diff_out and _inexact(o.dtype))
        by_result: dict[int, Any] = {}
        if any(perturbed) and (diff_out or undefined_out):
            tans = [jax.numpy.zeros(primals[i].shape, primals[i].dtype)
                    if type(tangents[i]) is SymbolicZero else tangents[i] for i in diff_in]
            got = p.bind(*primals, *outs, *tans, lib=lib_p, op=sch.name, attrs=attrs_p,
                         again=again, n_primals=len(primals), n_outs=len(outs),
                         diff_in=diff_in, diff_out=diff_out, undefined_out=undefined_out,
                         batch=0)
            by_result = dict(zip((*diff_out, *undefined_out), got))
        t_outs = [by_result[i] if i in by_result else SymbolicZero.from_primal_value(o)
                  for i, o in enumerate(outs)]
        return out, (type(out)(t_outs) if isinstance(out, (list, tuple)) else t_outs[0])

    f.defjvp(rule, symbolic_zeros=True)
    return f
