"""Packed sub-byte tensors and the quantized kernels from torch: an `i4`/`ui4` tensor `[K, N]`
is a `uint8` tensor `[K, N // 2]` of XLA's packing (low nibble first), an `f4E2M1FN` one a
`float4_e2m1fn_x2` tensor `[K, N // 2]` (torch's own packing, the same; `uint8` on torch 2.9,
whose C shim has no such dtype). Weights packed by numpy here, independently of customop;
products against numpy in f64, quantizers bit for bit against the numpy references; autograd
through the declared backward; one torch.compile graph for every M; what torch cannot hold
refused by name. Runs on both paths (CUSTOMOP_TORCH_NATIVE) and both torch versions.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so PYTHONPATH=python \\
     target/torch-venv/bin/python -m unittest tests/torch/test_low_bit.py
"""

import os
import sys
import unittest

import ml_dtypes
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "xla"))
from customop.schema import SchemaError  # noqa: E402
from customop.torch.native import shim_has_dtype  # noqa: E402
from quant_refs import packed_bytes, quantize_i4_ref, quantize_mxfp4_ref  # noqa: E402
from torch_helpers import LIB, ops  # noqa: E402

F4 = LIB.torch_dtype(LIB.library.manifest.element_types["f4E2M1FN"])
# torch 2.9's C shim has no float8_e8m0fnu: its native kernels refuse the MX scales by name.
NO_E8M0 = LIB.native and not shim_has_dtype("float8_e8m0fnu")


def weights(rng, k, n, lo=-8, hi=8, dtype=ml_dtypes.int4):
    q = rng.integers(lo, hi, size=(k, n)).astype(dtype)
    return q, torch.from_numpy(packed_bytes(q))


