"""customop's example kernels as a Python package (a wheel made by setuptools-rust
from examples/kernels): the kernel library ships inside it. `customop_example_kernels.jax` gives the
ops in JAX (`ops.example.rms_norm(...)`), `customop_example_kernels.torch` registers them with
torch (`torch.ops.example.rms_norm`, native kernels)."""

try:
    from customop.installed import library_in
except ImportError as e:  # customop missing, or one without `installed`
    raise ImportError("customop_example_kernels needs customop's Python package, 0.1 "
                      "(its wheel, or pip install \"$CUSTOMOP/python\" from customop's checkout): %s" % e) from None

#: The kernel library (the crate's cdylib) inside this package.
LIBRARY = library_in(__name__)
