"""The Python package in layers (how-it-works.md): the core imports neither jax nor torch, the
front ends `customop.xla` and `customop.torch` import only the core and never each other (the
bridge `customop.torchax` imports both, and nothing imports it), no
module imports one that imports it back (directly or through others, counting imports inside
functions and under TYPE_CHECKING), and no module is over 400 lines. Read from the source
(every `import` statement, wherever it is), and checked by importing the core in a process
where jax and torch cannot be imported. Also: the eager handlers refuse a read-only result."""

import ast
import os
import subprocess
import sys
import textwrap
import unittest
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "customop"
KERNELS = os.environ.get("CUSTOMOP_KERNELS")
FRONT_ENDS = ("customop.xla", "customop.torch")
# Bridges between the front ends: they may import both; nothing imports them.
BRIDGES = ("customop.torchax",)
# Third-party packages each layer may not import.
FORBIDDEN = {
    "core": {"jax", "jaxlib", "torch", "torch_xla", "torchax"},
    "customop.xla": {"torch", "torch_xla", "torchax"},
    "customop.torch": {"torchax"},
    "bridge": set(),
}
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Every module `path` imports, anywhere in the file, relative imports resolved: for
    `from X import a`, both X and X.a (a may be a submodule)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update("%s.%s" % (target, a.name) for a in node.names)
    return out


def layer(name: str) -> str:
    if name in BRIDGES:
        return "bridge"
    return next((f for f in FRONT_ENDS if name == f or name.startswith(f + ".")), "core")


class Layers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
        cls.graph = {m: {i for i in imports(p) if i in cls.files and i != m}
                     for m, p in cls.files.items()}
        cls.external = {m: {i.split(".")[0] for i in imports(p) if not i.startswith("customop")}
                        for m, p in cls.files.items()}

    def test_the_package_has_its_layers(self):
        self.assertIn("customop.xla.library", self.files)
        self.assertIn("customop.torch.library", self.files)
        self.assertIn("customop.library", self.files)
        # The reader sees imports inside functions and under TYPE_CHECKING too.
        self.assertIn("jax", self.external["customop.xla.ops"])
        self.assertIn("customop.library", self.graph["customop.xla.ops"])

    def test_no_module_imports_one_that_imports_it_back(self):
        state: dict[str, int] = {}

        def visit(m: str, path: list[str]) -> None:
            state[m] = 1
            for n in sorted(self.graph[m]):
                if state.get(n) == 1:
                    cycle = path[path.index(n):] + [n] if n in path else [m, n]
                    self.fail("import circle: %s" % " -> ".join(cycle))
                if n not in state:
                    visit(n, path + [n])
            state[m] = 2

        for m in sorted(self.graph):
            if m not in state:
                visit(m, [m])

    def test_each_layer_imports_only_what_it_may(self):
        for m, deps in sorted(self.graph.items()):
            own = layer(m)
            for d in deps:
                other = layer(d)
                if other != "core" and other != own and own != "bridge":
                    self.fail("%s (%s) imports %s (%s)" % (m, own, d, other))
            bad = self.external[m] & FORBIDDEN[own]
            self.assertFalse(bad, "%s (%s) imports %s" % (m, own, ", ".join(sorted(bad))))

    def test_no_module_is_over_400_lines(self):
        for m, p in sorted(self.files.items()):
            n = len(p.read_text().splitlines())
            self.assertLessEqual(n, MAX_LINES, "%s has %d lines" % (m, n))

    def test_the_core_runs_where_jax_and_torch_cannot_be_imported(self):
        self.assertTrue(KERNELS, "CUSTOMOP_KERNELS names the example kernels cdylib")
        core = sorted(m for m in self.files if layer(m) == "core" and m != "customop")
        self.assertIn("customop.torchax", self.files)
        script = textwrap.dedent("""
            import importlib, sys
            for blocked in ("jax", "jaxlib", "torch", "torch_xla"):
                sys.modules[blocked] = None          # `import jax` raises ImportError
            for m in %r:
                importlib.import_module(m)
            import numpy as np
            from customop.library import KernelLibrary
            from customop.eager import Handlers
            run = Handlers(KernelLibrary(%r))
            y = np.empty(2, np.float32)
            run.call_numpy("example::checked_sqrt", [np.array([4.0, 9.0], np.float32)], [y])
            assert y.tolist() == [2.0, 3.0], y
            loaded = sorted(k for k in sys.modules if k.split(".")[0] in ("jax", "torch")
                            and sys.modules[k] is not None)
            print("loaded:", loaded)
        """) % (core, KERNELS)
        env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent))
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("loaded: []", r.stdout)


class ReadOnlyResults(unittest.TestCase):
    def test_call_numpy_refuses_a_read_only_result_and_leaves_it_unchanged(self):
        import numpy as np

        sys.path.insert(0, str(PACKAGE.parent))
        from customop.eager import Handlers
        from customop.library import KernelLibrary

        self.assertTrue(KERNELS, "CUSTOMOP_KERNELS names the example kernels cdylib")
        run = Handlers(KernelLibrary(KERNELS))
        data = bytes(8)
        y = np.frombuffer(data, np.float32)
        with self.assertRaises(ValueError) as cm:
            run.call_numpy("example::checked_sqrt", [np.array([4.0, 9.0], np.float32)], [y])
        self.assertIn("result 0 is a read-only array", str(cm.exception))
        self.assertEqual(data, bytes(8))
        # A writeable array of the same shape is written.
        z = np.frombuffer(bytearray(8), np.float32)
        run.call_numpy("example::checked_sqrt", [np.array([4.0, 9.0], np.float32)], [z])
        self.assertEqual(z.tolist(), [2.0, 3.0])


if __name__ == "__main__":
    unittest.main()
