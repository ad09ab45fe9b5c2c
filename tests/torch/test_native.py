"""customop.torch's native kernels (the default on torch 2.9): registered in torch's
dispatcher by the kernel cdylib through torch's stable C ABI, with no Python between the
dispatcher and the Rust handler. What only the native path has is tested here; every other
torch test runs on both paths (scripts/test.sh runs them with CUSTOMOP_TORCH_NATIVE=1 and 0).

Run: CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so \
     target/xla-venv/bin/python -m unittest tests/torch/test_native.py
"""

import ctypes
import gc
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

os.environ.setdefault("PJRT_DEVICE", "CPU")

import torch  # noqa: E402

import customop.torch as ct  # noqa: E402
from customop.torch import native  # noqa: E402
from customop.schema import SchemaError, result_specs  # noqa: E402

LIB = ct.load(os.environ["CUSTOMOP_KERNELS"])
# From torch 2.10 on, str and list arguments reach a native kernel as they are.
DIRECT = native.abi_version()[:2] >= (2, 10)
# libtorch's headers need C++17 up to torch 2.9, C++20 since (std::strong_ordering, bit_width).
CXX_STANDARD = "-std=c++17" if native.abi_version()[:2] <= (2, 9) else "-std=c++20"
ops = torch.ops
BLOB = LIB.pack("my_lib::Blob", {"gain": 2.0, "bias": -1, "seed": 42,
                                 "tag": b"customop seed!!!"})
CFG = LIB.pack_attr("example::NormCfg", {"scale": 2.0, "shift": 0.5, "mode": "ScaleShift"})


