"""The first mistakes with JAX, each in customop's words with its fix: calling an op (eagerly,
under jit, through `lib.call`) before `lib.register()`, where XLA said only "No FFI handler
registered ... on a platform Host" when it compiled; and a library path that is wrong, a file
that is not a shared library, or a shared library that is not a customop kernel library,
where ctypes raised a bare `OSError` or `AttributeError`.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/xla/test_not_registered.py
"""

import ctypes.util
import os
import tempfile
import unittest

import jax
import numpy as np

from customop.library import LibraryLoadError
from customop.xla import Library, NotRegisteredError

PATH = os.environ["CUSTOMOP_KERNELS"]
X = np.ones((2, 3), np.float32)


class BeforeRegister(unittest.TestCase):
    def test_calls_before_register_are_named_then_run_once_registered(self):
        lib = Library(PATH)
        calls = {
            "eager": lambda: lib.ops.example.rms_norm_t(X, eps=1e-5),
            "jit": lambda: jax.jit(lambda x: lib.ops.example.rms_norm_t(x, eps=1e-5))(X),
            "lib.call": lambda: lib.call("example::rms_norm_t", X, eps=1e-5),
        }
        for how, call in calls.items():
            with self.subTest(how), self.assertRaises(NotRegisteredError) as cm:
                call()
            m = str(cm.exception)
            self.assertIn("example::rms_norm_t: the handlers of %s are not registered with jax"
                          % PATH, m)
            self.assertIn("call `lib.register()` once", m)
        lib.register()
        want = np.asarray(calls["eager"]())
        for how, call in calls.items():
            with self.subTest(how):
                np.testing.assert_allclose(np.asarray(call()), want, rtol=1e-6)
        # Registered once for the file: another object of the same library (by another name)
        # needs no second registration.
        link = os.path.join(tempfile.mkdtemp(), "same.so")
        os.symlink(os.path.realpath(PATH), link)
        np.testing.assert_allclose(np.asarray(Library(link).ops.example.rms_norm_t(X, eps=1e-5)),
                                   want, rtol=1e-6)


class WrongLibrary(unittest.TestCase):
    def test_each_wrong_library_is_named_with_what_it_is(self):
        folder = tempfile.mkdtemp()
        text = os.path.join(folder, "notes.so")
        with open(text, "w") as f:
            f.write("not a library")
        libc = ctypes.util.find_library("c")
        cases = [(os.path.join(folder, "missing.so"), "no kernel library at %s (no such file)"),
                 (folder, "no kernel library at %s (not a file)"),
                 (text, "%s is not a shared library this process can load"),
                 # (A bare name: the dynamic loader's to find.)
                 (libc, "%s is a shared library but not a customop "
                  "kernel library (it exports no `customop_manifest`)")]
        for path, said in cases:
            with self.subTest(path), self.assertRaises(LibraryLoadError) as cm:
                Library(path)
            self.assertIsInstance(cm.exception, OSError)
            self.assertIn("customop: " + said % path, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
