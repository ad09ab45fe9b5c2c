"""ml_dtypes' conversions, the independent reference for customop's fp8 types and its f64 to
bf16/f16 rounding (called from runtime/tests/float8.rs through pycall.py). Values travel as
bit patterns (JSON has no NaN), or, a million at a time, in a file."""

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


def f64_to_16bit_reference(path, n):
    """Writes about `n` f64 values to `path` (little-endian f64s), then the bf16 bits ml_dtypes
    rounds each to (u16s), then numpy's float16 bits (u16s); returns the count. The values:
    for random finite values of each format, the midpoint to the next value up in magnitude and
    its f64 neighbours (1 to 3 ulps and a 2^-40 relative step either side), both signs; random
    values spread over the formats' exponent ranges; the overflow boundaries."""
    rng = np.random.default_rng(20261204)
    chunks = []
    for dt in (ml_dtypes.bfloat16, np.float16):
        bits = rng.integers(0, 0x7C00 if dt is np.float16 else 0x7F80, size=n // 20,
                            dtype=np.uint16)
        lo = bits.view(dt).astype(np.float64)
        hi = (bits + 1).view(dt).astype(np.float64)
        mid = (lo + hi) / 2  # exact: one bit more than the format has
        mid = mid[np.isfinite(mid)]
        near = [mid]
        for k in (1, 2, 3):
            up, down = mid.copy(), mid.copy()
            for _ in range(k):
                up = np.nextafter(up, np.inf)
                down = np.nextafter(down, -np.inf)
            near += [up, down]
        near += [mid * (1 + 2.0 ** -40), mid * (1 - 2.0 ** -40)]
        v = np.concatenate(near)
        chunks += [v, -v]
    spread = np.exp2(rng.uniform(-30, 17, size=n // 4)) * rng.choice([-1.0, 1.0], size=n // 4)
    edges = np.array([65504.0, 65519.999, 65520.0, 65536.0, 3.3895313892515355e38,
                      3.3961e38, 3.4e38, 2.0 ** -24, 2.0 ** -25, 2.0 ** -133, 2.0 ** -134, 0.0])
    v = np.concatenate(chunks + [spread, edges, -edges])
    with np.errstate(over="ignore"):
        b = v.astype(ml_dtypes.bfloat16).view(np.uint16)
        h = v.astype(np.float16).view(np.uint16)
    with open(path, "wb") as f:
        f.write(v.astype("<f8").tobytes())
        f.write(b.astype("<u2").tobytes())
        f.write(h.astype("<u2").tobytes())
    return int(v.size)