def deq_i4(q, s):
    k, n = q.shape
    g = s.shape[0]
    return (q.astype(np.float64).reshape(g, k // g, n) * s.astype(np.float64)[:, None, :]
            ).reshape(k, n)


class Int4(unittest.TestCase):
    def test_the_product_with_bytes_packed_by_numpy(self):
        rng = np.random.default_rng(1)
        for m, k, n, groups in ((1, 256, 512, 2), (5, 128, 64, 1), (3, 256, 40, 4)):
            with self.subTest(m=m, n=n):
                x = rng.normal(size=(m, k)).astype(np.float32)
                q, w = weights(rng, k, n)
                self.assertEqual((w.dtype, tuple(w.shape)), (torch.uint8, (k, n // 2)))
                s = rng.uniform(0.01, 0.02, size=(groups, n)).astype(np.float32)
                y = ops.example.matmul_i4(torch.from_numpy(x), w, torch.from_numpy(s))
                self.assertEqual(tuple(y.shape), (m, n))
                np.testing.assert_allclose(y.numpy(), x.astype(np.float64) @ deq_i4(q, s),
                                           rtol=1e-5, atol=1e-5)

    def test_bf16_activations_and_zero_points(self):
        rng = np.random.default_rng(2)
        x = rng.normal(size=(4, 256)).astype(ml_dtypes.bfloat16)
        q, w = weights(rng, 256, 64)
        s = rng.uniform(0.01, 0.02, size=(2, 64)).astype(ml_dtypes.bfloat16)
        y = ops.example.matmul_i4(torch.from_numpy(x.view(np.int16)).view(torch.bfloat16), w,
                                  torch.from_numpy(s.view(np.int16)).view(torch.bfloat16))
        self.assertEqual(y.dtype, torch.bfloat16)
        want = x.astype(np.float64) @ deq_i4(q, s)
        np.testing.assert_allclose(y.float().numpy(), want, rtol=2 ** -8,
                                   atol=2 ** -8 * np.abs(want).max())
        u, wu = weights(rng, 128, 64, 0, 16, ml_dtypes.uint4)
        xs = rng.normal(size=(2, 128)).astype(np.float32)
        s1 = rng.uniform(0.01, 0.02, size=(1, 64)).astype(np.float32)
        z = rng.integers(6, 10, size=(1, 64)).astype(np.float32)
        y = ops.example.matmul_u4_zp(torch.from_numpy(xs), wu, torch.from_numpy(s1),
                                     torch.from_numpy(z))
        np.testing.assert_allclose(y.numpy(), xs.astype(np.float64)
                                   @ ((u.astype(np.float64) - z) * s1), rtol=1e-5, atol=1e-5)

    def test_autograd_through_the_declared_backward(self):
        """d/dx and d/dscales of sum(y * c) against the f64 formulas; the bytes get none."""
        rng = np.random.default_rng(7)
        x = torch.from_numpy(rng.normal(size=(3, 64))).requires_grad_()
        q, w = weights(rng, 64, 10)
        s = torch.from_numpy(rng.uniform(0.5, 1.5, size=(2, 10))).float().requires_grad_()
        c = rng.normal(size=(3, 10))
        xf = x.float().detach().requires_grad_()
        (ops.example.matmul_i4(xf, w, s) * torch.from_numpy(c).float()).sum().backward()
        deq = deq_i4(q, s.detach().numpy())
        np.testing.assert_allclose(xf.grad.numpy(), c @ deq.T, rtol=1e-5, atol=1e-5)
        per_k = (xf.detach().numpy().astype(np.float64).T @ c) * q.astype(np.float64)
        np.testing.assert_allclose(s.grad.numpy(), per_k.reshape(2, 32, 10).sum(1), rtol=1e-5,
                                   atol=1e-5)
        self.assertFalse(w.requires_grad)

    def test_quantize_i4_bytes_equal_numpys(self):
        wf = np.random.default_rng(4).normal(size=(256, 64)).astype(np.float32)
        wf[:128, 3] = 0.0
        q, s = ops.example.quantize_i4(torch.from_numpy(wf), group=128)
        want_q, want_s = quantize_i4_ref(wf, 128)
        self.assertEqual((q.dtype, tuple(q.shape)), (torch.uint8, (256, 32)))
        np.testing.assert_array_equal(q.numpy(), packed_bytes(want_q))
        np.testing.assert_array_equal(s.numpy(), want_s)

    def test_one_compiled_graph_for_every_m(self):
        """torch.compile(dynamic=True): one graph (counted by a backend of this test's own,
        which hands each graph to inductor) for M = 3, 8 and 5, the packed weights' shapes
        static; M = 1 is a second, as torch specializes a size of 1 (its 0/1 rule). Without
        dynamic shapes each M compiles again: the count would say so."""
        rng = np.random.default_rng(5)
        _, w = weights(rng, 128, 32)
        s = torch.from_numpy(rng.uniform(0.01, 0.02, size=(1, 32)).astype(np.float32))
        graphs = []

        def counting(gm, example_inputs):
            from torch._inductor.compile_fx import compile_fx

            graphs.append(gm)
            return compile_fx(gm, example_inputs)

        torch._dynamo.reset()
        f = torch.compile(lambda x: ops.example.matmul_i4(x, w, s), dynamic=True,
                          fullgraph=True, backend=counting)
        for m, compiled in ((3, 1), (8, 1), (5, 1), (1, 2)):
            x = torch.from_numpy(rng.normal(size=(m, 128)).astype(np.float32))
            self.assertTrue(torch.equal(f(x), ops.example.matmul_i4(x, w, s)))
            self.assertEqual(len(graphs), compiled, m)

    def test_what_torch_cannot_hold_is_refused_by_name(self):
        x, s = torch.ones(1, 8), torch.ones(1, 4)
        with self.assertRaisesRegex(Exception, r"operand `w` holds packed i4 elements, 2 a byte "
                                               r"along its last dimension, so it cannot be a "
                                               r"scalar"):
            ops.example.matmul_i4(x, torch.tensor(3, dtype=torch.uint8), s)
        with self.assertRaisesRegex(Exception, r"quantize_i4: output `q` is \[4, 3\] packed i4 "
                                               r"elements: torch holds them 2 a byte along the "
                                               r"last dimension"):
            ops.example.quantize_i4(torch.ones(4, 3), group=2)
        # A type parameter of several packed types: bytes cannot say which.
        with self.assertRaisesRegex(NotImplementedError,
                                    r"unpack_int takes packed sub-byte tensors of a type "
                                    r"parameter, T \(i4, ui4, i2 or ui2\)"):
            ops.example.unpack_int(torch.zeros(2, 2, dtype=torch.uint8))
        # torch's own int4 holds one element a byte and has no kernels: not customop's.
        with self.assertRaisesRegex((SchemaError, RuntimeError), r"which no customop kernel "
                                                                 r"takes|got"):
            ops.example.matmul_i4(x, torch.zeros(8, 2, dtype=torch.uint8).view(torch.int4), s)


class Mxfp4(unittest.TestCase):
    def test_quantize_dequantize_and_the_product(self):
        if NO_E8M0:
            # No MX scale crosses torch 2.9's C shim: refused by name, before the kernel.
            with self.assertRaisesRegex(Exception, r"torch has no dtype for f8E8M0FNU"):
                ops.example.quantize_mxfp4(torch.ones(32, 2))
            return
        wf = (np.random.default_rng(6).normal(size=(96, 40)) * 3).astype(np.float32)
        wf[32:64, 5] = 0.0
        wf[:32, 7] = 1e6
        q, s = ops.example.quantize_mxfp4(torch.from_numpy(wf))
        want_q, want_s = quantize_mxfp4_ref(wf)
        self.assertEqual((q.dtype, tuple(q.shape)), (F4, (96, 20)))
        self.assertEqual(s.dtype, torch.float8_e8m0fnu)
        np.testing.assert_array_equal(q.view(torch.uint8).numpy(), packed_bytes(want_q))
        np.testing.assert_array_equal(s.view(torch.uint8).numpy(), want_s.view(np.uint8))
        d = ops.example.dequantize_mxfp4(q, s)
        want = want_q.astype(np.float64) * np.repeat(want_s.astype(np.float64), 32, axis=0)
        np.testing.assert_array_equal(d.numpy(), want.astype(np.float32))
        x = np.random.default_rng(7).normal(size=(3, 96)).astype(np.float32)
        y = ops.example.matmul_mxfp4(torch.from_numpy(x), q, s)
        np.testing.assert_allclose(y.numpy(), x.astype(np.float64) @ want, rtol=1e-5, atol=1e-3)
        # The same bytes as uint8: the same product.
        self.assertTrue(torch.equal(ops.example.matmul_mxfp4(torch.from_numpy(x),
                                                             q.view(torch.uint8), s), y))


if __name__ == "__main__":
    unittest.main()
