"""PyTorch transforms of customop ops: autograd from the declared backward
(`torch.autograd.gradcheck`, f64), torch.func.vmap of every example op against the loop of
calls, torch.compile(fullgraph=True) of a model with customop ops (no graph break, the eager
result, gradients through the compiled model), torch.library.opcheck of every example op, and
the two-op chain (rms_norm_t, then mean_pool) trained for a few steps against plain torch.

Run on both paths, as every torch test: CUSTOMOP_TORCH_NATIVE=1 (default) or 0, with
CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \\
     target/xla-venv/bin/python -m unittest tests/torch/test_transforms.py
"""

import os
import sys
import unittest

os.environ.setdefault("PJRT_DEVICE", "CPU")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch._dynamo  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "xla"))
import samples  # noqa: E402
import customop.torch as ct  # noqa: E402
from customop.schema import SchemaError  # noqa: E402
from torch_helpers import LIB, ops  # noqa: E402
from torch_samples import (any_tensor, bits, missing_dtype, packet, to_torch,  # noqa: E402
                           torch_attrs)

EPS = float(np.float32(1e-3))


def as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def rms_norm_ref(x):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + EPS)


def mean_pool_ref(x, k, stride):
    return x.unfold(-1, k, stride).mean(-1)


class Gradients(unittest.TestCase):
    X = torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    W = torch.rand(4, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) + 0.5

    def test_gradcheck_f64(self):
        x = self.X.clone().requires_grad_()
        w = self.W.clone().requires_grad_()
        self.assertTrue(torch.autograd.gradcheck(lambda x: ops.example.rms_norm_t(x, eps=EPS),
                                                 (x,)))
        self.assertTrue(torch.autograd.gradcheck(
            lambda x: ops.example.mean_pool(x, k=3, stride=2), (x,)))
        self.assertTrue(torch.autograd.gradcheck(lambda x, w: ops.example.scale_rows(x, w),
                                                 (x, w)))

    def test_the_external_gets_no_gradient(self):
        taps = LIB.pack("example::Taps", {"bias": 1.0, "taps": [0.5 * i for i in range(16)]})
        x = torch.ones(2, 3, requires_grad=True)
        y = ops.example.apply_taps(taps, x)
        # What the autograd kernel's backward itself returns, per input of its node (the
        # dispatch keys and the attributes, then taps and x): None for the external.
        grads = y.grad_fn.apply(torch.ones_like(y))
        self.assertEqual(len(grads), 4)
        self.assertIsNone(grads[2])
        self.assertTrue(torch.equal(grads[3], torch.tensor([[0.0, 0.5, 1.0], [1.5, 2.0, 2.5]])))
        y.sum().backward()
        self.assertTrue(torch.equal(x.grad, torch.tensor([[0.0, 0.5, 1.0], [1.5, 2.0, 2.5]])))

    def test_an_integer_operand_gets_no_gradient(self):
        """gather_rows(x, idx): x's gradient is the scatter-add of the cotangent (the backward
        op); idx, an int32 tensor, gets None from the autograd kernel."""
        x = self.X.clone().requires_grad_()
        idx = torch.tensor([2, 0, 2, 3], dtype=torch.int32)
        c = torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
        want = torch.zeros_like(self.X).index_add_(0, idx.long(), c)
        y = ops.example.gather_rows(x, idx)
        # What the autograd kernel's backward itself returns, per input of its node (the
        # dispatch keys and the attributes, then x and idx): x's gradient, and None for idx.
        # (idx.grad would say nothing: idx never requires a gradient.)
        grads = y.grad_fn.apply(c)
        self.assertEqual(len(grads), 4)
        torch.testing.assert_close(grads[2], want, rtol=0, atol=0)
        self.assertIsNone(grads[3])
        (y * c).sum().backward()
        torch.testing.assert_close(x.grad, want, rtol=0, atol=0)
        self.assertTrue(torch.autograd.gradcheck(lambda x: ops.example.gather_rows(x, idx),
                                                 (x,)))

    def test_backward_matches_torch(self):
        c = torch.randn(4, 6, dtype=torch.float64)
        for f, ref in [(lambda x: ops.example.rms_norm_t(x, eps=EPS), rms_norm_ref),
                       (lambda x: ops.example.mean_pool(x, k=2, stride=1),
                        lambda x: mean_pool_ref(x, 2, 1))]:
            a, b = self.X.clone().requires_grad_(), self.X.clone().requires_grad_()
            ya, yb = f(a), ref(b)
            (ya.sin() * c[:, :ya.shape[1]]).sum().backward()
            (yb.sin() * c[:, :yb.shape[1]]).sum().backward()
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-12, atol=1e-14)

    def test_every_dtype_of_rms_norm_t_differentiates(self):
        """backward() in each type of rms_norm_t's list against plain torch in f64 on the same
        (rounded) inputs; tolerance a few ulps of the type."""
        c = torch.randn(4, 6, dtype=torch.float64)
        for dtype, tol in [(torch.float32, 1e-5), (torch.float64, 1e-12),
                           (torch.bfloat16, 3e-2), (torch.float16, 4e-3)]:
            with self.subTest(dtype=dtype):
                x = self.X.to(dtype).clone().requires_grad_()
                (ops.example.rms_norm_t(x, eps=EPS).double() * c).sum().backward()
                ref = self.X.to(dtype).double().clone().requires_grad_()
                (rms_norm_ref(ref) * c).sum().backward()
                self.assertEqual(x.grad.dtype, dtype)
                torch.testing.assert_close(x.grad.double(), ref.grad, rtol=tol, atol=tol)

    def test_an_op_without_a_backward_still_refuses(self):
        x = torch.ones(3, requires_grad=True)
        with self.assertRaises(ct.NoGradientError):
            ops.example.checked_sqrt(x).sum().backward()

    def test_forward_mode_is_refused_by_name_never_a_zero_tangent(self):
        """A tangent reaching an op without a forward-mode rule (mean_pool, which declares a vjp,
        and checked_sqrt, which declares none) is refused naming the op. Before, torch.func.jvp
        gave a zero tangent and forward_ad a None one, with no error."""
        from torch.autograd import forward_ad as fwAD
        x = torch.rand(2, 6, dtype=torch.float64) + 0.5
        t = torch.ones_like(x)
        for name, f in [("example::mean_pool", lambda a: ops.example.mean_pool(a, k=2, stride=2)),
                        # f32 only: the tangent reaches it through the conversion.
                        ("example::checked_sqrt", lambda a: ops.example.checked_sqrt(a.float()))]:
            for how, run in [
                    ("torch.func.jvp", lambda: torch.func.jvp(f, (x,), (t,))),
                    ("torch.func.jacfwd", lambda: torch.func.jacfwd(f)(x)),
            ]:
                with self.subTest(op=name, how=how):
                    with self.assertRaisesRegex(ct.NoForwardRuleError,
                                                "%s has no forward-mode rule" % name):
                        run()
            with self.subTest(op=name, how="forward_ad"), fwAD.dual_level():
                with self.assertRaisesRegex(ct.NoForwardRuleError, name):
                    f(fwAD.make_dual(x, t))
            # Without a tangent the op runs as before, inside a dual level too.
            want = f(x)
            with fwAD.dual_level():
                self.assertTrue(torch.equal(f(x), want))