def registered_by(op: str, key: str) -> str:
    """Where torch says op `op`'s kernel for dispatch key `key` was registered."""
    for line in torch._C._dispatch_dump(op).splitlines():
        if line.startswith(key + ":"):
            return line
    return ""


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Registration(unittest.TestCase):
    def test_cpu_and_meta_kernels_are_the_cdylibs(self):
        self.assertTrue(LIB.native)
        public = ("example::checked_sqrt", "my_custom_library::custom_op_external",
                  "example::counter_step")
        # str, descriptor and list attributes: on torch 2.9 through a hidden op, behind a
        # Python adapter; from 2.10 on, the public op's own kernels take them.
        native_ops = public + (("example::rms_norm", "example_lib::affine") if DIRECT
                               else ("example::_native_rms_norm",))
        for op in native_ops:
            for key in ("CPU", "Meta"):
                self.assertIn("registered at customop:0", registered_by(op, key), (op, key))
        if not DIRECT:
            self.assertIn("customop/torch/library.py",
                          registered_by("example::rms_norm", "CPU"))

    def test_no_limit_on_the_number_of_native_registrations(self):
        # Each op's kernels are generated with it (no table of slots, which held 512 ops): the
        # same op registered natively under 600 more names, each one running it. In a process
        # of its own: 600 bare ops (no fake kernels) would stay in this one.
        script = textwrap.dedent("""
            import os, torch
            import customop.torch as ct

            lib = ct.load(os.environ["CUSTOMOP_KERNELS"])
            frag = torch.library.Library("customop_many", "FRAGMENT")
            entry = lib.library.op("example::checked_sqrt")
            for k in range(600):
                frag.define("sqrt_%d(Tensor x) -> Tensor" % k)
                lib._native.register(frag, entry, "customop_many::sqrt_%d" % k, define=False)
            x = torch.tensor([4.0, 9.0])
            for k in (0, 511, 512, 599):
                print(k, getattr(torch.ops.customop_many, "sqrt_%d" % k)(x).tolist())
            try:
                torch.ops.customop_many.sqrt_599(torch.tensor([-1.0]))
            except RuntimeError as e:
                print("refused:", "[kernel_error]: negative input -1" in str(e))
        """)
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.split("\n")[:5], ["0 [2.0, 3.0]", "511 [2.0, 3.0]",
                                                     "512 [2.0, 3.0]", "599 [2.0, 3.0]",
                                                     "refused: True"])

    def test_str_descriptor_and_list_attributes_reach_the_kernel_as_torch_passes_them(self):
        self.assertEqual(LIB._native.direct, DIRECT)
        if DIRECT:
            self.assertEqual(str(ops.example.rms_norm.default._schema),
                             "example::rms_norm(Tensor x, *, float eps, str cfg) -> Tensor")
            self.assertFalse(hasattr(ops.example, "_native_rms_norm"))
        else:
            self.assertEqual(str(ops.example._native_rms_norm.default._schema),
                             "example::_native_rms_norm(Tensor x, *, float eps, Tensor cfg) "
                             "-> Tensor")
            self.assertIn("Tensor label, Tensor offsets",
                          str(ops.example_lib._native_affine.default._schema))
        # Either way the values arrive: a descriptor whose bytes are not all ASCII, a string
        # and lists of each kind, against the Python path's results (customop_call).
        cfg = LIB.pack_attr("example::NormCfg", {"scale": -3.75, "shift": 0.5,
                                                 "mode": "ScaleShift"})
        self.assertTrue(any(ord(c) > 127 for c in cfg))
        x = torch.tensor([[3.0, 4.0], [1.0, -1.0]])
        rms = torch.sqrt((x * x).mean(dim=1, keepdim=True) + 1e-5)
        torch.testing.assert_close(ops.example.rms_norm(x, eps=1e-5, cfg=cfg),
                                   x / rms * -3.75 + 0.5)
        y = ops.example_lib.affine(torch.ones(2, 3), factor=1.5, label="héllo", offsets=[1, -2],
                                   flag=True, small=3)
        # 1.5 * 1 + len("héllo" in UTF-8) + (1 - 2) + 1 + 3
        self.assertEqual(y.tolist(), [[10.5] * 3] * 2)
        with self.assertRaises(SchemaError) as cm:
            ops.example.rms_norm(x, eps=1e-5, cfg="\u0100" * len(cfg))
        self.assertIn("example::rms_norm: attribute `cfg` is not a descriptor's packed bytes, "
                      "one character per byte (lib.pack_attr)", str(cm.exception))

    def test_the_running_libtorchs_abi_version_decides(self):
        # What libtorch reports is torch's own version: 2.9 or 2.15 in the test venvs.
        self.assertEqual(native.abi_version()[:2],
                         tuple(int(p) for p in torch.__version__.split(".")[:2]))
        for other in [(2, 8, 0), (2, 16, 0)]:
            with mock.patch.object(native, "abi_version", return_value=other):
                with self.assertRaises(ct.NativeUnavailable) as cm:
                    ct.TorchLibrary(os.environ["CUSTOMOP_KERNELS"], native=True)
            self.assertIn("torch >= 2.9, < 2.16", str(cm.exception))
            self.assertIn("(ABI %d.%d.0)" % other[:2], str(cm.exception))
            self.assertIn("native=False", str(cm.exception))

    def test_loading_again_with_the_other_path_is_refused(self):
        with self.assertRaises(ValueError):
            ct.load(os.environ["CUSTOMOP_KERNELS"], native=False)
        self.assertIs(ct.load(os.environ["CUSTOMOP_KERNELS"]), LIB)


