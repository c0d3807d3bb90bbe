"""Libraries of extra element-wise functions, as ``triton.language.extra``:
``from kiln.language.extra import libdevice``."""

from kiln.language.extra import libdevice

__all__ = ["libdevice"]