class Vmap(unittest.TestCase):
    def test_vmap_of_every_op_is_the_loop_of_calls(self):
        """torch.func.vmap over a batch of 3 equals the 3 calls stacked, bit for bit. An op
        updating a `&mut` external updates it once per call in both."""
        calls = samples.calls(LIB.library)
        self.assertEqual(sorted(c.op for c in calls), sorted(e.name for e in LIB.library.entries()))
        for call in calls:
            if not call.torch or not call.batched or missing_dtype(call):
                continue  # refused in torch (Opcheck checks how), or takes no tensor to batch
            with self.subTest(op=call.op):
                op, attrs = packet(call.op), torch_attrs(call.attrs)
                batch = call.batch()
                in_dims = tuple(0 if i in call.batched else None for i in range(len(batch)))
                args = [to_torch(b) for b in batch]
                state = [bits(a).clone().view(a.dtype) for a in args]
                sch = LIB.library.op(call.op).schema
                # An `#[inout]` tensor is updated, not returned: compared as the call left it.
                updated = [i for i, p in enumerate(sch.operands) if getattr(p, "updated", False)]

                def run(*a):
                    out = op(*a, **attrs)
                    return (*([] if out is None else as_list(out)), *(a[i] for i in updated))

                got = as_list(torch.func.vmap(run, in_dims=in_dims)(*args))
                loop = [run(*[a[k] if i in call.batched else a for i, a in enumerate(state)])
                        for k in range(3)]
                # As many outputs as the loop's calls give, and as the schema declares (torch
                # updates a `&mut` external and an `#[inout]` tensor in place rather than
                # returning them).
                self.assertEqual(len(got), len(loop[0]), call.op)
                returned = [r for r in sch.results
                            if r.kind not in ("updated_external", "updated_tensor")]
                self.assertEqual(len(got), len(returned) + len(updated), call.op)
                for r, g in enumerate(got):
                    self.assertTrue(torch.equal(bits(g), torch.stack([bits(one[r])
                                                                      for one in loop])),
                                    (call.op, r))
                for a, s in zip(args, state):
                    self.assertTrue(torch.equal(bits(a), bits(s)), call.op)


    def test_rows_rule_with_an_unbatched_operand_and_another_dim(self):
        xt = torch.randn(4, 3, 6, dtype=torch.float64)      # batch on dim 1
        w = torch.rand(4, dtype=torch.float64) + 0.5
        got = torch.func.vmap(lambda x, w: ops.example.scale_rows(x, w), in_dims=(1, None))(xt, w)
        want = torch.stack([ops.example.scale_rows(xt[:, b], w) for b in range(3)])
        self.assertTrue(torch.equal(got, want))

    def test_an_empty_batch(self):
        got = torch.func.vmap(lambda x: ops.example.rms_norm_t(x, eps=EPS))(torch.zeros(0, 4, 6))
        self.assertEqual(got.shape, (0, 4, 6))
        got = torch.func.vmap(lambda x: ops.example.checked_sqrt(x))(torch.zeros(0, 3))
        self.assertEqual(got.shape, (0, 3))