class AllOrNothing(unittest.TestCase):
    def test_a_failed_registration_leaves_no_op_and_a_later_load_redoes_it(self):
        # In a process of its own: this one has loaded the library already.
        script = textwrap.dedent("""
            import os, torch
            import customop.torch as ct
            from customop.torch.native import NativeRegistrar

            def defined(name):
                try:
                    torch._C._dispatch_find_schema_or_throw(name, "")
                    return True
                except RuntimeError:
                    return False

            real = NativeRegistrar.register

            def failing(self, frag, op, name, define):
                if op.name == "example::rms_norm":
                    raise RuntimeError("injected failure")
                return real(self, frag, op, name, define)

            NativeRegistrar.register = failing
            try:
                ct.load(os.environ["CUSTOMOP_KERNELS"])
                raise SystemExit("load did not fail")
            except RuntimeError as e:
                assert "injected failure" in str(e), e
            names = ["example::checked_sqrt", "example::rms_norm", "example::_native_rms_norm"]
            print("defined after the failure:", [n for n in names if defined(n)])
            NativeRegistrar.register = real
            lib = ct.load(os.environ["CUSTOMOP_KERNELS"])
            print("defined after load:", [n for n in names if defined(n)])
            print("sqrt:", torch.ops.example.checked_sqrt(torch.tensor([4.0, 9.0])).tolist())
            cfg = lib.pack_attr("example::NormCfg", {"scale": 2.0, "shift": 0.5,
                                                     "mode": "ScaleShift"})
            y = torch.ops.example.rms_norm(torch.ones(2, 3), eps=0.0, cfg=cfg)
            print("rms_norm:", y.tolist())
        """)
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("defined after the failure: []", r.stdout)
        after = ["example::checked_sqrt", "example::rms_norm"] + (
            [] if DIRECT else ["example::_native_rms_norm"])
        self.assertIn("defined after load: %r" % after, r.stdout)
        self.assertIn("sqrt: [2.0, 3.0]", r.stdout)
        # rms_norm of ones is ones, scaled by 2 and shifted by 0.5 (NormCfg ScaleShift).
        self.assertIn("rms_norm: [[2.5, 2.5, 2.5], [2.5, 2.5, 2.5]]", r.stdout)

    def test_register_all_skips_the_ops_torch_has_already(self):
        """`customop_torch_register_all` in a process where the Python path defined every op:
        each is skipped, named, and the library's other work goes on (before, the first one
        failed the whole call); the ops still run, by the Python path's kernels."""
        script = textwrap.dedent("""
            import ctypes, os, torch
            import customop.torch as ct
            from customop.torch.native import libtorch_path

            path = os.environ["CUSTOMOP_KERNELS"]
            ct.load(path, native=False)
            so = ctypes.CDLL(path)
            so.customop_torch_register_all.restype = ctypes.c_int64
            message = ctypes.create_string_buffer(1 << 16)
            n = so.customop_torch_register_all(libtorch_path().encode(), message, len(message))
            text = message.value.decode()
            print("registered:", n)
            print("sqrt skipped:", "example::checked_sqrt: torch has it already" in text)
            print("sqrt:", torch.ops.example.checked_sqrt(torch.tensor([4.0, 9.0])).tolist())
        """)
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("registered: 0", r.stdout)
        self.assertIn("sqrt skipped: True", r.stdout)
        self.assertIn("sqrt: [2.0, 3.0]", r.stdout)


