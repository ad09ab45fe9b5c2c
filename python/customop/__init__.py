"""customop's Python helpers, in layers.

The core imports neither jax nor torch: a kernel cdylib's manifest parsed into typed objects
(manifest, with elements, params, layout and differentiation), descriptors packed by the
library's own Rust code (descriptors), the cdylib itself (library), op schemas read for any
front end (schema,
shape, batching), ops run on host memory through `customop_call` (eager), the export
annotation both front ends share (annotate), the cross-check through the Rust runner
(crosscheck), and the kernel library an installed package ships (installed).

On it, two front ends that import only the core, never each other: `customop.xla` (JAX:
Library, ops as differentiable, batchable functions, export) and `customop.torch` (PyTorch:
torch.ops registration, native kernels, autograd, vmap, torch_xla export)."""
