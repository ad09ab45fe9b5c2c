"""`jit` for the test suite: `jax.jit`, whose every call also runs through customop's Rust
runner when `CUSTOMOP_PJRT_CROSS_CHECK` is set (`customop.crosscheck`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..crosscheck import cross_check

__all__ = ["jit", "cross_check"]


def jit(library: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`jax.jit(fn)`, whose every call is also lowered to StableHLO text and run through the
    Rust runner with `library`'s handlers (when `CUSTOMOP_PJRT_CROSS_CHECK` is set)."""
    import os

    import jax
    import numpy as np

    jitted = jax.jit(fn)

    def call(*args: Any) -> Any:
        out = jitted(*args)
        if os.environ.get("CUSTOMOP_PJRT_CROSS_CHECK"):
            text = jitted.lower(*args).as_text()
            # The arguments as JAX canonicalised them (its dtypes, not numpy's defaults).
            inputs = [np.asarray(jax.numpy.asarray(a)) for a in args]
            outs = [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else [out])]
            cross_check(library, text, inputs, outs, None)
        return out

    return call
