"""Cross-checking jaxlib against customop's Rust runner (`customop::pjrt`, XLA's CPU PJRT
plugin: another build of XLA), for the test suite: with `CUSTOMOP_PJRT_CROSS_CHECK` naming the
`pjrt_run` tool (examples/src/bin/pjrt_run.rs), every program `Exported.run` runs, and every
function run through `customop.xla.crosscheck.jit`, also runs through the runner, which must
agree. Without the variable, nothing is checked. Imports neither jax nor torch.

What agreeing means is `disagreement`, a pure function of the two outcomes (tested by
tests/python/test_crosscheck.py); the Rust harness's cross-check (tests/xla/src/pjrt_check.rs)
applies the same rules:

- Both ran: as many outputs, each of the same dtype and shape, and element by element equal:
  floats and complex numbers of the types in `RTOL` within that relative tolerance of the
  larger magnitude of the two elements (`|a - b| <= rtol * max(|a|, |b|)`), or, for float64
  and complex128 only, within `CANCELLATION_ULPS` units in the last place of the output's
  largest magnitude (an element that a sum cancelled to near zero, see there); a NaN only
  against a NaN, an infinity only against the same infinity; every other type to the bit.
- Both failed: at the same stage (`compile`, which includes parsing the text, or `execute`),
  with the same customop refusal code (`[bad_descriptor]`, ...), and, when neither carries a
  code, the same status class (`INVALID_ARGUMENT`, `INTERNAL`, ...). An error of no known
  class agrees with nothing.
- One ran and the other failed: a disagreement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# How far two builds of XLA may differ, relative, per floating type (two builds may vectorise
# `sin` differently, or sum a reduction in another order): each element within `rtol` of the
# larger magnitude of the two elements; the only allowance relative to the whole output is
# `CANCELLATION_ULPS`, below. Every other type, and narrower floats, must agree to the bit.
# The Rust harness's cross-check (tests/xla/src/pjrt_check.rs, `RTOL_F32`/`RTOL_F64`) uses
# the same numbers.
RTOL = {"float64": 1e-12, "complex128": 1e-12, "float32": 1e-5, "complex64": 1e-5}

# The one looser rule, per element and for float64 and complex128 only: an element may also
# differ by up to this many units in the last place (machine epsilon, 2.2e-16) of the
# largest finite magnitude in either output. An element a sum cancelled to near zero (a
# gradient's entry of a matmul over rows that nearly cancel) carries the rounding error of
# the sum's large terms, which two builds round in another order; relative to itself that
# error is unbounded. Measured (tests/xla/test_transforms.py, the training chain's float64
# dW): -6.86559025661615e-06 from jaxlib, -6.8655902565933815e-06 from the runner, 3.3e-12 of
# the element, 0.45 ulp of the output's largest magnitude (0.228); no other float64 element
# of the suite differs by more than 1.6 ulp of its output's largest. float32's `RTOL` is 84
# of its ulps per element and no float32 check needs more, so float32 and complex64 get no
# such allowance. tests/xla/src/pjrt_check.rs has the same (`CANCELLATION_ULPS`).
CANCELLATION_ULPS = {"float64": 4, "complex128": 4}

# The stages: jaxlib's `compile_and_load` parses the text as it compiles, so the runner's own
# reading of the text (`parse`) is part of `compile`. The runner's `setup` (its client, the
# library's handlers) has no counterpart in a jaxlib run: a failure there agrees with nothing.
RUNNER_STAGES = {"parse": "compile", "compile": "compile", "execute": "execute"}
STAGES = ("compile", "execute")

# The absl status names XLA's errors begin with (`INVALID_ARGUMENT: ...`).
STATUSES = frozenset((
    "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
    "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"))


@dataclass(frozen=True)
class Tensor:
    """One output: numpy dtype name, shape, little-endian bytes (row-major)."""
    dtype: str
    shape: tuple[int, ...]
    data: bytes


@dataclass(frozen=True)
class Failure:
    """One side's failure: its stage (`compile` or `execute`; the runner's other stages as it
    named them), the refusal code its message carries, its status class (or None: unknown),
    and the message."""
    stage: str
    refusal: str | None
    status: str | None
    message: str


def tensor(a: Any) -> Tensor:
    """A numpy array (jaxlib's output) as a `Tensor`."""
    import numpy as np

    a = np.asarray(a)
    return Tensor(a.dtype.name, tuple(int(d) for d in a.shape), np.ascontiguousarray(a).tobytes())


def jaxlib_failure(stage: str, error: BaseException) -> Failure:
    """jaxlib's exception at `stage` (`compile`: lowering's text compiled, or `execute`)."""
    if stage not in STAGES:
        raise ValueError("a jaxlib stage is one of %s, not %r" % (STAGES, stage))
    message = str(error)
    return Failure(stage, bracket_code(message), status_in(message), message)


def runner_outcome(answer: dict) -> list[Tensor] | Failure:
    """`pjrt_run`'s JSON answer as an outcome. Raises ValueError if it is not one."""
    if answer.get("ok") is True:
        return [Tensor(str(t["dtype"]), tuple(int(d) for d in t["shape"]), bytes.fromhex(t["hex"]))
                for t in answer["outputs"]]
    if answer.get("ok") is False:
        stage = str(answer.get("stage"))
        return Failure(RUNNER_STAGES.get(stage, "runner " + stage), answer.get("refusal"),
                       answer.get("status"), str(answer.get("message")))
    raise ValueError("not an answer of pjrt_run: %r" % (answer,))


def disagreement(jaxlib: list[Tensor] | Failure, runner: list[Tensor] | Failure) -> str | None:
    """Why the two outcomes disagree, or None when they agree (the rules in this module's
    docstring)."""
    if isinstance(jaxlib, Failure) and isinstance(runner, Failure):
        return failures_disagree(jaxlib, runner)
    if isinstance(jaxlib, Failure):
        return "jaxlib failed at %s (%s), the Rust runner ran it" % (jaxlib.stage, jaxlib.message)
    if isinstance(runner, Failure):
        return "jaxlib ran it, the Rust runner failed at %s: %s" % (runner.stage, runner.message)
    if len(jaxlib) != len(runner):
        return "%d outputs from jaxlib, %d from the runner" % (len(jaxlib), len(runner))
    for k, (a, b) in enumerate(zip(jaxlib, runner)):
        why = tensors_disagree(a, b)
        if why is not None:
            return "output %d: %s" % (k, why)
    return None


def failures_disagree(jaxlib: Failure, runner: Failure) -> str | None:
    """Why two failures disagree: another stage, refusal code or status class; or None."""
    both = "both failed, jaxlib (%s) and the runner (%s)," % (jaxlib.message, runner.message)
    if jaxlib.stage != runner.stage:
        return "%s at other stages: jaxlib at %s, the runner at %s" % (both, jaxlib.stage,
                                                                       runner.stage)
    if jaxlib.refusal != runner.refusal:
        return "%s with other refusal codes: jaxlib %r, the runner %r" % (both, jaxlib.refusal,
                                                                          runner.refusal)
    if jaxlib.refusal is None and (jaxlib.status is None or jaxlib.status != runner.status):
        return "%s with other (or unknown) status classes: jaxlib %s, the runner %s" % (
            both, jaxlib.status, runner.status)
    return None


def tensors_disagree(a: Tensor, b: Tensor) -> str | None:
    """Why jaxlib's output `a` and the runner's `b` disagree, or None."""
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
        return "jaxlib %s%s, the runner %s%s" % (a.dtype, list(a.shape), b.dtype, list(b.shape))
    if len(a.data) != len(b.data):
        return "%s%s: %d bytes from jaxlib, %d from the runner" % (a.dtype, list(a.shape),
                                                                 len(a.data), len(b.data))
    if a.data == b.data:
        return None
    rtol = RTOL.get(a.dtype)
    if rtol is not None and len(a.data) != _size(a.shape) * _ITEMSIZE[a.dtype]:
        return "%s%s: %d bytes, not as many as the shape says" % (a.dtype, list(a.shape),
                                                                  len(a.data))
    if rtol is None:
        k = next(i for i, (x, y) in enumerate(zip(a.data, b.data)) if x != y)
        return "%s%s must agree to the bit: byte %d differs (jaxlib %02x, the runner %02x)" % (
            a.dtype, list(a.shape), k, a.data[k], b.data[k])
    return elements_disagree(a.dtype, a.shape, a.data, b.data, rtol)


_ITEMSIZE = {"float64": 8, "complex128": 16, "float32": 4, "complex64": 8}


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def elements_close(x: Any, y: Any, rtol: float, floor: float = 0.0) -> Any:
    """Per element, whether `x` and `y` (numpy arrays of one float or complex type, same
    shape) agree: finite ones within `rtol` of the larger magnitude or within `floor`
    (absolute), others component by component NaN against NaN or equal (an infinity only
    against the same infinity)."""
    import numpy as np

    wide = np.complex128 if np.iscomplexobj(x) else np.float64
    x, y = np.asarray(x).astype(wide), np.asarray(y).astype(wide)
    finite = np.isfinite(x) & np.isfinite(y)
    with np.errstate(over="ignore", invalid="ignore"):
        diff = np.abs(x - y)
        # An overflowing difference is never close: it is larger than rtol times either.
        near = np.isfinite(diff) & ((diff <= rtol * np.maximum(np.abs(x), np.abs(y)))
                                    | (diff <= floor))
    parts = [(x.real, y.real), (x.imag, y.imag)] if wide is np.complex128 else [(x, y)]
    same = np.ones(x.shape, dtype=bool)
    for p, q in parts:
        same &= (np.isnan(p) & np.isnan(q)) | (p == q)
    return np.where(finite, near, same)


def elements_disagree(dtype: str, shape: tuple[int, ...], a: bytes, b: bytes,
                      rtol: float) -> str | None:
    """Which elements of two float or complex outputs are not `elements_close`, or None."""
    import numpy as np

    x = np.frombuffer(a, dtype=np.dtype(dtype))
    y = np.frombuffer(b, dtype=np.dtype(dtype))
    floor = cancellation_floor(dtype, x, y)
    bad = np.flatnonzero(~elements_close(x, y, rtol, floor))
    if bad.size == 0:
        return None
    i = int(bad[0])
    where = np.unravel_index(i, shape) if len(shape) else ()
    xi, yi = complex(x[i]), complex(y[i])   # Python's arithmetic: NaNs without warnings
    scale = max(abs(xi), abs(yi))
    rel = abs(xi - yi) / scale if scale else float("inf")
    return ("%s%s: %d of %d elements differ by more than %g of the larger (and more than %.3g, "
            "the cancellation floor); the first at %s: jaxlib %r, the runner %r (relative "
            "difference %.3g)" % (dtype, list(shape), bad.size, x.size, rtol, floor,
                                  tuple(int(d) for d in where), x[i].item(), y[i].item(), rel))


def cancellation_floor(dtype: str, x: Any, y: Any) -> float:
    """The absolute difference any element of outputs `x` and `y` may have besides `RTOL`:
    `CANCELLATION_ULPS` of the type's epsilon times the largest finite magnitude in either,
    or 0 for a type without the allowance."""
    import numpy as np

    ulps = CANCELLATION_ULPS.get(dtype)
    if ulps is None:
        return 0.0
    m = np.abs(np.concatenate([np.ravel(x), np.ravel(y)]).astype(np.complex128))
    m = m[np.isfinite(m)]
    return float(ulps * np.finfo(np.dtype(dtype)).eps * m.max()) if m.size else 0.0


def cross_check(library: str, text: str, args: list, outs: list | None,
                error: BaseException | None, stage: str | None = None) -> None:
    """With `CUSTOMOP_PJRT_CROSS_CHECK` naming the `pjrt_run` tool (the test suite sets it), runs
    the same program through customop's Rust runner (XLA's CPU PJRT plugin, another build of
    XLA) and raises AssertionError unless it agrees with jaxlib's outcome (`disagreement`):
    jaxlib's outputs `outs`, or, when `outs` is None, its `error` at `stage` (`compile` or
    `execute`). Each check is counted in `CUSTOMOP_PJRT_CROSS_CHECK_LOG`, if set, under the
    suite `CUSTOMOP_PJRT_CROSS_CHECK_SUITE` names."""
    import json
    import os
    import subprocess

    import numpy as np

    tool = os.environ.get("CUSTOMOP_PJRT_CROSS_CHECK")
    if not tool:
        return
    if outs is None:
        if error is None or stage is None:
            raise TypeError("cross_check: without outputs, jaxlib's error and its stage are needed")
        jaxlib: list[Tensor] | Failure = jaxlib_failure(stage, error)
    else:
        jaxlib = [tensor(o) for o in outs]
    request = {"library": library, "text": text,
               "inputs": [{"dtype": a.dtype.name, "shape": list(a.shape),
                           "hex": np.ascontiguousarray(a).tobytes().hex()} for a in args]}
    r = subprocess.run([tool], input=json.dumps(request), capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("PJRT cross-check: %s failed: %s" % (tool, r.stderr))
    why = disagreement(jaxlib, runner_outcome(json.loads(r.stdout)))
    if why is not None:
        raise AssertionError("PJRT cross-check of\n%s\n%s" % (text, why))
    log = os.environ.get("CUSTOMOP_PJRT_CROSS_CHECK_LOG")
    if log:
        with open(log, "a") as f:
            f.write("ok %s\n" % os.environ.get("CUSTOMOP_PJRT_CROSS_CHECK_SUITE", "python"))


def bracket_code(message: str) -> str | None:
    """The refusal code in brackets of a handler's message (`custom op `x` [bad_descriptor]: ...`)."""
    start = message.find("custom op `")
    if start < 0:
        return None
    rest = message[start:]
    open_ = rest.find("` [")
    if open_ < 0:
        return None
    close_ = rest.find("]", open_ + 3)
    return rest[open_ + 3:close_] if close_ > 0 else None


def status_in(message: str) -> str | None:
    """The status class an XLA error's message begins with (`INVALID_ARGUMENT: ...`), or None."""
    m = re.match(r"([A-Z_]+): ", message)
    return m.group(1) if m and m.group(1) in STATUSES else None
