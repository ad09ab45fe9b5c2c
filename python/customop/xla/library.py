"""`customop.xla.Library`: a kernel cdylib in JAX. Its handlers registered as typed-FFI
targets, its ops called with `jax.ffi.ffi_call` (`call`), split across devices by their
partition rules (`sharded`), and as differentiable, batchable JAX functions (`ops`)."""

from __future__ import annotations

from typing import Any

from ..library import KernelLibrary, note_jax_registered, stages
from .derivatives import tangent_primitive
from .ops import NotRegisteredError, Ops, call_op, require_registered

__all__ = ["Library", "NotRegisteredError"]


class Library(KernelLibrary):
    """A customop cdylib in JAX: `KernelLibrary` (manifest, handlers, descriptor layouts and
    packing) and what JAX adds."""

    def __init__(self, path: Any) -> None:
        super().__init__(path)
        self._ops: Ops | None = None

    @property
    def ops(self) -> Ops:
        """The ops as JAX functions by namespace, `lib.ops.example.rms_norm_t(x, eps=1e-6)`:
        signature and docstring from the schema, differentiable where the op declares a
        backward or a tangent op, batched under `jax.vmap` by a rule (`customop.xla.ops`).
        Register the handlers first (`register()`)."""
        if self._ops is None:
            self._ops = Ops(self)
        return self._ops

    def call(self, name: str, *operands: Any, **attrs: Any) -> Any:
        """Calls op `name` on `operands` (its tensors and externals' bytes, in declaration
        order) with `jax.ffi.ffi_call`, result types from the schema's shape rules; keyword
        arguments are the op's attributes, checked and converted to their declared types first
        (a `SchemaError` names an unknown, missing or ill-typed one). Returns one array, or a
        list for several results."""
        require_registered(self, name)
        return call_op(self, name, *operands, **attrs)

    def sharded(self, name: str, mesh: Any, axes: dict[str, str], **attrs: Any) -> Any:
        """Op `name` as a function of its operands that runs once per device of `mesh`, on its
        shard, as the op's partition rule says: `jax.shard_map` over `self.call`, with each
        factor split along the mesh axes `axes` gives it (`{"rows": "x"}`; a factor not in
        `axes` stays whole). Operands and results the rule does not list are replicated."""
        import jax
        from jax.sharding import PartitionSpec as P

        sch = self.op(name).schema
        rule = sch.partition
        if rule is None:
            raise ValueError("%s declares no partition rule" % name)
        unknown = sorted(set(axes) - set(rule.factors))
        if unknown:
            raise ValueError("%s has no factor %s (its factors: %s)"
                             % (name, ", ".join(unknown), ", ".join(rule.factors)))

        def spec(entries: tuple[Any, ...], index: int) -> Any:
            for e in entries:
                if e.index == index:
                    return P(*[axes.get(f) if f else None for f in e.dims])
            return P()

        in_specs = tuple(spec(rule.operands, i) for i in range(len(sch.operands)))
        out_specs = [spec(rule.results, i) for i in range(len(sch.results))]
        return jax.shard_map(lambda *ops: self.call(name, *ops, **attrs), mesh=mesh,
                             in_specs=in_specs,
                             out_specs=out_specs[0] if len(out_specs) == 1 else out_specs)

    def register(self, platform: str | None = None) -> None:
        """Registers every op's handler with jax as a typed-FFI target (api_version=1), and
        the primitive the ops' derivatives use (before any trace: see
        `customop.xla.derivatives.tangent_primitive`). With no `platform`: the host handlers
        for "cpu" and, where jax has a CUDA backend, the CUDA handler of each op that has one
        (`#[cuda(...)]`) for "CUDA". `platform="cpu"` or `"cuda"`: that platform's only (the
        CUDA handlers register without a GPU too, for a process that only exports)."""
        import jax

        tangent_primitive()
        if platform is None:
            platforms = ["cpu"] + (["cuda"] if has_cuda_backend() else [])
        elif platform.lower() in ("cpu", "host", "cuda"):
            platforms = [platform.lower()]
        else:
            raise ValueError("customop registers handlers for \"cpu\" and \"cuda\", not %r"
                             % platform)
        for op in self.manifest.ops:
            for p in platforms:
                symbol = op.cuda_handler_symbol if p == "cuda" else op.handler_symbol
                if symbol is None:
                    continue  # no CUDA side: a GPU call is refused by XLA, naming the target
                fn = getattr(self.cdll, symbol)
                jax.ffi.register_ffi_target(op.target, stages(jax.ffi.pycapsule(fn)),
                                            platform="CUDA" if p == "cuda" else p,
                                            api_version=1)
        note_jax_registered(self)


def has_cuda_backend() -> bool:
    """Whether this jax has a CUDA backend with a device (jaxlib's CUDA plugin and a GPU)."""
    import jax

    try:
        return bool(jax.devices("cuda"))
    except RuntimeError:
        return False
