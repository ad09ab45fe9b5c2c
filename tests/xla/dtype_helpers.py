"""ml_dtypes' conversions, the independent reference for customop's fp8 types (called from
runtime/tests/float8.rs through pycall.py). Values travel as bit patterns (JSON has no NaN)."""

import ml_dtypes
import numpy as np


def _fp8(name):
    return np.dtype(getattr(ml_dtypes, name))


def fp8_to_f32_bits(name):
    """The f32 bits of each of the 256 values of fp8 format `name` (`float8_e4m3fn`)."""
    codes = np.arange(256, dtype=np.uint8).view(_fp8(name))
    return codes.astype(np.float32).view(np.uint32).tolist()


def f32_bits_to_fp8(name, bits):
    """The fp8 bits that ml_dtypes rounds each f32 (given by its bits) to."""
    xs = np.array(bits, dtype=np.uint32).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        return xs.astype(_fp8(name)).view(np.uint8).tolist()
