"""The book's version matrix (book/src/reference/versions.md) against what sets the versions:
python/pyproject.toml (requires-python and the extras' ranges), the pinned requirements files of
the test venvs, the known PJRT plugins (runtime/src/pjrt/plugins.txt, read by the runtime and
scripts/setup.sh), the workspace's
rust-version, the native torch kernels' range (runtime/src/torch/api.rs and
python/customop/torch/native.py, which must agree with the torch extra) and the XLA FFI tables
the runtime reads (runtime/src/ffi/table.rs). Read as text: no jax or torch is imported."""

import re
import tomllib
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book" / "src" / "reference" / "versions.md"


def read(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def table() -> dict[str, list[str]]:
    """The rows of the table whose header starts `| component |`, by their first cell."""
    lines = BOOK.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| component |"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells
    return rows


def pins(path: str) -> dict[str, str]:
    """`name==version` lines of a requirements file, names lower-cased with `_` as `-`."""
    out = {}
    for line in read(path).splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)", line)
        if m:
            out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def spec(requirement: str) -> tuple[str, str]:
    """`jax>=0.10,<0.13` -> ("jax", ">= 0.10, < 0.13"): the name and its bounds as the book
    writes them."""
    m = re.match(r"^([A-Za-z0-9_.-]+)(.*)$", requirement)
    assert m, requirement
    bounds = [re.sub(r"^(>=|<=|==|<|>)\s*", r"\1 ", b.strip()) for b in m.group(2).split(",")]
    return m.group(1).lower().replace("_", "-"), ", ".join(b for b in bounds if b)


def extra(name: str) -> dict[str, str]:
    """The bounds of each package of extra `name` of python/pyproject.toml."""
    project = tomllib.loads(read("python/pyproject.toml"))["project"]
    return dict(spec(r) for r in project["optional-dependencies"][name])


