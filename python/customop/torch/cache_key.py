"""torch.compile's caches and customop ops.

torch's AOTAutograd and Inductor caches key a compiled graph on the graph dynamo traced, in
which a custom op is one call by name (`torch.ops.ns.op`): torch treats every op as fixed, so
neither what the op's autograd kernel does (which outputs a backward saves, which op it runs,
whether it refuses) nor the code that builds that kernel is in the key. After a kernel library
is rebuilt with a different `vjp`, or customop itself changes, a warm cache would replay the old
backward graph. torch's one knob for this is `torch.compiler.config.cache_key_tag`, a string
added to every key: `include` sets it to the tag the user set (kept as it is) followed by a
digest of the manifests of the libraries loaded and of this package's own source, so a graph
compiled against other ops or another customop is compiled again, not replayed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch.compiler.config as compiler_config

__all__ = ["include", "tag"]

_MANIFESTS: set[str] = set()
_USER_TAG: str = ""
_OURS: str | None = None
_SOURCE: str | None = None


def _source_digest() -> str:
    """The digest of customop's Python sources (what builds the autograd, fake and vmap
    kernels), read once."""
    global _SOURCE
    if _SOURCE is None:
        h = hashlib.sha256()
        root = Path(__file__).resolve().parent.parent
        for f in sorted(root.rglob("*.py")):
            h.update(f.relative_to(root).as_posix().encode())
            h.update(b"\0")
            h.update(f.read_bytes())
        _SOURCE = h.hexdigest()
    return _SOURCE


def tag() -> str:
    """customop's part of the cache key tag: `customop:` and 16 hex digits."""
    h = hashlib.sha256(_source_digest().encode())
    for m in sorted(_MANIFESTS):
        h.update(m.encode())
    return "customop:" + h.hexdigest()[:16]


def include(manifest: bytes) -> None:
    """Adds a loaded library's manifest to torch.compile's cache key tag. A tag the user set
    (`TORCH_COMPILE_CACHE_KEY_TAG`, or the config, before or after a load) is kept in front."""
    global _USER_TAG, _OURS
    _MANIFESTS.add(hashlib.sha256(manifest).hexdigest())
    current = compiler_config.cache_key_tag
    if current != _OURS:
        _USER_TAG = current
    _OURS = (_USER_TAG + "|" if _USER_TAG else "") + tag()
    compiler_config.cache_key_tag = _OURS
