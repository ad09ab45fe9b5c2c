"""The cross-check's comparison (customop.crosscheck): what counts as jaxlib and the Rust runner
agreeing. Each kind of difference (an element, a NaN, a shape, a dtype, a refusal code, a
stage, a status class, one side failing) must be a disagreement, and a matching pair must not.
Then `pjrt_run`'s answers (CUSTOMOP_PJRT_CROSS_CHECK, with CUSTOMOP_KERNELS's library) say the
stage the runner stopped at, as the comparison reads them; and `customop.xla.crosscheck.jit`
compares a failure at compile and one at execute with the runner's, raising jaxlib's own error
when they agree."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from customop.crosscheck import (Failure, Tensor, disagreement, jaxlib_failure,  # noqa: E402
                                 runner_outcome, status_in, tensor)


def f32(*values):
    return tensor(np.array(values, dtype=np.float32))


def f64(*values):
    return tensor(np.array(values, dtype=np.float64))


def c64(*values):
    return tensor(np.array(values, dtype=np.complex64))


class Outputs(unittest.TestCase):
    def agree(self, a, b):
        self.assertIsNone(disagreement([a], [b]))

    def disagree(self, a, b, *words):
        why = disagreement([a], [b])
        self.assertIsNotNone(why, "%r and %r must disagree" % (a, b))
        for w in words:
            self.assertIn(w, why)

    def test_equal_and_close_outputs_agree(self):
        self.agree(f32(1.0, -2.5), f32(1.0, -2.5))
        # Within 1e-5 of the larger element, element by element.
        self.agree(f32(1.0, 1e-20), f32(1.000001, 1.000001e-20))
        self.agree(f64(3.0), f64(3.0 + 1e-13))
        self.agree(f32(0.0), f32(-0.0))
        self.agree(f32(np.nan, np.inf), f32(-np.nan, np.inf))
        self.agree(c64(1 + 2j), c64(1 + 2.00001j))
        self.agree(tensor(np.float32(7.0)), tensor(np.float32(7.0)))   # 0-d (a loss)
        self.assertIsNone(disagreement([], []))

    def test_a_differing_element_disagrees(self):
        self.disagree(f32(1.0, 2.0), f32(1.0, 2.001), "1 of 2 elements", "(1,)")
        # Per element, not relative to the output's largest magnitude: a small element that
        # differs by 10% disagrees beside a large one.
        self.disagree(f32(1000.0, 1e-3), f32(1000.0, 1.1e-3))
        self.disagree(f32(0.0), f32(1e-30))
        # float64's tolerance is 1e-12, not float32's.
        self.disagree(f64(1.0), f64(1.0 + 1e-9))
        # A complex element by its modulus: the imaginary parts differ.
        self.disagree(c64(1 + 2j), c64(1 + 2.1j))
        self.disagree(tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)),
                      tensor(np.array([[1.0, 2.0], [3.0, 4.5]], np.float32)), "(1, 1)")

    def test_a_cancelled_float64_element_may_differ_by_ulps_of_the_largest(self):
        # The training chain's dW element (tests/xla/test_transforms.py): 3.3e-12 of itself,
        # 0.45 ulp of the output's largest magnitude.
        self.agree(f64(0.228, -6.86559025661615e-06), f64(0.228, -6.8655902565933815e-06))
        self.agree(tensor(np.array([0.228, -6.86559025661615e-06], np.complex128)),
                   tensor(np.array([0.228, -6.8655902565933815e-06], np.complex128)))
        # Four ulps of the largest (8.9e-16 here), not more: 1e-14 is 45 ulps.
        self.disagree(f64(1.0, 1e-6), f64(1.0, 1e-6 + 1e-14), "cancellation floor")
        # float32 has no such allowance: 1e-4 is less than four of its ulps of 1000 (4.8e-4).
        self.disagree(f32(1000.0, 1e-3), f32(1000.0, 1.1e-3))
        # The floor is of the finite elements only (an infinity would make it infinite).
        self.disagree(f64(np.inf, np.nan, 1e-6), f64(np.inf, np.nan, 2e-6))

    def test_other_types_must_agree_to_the_bit(self):
        self.disagree(tensor(np.array([1, 2], np.int32)), tensor(np.array([1, 3], np.int32)),
                      "to the bit", "byte 4")
        def bf16(b):
            return Tensor("bfloat16", (1,), bytes(b))

        self.agree(bf16([0x80, 0x3f]), bf16([0x80, 0x3f]))
        self.disagree(bf16([0x80, 0x3f]), bf16([0x81, 0x3f]), "to the bit")
        # A NaN of another type than the compared floats is bits like any other.
        self.disagree(tensor(np.array([np.nan], np.float16)),
                      tensor(np.array([-np.nan], np.float16)))

    def test_nan_and_infinities_agree_only_with_themselves(self):
        self.disagree(f32(np.nan), f32(1.0))
        self.disagree(f32(0.0), f32(np.nan))
        self.disagree(f32(np.inf), f32(-np.inf))
        self.disagree(f32(np.inf), f32(np.finfo(np.float32).max))
        self.disagree(c64(complex(np.nan, 1.0)), c64(complex(np.nan, 2.0)))
        # The largest float64s of opposite signs: the difference overflows.
        big = np.finfo(np.float64).max
        self.disagree(f64(big), f64(-big))

    def test_another_shape_dtype_or_count_disagrees(self):
        self.disagree(tensor(np.zeros((2, 1), np.float32)), tensor(np.zeros((1, 2), np.float32)),
                      "[2, 1]", "[1, 2]")
        self.disagree(tensor(np.zeros(2, np.int32)), tensor(np.zeros(2, np.uint32)), "uint32")
        self.disagree(f32(0.0, 0.0), Tensor("float32", (2,), bytes(4)), "bytes")
        self.assertIn("2 outputs from jaxlib, 1", disagreement([f32(1.0), f32(2.0)], [f32(1.0)]))


def fail(stage="execute", refusal=None, status="INTERNAL"):
    return Failure(stage, refusal, status, "m")


class Failures(unittest.TestCase):
    def test_one_side_failing_disagrees(self):
        self.assertIn("the Rust runner ran it", disagreement(fail(), [f32(1.0)]))
        self.assertIn("the Rust runner failed", disagreement([f32(1.0)], fail()))

    def test_failures_agree_at_one_stage_with_one_class(self):
        for f in (fail(), fail("compile"), fail(refusal="bad_descriptor", status=None),
                  fail("compile", refusal="bad_state")):
            self.assertIsNone(disagreement(f, f), f)
        # Both refusing with one code: the refusal is the class; the statuses are not compared.
        self.assertIsNone(disagreement(fail(refusal="wrong_shape", status="INTERNAL"),
                                       fail(refusal="wrong_shape", status="INVALID_ARGUMENT")))

    def test_another_stage_disagrees(self):
        self.assertIn("stages", disagreement(fail("compile"), fail("execute")))
        self.assertIn("stages", disagreement(fail("execute", "bad_descriptor"),
                                             fail("compile", "bad_descriptor")))

    def test_another_refusal_code_disagrees(self):
        self.assertIn("refusal codes", disagreement(fail(refusal="bad_descriptor"),
                                                    fail(refusal="wrong_shape")))
        self.assertIn("refusal codes", disagreement(fail(refusal="bad_descriptor"), fail()))

    def test_another_or_unknown_status_class_disagrees(self):
        self.assertIn("status", disagreement(fail(status="INVALID_ARGUMENT"), fail()))
        self.assertIn("status", disagreement(fail(status=None), fail(status=None)))

    def test_jaxlib_errors_are_classed(self):
        f = jaxlib_failure("execute", RuntimeError(
            "INTERNAL: custom op `ex::scale` [bad_descriptor]: 3 bytes, the descriptor packs 8"))
        self.assertEqual((f.stage, f.refusal, f.status), ("execute", "bad_descriptor", "INTERNAL"))
        f = jaxlib_failure("compile", RuntimeError("INVALID_ARGUMENT: cannot parse"))
        self.assertEqual((f.refusal, f.status), (None, "INVALID_ARGUMENT"))
        self.assertIsNone(status_in("TypeError: no"))
        self.assertIsNone(status_in("internal: lower case"))
        with self.assertRaises(ValueError):
            jaxlib_failure("lowering", RuntimeError("x"))

    def test_runner_answers_are_read(self):
        out = runner_outcome({"ok": True, "outputs": [
            {"dtype": "float32", "shape": [1], "hex": np.float32(2).tobytes().hex()}]})
        self.assertIsNone(disagreement([f32(2.0)], out))
        answer = {"ok": False, "stage": "parse", "error": "program", "status": "INVALID_ARGUMENT",
                  "refusal": None, "message": "no @main"}
        self.assertEqual(runner_outcome(answer).stage, "compile")
        self.assertIsNone(disagreement(fail("compile", status="INVALID_ARGUMENT"),
                                       runner_outcome(answer)))
        # Failing to set up (the library, the plugin) agrees with no failure of jaxlib's.
        setup = dict(answer, stage="setup", error="library", status=None)
        self.assertIn("stages", disagreement(fail("compile", status=None), runner_outcome(setup)))
        with self.assertRaises(ValueError):
            runner_outcome({"outputs": []})


def pjrt_run(text, inputs):
    """`pjrt_run`'s answer for `text` on `inputs` (numpy arrays), with the example kernels."""
    tool, kernels = os.environ.get("CUSTOMOP_PJRT_CROSS_CHECK"), os.environ.get("CUSTOMOP_KERNELS")
    if not tool or not kernels:
        raise AssertionError("CUSTOMOP_PJRT_CROSS_CHECK (target/debug/pjrt_run) and "
                             "CUSTOMOP_KERNELS (the example kernel cdylib) must be set: "
                             "scripts/test.sh sets both")
    request = {"library": kernels, "text": text,
               "inputs": [{"dtype": a.dtype.name, "shape": list(a.shape),
                           "hex": a.tobytes().hex()} for a in inputs]}
    r = subprocess.run([tool], input=json.dumps(request), capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("%s failed: %s" % (tool, r.stderr))
    return runner_outcome(json.loads(r.stdout))


NEGATE = """func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = stablehlo.negate %x : tensor<2xf32>
  return %y : tensor<2xf32>
}"""


class RunnerStages(unittest.TestCase):
    def test_a_run_agrees_with_its_outputs_only(self):
        out = pjrt_run(NEGATE, [np.array([1.0, -2.0], np.float32)])
        self.assertIsNone(disagreement([f32(-1.0, 2.0)], out))
        self.assertIsNotNone(disagreement([f32(-1.0, 2.5)], out))

    def test_inputs_refused_at_execute(self):
        out = pjrt_run(NEGATE, [np.array([1.0, 2.0, 3.0], np.float32)])
        self.assertIsInstance(out, Failure)
        self.assertEqual(out.stage, "execute")
        self.assertIsNotNone(out.refusal or out.status)
        self.assertIn("stages", disagreement(Failure("compile", out.refusal, out.status, "m"), out))

    def test_a_text_that_does_not_compile_fails_before_execute(self):
        bad = NEGATE.replace("stablehlo.negate %x : tensor<2xf32>",
                             "stablehlo.negate %x : (tensor<2xf32>) -> tensor<3xf32>")
        out = pjrt_run(bad, [np.array([1.0, 2.0], np.float32)])
        self.assertIsInstance(out, Failure)
        self.assertEqual(out.stage, "compile")
        self.assertIn("stages", disagreement(Failure("execute", out.refusal, out.status, "m"), out))


class ThroughJit(unittest.TestCase):
    """Each test counts the checks in a log of its own."""

    def setUp(self):
        import jax
        from customop.xla import Library, crosscheck

        pjrt_run(NEGATE, [np.zeros(2, np.float32)])   # the variables are set, or fail here
        self.jax, self.jit, self.kernels = jax, crosscheck.jit, os.environ["CUSTOMOP_KERNELS"]
        self.lib = Library(self.kernels)
        self.lib.register()
        log = tempfile.NamedTemporaryFile(suffix=".log", delete=False)
        log.close()
        self.log = Path(log.name)
        self.addCleanup(self.log.unlink)
        env = mock.patch.dict(os.environ, {"CUSTOMOP_PJRT_CROSS_CHECK_LOG": str(self.log)})
        env.start()
        self.addCleanup(env.stop)

    def checks(self):
        return len(self.log.read_text().splitlines())

    def test_a_refusal_at_execute_agrees_and_raises_jaxlib_s_error(self):
        f = self.jit(self.kernels, lambda x: self.lib.ops.example.unlucky(x))
        x = np.ones((2, 3), np.float32)
        np.testing.assert_array_equal(np.asarray(f(x)), x)
        x[0, 0] = 13   # `example::unlucky` panics on it: a kernel_panic refusal, on both
        with self.assertRaises(Exception) as e:
            f(x)
        self.assertNotIsInstance(e.exception, AssertionError)
        self.assertIn("[kernel_panic]", str(e.exception))
        self.assertEqual(self.checks(), 2)

    def test_a_failure_to_compile_agrees_and_raises_jaxlib_s_error(self):
        jax = self.jax
        f = self.jit(self.kernels, lambda x: jax.ffi.ffi_call(
            "customop_no_such_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(x))
        with self.assertRaises(Exception) as e:
            f(np.ones(3, np.float32))
        self.assertNotIsInstance(e.exception, AssertionError)
        self.assertEqual(status_in(str(e.exception)), "NOT_FOUND")
        self.assertEqual(self.checks(), 1)


if __name__ == "__main__":
    unittest.main()
