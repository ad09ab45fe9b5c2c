"""The autograd kernel of every customop op in torch: below autograd as usual, and when an input
needs a gradient, a node whose backward runs the op's declared backward op, or raises
`NoGradientError` for an op that declares none."""

from __future__ import annotations

from typing import Any

import contextvars

import torch
from torch._functorch.pyfunctorch import (temporarily_clear_interpreter_stack,
                                          temporarily_restore_interpreter_stack)
from torch._subclasses.fake_tensor import FakeTensor
from torch.autograd import forward_ad as _forward_ad

_peek_interpreter = torch._C._functorch.peek_interpreter_stack
_is_compiling = torch.compiler.is_compiling

from ..differentiation import (NotDifferentiableError, in_place_refusal, input_refusal,
                               output_refusal)
from ..elements import ElementTypes
from ..manifest import OpSchema, UpdatedTensor
from .native import reraise

__all__ = ["NoGradientError", "NoForwardRuleError", "NotDifferentiableError", "autograd_kernel"]


# The torch.func interpreters set aside while an op's autograd.Function applies (`apply` in
# `autograd_kernel`), for its forward to restore.
# With them, whether forward grad mode was on.
_functorch_stack: contextvars.ContextVar[tuple[list[Any], bool] | None] = contextvars.ContextVar(
    "customop_functorch_stack", default=None)


class NoGradientError(RuntimeError):
    """`backward()` reached a customop op, which declares no gradient."""


class NoForwardRuleError(RuntimeError):
    """A forward-mode tangent (`torch.func.jvp`, `jacfwd`, `torch.autograd.forward_ad`) reached a
    customop op, which has no forward-mode rule: refused, where torch would otherwise carry on
    with a zero tangent and no error."""


def _no_forward_rule_message(op: str) -> str:
    return ("%s has no forward-mode rule: forward-mode AD (torch.func.jvp, jacfwd, hessian, "
            "torch.autograd.forward_ad) cannot go through it, and customop refuses rather than "
            "give a zero tangent. Differentiate it in reverse mode with its declared `vjp` "
            "(backward(), torch.autograd.grad, torch.func.grad, vjp, jacrev; a Hessian as "
            "jacrev(jacrev(f))), or call it on inputs without a tangent "
            "(fwAD.unpack_dual(x).primal)." % op)


def _dual_level() -> int:
    """The dual level tangents live at: the current one, or 0 where a compiled torch.func.jvp
    entered it without Python's record of it (torch supports no nested dual level, so 0 is the
    only one there is)."""
    level = _forward_ad._current_level
    return level if level >= 0 else 0


def _may_have_tangents() -> bool:
    """Whether forward-mode AD may be on: a dual level entered from Python, or any torch.func
    transform (a compiled torch.func.jvp enters its level below Python's record). Outside both,
    the check is an attribute read and one call."""
    return _forward_ad._current_level >= 0 or _peek_interpreter() is not None


def _has_tangent(args: tuple[Any, ...]) -> bool:
    """Whether any tensor argument carries a forward-mode tangent (torch.func.jvp and jacfwd
    enter a dual level too)."""
    if not _may_have_tangents():
        return False
    level = _dual_level()
    return any(isinstance(a, torch.Tensor) and
               _forward_ad.unpack_dual(a, level=level).tangent is not None for a in args)


def _no_gradient_message(op: str) -> str:
    return ("%s has no gradient: it declares no backward op (`#[custom_op(vjp = ...)]`), so "
            "backward() (and torch.func.grad, vjp, jacrev) cannot go through it. Declare one, "
            "or call it on detached inputs (x.detach()) or under torch.no_grad() when no "
            "gradient needs to flow through it." % op)


_REFUSALS = {"no_gradient": NoGradientError, "not_differentiable": NotDifferentiableError}


@torch.library.custom_op("customop::refuse_gradient", mutates_args=())
def _refuse_gradient(grad: torch.Tensor, shape: list[int], kind: str,
                     message: str) -> torch.Tensor:
    """What backward computes where customop cannot give a gradient: an error (`kind` names
    its class, `NoGradientError` or `NotDifferentiableError`). An op, not a Python `raise` in
    the autograd node, so that torch.compile (which traces the backward ahead of time) compiles
    it into the backward graph, and only running that backward raises."""
    raise _REFUSALS[kind](message)


