"""Libraries of extra element-wise functions, as ``triton.language.extra``:
``from kiln.language.extra import libdevice``, and the NVIDIA-specific
``kiln.language.extra.cuda``."""

from kiln.language.extra import libdevice
from kiln.language.extra import cuda

__all__ = ["cuda", "libdevice"]