class AnyRank(unittest.TestCase):
    """`example::rms_norm_nd` and `rms_norm_fwd` on ranks 1 to 4: values against the same
    function in torch, gradcheck of the declared backward, vmap, and one compiled graph for
    any leading dimensions (the residual's shape, `x.shape[:-1]`, taken on SymInts)."""
    EPS = float(torch.tensor(1e-5, dtype=torch.float32))
    SHAPES = [(5,), (3, 5), (2, 3, 5), (2, 1, 3, 4)]

    def ref(self, x):
        return x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + self.EPS)

    def test_values_gradients_and_vmap_on_ranks_1_to_4(self):
        g = torch.Generator().manual_seed(7)
        for shape in self.SHAPES:
            with self.subTest(shape=shape):
                x = torch.randn(*shape, dtype=torch.float64, generator=g, requires_grad=True)
                torch.testing.assert_close(ops.example.rms_norm_nd(x, eps=1e-5), self.ref(x),
                                           rtol=1e-13, atol=1e-14)
                y, res = ops.example.rms_norm_fwd(x.detach(), eps=1e-5)
                self.assertEqual(tuple(res.shape), shape[:-1])
                torch.testing.assert_close(
                    res, 1 / torch.sqrt((x.detach() ** 2).mean(-1) + self.EPS), rtol=1e-13,
                    atol=0)
                self.assertTrue(torch.autograd.gradcheck(
                    lambda x: ops.example.rms_norm_nd(x, eps=1e-5), (x,)))
                xs = torch.stack([x.detach(), 2 * x.detach() + 1])
                got = torch.func.vmap(lambda x: ops.example.rms_norm_fwd(x, eps=1e-5))(xs)
                self.assertEqual(tuple(got[1].shape), (2, *shape[:-1]))
                torch.testing.assert_close(got[0], self.ref(xs), rtol=1e-13, atol=1e-14)

    def test_rank_0_is_refused_by_name(self):
        with self.assertRaisesRegex(SchemaError, r"`\.\.x\.dims\(\.\.-1\)` of a rank-0 `x`"):
            ops.example.rms_norm_fwd(torch.tensor(1.0), eps=1e-5)

    def test_one_compiled_graph_for_any_leading_dimensions(self):
        from torch._dynamo.testing import CompileCounterWithBackend

        f = lambda x: ops.example.rms_norm_fwd(x, eps=1e-5)[1].cos()  # noqa: E731
        torch._dynamo.reset()
        counter = CompileCounterWithBackend("aot_eager")
        compiled = torch.compile(f, backend=counter, dynamic=True, fullgraph=True)
        for b, n in ((2, 3), (3, 5), (4, 7), (5, 9), (6, 11)):
            x = torch.randn(b, n, 6, dtype=torch.float64)
            got = compiled(x)
            self.assertEqual(tuple(got.shape), (b, n))
            torch.testing.assert_close(got, f(x), rtol=1e-14, atol=1e-15)
        self.assertEqual(counter.frame_count, 1)


