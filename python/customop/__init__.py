"""customop's Python helpers: a kernel cdylib's manifest parsed into typed objects (manifest),
descriptors packed byte-for-byte as Rust does (descriptors), op schemas read for any front end
(schema), ops run on host memory through `customop_call` (eager), and the JAX (xla; jax_ops:
ops as differentiable, batchable functions; jax_export) and PyTorch (torch, torch_export) front
ends, which share the export annotation (annotate)."""
