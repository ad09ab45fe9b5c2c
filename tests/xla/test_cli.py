"""The `customop` command line (cli/): `customop run` runs the seed module the Rust builder
emits (inputs from .npy, the external packed from JSON or TOML by its descriptor) and
JAX-exported programs, and agrees with jaxlib running the same text with the same library;
`customop ops` lists the manifest; every failure exits with its kind's status and a message
naming what is wrong. (`customop plugin` and `customop cache`: tests/xla/test_cli_plugins.py.)

Run: CUSTOMOP_CLI=target/debug/customop CUSTOMOP_SEED_MODULE=target/seed.mlir \\
     CUSTOMOP_PJRT_CROSS_CHECK=target/debug/pjrt_run \\
     CUSTOMOP_KERNELS=target/kernels/debug/libcustomop_example_kernels.so PYTHONPATH=python \\
     target/xla-venv/bin/python -m unittest tests/xla/test_cli.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from customop.xla import Library, export

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CLI = os.environ["CUSTOMOP_CLI"]
SEED = os.environ["CUSTOMOP_SEED_MODULE"]
PATH = os.environ["CUSTOMOP_KERNELS"]
LIB = Library(PATH)
LIB.register()
X = (np.arange(9) * 0.5).astype(np.float32).reshape(3, 3)
BLOB = {"gain": 2.0, "bias": -1, "seed": 42, "tag": "customop seed!!!"}


def cli(*args, env=None):
    """Runs `customop ARGS`: (exit status, stdout, stderr)."""
    p = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True,
                       env={**os.environ, **(env or {})}, timeout=300)
    return p.returncode, p.stdout, p.stderr


def on_jaxlib(text, inputs):
    """The outputs of module `text` compiled and run by jaxlib's CPU client (the library's
    handlers registered by customop.xla, as the harness registers them)."""
    _, device, exe = harness.compile_text(text)
    outs = exe.execute([jax.device_put(np.asarray(a), device) for a in inputs])
    return [np.asarray(o) for o in outs]


class Run(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.x = os.path.join(self.dir, "x.npy")
        np.save(self.x, X)

    def file(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_seed(self, external, *more):
        return cli("run", SEED, "--ops", PATH, "--input", self.x, "--external",
                   "external=" + external, *more)

    def test_the_seed_module_matches_jaxlib(self):
        """The Rust builder's seed module, blob from JSON, then another from TOML: the same
        outputs as jaxlib's with the bytes customop's Python side packs (an independent
        packer), and [3, 5, -2] for the seed's blob."""
        with open(SEED) as f:
            text = f.read()
        out = os.path.join(self.dir, "out.npz")
        code, _, err = self.run_seed(self.file("blob.json", json.dumps(BLOB)), "--out", out)
        self.assertEqual(code, 0, err)
        got = np.load(out)["result0"]
        want = on_jaxlib(text, [X, np.frombuffer(LIB.pack("my_lib::Blob", BLOB), np.uint8)])
        np.testing.assert_array_equal(got, want[0])
        self.assertEqual(got.tolist(), [3, 5, -2])
        self.assertEqual(got.dtype, np.int8)
        other = {"gain": 0.5, "bias": 3, "seed": 7, "tag": "another blob, 16"}
        toml = self.file("blob.toml", 'gain = 0.5\nbias = 3\nseed = 7\ntag = "another blob, 16"\n')
        code, stdout, err = self.run_seed(toml)
        self.assertEqual(code, 0, err)
        want = on_jaxlib(text, [X, np.frombuffer(LIB.pack("my_lib::Blob", other), np.uint8)])
        self.assertEqual(stdout.strip(), "result[0]: 3xi8=[%s]" % ", ".join(
            str(v) for v in want[0].tolist()))
        self.assertNotEqual(want[0].tolist(), [3, 5, -2])

    def test_a_jax_exported_program(self):
        """A program exported from JAX (customop.xla.export: the external annotated by name):
        its text with the external from JSON; its serialization (`exported.serialize()`) with
        the packed bytes as a .npy input, by position, on the default plugin, equal to jaxlib,
        and the same file through the runner's Rust API (`Program::load`).
        On a plugin that reads older StableHLO (xla-cpu-pjrt 0.0.1 reads up to 1.13.3) jax
        0.12's serialization (1.18.0) is refused by name, both versions said, exit 6; exported
        for 1.13.3 (`stablehlo_version=`) it runs there too."""
        blob = np.frombuffer(LIB.pack("my_lib::Blob", BLOB), np.uint8)

        def f(x, external):
            return LIB.ops.my_custom_library.custom_op_external(external, jnp.sin(x) * 2) + 1

        exp = export(f, X, blob, lib=LIB)
        want = np.asarray(exp.call(X, blob))
        text = self.file("exp.mlir", exp.mlir_module())
        code, stdout, err = cli("run", text, "--ops", PATH, "--input", self.x, "--external",
                                "external=" + self.file("b.json", json.dumps(BLOB)))
        self.assertEqual(code, 0, err)
        self.assertIn("[%s]" % ", ".join(str(v) for v in want.tolist()), stdout)
        serialized = os.path.join(self.dir, "exp.bin")
        with open(serialized, "wb") as f_:
            f_.write(exp.serialize())
        blob_npy = os.path.join(self.dir, "blob.npy")
        np.save(blob_npy, blob)
        out = os.path.join(self.dir, "y.npy")
        code, _, err = cli("run", serialized, "--ops", PATH, "--input", self.x, "--input",
                           blob_npy, "--out", out)
        self.assertEqual(code, 0, err)
        np.testing.assert_array_equal(np.load(out), want)
        # From Rust: the same file through the runner's API (`Program::load` in
        # examples/src/bin/pjrt_run.rs, on the default plugin).
        request = {"library": PATH, "program_hex": bytes(exp.serialize()).hex(),
                   "inputs": [{"dtype": a.dtype.name, "shape": list(a.shape),
                               "hex": a.tobytes().hex()} for a in (X, blob)]}
        r = subprocess.run([os.environ["CUSTOMOP_PJRT_CROSS_CHECK"]], input=json.dumps(request),
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        answer = json.loads(r.stdout)
        self.assertTrue(answer["ok"], answer)
        [y] = answer["outputs"]
        np.testing.assert_array_equal(
            np.frombuffer(bytes.fromhex(y["hex"]), y["dtype"]).reshape(y["shape"]), want)
        old = "xla-cpu-pjrt==0.0.1"
        code, _, err = cli("run", serialized, "--ops", PATH, "--input", self.x, "--input",
                           blob_npy, "--out", out, "--plugin", old)
        if jax.__version__.startswith("0.10"):
            self.assertEqual(code, 0, err)
            np.testing.assert_array_equal(np.load(out), want)
        else:
            self.assertEqual(code, 6, err)
            self.assertIn("the program is StableHLO 1.18.0 (a portable artifact), but the plugin "
                          "xla-cpu-pjrt==0.0.1 reads StableHLO 0.9.0 to 1.13.3", err)
        older = os.path.join(self.dir, "exp-1.13.3.bin")
        with open(older, "wb") as f_:
            f_.write(export(f, X, blob, lib=LIB, stablehlo_version="1.13.3").serialize())
        for plugin in [old, "fastatomstruct-xla-cpu", "lammps-jax-pjrt-cpu"]:
            os.remove(out)
            code, _, err = cli("run", older, "--ops", PATH, "--input", self.x, "--input",
                               blob_npy, "--out", out, "--plugin", plugin)
            self.assertEqual(code, 0, plugin + ": " + err)
            np.testing.assert_array_equal(np.load(out), want)
        code, _, err = cli("run", serialized, "--ops", PATH, "--input", self.x, "--external",
                           "external=" + self.file("c.json", json.dumps(BLOB)))
        self.assertEqual(code, 3, err)
        self.assertIn("externals are given by name, which only a program's text says", err)
        # By position too (`N=FILE`), in any order; a gap is named.
        code, _, err = cli("run", serialized, "--ops", PATH, "--input", "1=" + blob_npy,
                           "--input", "0=" + self.x, "--out", out)
        self.assertEqual(code, 0, err)
        np.testing.assert_array_equal(np.load(out), want)
        code, _, err = cli("run", serialized, "--ops", PATH, "--input", "1=" + blob_npy)
        self.assertEqual(code, 3, err)
        self.assertIn("argument 0 is not given (a later one is): --input 0=FILE.npy", err)

    def test_a_missing_handler_is_named_first_not_the_version(self):
        """An artifact of a newer StableHLO than the plugin's (1.15.0 on xla-cpu-pjrt 0.0.1,
        which reads up to 1.13.3, but has none of its newer ops), run without its library: the
        missing target is named with the fix (exit 4), not the version; with `--ops` it runs. A
        refusal is one line, customop's, last; the plugin's diagnostic only with `-v`."""
        f = lambda x: LIB.ops.example.rms_norm_t(x, eps=1e-5)  # noqa: E731
        newer = os.path.join(self.dir, "rms-1.15.0.bin")
        with open(newer, "wb") as f_:
            f_.write(export(f, X, lib=LIB, stablehlo_version="1.15.0").serialize())
        args = ["run", newer, "--input", self.x, "--plugin", "xla-cpu-pjrt==0.0.1"]
        code, _, err = cli(*args)
        self.assertEqual(code, 4, err)
        last = err.strip().splitlines()[-1]
        self.assertTrue(last.startswith(
            "customop: library error: no handler is registered for `example.rms_norm_t`, which "
            "the program calls: register the kernel library that has it before compiling "
            "(`customop run --ops LIB`"), last)
        self.assertNotIn("StableHLO", err)
        code, stdout, err = cli(*args, "--ops", PATH)
        self.assertEqual(code, 0, err)
        self.assertTrue(stdout.startswith("result[0]: 3x3xf32="), stdout)
        # Where the version is the cause (jax's own serialization, whose ops that plugin does
        # not know): said in one line, no line of the plugin's (nor its source paths) before
        # it but with -v.
        current = os.path.join(self.dir, "rms.bin")
        with open(current, "wb") as f_:
            f_.write(export(f, X, lib=LIB).serialize())
        if jax.__version__.startswith("0.10"):
            return  # its serialization (1.13.x) is one that plugin reads
        code, _, err = cli("run", current, "--ops", PATH, "--input", self.x, "--plugin",
                           "xla-cpu-pjrt==0.0.1")
        self.assertEqual(code, 6, err)
        mine = [line for line in err.splitlines() if not line.startswith(("WARNING:", "I0000"))]
        self.assertEqual(len(mine), 1, err)
        self.assertRegex(mine[0], r"^customop: program error: the program is StableHLO 1\.\d+\.\d "
                         r"\(a portable artifact\), but the plugin xla-cpu-pjrt==0\.0\.1 reads "
                         r"StableHLO 0\.9\.0 to 1\.13\.3: .* \(`-v` prints the plugin's "
                         r"diagnostic: \d+ lines\)$")
        code, _, err = cli("-v", "run", current, "--ops", PATH, "--input", self.x, "--plugin",
                           "xla-cpu-pjrt==0.0.1")
        self.assertEqual(code, 6, err)
        self.assertIn("Failed to parse using StableHLO v1.13.3", err)
        self.assertTrue(err.strip().splitlines()[-1].startswith(
            "customop: program error: the program is StableHLO"), err)

    def test_a_kernels_refusal_exits_7(self):
        def f(x):
            return LIB.ops.example.checked_sqrt(x)

        exp = export(f, np.ones(3, np.float32), lib=LIB)
        text = self.file("sqrt.mlir", exp.mlir_module())
        bad = os.path.join(self.dir, "neg.npy")
        np.save(bad, np.array([1.0, -4.0, 9.0], np.float32))
        code, _, err = cli("run", text, "--ops", PATH, "--input", bad)
        self.assertEqual(code, 7, err)
        self.assertIn("customop: run error:", err)
        self.assertIn("checked_sqrt", err)
        good = os.path.join(self.dir, "pos.npy")
        np.save(good, np.array([1.0, 4.0, 9.0], np.float32))
        code, stdout, err = cli("run", text, "--ops", PATH, "--input", good)
        self.assertEqual((code, stdout.strip()), (0, "result[0]: 3xf32=[1, 2, 3]"), err)

    def test_each_mistake_is_named_with_its_status(self):
        blob = self.file("b.json", json.dumps(BLOB))
        f64 = os.path.join(self.dir, "x64.npy")
        np.save(f64, X.astype(np.float64))
        fortran = os.path.join(self.dir, "xf.npy")
        np.save(fortran, np.asfortranarray(X.T))
        cases = [
            (["run", SEED, "--ops", PATH, "--input", self.x, "--external",
              "external=" + self.file("m.json", json.dumps({**BLOB, "seed": None}))],
             3, "descriptor `my_lib::Blob`, field `seed`: expected an integer (u64), got null"),
            (["run", SEED, "--ops", PATH, "--input", self.x, "--external",
              "external=" + self.file("u.json", json.dumps({**BLOB, "gian": 1}))],
             3, "descriptor `my_lib::Blob` has no field `gian` (its fields: gain, bias, seed, tag)"),
            (["run", SEED, "--ops", PATH, "--input", self.x, "--external",
              "external=" + self.file("t.json", json.dumps({**BLOB, "tag": "short"}))],
             3, "field `tag`: a [u8; 16] takes exactly 16 bytes, got 5"),
            (["run", SEED, "--ops", PATH, "--input", self.x, "--external", "blob=" + blob],
             3, "the program has no external `blob` (its externals: external)"),
            (["run", SEED, "--ops", PATH, "--input", self.x],
             3, "external `external` (my_lib::Blob) is not given"),
            (["run", SEED, "--ops", PATH, "--input", f64, "--external", "external=" + blob],
             3, "is f64 [3, 3]; argument 0 takes f32 [3, 3]"),
            (["run", SEED, "--ops", PATH, "--input", fortran, "--external", "external=" + blob],
             3, "Fortran (column-major) order"),
            (["run", SEED, "--external", "external=" + blob, "--input", self.x],
             3, "a `my_lib::Blob`, which no library given with --ops declares"),
            (["run", SEED, "--ops", "/lib/x86_64-linux-gnu/libm.so.6", "--input", self.x],
             4, "not a customop kernel library"),
            (["run", SEED, "--ops", os.path.join(self.dir, "none.so"), "--input", self.x],
             4, "none.so: no such file"),
            (["ops", os.path.join(self.dir, "none.so")], 4, "none.so: no such file"),
            (["run", self.file("bad.mlir", "module { func.func @main( }"), "--ops", PATH],
             6, "customop: program error"),
            (["run", SEED, "--ops", PATH, "--input", self.x, "--external", "external=" + blob,
              "--out", os.path.join(self.dir, "no", "such", "a.npy")], 8, "customop: output error"),
            (["run", SEED, "--ops", PATH, "--input", self.x, "--external", "external=" + blob,
              "--external", "external=" + blob], 3, "external `external` is given twice"),
            (["ops"], 2, "Usage"),
        ]
        for args, status, message in cases:
            with self.subTest(args=args[-1]):
                code, _, err = cli(*args)
                self.assertEqual(code, status, err)
                self.assertIn(message, err)

    def test_outputs_of_every_kind_print_as_values(self):
        """fp8, packed 4-bit and complex outputs print their values (they printed as hex)."""
        def f(x, xf, c):
            return (xf.astype(ml_dtypes.float8_e4m3fn), LIB.ops.example.pack_i4(x),
                    LIB.ops.example.round_f4(x.astype(np.float32)), c)

        x = np.array([[-3, 1, 7, 0]], np.int32)
        xf = np.array([0.5, -448.0, np.nan], np.float32)
        c = np.array([1 - 2j, 0.5j], np.complex64)
        exp = export(f, x, xf, c, lib=LIB)
        text = self.file("kinds.mlir", exp.mlir_module())
        files = []
        for k, a in enumerate((x, xf, c)):
            files += ["--input", os.path.join(self.dir, "in%d.npy" % k)]
            np.save(files[-1], a)
        code, stdout, err = cli("run", text, "--ops", PATH, *files)
        self.assertEqual(code, 0, err)
        self.assertEqual(stdout.strip().splitlines(), [
            "result[0]: 3xf8E4M3FN=[0.5, -448, NaN]",
            "result[1]: 1x4xi4=[-3, 1, 7, 0]",
            "result[2]: 1x4xf4E2M1FN=[-3, 1, 6, 0]",
            "result[3]: 2xcomplex<f32>=[1-2i, 0+0.5i]",
        ])

    def test_outputs_to_a_folder_or_one_npy(self):
        blob = self.file("b.json", json.dumps(BLOB))
        folder = os.path.join(self.dir, "outs")
        self.assertEqual(self.run_seed(blob, "--out", folder)[0], 0)
        self.assertEqual(np.load(os.path.join(folder, "result0.npy")).tolist(), [3, 5, -2])
        one = os.path.join(self.dir, "y.npy")
        self.assertEqual(self.run_seed(blob, "--out", one)[0], 0)
        self.assertEqual(np.load(one).tolist(), [3, 5, -2])


class Ops(unittest.TestCase):
    def test_the_ops_and_descriptors_of_the_manifest(self):
        code, stdout, err = cli("ops", PATH, "--json")
        self.assertEqual(code, 0, err)
        got = json.loads(stdout)
        self.assertEqual(sorted(o["name"] for o in got["ops"]),
                         sorted(e.name for e in LIB.entries()))
        by_name = {o["name"]: o for o in got["ops"]}
        for e in LIB.entries():
            self.assertEqual(by_name[e.name]["schema"], e.schema_string)
        blob = [d for d in got["descriptors"] if d["name"] == "my_lib::Blob"]
        self.assertEqual(blob[0]["packed_size"], 56)
        self.assertEqual(blob[0]["fingerprint"], LIB.layout("my_lib::Blob").fingerprint_hex)
        code, table, err = cli("ops", PATH)
        self.assertEqual(code, 0, err)
        self.assertIn("my_custom_library::custom_op_external(Tensor blob, Tensor x) -> Tensor\n"
                      "      target my_custom_library.custom_op_external\n"
                      "      external blob: my_lib::Blob", table)
        self.assertIn("  my_lib::Blob (56 bytes packed, fingerprint ", table)
        self.assertIn("      @8     seed: u64\n      @16    tag: [u8; 16]", table)


def _npy(a):
    path = tempfile.mktemp(suffix=".npy")
    np.save(path, a)
    return path


def _json(v):
    path = tempfile.mktemp(suffix=".json")
    with open(path, "w") as f:
        json.dump(v, f)
    return path


if __name__ == "__main__":
    unittest.main()
