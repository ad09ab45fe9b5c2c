"""The example kernels in JAX: `ops.example.<op>(...)`, registered on import."""

from customop.xla import Library

from . import LIBRARY

library = Library(LIBRARY)
library.register()
ops = library.ops