class Compile(unittest.TestCase):
    def model(self, x, w):
        h = ops.example.scale_rows(ops.example.rms_norm_t(x, eps=EPS), w)
        return ops.example.mean_pool(h, k=2, stride=2).sin().sum()

    def test_fullgraph_no_graph_break_same_result_and_gradients(self):
        g = torch.Generator().manual_seed(4)
        x = torch.randn(4, 6, dtype=torch.float64, generator=g)
        w = torch.rand(4, dtype=torch.float64, generator=g) + 0.5
        explained = torch._dynamo.explain(self.model)(x, w)
        self.assertEqual(explained.graph_break_count, 0)
        self.assertEqual(explained.graph_count, 1)
        compiled = torch.compile(self.model, fullgraph=True)
        xa, wa = x.clone().requires_grad_(), w.clone().requires_grad_()
        xb, wb = x.clone().requires_grad_(), w.clone().requires_grad_()
        ya, yb = compiled(xa, wa), self.model(xb, wb)
        # Inductor fuses sin and sum (its own loop order, its own threads): equal to rounding,
        # not bit for bit. Rounding is relative to the terms summed, not to a sum that may
        # cancel to near zero (unseeded inputs once gave 1.65e-13 of the sum): the bounds are
        # normwise, 1e-13 of the terms' magnitude.
        terms = ops.example.mean_pool(
            ops.example.scale_rows(ops.example.rms_norm_t(x, eps=EPS), w), k=2, stride=2).sin()
        torch.testing.assert_close(ya, yb, rtol=0, atol=1e-13 * terms.abs().sum().item())
        ya.backward()
        yb.backward()
        for got, want in ((xa.grad, xb.grad), (wa.grad, wb.grad)):
            torch.testing.assert_close(got, want, rtol=0,
                                       atol=1e-13 * want.abs().max().item())

    def test_one_compiled_graph_for_five_lengths(self):
        """torch.compile(dynamic=True, fullgraph=True): the fake implementation evaluates the
        rule on torch's SymInts without forcing them, so five row lengths share one graph (each
        result the eager one). Before: a graph per length, and after torch's recompile limit,
        eager."""
        from torch._dynamo.testing import CompileCounterWithBackend

        f = lambda x: torch.ops.example.mean_pool(x, k=2, stride=2).sin()  # noqa: E731
        torch._dynamo.reset()
        # aot_eager: the fake implementation traced on SymInts, without inductor's codegen.
        counter = CompileCounterWithBackend("aot_eager")
        compiled = torch.compile(f, backend=counter, dynamic=True, fullgraph=True)
        for n in (6, 8, 10, 12, 14):
            x = torch.randn(4, n, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
            got = compiled(x)
            self.assertEqual(tuple(got.shape), (4, (n - 2) // 2 + 1))
            torch.testing.assert_close(got, f(x), rtol=1e-14, atol=1e-15)
        self.assertEqual(counter.frame_count, 1)

    def test_torch_export_with_dynamic_dims(self):
        """torch.export with both dims dynamic: the rule on SymInts, one program for every size
        in the ranges (n from 4: from 2, torch's metadata pass guards the output length away
        from 1, see test_torch_export_from_the_smallest_length)."""

        class Pool(torch.nn.Module):
            def forward(self, x):
                return ops.example.mean_pool(x, k=2, stride=2)

        b = torch.export.Dim("b", min=1, max=64)
        n = torch.export.Dim("n", min=4, max=1024)
        ep = torch.export.export(Pool(), (torch.randn(4, 6, dtype=torch.float64),),
                                 dynamic_shapes={"x": {0: b, 1: n}})
        for shape in ((2, 6), (3, 9), (5, 4), (1, 100)):
            x = torch.randn(*shape, dtype=torch.float64)
            got = ep.module()(x)
            self.assertEqual(tuple(got.shape), (shape[0], (shape[1] - 2) // 2 + 1))
            torch.testing.assert_close(got, Pool()(x), rtol=0, atol=0)


    def test_torch_export_from_the_smallest_length(self):
        """Dim("n", min=2), the smallest length mean_pool(k=2, stride=2) takes (one output).
        The fake implementation adds no guard of its own (a ShapeEnv holds none after it);
        torch's metadata pass does: `(n // 2) != 1`, from `guard_or_false(x == 1)` in
        torch/_prims_common `check_contiguous_sizes_strides` on a backed size (torch 2.9 to
        2.15, as for torch's own avg_pool1d; pytorch/pytorch#165032), which torch.export reports
        against the range. `backed_size_oblivious` keeps it a static question: the program
        runs at n = 2, 3 and 9."""
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import (DimDynamic, ShapeEnv,
                                                           StatelessSymbolicContext)

        env = ShapeEnv()
        mode = FakeTensorMode(shape_env=env)
        x = mode.from_tensor(torch.randn(3, 8, dtype=torch.float64),
                             symbolic_context=StatelessSymbolicContext(
                                 dynamic_sizes=[DimDynamic.STATIC, DimDynamic.DYNAMIC]))
        with mode:
            y = ops.example.mean_pool(x, k=2, stride=2)
        self.assertEqual(str(y.shape[1]), "(%s//2)" % x.shape[1])
        self.assertEqual(env.guards, [])

        class Pool(torch.nn.Module):
            def forward(self, x):
                return ops.example.mean_pool(x, k=2, stride=2)

        n = torch.export.Dim("n", min=2)
        with torch.fx.experimental._config.patch(backed_size_oblivious=True):
            ep = torch.export.export(Pool(), (torch.randn(3, 8, dtype=torch.float64),),
                                     dynamic_shapes={"x": {1: n}})
        for length in (2, 3, 9):
            x = torch.randn(3, length, dtype=torch.float64)
            torch.testing.assert_close(ep.module()(x), Pool()(x), rtol=0, atol=0)

    def test_torch_export_refused_as_rust_refuses(self):
        """On a symbolic length the rule's refusals hold for every size in the range: a stride
        of 0 or below is refused by name (before: Python's ZeroDivisionError, torch's "negative
        dimension"); a window longer than the range's shortest row is a guard that torch.export
        reports with the range that would do (before: torch's "AssertionError: 29/3 <= n")."""

        def pool(**kw):
            class Pool(torch.nn.Module):
                def forward(self, x):
                    return ops.example.avg_pool(x, **kw)
            return Pool()

        x = torch.randn(3, 12)
        for stride, refusal in ((0, "divides by zero"), (-1, "divides a negative number")):
            with self.assertRaisesRegex(SchemaError, r"example::avg_pool: .*" + refusal):
                torch.export.export(pool(k=2, stride=stride, pad=0), (x,),
                                    dynamic_shapes={"x": {1: torch.export.Dim("n", min=2)}})
        with self.assertRaisesRegex(Exception, r"n = Dim\('n', min=10\)"):
            torch.export.export(pool(k=10, stride=1, pad=0), (x,),
                                dynamic_shapes={"x": {1: torch.export.Dim("n", min=2)}})


OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor",
                 "test_aot_dispatch_dynamic")


class Opcheck(unittest.TestCase):
    def test_every_example_op_passes_opcheck(self):
        """schema, fake tensors, autograd registration and AOT dispatch (dynamic shapes); the
        differentiable ops with inputs that require grad, so that their backward is traced."""
        for call in samples.calls(LIB.library):
            if not call.torch:
                # A dictionary of attributes (`#[attrs]`): torch's schema has the named
                # attributes only (it refuses any other keyword itself), and every call is
                # refused by name.
                named = {p.name for p in LIB.library.op(call.op).schema.attributes}
                with self.assertRaisesRegex(NotImplementedError, r"%s takes (every attribute "
                                            r"of its call as a dictionary|no tensor|packed "
                                            r"sub-byte tensors of a type parameter)" % call.op):
                    packet(call.op)(*[any_tensor(o) for o in call.operands],
                                    **{k: v for k, v in torch_attrs(call.attrs).items()
                                       if k in named})
                continue
            if missing_dtype(call):
                with self.assertRaisesRegex(Exception, r"%s: torch has no dtype for f8E8M0FNU|"
                                            r"which no customop kernel takes" % call.op):
                    packet(call.op)(*[to_torch(o) for o in call.operands],
                                    **torch_attrs(call.attrs))
                continue
            with self.subTest(op=call.op):
                op = packet(call.op)
                sch = LIB.library.op(call.op).schema
                args = [to_torch(o) for o in call.operands]
                float8_out = any(str(getattr(getattr(r, "dtype", None), "name", "")).startswith("f8")
                                 for r in sch.results)
                if sch.vjp is not None and not float8_out:
                    # (Not for float8 results: opcheck's backward sums the outputs, and torch
                    # has no sum for float8. fp8_affine's gradient is checked in
                    # test_differentiability.py.)
                    diff = {of for _, of in sch.vjp.gradients}
                    args = [a.requires_grad_() if p.name in diff else a
                            for p, a in zip(sch.operands, args)]
                tests = OPCHECK_TESTS
                f4 = {getattr(getattr(p, "dtype", None), "name", None)
                      for p in (*sch.operands, *sch.results)} & {"f4E2M1FN"}
                if f4 or any(a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) for a in args):
                    # torch's schema check compares inputs with arithmetic that torch 2.9 does
                    # not implement for float8 ("mul_cpu_reduced_float"), and copies tensors,
                    # which no torch does for float4_e2m1fn_x2: the other three run.
                    tests = tuple(t for t in tests if t != "test_schema")
                result = torch.library.opcheck(op, tuple(args), torch_attrs(call.attrs),
                                               test_utils=tests)
                self.assertEqual(set(result.values()), {"SUCCESS"}, (call.op, result))
                self.assertEqual(len(result), len(tests))


class Training(unittest.TestCase):
    def test_a_two_op_chain_trains_like_torch(self):
        """x @ W, then rms_norm_t, then mean_pool: 8 steps of SGD in f64. Losses fall every step
        and equal plain torch's to 1e-12 (relative)."""
        g = torch.Generator().manual_seed(3)
        x = torch.randn(8, 6, dtype=torch.float64, generator=g)
        target = torch.randn(8, 3, dtype=torch.float64, generator=g)
        w0 = torch.randn(6, 6, dtype=torch.float64, generator=g)
        wa = torch.nn.Parameter(w0.clone())
        wb = torch.nn.Parameter(w0.clone())
        opt_a = torch.optim.SGD([wa], lr=0.5)
        opt_b = torch.optim.SGD([wb], lr=0.5)
        losses = []
        for _ in range(8):
            la = ((ops.example.mean_pool(ops.example.rms_norm_t(x @ wa, eps=EPS), k=2, stride=2)
                   - target) ** 2).mean()
            lb = ((mean_pool_ref(rms_norm_ref(x @ wb), 2, 2) - target) ** 2).mean()
            torch.testing.assert_close(la, lb, rtol=1e-12, atol=0)
            losses.append(la.item())
            for opt, loss in ((opt_a, la), (opt_b, lb)):
                opt.zero_grad()
                loss.backward()
                opt.step()
        self.assertTrue(all(b < a for a, b in zip(losses, losses[1:])), losses)
        self.assertLess(losses[-1], 0.9 * losses[0], losses)


if __name__ == "__main__":
    unittest.main()
