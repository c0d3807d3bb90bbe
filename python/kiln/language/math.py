"""``kl.math``: the element-wise math functions under Triton's
``triton.language.math`` names (``tl.math.exp2(x)`` in Triton's fused
attention tutorial). They are the same builtins as ``kl.exp2`` and the
others; this module only gives them their second spelling."""

from kiln.language.core import (  # noqa: F401 - re-exported
    abs,
    ceil,
    cos,
    div_rn,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    log,
    log2,
    rsqrt,
    sin,
    sqrt,
    sqrt_rn,
    umulhi,
)

__all__ = ["abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log", "log2", "rsqrt",
           "sin", "sqrt", "sqrt_rn", "umulhi"]
