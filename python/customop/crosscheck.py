"""Cross-checking jaxlib against customop's Rust runner (`customop::pjrt`, XLA's CPU PJRT
plugin: another build of XLA), for the test suite: with `CUSTOMOP_PJRT_CROSS_CHECK` naming the
`pjrt_run` tool (examples/src/bin/pjrt_run.rs), every program `Exported.run` runs, and every
function run through `customop.xla.crosscheck.jit`, also runs through the runner, which must
agree. Without the variable, nothing is checked. Imports neither jax nor torch."""

from __future__ import annotations



# How far two builds of XLA may differ, relative, per floating type (two builds may vectorise
# `sin` differently, or sum a reduction in another order): each element within `rtol` of
# itself or of the output's largest magnitude (a gradient's element near zero comes from a
# cancellation, and is exact only relative to the whole). Every other type, and narrower
# floats, must agree to the bit. The Rust harness's cross-check (tests/xla/src/pjrt_check.rs)
# uses the same numbers per element.
RTOL = {"float64": 1e-12, "complex128": 1e-12, "float32": 1e-5, "complex64": 1e-5}


def cross_check(library: str, text: str, args: list, outs: list | None, error: Exception | None) -> None:
    """With `CUSTOMOP_PJRT_CROSS_CHECK` naming the `pjrt_run` tool (the test suite sets it), runs
    the same program through customop's Rust runner (XLA's CPU PJRT plugin, another build of
    XLA) and raises AssertionError unless it agrees: equal outputs (bytes, or floats within
    `RTOL` of their type: f64 1e-12, f32 1e-5, narrower floats exactly), or both refusing with
    the same refusal code. Each check is counted in `CUSTOMOP_PJRT_CROSS_CHECK_LOG`, if set,
    under the suite `CUSTOMOP_PJRT_CROSS_CHECK_SUITE` names."""
    import json
    import os
    import subprocess

    import numpy as np

    tool = os.environ.get("CUSTOMOP_PJRT_CROSS_CHECK")
    if not tool:
        return
    request = {"library": library, "text": text,
               "inputs": [{"dtype": a.dtype.name, "shape": list(a.shape),
                           "hex": np.ascontiguousarray(a).tobytes().hex()} for a in args]}
    r = subprocess.run([tool], input=json.dumps(request), capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("PJRT cross-check: %s failed: %s" % (tool, r.stderr))
    answer = json.loads(r.stdout)
    where = "PJRT cross-check of\n%s\n" % text
    if outs is None:
        if answer["ok"]:
            raise AssertionError(where + "jaxlib refused (%s), the Rust runner ran it" % error)
        code = bracket_code(str(error))
        if code != answer["refusal"]:
            raise AssertionError(where + "refusal codes differ: jaxlib %r (%s), the runner %r (%s)"
                                 % (code, error, answer["refusal"], answer["message"]))
    else:
        if not answer["ok"]:
            raise AssertionError(where + "jaxlib ran it, the Rust runner refused: %s" % answer["message"])
        theirs = answer["outputs"]
        if len(theirs) != len(outs):
            raise AssertionError(where + "%d outputs from jaxlib, %d from the runner" % (len(outs), len(theirs)))
        for k, (a, t) in enumerate(zip(outs, theirs)):
            b = np.frombuffer(bytes.fromhex(t["hex"]), dtype=a.dtype).reshape(t["shape"])
            if a.dtype.name != t["dtype"] or list(a.shape) != list(b.shape):
                raise AssertionError(where + "output %d: jaxlib %s%s, the runner %s%s"
                                     % (k, a.dtype, list(a.shape), t["dtype"], t["shape"]))
            # Byte views of 1-D copies: a 0-d result (a loss) cannot be viewed as bytes itself.
            same = (np.array_equal(np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                                   np.ascontiguousarray(b).reshape(-1).view(np.uint8))
                    if a.size else True)
            rtol = RTOL.get(a.dtype.name)
            if not same and rtol is not None:
                wa, wb = a.astype(np.complex128), b.astype(np.complex128)
                finite = np.abs(np.concatenate([wa.ravel(), wb.ravel()]))
                finite = finite[np.isfinite(finite)]
                scale = float(finite.max()) if finite.size else 0.0
                same = np.allclose(wa, wb, rtol=rtol, atol=rtol * scale, equal_nan=True)
            if not same:
                diff = np.abs(a.astype(np.complex128) - b.astype(np.complex128))
                scale = np.maximum(np.abs(a.astype(np.complex128)), np.abs(b.astype(np.complex128)))
                worst = float(np.max(diff / np.where(scale > 0, scale, 1))) if a.size else 0.0
                raise AssertionError(where + "output %d differs (%s, largest relative difference "
                                     "%.3g, allowed %s): jaxlib %r, the runner %r"
                                     % (k, a.dtype, worst, rtol, a, b))
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
    close = rest.find("]", open_ + 3)
    return rest[open_ + 3:close] if open_ >= 0 and close > 0 else None