def native_torch(text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """`NATIVE_TORCH = ((2, 9), (2, 16))` (Rust or Python) as numbers."""
    m = re.search(r"NATIVE_TORCH\s*(?::[^=]*)?=\s*\(\((\d+),\s*(\d+)\),\s*\((\d+),\s*(\d+)\)\)",
                  text)
    assert m, "no NATIVE_TORCH"
    a, b, c, d = map(int, m.groups())
    return (a, b), (c, d)


class BookVersions(unittest.TestCase):
    def setUp(self) -> None:
        self.rows = table()

    def row(self, name: str) -> list[str]:
        if name not in self.rows:
            self.fail("the version table has no `%s` row (it has: %s)"
                      % (name, ", ".join(self.rows)))
        return self.rows[name]

    def versions_tested(self, name: str) -> list[str]:
        return [v.strip() for v in re.sub(r"[a-z_]+ ", "", self.row(name)[2]).split(",")]

    def test_python(self) -> None:
        project = tomllib.loads(read("python/pyproject.toml"))["project"]
        self.assertEqual(self.row("Python")[1], spec("python" + project["requires-python"])[1])

    def test_rust(self) -> None:
        m = re.search(r'^rust-version\s*=\s*"([^"]+)"', read("Cargo.toml"), re.M)
        self.assertIsNotNone(m)
        self.assertEqual(self.row("Rust")[1], ">= " + m.group(1))

    def test_jax(self) -> None:
        bounds = extra("jax")
        self.assertEqual(bounds["jax"], bounds["jaxlib"])
        self.assertEqual(self.row("jax, jaxlib")[1], bounds["jax"])
        oldest = pins("tests/xla/requirements-oldest-jax.txt")
        newest = pins("tests/xla/requirements.txt")
        self.assertEqual(oldest["jax"], oldest["jaxlib"])
        self.assertEqual(newest["jax"], newest["jaxlib"])
        self.assertEqual(self.versions_tested("jax, jaxlib"), [oldest["jax"], newest["jax"]])
        # The torch venv runs the same jax as the main one.
        self.assertEqual(pins("tests/torch/requirements-newest.txt")["jax"], newest["jax"])

    def test_torch_is_bounded_by_the_native_kernels(self) -> None:
        """The torch extra's bounds are the native kernels' range, in Rust and in Python, and
        the book's."""
        rust = native_torch(read("runtime/src/torch/api.rs"))
        python = native_torch(read("python/customop/torch/native.py"))
        self.assertEqual(rust, python)
        (lo_major, lo_minor), (hi_major, hi_minor) = rust
        want = ">= %d.%d, < %d.%d" % (lo_major, lo_minor, hi_major, hi_minor)
        self.assertEqual(extra("torch")["torch"], want)
        self.assertEqual(self.row("torch")[1], want)
        oldest = pins("tests/xla/requirements.txt")["torch"]
        newest = pins("tests/torch/requirements-newest.txt")["torch"]
        self.assertEqual(self.versions_tested("torch"), [oldest, newest])
        # One row per tested torch, tested with that version.
        self.assertEqual(self.row("torch " + oldest.rsplit(".", 1)[0])[2], oldest)
        self.assertEqual(self.row("torch " + newest.rsplit(".", 1)[0])[2], newest)
        # Both ends of the range are tested.
        self.assertEqual(tuple(map(int, oldest.split(".")[:2])), rust[0])
        self.assertEqual(tuple(map(int, newest.split(".")[:2])), (hi_major, hi_minor - 1))

    def test_torch_xla(self) -> None:
        bounds = extra("torch-xla")
        self.assertEqual(self.row("torch_xla")[1], bounds["torch-xla"])
        self.assertEqual(bounds["torch"], bounds["torch-xla"])
        self.assertEqual(bounds["jax"], extra("torchax")["jax"])
        self.assertEqual(self.versions_tested("torch_xla"), [pins("tests/xla/requirements.txt")["torch-xla"]])

    def test_torchax(self) -> None:
        self.assertEqual(self.row("torchax")[1], extra("torchax")["torchax"])
        self.assertEqual(self.versions_tested("torchax"),
                         [pins("tests/torch/requirements-newest.txt")["torchax"]])

    def test_numpy_and_ml_dtypes(self) -> None:
        project = tomllib.loads(read("python/pyproject.toml"))["project"]
        numpy = dict(spec(r) for r in project["dependencies"])["numpy"]
        self.assertEqual(self.row("numpy, ml_dtypes")[1], "numpy " + numpy)
        newest = pins("tests/xla/requirements.txt")
        self.assertEqual(self.row("numpy, ml_dtypes")[2],
                         "numpy %s, ml_dtypes %s" % (newest["numpy"], newest["ml-dtypes"]))

    def test_pjrt_plugins(self) -> None:
        api = re.search(r"API_VERSIONS: \(i32, core::ops::RangeInclusive<i32>\) = "
                        r"\((\d+), (\d+)\.\.=(\d+)\);", read("runtime/src/pjrt/plugin.rs"))
        self.assertIsNotNone(api)
        major, lo, hi = api.groups()
        row = self.row("PJRT plugins")
        self.assertEqual(row[1], "PJRT C API %s.%s to %s.%s" % (major, lo, major, hi))
        known = [line.split() for line in read("runtime/src/pjrt/plugins.txt").splitlines()
                 if line.strip() and not line.startswith("#")]
        self.assertEqual(row[2], ", ".join("%s %s" % (k[0], k[1]) for k in known))
        for i, (name, version, pjrt, stablehlo, ffi, *_rest) in enumerate(known):
            r = self.row(name)
            self.assertEqual(r[2], version)
            low, high = stablehlo.split("-")
            for part in ("PJRT %s" % pjrt, "StableHLO %s to %s" % (low, high),
                         "XLA FFI %s" % ffi):
                self.assertIn(part, r[3], name)
            self.assertEqual(r[3].startswith("the default plugin"), i == 0, name)

    def test_mlir(self) -> None:
        m = re.search(r"libmlir-(\d+)-dev", read("scripts/setup.sh"))
        self.assertIsNotNone(m)
        self.assertEqual(self.row("MLIR, LLVM")[1], m.group(1))

    def test_ffi_tables(self) -> None:
        m = re.search(r"KNOWN_MINORS: core::ops::RangeInclusive<i32> = (\d+)..=(\d+);",
                      read("runtime/src/ffi/table.rs"))
        self.assertIsNotNone(m)
        self.assertEqual(self.row("XLA FFI API")[1], "0.%s to 0.%s" % m.groups())


if __name__ == "__main__":
    unittest.main()
