"""JAX's `rms_norm` example: RMS normalisation over the last dimension with a `jax.custom_vjp`
written in Python over a forward that returns its residual and a backward from it, as customop
ops: `example::rms_norm_fwd` and `example::rms_norm_bwd` (f32, f64, bf16, f16, complex64 and
complex128; complex values as JAX's C++ example computes them, `x * x`, not `|x|^2`)."""

from functools import partial

import jax
import numpy as np

from . import OPS


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def rms_norm(x, eps=1e-5):
    return OPS.rms_norm_fwd(x, eps=np.float32(eps))[0]


def rms_norm_fwd(x, eps=1e-5):
    y, res = OPS.rms_norm_fwd(x, eps=np.float32(eps))
    return y, (res, x)


def rms_norm_bwd(eps, res, ct):
    del eps
    res, x = res
    return (OPS.rms_norm_bwd(res, x, ct),)


rms_norm.defvjp(rms_norm_fwd, rms_norm_bwd)