@_refuse_gradient.register_fake
def _(grad: torch.Tensor, shape: list[int], kind: str, message: str) -> torch.Tensor:
    return grad.new_empty(shape)


def _numpy_name(t: torch.Tensor) -> str:
    """The numpy (or ml_dtypes) name of a tensor's dtype (`float32`, `bfloat16`)."""
    return str(t.dtype).removeprefix("torch.")


def _inexact(t: Any) -> bool:
    """Whether torch gives a tensor of this dtype a gradient (floating and complex types)."""
    return isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())


_STOP = "x.detach(), or under torch.no_grad()"


def autograd_kernel(op: Any, sch: OpSchema, types: ElementTypes) -> Any:
    """The op's autograd kernel: the op runs below autograd as usual, and when an input needs a
    gradient its outputs are tied to a node whose backward runs the op's declared backward op
    (`vjp = ...`, with the forward inputs, attributes and outputs it names as residuals, saved
    with `save_for_backward`), or, for an op that declares none, raises `NoGradientError`
    (without it, torch only warns and leaves `.grad` None).

    The node is a `torch.autograd.Function` in the form torch.func needs (`forward` without
    `ctx`, `setup_context`, a generated vmap rule), so `torch.func.grad`, `vjp`, `jacrev` and
    `vmap(grad(...))` go through it as `backward()` does. Its backward calls the backward op
    through the dispatcher, differentiably: with `create_graph=True` (double backward,
    `gradgradcheck`, `torch.func.hessian` in reverse mode) the backward op's own autograd kernel
    records it, and differentiates it by its own declared `vjp`, or refuses by name."""
    name = sch.name
    vjp = sch.vjp
    jvp = sch.jvp
    derivatives = sch.derivatives
    operands = [o.name for o in sch.operands]
    results = [r.name for r in sch.results]
    # The tensors the op updates in place (`#[inout]`): such an op declares no derivative (as
    # JAX says of it, NoGradientError), and a call on inputs that require grad is refused (the
    # updated tensor would keep its old derivative, or none, silently).
    updated = [r.param for r in sch.results if isinstance(r, UpdatedTensor)]

    def refuse_in_place(args: tuple[Any, ...]) -> None:
        name = next(n for n, a in zip(operands, args)
                    if isinstance(a, torch.Tensor) and a.requires_grad)
        raise NoGradientError(in_place_refusal(sch, updated[0], name, _STOP))

    def input_without(i: int, a: Any) -> str | None:
        """Why operand `i` (`a`, which carries a derivative) has none, or None."""
        if not _inexact(a) or derivatives.input_has(operands[i], _numpy_name(a)):
            return None
        return input_refusal(sch, types, operands[i], _numpy_name(a), _STOP)

    def output_without(i: int, o: Any) -> str | None:
        """Why output `i` (`o`) has no derivative, or None."""
        if not _inexact(o) or derivatives.output_has(results[i], _numpy_name(o)):
            return None
        return output_refusal(sch, types, results[i], _numpy_name(o))

    # Looked up once: every eager call in grad mode runs this kernel.
    redispatch, below, after_autograd = (op.redispatch, torch._C._AutoDispatchBelowAutograd,
                                         torch._C._after_autograd_keyset)
    grad_enabled, any_requires_grad = torch.is_grad_enabled, torch._C._any_requires_grad

    def below_autograd(keyset: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            with below():
                return redispatch(keyset & after_autograd, *args, **kwargs)
        except RuntimeError as e:
            # A native kernel's error, raised as customop's own.
            reraise(e)
            raise

    def forward(keyset: Any, kwargs: dict[str, Any], args: tuple[Any, ...]) -> Any:
        return under_transforms(lambda: below_autograd(keyset, args, kwargs))

    def under_transforms(run: Any) -> Any:
        saved = _functorch_stack.get()
        if saved is None:
            return run()
        stack, fw_grad = saved
        # Under torch.func transforms, with the transforms' interpreters back (see `apply`),
        # grad mode as the kernel found it (on) and forward grad mode too: autograd.Function
        # runs its forward without either, which the levels below would take as theirs, and
        # record nothing: grad of grad gave zeros, and so did jvp of grad.
        with temporarily_restore_interpreter_stack(stack), torch.enable_grad(), \
                _forward_ad._set_fwd_grad_enabled(fw_grad):
            return run()

    def no_forward_rule(ctx: Any, *tangents: Any) -> Any:
        raise NoForwardRuleError(_no_forward_rule_message(name))

    def forward_mode(keyset: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The op on operands that carry forward-mode tangents (at the current dual level,
        torch.func.jvp's included): the op on their primals (through the dispatcher, so that
        reverse mode records it as usual), its declared tangent op on the primals, attributes,
        outputs and tangents (zero where an operand has none), and the outputs made dual with
        their tangents. The tangent op goes through the dispatcher too: a tangent at an outer
        level (nested jvp, forward over reverse) reaches it as any op's."""
        assert jvp is not None
        level = _dual_level()
        unpacked = [_forward_ad.unpack_dual(a, level=level) if isinstance(a, torch.Tensor)
                    else None for a in args]
        for i, u in enumerate(unpacked):
            why = input_without(i, u.primal) if u is not None and u.tangent is not None else None
            if why is not None:
                raise NotDifferentiableError(why)
        primals = [u.primal if u is not None else a for u, a in zip(unpacked, args)]
        tangents = [(u.tangent if u.tangent is not None else torch.zeros_like(u.primal))
                    if u is not None else None for u in unpacked]
        output = op(*primals, **kwargs)
        outs = list(output) if isinstance(output, tuple) else [output]
        ns, _, short = jvp.op.partition("::")
        tangent_op = getattr(getattr(torch.ops, ns), short).default
        targs, tattrs = jvp.tangent_arguments(sch, primals, outs, tangents, kwargs)
        got = tangent_op(*targs, **tattrs)
        got = list(got) if isinstance(got, tuple) else [got]
        out_tangents = jvp.output_tangents(sch, got)
        for i, (o, t) in enumerate(zip(outs, out_tangents)):
            # An output of a floating type the tangent op gives no tangent of: refused, where
            # torch would take it as a zero.
            why = output_without(i, o) if t is None else None
            if why is not None:
                raise NotDifferentiableError(why)
        duals = [_forward_ad.make_dual(o, t, level=level) if t is not None else o
                 for o, t in zip(outs, out_tangents)]
        return duals[0] if len(duals) == 1 else tuple(duals)

    class NoGradient(torch.autograd.Function):
        # forward takes ctx (no setup_context): torch binds a setup_context-style forward's
        # arguments with inspect.signature on every apply, ~20 us a call. torch.func needs
        # setup_context only where it routes apply itself, which `apply` below avoids.
        @staticmethod
        def forward(ctx: Any, keyset: Any, kwargs: dict[str, Any], *args: Any) -> Any:
            ctx.shapes = [list(a.shape) if isinstance(a, torch.Tensor) else None for a in args]
            return forward(keyset, kwargs, args)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            grad = next((g for g in grads if g is not None), None)
            if grad is None:
                return (None, None, *[None] * len(ctx.shapes))
            message = _no_gradient_message(name)
            return (None, None, *[_refuse_gradient(grad, shape, "no_gradient", message)
                                  if needed else None
                                  for shape, needed in zip(ctx.shapes, ctx.needs_input_grad[2:])])

        jvp = staticmethod(no_forward_rule)

    class WithGradient(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, keyset: Any, kwargs: dict[str, Any], *args: Any) -> Any:
            output = forward(keyset, kwargs, args)
            outs = list(output) if isinstance(output, tuple) else [output]
            ctx.kwargs = dict(kwargs)
            ctx.n_args = len(args)
            # Operands asked a gradient they have none of, outputs with no cotangent in the
            # backward: refused in backward (where the gradient is asked), by name.
            ctx.refused_inputs = [input_without(i, a) for i, a in enumerate(args)]
            ctx.refused_outputs = [output_without(i, o) for i, o in enumerate(outs)]
            # A gradient autograd did not materialise is None: an output the result does not
            # depend on, told apart from one that carries a gradient.
            ctx.set_materialize_grads(False)
            # The residuals: every operand and output (the backward op reads those it names).
            ctx.save_for_backward(*args, *outs)
            return output

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            assert vjp is not None
            needed = ctx.needs_input_grad[2:]
            grad = next((g for g in grads if g is not None), None)
            if grad is None:
                # No output carries a gradient (each is an undefined, zero, cotangent): the
                # gradient of every input is zero, whatever the op's derivative.
                return (None, None, *[None] * ctx.n_args)
            why = next((w for w, g in zip(ctx.refused_outputs, grads) if w and g is not None),
                       None) or next((w for w, n in zip(ctx.refused_inputs, needed) if w and n),
                                     None)
            if why is not None:
                shapes = [list(a.shape) for a in ctx.saved_tensors[:ctx.n_args]]
                return (None, None, *[_refuse_gradient(grad, shape, "not_differentiable", why)
                                      if n else None for shape, n in zip(shapes, needed)])
            # Looked up here: the backward op may be defined after the forward.
            ns, _, short = vjp.op.partition("::")
            backward_op = getattr(getattr(torch.ops, ns), short).default
            saved = ctx.saved_tensors
            args, outs = saved[:ctx.n_args], saved[ctx.n_args:]
            # A cotangent autograd did not materialise is zero.
            cts = [g.contiguous() if g is not None else torch.zeros_like(o)
                   for g, o in zip(grads, outs)]
            bargs, battrs = vjp.backward_arguments(sch, args, outs, cts, ctx.kwargs)
            got = backward_op(*bargs, **battrs)
            got = list(got) if isinstance(got, tuple) else [got]
            return (None, None, *vjp.input_gradients(sch, got))

        jvp = staticmethod(no_forward_rule)

    function = NoGradient if vjp is None else WithGradient

    def apply(keyset: Any, kwargs: dict[str, Any], args: tuple[Any, ...]) -> Any:
        if torch._C._functorch.peek_interpreter_stack() is None:
            return function.apply(keyset, kwargs, *args)
        # Under a torch.func transform (grad, vjp, jacrev, vmap of those), the transform has
        # brought the call to its level before this Autograd kernel runs, and autograd here is
        # that level's: the node belongs here, as an ATen op's autograd kernel records its own.
        # autograd.Function.apply would instead route the call through torch's
        # `custom_function_call`, which only works above the transforms' dispatch (torch's own
        # `register_autograd` ops fail there alike). So apply runs with the transforms'
        # interpreters set aside, and the forward puts them back to run the op below autograd.
        with temporarily_clear_interpreter_stack() as stack:
            token = _functorch_stack.set((stack, torch._C._is_fwd_grad_enabled()))
            try:
                return function.apply(keyset, kwargs, *args)
            finally:
                _functorch_stack.reset(token)

    def kernel(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        # Without this, the op runs below autograd on the primals and its outputs carry no
        # tangent: torch.func.jvp gave zeros, forward_ad a None tangent.
        if _has_tangent(args):
            if jvp is None:
                raise NoForwardRuleError(_no_forward_rule_message(name))
            if _peek_interpreter() is None and (_is_compiling() or any(
                    isinstance(a, FakeTensor) for a in args)):
                # torch.autograd.forward_ad traced by torch.compile: the graph calls the op
                # again on dual tensors where nothing records the dual level, and the tangent
                # came back None. torch.func.jvp's level is recorded: it compiles.
                raise NoForwardRuleError(
                    "%s: torch.autograd.forward_ad inside torch.compile cannot go through a "
                    "customop op (the compiled graph would drop its tangent); use "
                    "torch.func.jvp or jacfwd there, or forward_ad outside torch.compile"
                    % name)
            return forward_mode(keyset, args, kwargs)
        if grad_enabled() and any_requires_grad(*args):
            if updated:
                refuse_in_place(args)
            return apply(keyset, kwargs, args)
        return below_autograd(keyset, args, kwargs)

    return kernel
