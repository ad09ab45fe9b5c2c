"""customop.torch's torch_xla export against the example kernel cdylib: eager CPU equals XLA for
every kind of parameter, and every case torch_xla cannot carry is refused with a message that
says why. torch 2.9 only (torch_xla's last release); eager tests are tests/torch/test_torch.py.

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \
     target/xla-venv/bin/python -m unittest tests/torch/test_torch_export.py
(scripts/test.sh does; missing torch is a failure there, not a skip).
"""

import os
import sys
import unittest

os.environ.setdefault("PJRT_DEVICE", "CPU")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import customop.torch as ct  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_helpers import LIB, Wrap, blob, ops, seed_expected  # noqa: E402


def export_run(model, *inputs):
    exported = ct.export(torch.export.export(model, inputs), LIB)
    return exported, exported.run(*inputs)



class EagerAndXla(unittest.TestCase):

    def test_attributes_eager_equals_xla(self):
        cfg = LIB.pack_attr("example::NormCfg", {"scale": 2.0, "shift": 0.5,
                                                 "mode": "ScaleShift"})
        x = torch.tensor([[3.0, 4.0], [1.0, -1.0]])
        eager = ops.example.rms_norm(x, eps=1e-5, cfg=cfg)
        rms = torch.sqrt((x * x).mean(dim=1, keepdim=True) + 1e-5)
        torch.testing.assert_close(eager, x / rms * 2.0 + 0.5)
        m = Wrap(lambda s, x: ops.example.rms_norm(x, eps=1e-5, cfg=cfg))
        _, on_xla = export_run(m, x)
        torch.testing.assert_close(on_xla, eager, rtol=0, atol=0)

    def test_every_attribute_type_eager_equals_xla(self):
        kw = dict(factor=1.5, label="hello", offsets=[1, -2, 3], flag=True, small=200)
        x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        eager = ops.example_lib.affine(x, **kw)
        # The formula, from the attributes as given: every kind reaches the kernel intact.
        added = len("hello") + (1 - 2 + 3) + 1 + 200
        want = (1.5 * x.double() + added).float()
        torch.testing.assert_close(eager, want, rtol=0, atol=0)
        _, on_xla = export_run(Wrap(lambda s, x: ops.example_lib.affine(x, **kw)), x)
        torch.testing.assert_close(on_xla, want, rtol=0, atol=0)
        # Each attribute changes the result as the formula says.
        for change, delta in [(dict(label="hi"), -3), (dict(offsets=[5]), 3), (dict(flag=False), -1),
                              (dict(small=0), -200)]:
            got = ops.example_lib.affine(x, **dict(kw, **change))
            torch.testing.assert_close(got, (1.5 * x.double() + added + delta).float(),
                                       rtol=0, atol=0, msg=str(change))

    def test_opaque_results_chain_eager_equals_xla(self):
        x = torch.tensor([1.0, 2.0, 3.0, 6.0])
        stats = ops.example.make_stats(x)
        self.assertEqual(stats.dtype, torch.uint8)
        self.assertEqual(LIB.unpack("example::Stats", stats)["mean"], 3.0)
        eager = ops.example.apply_stats(stats, x)
        m = Wrap(lambda s, x: ops.example.apply_stats(ops.example.make_stats(x), x))
        _, on_xla = export_run(m, x)
        torch.testing.assert_close(on_xla, eager, rtol=0, atol=0)

    def test_int8_buffer_is_retyped_and_runs(self):
        b = blob()
        x = torch.ones(2, 3)
        m = Wrap(lambda s, x: ops.my_custom_library.custom_op_external(s.external, x),
                 external=b.view(torch.int8).clone())
        exported, on_xla = export_run(m, x)
        self.assertIn("tensor<56xui8> {customop.external", exported.text)
        self.assertNotIn("xi8>, tensor<2x3xf32>", exported.text)
        self.assertEqual(on_xla.tolist(), seed_expected(x, {"gain": 2.0, "bias": -1}))

    def test_two_externals_of_two_sizes(self):
        off = LIB.pack("example::Offset", {"add": 0.5})
        taps = LIB.pack("example::Taps", {"bias": 1.0, "taps": [float(i) for i in range(16)]})
        x = torch.arange(4, dtype=torch.float32)

        def f(s, x):
            return ops.example.apply_taps(s.taps, ops.example.add_offset(s.off, x))

        eager = f(Wrap(f, off=off, taps=taps), x)
        exported, on_xla = export_run(Wrap(f, off=off, taps=taps), x)
        self.assertEqual(sorted((e.descriptor, e.size, e.name) for e in exported.externals),
                         [("example::Offset", 28, "off"), ("example::Taps", 96, "taps")])
        for e in exported.externals:
            self.assertIn("tensor<%dxui8> {customop.external = {descriptor = \"%s\""
                          % (e.size, e.descriptor), exported.text)
        expected = (x + 0.5) * torch.arange(4, dtype=torch.float32) + 1.0
        torch.testing.assert_close(eager, expected, rtol=0, atol=0)
        torch.testing.assert_close(on_xla, expected, rtol=0, atol=0)

    def test_external_can_be_overridden_at_run(self):
        x = torch.ones(1, 2)
        m = Wrap(lambda s, x: ops.my_custom_library.custom_op_external(s.external, x),
                 external=blob())
        exported = ct.export(torch.export.export(m, (x,)), LIB)
        other = blob(gain=10.0, bias=3)
        self.assertEqual(exported.run(x, externals={"external": other}).tolist(), [23])

    def test_bytecode_is_a_portable_artifact_xla_runs(self):
        import jax
        import jax.extend.backend

        x = torch.ones(3, 3)
        m = Wrap(lambda s, x: ops.my_custom_library.custom_op_external(s.external, x),
                 external=blob())
        exported = ct.export(torch.export.export(m, (x,)), LIB)
        data = exported.bytecode
        self.assertTrue(data.startswith(b"ML\xefR"), data[:8])
        backend = jax.extend.backend.get_backend("cpu")
        dev = backend.local_devices()[0]
        exe = backend.compile_and_load(data, [dev])
        out = exe.execute([jax.device_put(a, dev) for a in exported.arguments(x)])
        self.assertEqual(np.asarray(out[0]).tolist(), exported.run(x).tolist())


