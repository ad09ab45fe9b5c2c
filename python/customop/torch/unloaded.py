"""What `torch.ops.<ns>.<op>` says of an op torch does not have, once `customop.torch` is
imported: torch's `AttributeError` ("'_OpNamespace' 'ns' object has no attribute 'op'") as an
`OpNotLoadedError` (an `AttributeError` still, so `hasattr` and `getattr(..., default)` work as
before), whose message says, in customop's words, to load the kernel library that has the op
first, and which libraries this process has loaded."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["OpNotLoadedError", "install"]


class OpNotLoadedError(AttributeError):
    """`torch.ops.<ns>.<op>` names an op torch does not have: its customop kernel library is
    not loaded (`customop.torch.load(path)`), or has no such op."""

    def __init__(self, namespace: str, op: str, loaded: list[Any]) -> None:
        super().__init__(namespace, op)
        self.namespace, self.op, self._loaded = namespace, op, loaded

    def __str__(self) -> str:
        # Made when read: torch's own lookups meet (and swallow) missing ops often.
        name = "%s::%s" % (self.namespace, self.op)
        same = [lib for lib in self._loaded
                if any(e.name.startswith(self.namespace + "::") for e in lib.library.entries())]
        if same:
            have = sorted(e.name for lib in same for e in lib.library.entries()
                          if e.name.startswith(self.namespace + "::"))
            return ("torch has no op `%s`: the customop kernel library loaded here with "
                    "namespace `%s` (%s) has %s, and no `%s`; is it another library's, to load "
                    "with customop.torch.load(path)?"
                    % (name, self.namespace, ", ".join(lib.path for lib in same),
                       ", ".join(have[:12]) + (", ..." if len(have) > 12 else ""), self.op))
        loaded = ", ".join(lib.path for lib in self._loaded) or "none"
        return ("torch has no op `%s`: if it is an op of a customop kernel library, load the "
                "library first, before the op is named: customop.torch.load(\"path/to/"
                "libmy_ops.so\") (customop kernel libraries loaded in this process: %s)"
                % (name, loaded))


def install(loaded: Callable[[], Iterable[Any]]) -> None:
    """Wraps torch's `_OpNamespace.__getattr__` (once per process) so that a missing op raises
    `OpNotLoadedError`; `loaded()` gives the `TorchLibrary`s loaded so far."""
    import torch._ops

    namespace = torch._ops._OpNamespace
    original = namespace.__getattr__
    if getattr(original, "_customop", False):
        return

    def __getattr__(self: Any, op_name: str) -> Any:
        try:
            return original(self, op_name)
        except AttributeError as e:
            if op_name.startswith("__") or type(e) is not AttributeError:
                raise
            raise OpNotLoadedError(self.name, op_name, list(loaded())) from e

    __getattr__._customop = True  # type: ignore[attr-defined]
    namespace.__getattr__ = __getattr__  # type: ignore[method-assign]
