"""customop in JAX: load a kernel cdylib (`Library`), register its handlers with jax, call its
ops (`Library.call`, or `Library.ops` as differentiable, batchable functions) and export
programs that use them with their externals annotated (`export`, `externals`).

    import jax, numpy as np
    from customop.xla import Library

    lib = Library("target/debug/libcustomop_example_kernels.so")
    lib.register()                                  # every op, as a typed-FFI target on CPU
    blob = lib.pack("my_lib::Blob", {"gain": 2.0, "bias": 1, "seed": 0, "tag": [0] * 16})
    y = jax.ffi.ffi_call(lib.target("my_custom_library::custom_op_external"),
                         jax.ShapeDtypeStruct((3,), np.int8), has_side_effect=True)(
        np.frombuffer(blob, np.uint8), x)

Modules: `library` (Library), `ops` (ops as JAX functions), `exporter` (jax.export with
externals annotated), `crosscheck` (jit with a cross-check through the Rust runner, for tests).
They import customop's core, never `customop.torch`.
"""

from .exporter import ExportError, External, export, externals
from .library import Library
from .ops import (NoForwardRuleError, NoGradientError, NotDifferentiableError, NotRegisteredError,
                  Op, Ops)

__all__ = ["Library", "export", "externals", "External", "ExportError", "Ops", "Op",
           "NoGradientError", "NoForwardRuleError", "NotDifferentiableError",
           "NotRegisteredError"]
