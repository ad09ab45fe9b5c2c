"""Ops whose output shapes are computed from input dimensions and attributes (avg_pool,
concat_rows, top_k of the example kernels), from every Python front end: JAX (`lib.call` under
`jax.jit`), torch eager, `torch.compile`, and a torch_xla export run on XLA, each against a
numpy reference written here.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \
     target/xla-venv/bin/python -m unittest tests/xla/test_computed_shapes.py
(scripts/test.sh does).
"""

import os
import sys
import unittest

os.environ.setdefault("PJRT_DEVICE", "CPU")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import customop.torch as ct  # noqa: E402
from customop.schema import SchemaError  # noqa: E402
from customop.xla import crosscheck  # noqa: E402
from customop.xla import Library  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_exporters  # noqa: E402

PATH = os.environ["CUSTOMOP_KERNELS"]
# Both paths: native kernels (the default) and, with CUSTOMOP_TORCH_NATIVE=0, the Python one.
TORCH = ct.load(PATH, native=os.environ.get("CUSTOMOP_TORCH_NATIVE", "1") == "1")
JAX = Library(PATH)
JAX.register()


def avg_pool_reference(x, k, stride, pad):
    """Windows of `k` every `stride` over each row padded with `pad` zeros, averaged (f64)."""
    padded = np.pad(np.asarray(x, np.float64), ((0, 0), (pad, pad)))
    n = (padded.shape[1] - k) // stride + 1
    return np.stack([padded[:, j * stride:j * stride + k].mean(axis=1) for j in range(n)], 1)


def top_k_reference(x, k):
    order = sorted(range(len(x)), key=lambda i: (-x[i], i))[:k]
    return np.array([x[i] for i in order], np.float32), np.array(order, np.int32)


X = np.array([[3.0, -1.0, 4.0, 1.0, -5.0, 9.0, 2.0], [6.0, 5.0, -3.0, 5.0, 8.0, 9.0, 7.0]],
             np.float32)
B = np.arange(21, dtype=np.float32).reshape(3, 7) / 4
V = np.array([0.5, 3.0, -1.0, 3.0, 7.5, 2.0], np.float32)
POOLS = [(3, 2, 1), (2, 1, 0), (7, 1, 0), (4, 3, 2)]


class Jax(unittest.TestCase):
    def test_computed_shapes_under_jit(self):
        for k, stride, pad in POOLS:
            f = crosscheck.jit(PATH, lambda x, k=k, s=stride, p=pad: JAX.call(
                "example::avg_pool", x, k=np.int64(k), stride=np.int64(s), pad=np.int64(p)))
            got = np.asarray(f(X))
            want = avg_pool_reference(X, k, stride, pad)
            self.assertEqual(got.shape, want.shape, (k, stride, pad))
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        cat = np.asarray(crosscheck.jit(PATH, lambda a, b: JAX.call("example::concat_rows", a, b))(X, B))
        np.testing.assert_array_equal(cat, np.concatenate([X, B]))
        values, indices = crosscheck.jit(PATH, lambda v: JAX.call("example::top_k", v, k=np.int32(4)))(V)
        want_v, want_i = top_k_reference(V, 4)
        np.testing.assert_array_equal(np.asarray(values), want_v)
        np.testing.assert_array_equal(np.asarray(indices), want_i)

    def test_a_size_that_is_not_one_is_refused_before_tracing(self):
        with self.assertRaises(SchemaError) as cm:
            JAX.call("example::avg_pool", X, k=np.int64(10), stride=np.int64(1), pad=np.int64(0))
        self.assertIn("example::avg_pool: output `y`: dimension 1, "
                      "`(x.dim(1) + 2 * pad - k) / stride + 1`: `-3 / 1` divides a negative number",
                      str(cm.exception))


class Torch(unittest.TestCase):
    def test_eager_compile_and_export(self):
        x, b, v = torch.from_numpy(X), torch.from_numpy(B), torch.from_numpy(V)
        for k, stride, pad in POOLS:
            got = torch.ops.example.avg_pool(x, k=k, stride=stride, pad=pad)
            np.testing.assert_allclose(got.numpy(), avg_pool_reference(X, k, stride, pad),
                                       rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(torch.ops.example.concat_rows(x, b).numpy(),
                                      np.concatenate([X, B]))
        values, indices = torch.ops.example.top_k(v, k=4)
        want_v, want_i = top_k_reference(V, 4)
        np.testing.assert_array_equal(values.numpy(), want_v)
        np.testing.assert_array_equal(indices.numpy(), want_i)

        # The fake implementation computes the same shapes, so torch.compile traces the ops.
        def model(x, b, v):
            pooled = torch.ops.example.avg_pool(x, k=3, stride=2, pad=1)
            cat = torch.ops.example.concat_rows(pooled, pooled * 2)
            return cat, torch.ops.example.top_k(v, k=3)

        compiled = torch.compile(model, fullgraph=True)
        (cat, (tv, ti)), (ecat, (ev, ei)) = compiled(x, b, v), model(x, b, v)
        self.assertEqual(tuple(cat.shape), (4, 4))
        self.assertTrue(torch.equal(cat, ecat) and torch.equal(tv, ev) and torch.equal(ti, ei))

        class Pool(torch.nn.Module):
            def forward(self, x, b, v):
                y = torch.ops.example.avg_pool(x, k=3, stride=2, pad=1)
                values, indices = torch.ops.example.top_k(v, k=2)
                return y + 1, torch.ops.example.concat_rows(x, b), values, indices

        exported = torch_exporters.export(torch.export.export(Pool(), (x, b, v)), TORCH)
        self.assertIn("k = 3 : i64", exported.text)
        y, cat, values, indices = exported.run(x, b, v)
        np.testing.assert_allclose(y.numpy(), avg_pool_reference(X, 3, 2, 1) + 1, rtol=1e-6)
        np.testing.assert_array_equal(cat.numpy(), np.concatenate([X, B]))
        want_v, want_i = top_k_reference(V, 2)
        np.testing.assert_array_equal(values.numpy(), want_v)
        np.testing.assert_array_equal(indices.numpy(), want_i)

    def test_a_size_that_is_not_one_is_refused_eagerly(self):
        with self.assertRaises(SchemaError) as cm:
            torch.ops.example.top_k(torch.from_numpy(V), k=0)
        self.assertIn("example::top_k: output `values`: dimension 0, `k`: it is 0, not a size",
                      str(cm.exception))


if __name__ == "__main__":
    unittest.main()
