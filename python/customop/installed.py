"""Kernel libraries shipped inside Python packages: a wheel made from a kernel crate (with
setuptools-rust, `binding = "NoBinding"`) holds the crate's cdylib next to a small module, and
that module finds its library here, so that `pip install my-kernels` then `import my_kernels`
needs no path and no environment variable. (Each shared library in the package's folder is
loaded to see whether it exports `customop_manifest`: a package ships its kernel library and
nothing else that should not be loaded.)"""

from __future__ import annotations

import ctypes
import importlib.util
import os

__all__ = ["NoKernelLibrary", "library_in"]


class NoKernelLibrary(ImportError):
    """An installed package holds no customop kernel library (or several)."""


def library_in(package: str) -> str:
    """The path of the customop kernel cdylib shipped in installed package `package`: the one
    shared library in the package's folder that exports `customop_manifest`."""
    spec = importlib.util.find_spec(package)
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    if not places:
        raise NoKernelLibrary("%s is not an installed package" % package)
    found = []
    for place in places:
        for name in sorted(os.listdir(place)):
            path = os.path.join(place, name)
            if not (name.endswith(".so") and os.path.isfile(path)):
                continue
            try:
                ctypes.CDLL(path).customop_manifest
            except (OSError, AttributeError):
                continue  # not a customop kernel library
            found.append(path)
    if len(found) != 1:
        raise NoKernelLibrary("package %s holds %s customop kernel library in %s (a shared "
                              "library exporting customop_manifest): %s"
                              % (package, "no" if not found else "more than one",
                                 ", ".join(places), ", ".join(found) or "none"))
    return found[0]
