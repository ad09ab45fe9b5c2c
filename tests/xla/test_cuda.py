"""The CUDA side of the ops from JAX, on a machine without a GPU: the manifest names each op's
CUDA handler (Rust decides; the symbol is a function the library exports), `lib.register()`
registers them for platform CUDA only where jax has a CUDA backend, and `customop.xla.export`
writes one artifact for platforms cpu and cuda, its externals annotated, that runs here on
the CPU kernel. An op with no CUDA side is refused for "cuda" at export, by name. (Running the
CUDA handlers is `scripts/gpu-check.sh`'s, on a GPU; the handlers' host side is
examples/kernels/tests/cuda.rs's, against the stand-in driver.)

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_cuda.py
"""

import ctypes
import os
import unittest

import jax
import jax.numpy as jnp
import numpy as np
from jax import export as jexport

from customop import xla
from customop.xla.library import has_cuda_backend

PATH = os.environ["CUSTOMOP_KERNELS"]
SEED = "my_custom_library::custom_op_external"


def blob(lib):
    return np.frombuffer(lib.pack("my_lib::Blob", {
        "gain": 2.0, "bias": -1, "seed": 42, "tag": list(b"customop seed!!!")}), np.uint8)


def seed_reference(x, gain=2.0, bias=-1):
    # Rust's f32::round: half away from zero.
    s = np.float32(gain) * x.sum(axis=1, dtype=np.float32)
    r = np.sign(s) * np.floor(np.abs(s) + np.float32(0.5))
    return np.clip(r.astype(np.int64) + bias, -128, 127).astype(np.int8)


class Manifest(unittest.TestCase):
    def test_the_seed_op_names_its_cuda_handler_and_the_library_exports_it(self):
        lib = xla.Library(PATH)
        op = lib.op(SEED)
        self.assertEqual(op.cuda_handler_symbol,
                         "customop_cuda_handler_my_custom_library_custom_op_external")
        fn = getattr(lib.cdll, op.cuda_handler_symbol)
        self.assertNotEqual(ctypes.cast(fn, ctypes.c_void_p).value, None)
        self.assertIsNone(lib.op("example::rms_norm_t").cuda_handler_symbol)
        self.assertEqual(lib.op("example::rms_norm_nd").cuda_handler_symbol,
                         "customop_cuda_handler_example_rms_norm_nd")


class Register(unittest.TestCase):
    def test_register_takes_cuda_only_where_jax_has_a_cuda_backend(self):
        self.assertFalse(has_cuda_backend(), "this suite runs on a machine without a GPU")
        lib = xla.Library(PATH)
        lib.register()
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        np.testing.assert_array_equal(lib.call(SEED, blob(lib), x), seed_reference(x))
        # For a process that only exports: registering the CUDA handlers needs no GPU.
        lib.register("cuda")
        with self.assertRaisesRegex(ValueError, "not 'rocm'"):
            lib.register("rocm")


class Export(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lib = xla.Library(PATH)
        cls.lib.register()

    def test_one_artifact_for_cpu_and_cuda_runs_here_on_the_cpu_kernel(self):
        lib = self.lib
        x = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 3

        def f(b, x):
            return lib.call(SEED, b, jnp.sin(x)) + np.int8(1)

        exp = xla.export(f, blob(lib), x, lib=lib, platforms=["cpu", "cuda"])
        self.assertEqual(exp.platforms, ("cpu", "cuda"))
        text = exp.mlir_module()
        self.assertIn("_platform_index", text)
        self.assertIn("stablehlo.custom_call @my_custom_library.custom_op_external", text)
        self.assertEqual([(e.name, e.descriptor, e.size) for e in xla.externals(exp)],
                         [("b", "my_lib::Blob", 56)])
        back = jexport.deserialize(exp.serialize())
        self.assertEqual(back.platforms, ("cpu", "cuda"))
        want = seed_reference(np.sin(x)) + np.int8(1)
        np.testing.assert_array_equal(np.asarray(back.call(blob(lib), x)), want)

    def test_an_op_with_no_cuda_side_is_refused_for_cuda_by_name(self):
        lib = self.lib
        x = np.ones((2, 3), np.float32)
        f = lambda x: lib.call("example::rms_norm_t", x, eps=1e-5)  # noqa: E731
        with self.assertRaisesRegex(xla.ExportError,
                                    r"example::rms_norm_t has no CUDA side .*#\[cuda"):
            xla.export(f, x, lib=lib, platforms=["cpu", "cuda"])
        # For the CPU alone it exports.
        exp = xla.export(f, x, lib=lib, platforms=["cpu"])
        self.assertEqual(exp.platforms, ("cpu",))


if __name__ == "__main__":
    unittest.main()
