"""The book's Python API reference (book/src/reference/python-api.md) against the package: under
each `## `customop.x`` heading, every name of that module's `__all__` is listed (the first
column of its table), and every name listed exists (`Library.call`: an attribute of a listed
class); every exception of the exceptions table exists by its full name, with the base
classes and the other names the table gives it, and every exception a module exports is there.
A module that cannot be imported here (customop.torch and customop.torchax need torch) is
compared with its source's `__all__`, read with ast, and its listed names with the names the
source defines or imports.

Run with a Python that has jax and torch (the xla venv), PYTHONPATH=python."""

import ast
import importlib
import re
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "src" / "reference" / "python-api.md"
PACKAGE = ROOT / "python"
# The modules whose `__all__` the page must cover, whatever else it lists.
REQUIRED = ("customop", "customop.xla", "customop.torch", "customop.manifest",
            "customop.descriptors", "customop.eager", "customop.torchax", "customop.installed")
HEADING = re.compile(r"^## `(customop(?:\.[a-z_]+)*)`\s*$")
ROW = re.compile(r"^\| `([A-Za-z_][A-Za-z0-9_.]*)` \|")


def sections(text):
    """{module: [names in the first column of its tables]}, and the exceptions table's names."""
    out, exceptions, current = {}, {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            m = HEADING.match(line)
            current = m.group(1) if m else line[3:].strip()
            if m:
                out.setdefault(current, [])
            continue
        row = ROW.match(line)
        if row is None:
            continue
        if current == "Exceptions":
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            exceptions[row.group(1)] = [re.findall(r"`([^`]+)`", c) for c in cells[1:]]
        elif current in out:
            out[current].append(row.group(1))
    return out, exceptions


def source_of(module):
    path = PACKAGE.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def source_names(module):
    """(`__all__`, every name bound at the top level) of a module's source, without importing."""
    tree = ast.parse(source_of(module).read_text(encoding="utf-8"))
    declared, bound = [], set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    bound.add(t.id)
                    if t.id == "__all__":
                        declared = list(ast.literal_eval(node.value))
    return declared, bound


def imported(module):
    """The module, or None when it cannot be imported in this Python (torch missing)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def resolve(root, dotted):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


class PythonApiPage(unittest.TestCase):
    def setUp(self):
        self.listed, self.exceptions = sections(PAGE.read_text(encoding="utf-8"))

    def test_every_module_has_a_section(self):
        for module in REQUIRED:
            self.assertIn(module, self.listed, "python-api.md has no `## `%s`` section" % module)

    def test_every_public_name_is_listed(self):
        for module, names in self.listed.items():
            with self.subTest(module=module):
                mod = imported(module)
                public = (list(getattr(mod, "__all__", [])) if mod is not None
                          else source_names(module)[0])
                missing = [n for n in public if n not in names]
                self.assertEqual(missing, [], "python-api.md lists no %s under `%s`"
                                 % (", ".join(missing), module))

    def test_every_listed_name_exists(self):
        for module, names in self.listed.items():
            mod = imported(module)
            bound = source_names(module)[1] if mod is None else None
            for name in names:
                with self.subTest(name="%s.%s" % (module, name)):
                    if mod is not None:
                        try:
                            resolve(mod, name)
                        except AttributeError:
                            self.fail("python-api.md lists `%s` under `%s`, which has no such "
                                      "name" % (name, module))
                    else:
                        self.assertIn(name.split(".")[0], bound,
                                      "python-api.md lists `%s` under `%s`, whose source has "
                                      "no such name" % (name, module))

    def test_every_exception_exists_with_its_bases(self):
        """Each exception of the table exists by its full name, its base classes are the
        second column, and each name of the third column is the same class."""
        self.assertTrue(self.exceptions, "python-api.md has no exceptions table")
        for dotted, (bases, aliases) in self.exceptions.items():
            with self.subTest(exception=dotted):
                module, _, name = dotted.rpartition(".")
                mod = imported(module)
                if mod is None:
                    self.assertIn(name, source_names(module)[1])
                    continue
                cls = getattr(mod, name, None)
                self.assertTrue(isinstance(cls, type) and issubclass(cls, Exception),
                                "python-api.md's exception `%s` is not one" % dotted)
                self.assertEqual([b.__name__ for b in cls.__bases__], bases,
                                 "python-api.md gives `%s` other base classes" % dotted)
                for alias in aliases:
                    where, _, short = alias.rpartition(".")
                    other = imported(where)
                    if other is not None:
                        self.assertIs(getattr(other, short, None), cls,
                                      "python-api.md says `%s` is `%s`" % (alias, dotted))

    def test_every_exception_of_a_module_is_in_the_table(self):
        """An exception class a module exports is in the exceptions table, under that module's
        name or another module's that exports the same class."""
        tabled = set()
        for dotted in self.exceptions:
            module, _, name = dotted.rpartition(".")
            mod = imported(module)
            if mod is not None and hasattr(mod, name):
                tabled.add(getattr(mod, name))
        for module in self.listed:
            mod = imported(module)
            if mod is None:
                continue
            for name in getattr(mod, "__all__", []):
                obj = getattr(mod, name)
                if isinstance(obj, type) and issubclass(obj, Exception):
                    with self.subTest(exception="%s.%s" % (module, name)):
                        self.assertIn(obj, tabled, "python-api.md's exceptions table lacks "
                                      "%s.%s" % (module, name))


if __name__ == "__main__":
    unittest.main()
