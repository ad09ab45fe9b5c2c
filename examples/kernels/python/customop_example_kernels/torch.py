"""The example kernels in torch: `torch.ops.example.<op>`, native kernels, registered on import
(a torch outside customop's native range raises `customop.torch.NativeUnavailable`, naming
it)."""

import customop.torch

from . import LIBRARY

library = customop.torch.load(LIBRARY)
