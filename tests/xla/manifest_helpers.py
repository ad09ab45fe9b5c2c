"""What the Rust end-to-end tests ask of customop's Python package about a cdylib's manifest
(through pycall.py, as module `tests.manifest_helpers`): JSON-ready answers only."""

import dataclasses

from customop.xla import Library


def _json_ready(v):
    if isinstance(v, (list, tuple)):
        return [_json_ready(x) for x in v]
    if isinstance(v, dict):
        return {k: _json_ready(x) for k, x in v.items()}
    return v


def manifest_op_names(path):
    """The names of the ops in the cdylib at `path`, sorted."""
    return sorted(op.name for op in Library(path).entries())


def manifest_partition(path, name):
    """The partition rule of op `name` in the cdylib at `path`, in the manifest's JSON form
    (None when the op has none)."""
    rule = Library(path).partition(name)
    return None if rule is None else _json_ready(dataclasses.asdict(rule))


def pack_with_library(path, descriptor, value):
    """Packs `value` with the layout the cdylib at `path` exports."""
    return Library(path).pack(descriptor, value)
