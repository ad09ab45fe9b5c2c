"""The example ops' arithmetic written with jnp, for the JAX tests to compare against."""

import jax.numpy as jnp
import numpy as np

# rms_norm's eps is an f32 attribute: the references use the same value.
EPS = float(np.float32(1e-3))


def as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def rms_norm_ref(x):
    return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS)


def mean_pool_ref(x, k, stride):
    n = (x.shape[-1] - k) // stride + 1
    return jnp.stack([x[..., j * stride:j * stride + k].mean(-1) for j in range(n)], axis=-1)
