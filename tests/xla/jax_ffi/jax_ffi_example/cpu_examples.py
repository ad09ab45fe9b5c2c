"""JAX's `cpu_examples` (array and dictionary attributes, a counter per index, an update in
place), as customop ops: `example::array_attr`, `example::dictionary_attr`, `example::counter`,
`example::aliasing`."""

import numpy as np

from . import OPS


def array_attr(num: int):
    return OPS.array_attr(array=np.arange(num, dtype=np.int32))


def dictionary_attr(**kwargs):
    return OPS.dictionary_attr(**kwargs)


def counter(index):
    return OPS.counter(index=int(index))


def aliasing(x):
    return OPS.aliasing(x)