class Refusals(unittest.TestCase):
    def assertRefused(self, fn, *needles, kind=ct.ExportError):
        with self.assertRaises(kind) as cm:
            fn()
        for n in needles:
            self.assertIn(n, str(cm.exception))
        return str(cm.exception)

    def test_mutable_external_is_refused(self):
        m = Wrap(lambda s, x: ops.example.counter_step(s.state, x),
                 state=LIB.pack("example::Counter", {"calls": 0, "total": 0.0}))
        ep = torch.export.export(m, (torch.ones(2),))
        self.assertRefused(lambda: ct.export(ep, LIB), "example::counter_step", "`state`",
                           "&mut", "JAX")

    def test_a_tensor_updated_in_place_is_refused(self):
        def f(s, x):
            ops.example.scale_in_place(x, factor=2.0)
            return x + 1

        ep = torch.export.export(Wrap(f), (torch.ones(3),))
        self.assertRefused(lambda: ct.export(ep, LIB), "example::scale_in_place", "`x`",
                           "#[inout]", "JAX")

    def test_packed_sub_byte_tensors_are_refused(self):
        w = torch.zeros(8, 2, dtype=torch.uint8)  # i4 [8, 4], packed
        m = Wrap(lambda s, x: ops.example.matmul_i4(x, s.w, torch.ones(1, 4)), w=w)
        ep = torch.export.export(m, (torch.ones(1, 8),))
        self.assertRefused(lambda: ct.export(ep, LIB), "example::matmul_i4", "`w`",
                           "packed sub-byte", "JAX")

    def test_dropped_side_effect_is_refused(self):
        def f(s, x):
            ops.my_custom_library.custom_op_external(s.external, x)  # result unused
            return x + 1

        ep = torch.export.export(Wrap(f, external=blob()), (torch.ones(3, 3),))
        self.assertRefused(lambda: ct.export(ep, LIB), "side effects",
                           "my_custom_library::custom_op_external", "emitted 0")

    def test_computed_external_is_refused(self):
        big = torch.cat([torch.zeros(8, dtype=torch.uint8), blob()])
        m = Wrap(lambda s, x: ops.my_custom_library.custom_op_external(s.big[8:], x), big=big)
        ep = torch.export.export(m, (torch.ones(3, 3),))
        self.assertRefused(lambda: ct.export(ep, LIB), "external `blob`", "stablehlo.slice",
                           "my_lib::Blob")

    def test_wrong_size_buffer_is_refused(self):
        m = Wrap(lambda s, x: ops.my_custom_library.custom_op_external(s.external, x),
                 external=torch.zeros(60, dtype=torch.uint8))
        ep = torch.export.export(m, (torch.ones(3, 3),))
        self.assertRefused(lambda: ct.export(ep, LIB), "60 bytes", "packs to 56")

    def test_int8_buffer_read_by_other_ops_is_refused(self):
        def f(s, x):
            y = ops.my_custom_library.custom_op_external(s.external, x)
            return y + s.external[:3]

        m = Wrap(f, external=blob().view(torch.int8).clone())
        ep = torch.export.export(m, (torch.ones(3, 3),))
        self.assertRefused(lambda: ct.export(ep, LIB), "int8 buffer", "torch.uint8")

    def test_2d_buffer_is_refused_unless_reshaped_whole(self):
        m = Wrap(lambda s, x: ops.my_custom_library.custom_op_external(s.external, x),
                 external=blob().reshape(7, 8).clone())
        ep = torch.export.export(m, (torch.ones(1, 1),))
        self.assertRefused(lambda: ct.export(ep, LIB), "1-D uint8 buffer", "tensor<7x8xui8>")

        # A whole-buffer reshape to 1-D is traced through to the 2-D argument, which is then
        # still refused (the entry argument is what a runtime feeds).
        def g(s, x):
            return ops.my_custom_library.custom_op_external(s.external.reshape(56), x)

        ep = torch.export.export(Wrap(g, external=blob().reshape(7, 8).clone()),
                                 (torch.ones(1, 1),))
        self.assertRefused(lambda: ct.export(ep, LIB), "1-D uint8 buffer")

    def test_api_version_and_config_are_made_api4(self):
        from torch_xla.experimental.stablehlo_custom_call import stablehlo_custom_call

        @torch.library.custom_op("customop_test::raw_seed", mutates_args=())
        def raw(ext: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            return stablehlo_custom_call([ext, x], "my_custom_library.custom_op_external",
                                         [x.shape[:1]], [torch.int8], False, "", 1)

        @raw.register_fake
        def _(ext, x):
            return x.new_empty((x.shape[0],), dtype=torch.int8)

        x = torch.ones(2, 2)
        m = Wrap(lambda s, x: raw(s.external, x), external=blob())
        exported, out = export_run(m, x)
        self.assertIn("api_version = 4 : i32", exported.text)
        self.assertIn("backend_config = {}", exported.text)
        self.assertIn("has_side_effect = true", exported.text)
        self.assertEqual(out.tolist(), seed_expected(x, {"gain": 2.0, "bias": -1}))


class Traps(unittest.TestCase):
    """What a user hits when a name or a size is wrong, or when training through an op."""

    def exported_seed(self):
        x = torch.ones(1, 2)
        m = Wrap(lambda s, x: ops.my_custom_library.custom_op_external(s.external, x),
                 external=blob())
        return ct.export(torch.export.export(m, (x,)), LIB), x

    def test_misspelled_external_name_is_refused(self):
        exported, x = self.exported_seed()
        for call in (exported.run, exported.arguments):
            with self.assertRaises(ct.ExportError) as cm:
                call(x, externals={"externl": blob(gain=10.0)})
            msg = str(cm.exception)
            self.assertIn("no external `externl`", msg)
            self.assertIn("its externals: `external` (my_lib::Blob)", msg)
        # The right name is taken.
        self.assertEqual(exported.run(x, externals={"external": blob(gain=10.0, bias=3)})
                         .tolist(), [23])

    def test_wrong_size_external_is_refused_before_xla(self):
        exported, x = self.exported_seed()
        long = torch.cat([blob(), torch.zeros(1, dtype=torch.uint8)])
        for call in (exported.run, exported.arguments):
            with self.assertRaises(ct.ExportError) as cm:
                call(x, externals={"external": long})
            self.assertIn("external `external` (descriptor my_lib::Blob) is 57 bytes, but the "
                          "program takes 56", str(cm.exception))

    def test_wrong_size_forward_input_external_is_refused(self):
        m = Wrap(lambda s, x, ext: ops.my_custom_library.custom_op_external(ext, x))
        x = torch.ones(2, 2)
        exported = ct.export(torch.export.export(m, (x, blob())), LIB)
        self.assertEqual(exported.run(x, blob()).tolist(),
                         seed_expected(x, {"gain": 2.0, "bias": -1}))
        with self.assertRaises(ct.ExportError) as cm:
            exported.run(x, blob()[:50])
        self.assertIn("external `input_arg 1` (descriptor my_lib::Blob) is 50 bytes",
                      str(cm.exception))

    def test_external_repr_shows_every_field(self):
        exported, _ = self.exported_seed()
        (e,) = exported.externals
        self.assertEqual(repr(e), "External(index=%d, name='external', source='parameter', "
                                  "descriptor='my_lib::Blob', fingerprint='%s', size=56, "
                                  "mutable=False)"
                         % (e.index, LIB.library.layout("my_lib::Blob").fingerprint_hex))


if __name__ == "__main__":
    unittest.main()
