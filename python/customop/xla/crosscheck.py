"""`jit` for the test suite: `jax.jit`, whose every call also runs through customop's Rust
runner when `CUSTOMOP_PJRT_CROSS_CHECK` is set (`customop.crosscheck`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..crosscheck import cross_check

__all__ = ["jit", "cross_check"]


def jit(library: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`jax.jit(fn)`, whose every call is also lowered to StableHLO text and run through the
    Rust runner with `library`'s handlers (when `CUSTOMOP_PJRT_CROSS_CHECK` is set). jaxlib's
    outcome is then taken in steps, lower, compile, execute, so that a failure is compared
    with the runner's at its stage; a failure to trace or lower leaves no program to check,
    and is raised as it is."""
    import os

    import jax
    import numpy as np

    jitted = jax.jit(fn)

    def call(*args: Any) -> Any:
        if not os.environ.get("CUSTOMOP_PJRT_CROSS_CHECK"):
            return jitted(*args)
        lowered = jitted.lower(*args)
        text = lowered.as_text()
        # The arguments as JAX canonicalised them (its dtypes, not numpy's defaults).
        inputs = [np.asarray(jax.numpy.asarray(a)) for a in args]
        try:
            compiled = lowered.compile()
        except Exception as e:
            cross_check(library, text, inputs, None, e, stage="compile")
            raise
        try:
            out = compiled(*args)
            # Reading the outputs waits for the execution, and its errors.
            outs = [np.asarray(o) for o in jax.tree_util.tree_leaves(out)]
        except Exception as e:
            cross_check(library, text, inputs, None, e, stage="execute")
            raise
        cross_check(library, text, inputs, outs, None)
        return out

    return call
