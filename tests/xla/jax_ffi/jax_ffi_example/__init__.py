"""customop's ports of JAX's FFI examples under the module names JAX's own example tests import
(`jax_ffi_example.cpu_examples`, `jax_ffi_example.rms_norm`), so that those tests
(jax: examples/ffi/tests/*_test.py) run unchanged against ops written with customop in Rust
(examples/kernels: attributes.rs, in_place.rs, any_rank.rs). Only the names and signatures
follow JAX's; the code is customop's. `scripts/jax_ffi_tests.sh` runs them.

The example kernel library is `$CUSTOMOP_KERNELS`, loaded and registered with jax once."""

import os

from customop.xla import Library

LIB = Library(os.environ["CUSTOMOP_KERNELS"])
LIB.register()
OPS = LIB.ops.example