class Calls(unittest.TestCase):
    def test_non_contiguous_inputs_are_read_in_order(self):
        x = torch.tensor([[4.0, 9.0, 16.0], [1.0, 25.0, 36.0]])
        got = ops.example.checked_sqrt(x.t())
        torch.testing.assert_close(got, x.t().contiguous().sqrt(), rtol=0, atol=0)
        wide = torch.randn(8, 12)[:, ::3]
        torch.testing.assert_close(ops.example.rms_norm_t(wide, eps=1e-5),
                                   ops.example.rms_norm_t(wide.contiguous(), eps=1e-5))

    def test_an_attribute_declared_before_its_tensor(self):
        # torch's stack has the tensor first, then the attribute after `*`.
        self.assertEqual(str(ops.example.shift_by.default._schema),
                         "example::shift_by(Tensor x, *, int k) -> Tensor")
        x = torch.tensor([1.0, -2.0])
        torch.testing.assert_close(ops.example.shift_by(x, k=3), x + 3, rtol=0, atol=0)
        with torch.inference_mode():
            torch.testing.assert_close(ops.example.shift_by(x, k=-1), x - 1, rtol=0, atol=0)
        self.assertEqual(ops.example.shift_by(torch.empty(4, 2, device="meta"), k=1).shape,
                         (4, 2))

    def test_meta_kernel_computes_shapes_from_the_plan(self):
        x = torch.empty(7, 9, device="meta")
        y = ops.example.avg_pool(x, k=3, stride=2, pad=1)
        (spec,) = result_specs(LIB.library.op("example::avg_pool").schema,
                               {"x": (7, 9)}, {"k": 3, "stride": 2, "pad": 1})
        self.assertEqual(y.device.type, "meta")
        self.assertEqual(tuple(y.shape), tuple(spec.shape))
        # Independently: the pooling formula, and the CPU kernel's output on real data.
        self.assertEqual(tuple(y.shape), (7, (9 + 2 * 1 - 3) // 2 + 1))
        self.assertEqual(ops.example.avg_pool(torch.zeros(7, 9), k=3, stride=2, pad=1).shape,
                         y.shape)
        v, i = ops.example.top_k(torch.empty(10, device="meta"), k=4)
        self.assertEqual((tuple(v.shape), i.dtype), ((4,), torch.int32))
        cv, ci = ops.example.top_k(torch.arange(10.0), k=4)
        self.assertEqual((cv.shape, ci.dtype), (v.shape, i.dtype))
        with self.assertRaises(SchemaError) as cm:
            ops.example.avg_pool(torch.empty(7, 9, device="meta"), k=30, stride=2, pad=1)
        self.assertIn("`-19 / 2` divides a negative number", str(cm.exception))

    def test_errors_carry_the_code_under_inference_mode_too(self):
        with self.assertRaises(ct.KernelError) as cm:
            ops.example.checked_sqrt(torch.tensor([-1.0]))
        self.assertEqual(cm.exception.code, 3)
        # Under inference_mode no Python runs on the call: torch's RuntimeError carries it.
        with torch.inference_mode(), self.assertRaises(RuntimeError) as cm:
            ops.example.checked_sqrt(torch.tensor([-1.0]))
        self.assertEqual(str(cm.exception).splitlines()[0],
                         "customop[kernel:3] custom op `example::checked_sqrt` [kernel_error]: "
                         "negative input -1")

    def test_out_of_range_attribute_is_a_schema_error(self):
        with self.assertRaises(SchemaError) as cm:
            ops.example_lib.affine(torch.ones(1, 3), factor=1.5, label="l", offsets=[1],
                                   flag=True, small=300)
        self.assertIn("out of range", str(cm.exception))
        with self.assertRaises(SchemaError) as cm:
            ops.example_lib.affine(torch.ones(1, 3), factor=1.5, label="l", offsets=[1],
                                   flag=True, small=-1)
        self.assertIn("out of range", str(cm.exception))

    def test_opcheck_passes(self):
        x = torch.randn(4, 6)
        cases = [
            (ops.example.checked_sqrt.default, (x.abs() + 0.1,), {}),
            (ops.example.rms_norm_t.default, (x,), {"eps": 1e-5}),
            (ops.example.rms_norm.default, (x,), {"eps": 1e-5, "cfg": CFG}),
            (ops.example.avg_pool.default, (torch.randn(7, 9),), {"k": 3, "stride": 2,
                                                                      "pad": 1}),
            (ops.my_custom_library.custom_op_external.default, (BLOB, torch.ones(3, 3)), {}),
        ]
        for op, args, kwargs in cases:
            result = torch.library.opcheck(op, args, kwargs)
            self.assertEqual(set(result.values()), {"SUCCESS"}, (op, result))


class OnTorchsPool(unittest.TestCase):
    """customop::parallel under torch eager: torch's intra-op pool from 2.10 on (the stable
    ABI's torch_parallel_for), inline on 2.9."""

    def test_the_kernel_sees_torchs_pool(self):
        # The most threads one `pool_probe` call on an x of a given length saw: kept per
        # length, and this test's lengths (64, 8) are its own (the panic test's is 16), so it
        # reads only what its own calls saw.
        threads_seen = ctypes.CDLL(os.environ["CUSTOMOP_KERNELS"]).example_pool_probe_threads_seen
        threads_seen.argtypes = [ctypes.c_int64]
        threads_seen.restype = ctypes.c_int64
        before = torch.get_num_threads()
        try:
            torch.set_num_threads(2)
            got = int(ops.example.pool_probe(torch.zeros(64), panic_at=-1)[0])
            print("parallel: torch %s, the kernel sees %d threads; %d ran its ranges"
                  % (torch.__version__, got, threads_seen(64)))
            if DIRECT:
                self.assertEqual(got, 2, "torch's pool")
                self.assertEqual(threads_seen(64), 2)
                torch.set_num_threads(1)
                self.assertEqual(int(ops.example.pool_probe(torch.zeros(8), panic_at=-1)[0]), 1)
                self.assertEqual(threads_seen(8), 1)
            else:
                self.assertEqual(got, 1, "inline on torch 2.9")
                self.assertEqual(threads_seen(64), 1)
        finally:
            torch.set_num_threads(before)

    def test_row_parallel_kernel_equals_torchs_layer_norm(self):
        x = torch.randn(512, 1024)
        w, b = torch.rand(1024) + 0.5, torch.randn(1024)
        got = ops.example.layer_norm_par(x, w, b, eps=1e-5)
        torch.testing.assert_close(got, torch.nn.functional.layer_norm(x, (1024,), w, b, 1e-5),
                                   rtol=1e-5, atol=2e-5)
        torch.testing.assert_close(got, ops.example.layer_norm_serial(x, w, b, eps=1e-5),
                                   rtol=0, atol=0)

    def test_a_panic_in_a_range_is_the_calls_kernel_panic(self):
        with self.assertRaisesRegex(RuntimeError, r"\[kernel_panic\].*holds index 9"):
            ops.example.pool_probe(torch.zeros(16), panic_at=9)
        self.assertGreaterEqual(int(ops.example.pool_probe(torch.zeros(16), panic_at=-1)[0]), 1)


class WithoutPython(unittest.TestCase):
    def test_a_cpp_program_calls_an_op_by_name_through_the_dispatcher(self):
        """libtorch from the torch wheel, no Python: tests/torch/cpp/call_by_name.cpp (g++,
        which scripts/setup.sh installs; ~7 s to build)."""
        root = os.path.dirname(torch.__file__)
        source = os.path.join(os.path.dirname(__file__), "cpp", "call_by_name.cpp")
        with tempfile.TemporaryDirectory() as tmp:
            exe = os.path.join(tmp, "call_by_name")
            subprocess.run(["g++", CXX_STANDARD, "-O0", "-I" + os.path.join(root, "include"),
                            "-I" + os.path.join(root, "include", "torch", "csrc", "api",
                                                "include"),
                            source, "-o", exe, "-L" + os.path.join(root, "lib"), "-ltorch_cpu",
                            "-lc10", "-ltorch", "-Wl,-rpath," + os.path.join(root, "lib"),
                            "-ldl"], check=True)
            out = subprocess.run([exe, os.environ["CUSTOMOP_KERNELS"],
                                  os.path.join(root, "lib", "libtorch_cpu.so")],
                                 check=True, capture_output=True, text=True,
                                 env={"PATH": os.environ.get("PATH", "")}).stdout
        self.assertEqual(out.splitlines(), [
            "cpu: shape [2, 3], sum 12",
            "meta: shape [5, 7] on meta",
            "refused: customop[kernel:3] custom op `example::checked_sqrt` [kernel_error]: "
            "negative input -1",
        ])


class Ownership(unittest.TestCase):
    """Every handle a kernel receives or makes is released: memory stays flat over 100k calls,
    successful and failing."""

    def flat(self, call, n):
        for _ in range(2000):
            call()
        gc.collect()
        before = rss_mb()
        for _ in range(n):
            call()
        gc.collect()
        return rss_mb() - before

    def test_rss_stays_flat_over_100k_calls(self):
        x = torch.ones(3, 3)
        with torch.inference_mode():
            grown = self.flat(lambda: ops.my_custom_library.custom_op_external(BLOB, x),
                              100_000)
        # A leaked result (a 3-element tensor and its TensorImpl, ~300 bytes) per call would
        # be ~30 MB.
        self.assertLess(grown, 4.0)

    def test_rss_stays_flat_over_string_and_list_attributes(self):
        # From torch 2.10 on the kernel owns each call's string and list handles and deletes
        # them; on 2.9 the adapter's cached tensors carry them. A leaked string and list per
        # call (~100 bytes) would be ~20 MB over 200k calls.
        x = torch.ones(2, 3)
        with torch.inference_mode():
            grown = self.flat(lambda: ops.example_lib.affine(
                x, factor=1.5, label="héllo", offsets=[1, -2], flag=True, small=3), 200_000)
        self.assertLess(grown, 4.0)

    def test_rss_stays_flat_over_failing_calls(self):
        bad = torch.tensor([-1.0] * 64)
        wrong = torch.ones(3, 3, dtype=torch.float64)

        def fail():
            for call in (lambda: ops.example.checked_sqrt(bad),
                         lambda: ops.my_custom_library.custom_op_external(BLOB, wrong)):
                try:
                    call()
                except RuntimeError:
                    pass
                else:
                    raise AssertionError("the call did not fail")

        with torch.inference_mode():
            grown = self.flat(fail, 25_000)
        self.assertLess(grown, 4.0)


if __name__ == "__main__":
    unittest.main()
