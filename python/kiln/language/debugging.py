"""Run-time debugging builtins: ``kl.device_print`` and ``kl.device_assert``,
with Triton's signatures.

``device_print`` always prints. ``device_assert`` is compiled only in debug
mode (``kiln.jit(debug=True)`` or ``KILN_DEBUG=1``, both part of the cache
key); otherwise it costs nothing, as in Triton.
"""

from __future__ import annotations

import contextvars
from typing import Any

from kiln.errors import CompilationError
from kiln.language import semantic
from kiln.language.core import _unwrap, builtin, tensor

__all__ = ["device_print", "device_assert"]

#: Set by the frontend while it generates a kernel.
debug_mode: contextvars.ContextVar[bool] = contextvars.ContextVar("kiln_debug_mode", default=False)
current_function: contextvars.ContextVar[str] = contextvars.ContextVar("kiln_current_function", default="")


@builtin
def device_print(prefix: Any, *args: Any, hex: Any = False, _builder: Any = None) -> None:
    """Prints ``prefix`` and each element of ``args`` at run time, one line per
    element: ``pid (x, y, z) idx (i, ...) <prefix><value>``."""
    prefix = _unwrap(prefix)
    if not isinstance(prefix, str):
        raise CompilationError(f"device_print needs a string prefix, got {prefix!r}")
    values = [semantic.to_tensor(_unwrap(a), _builder) for a in args]
    if not values:
        raise CompilationError("device_print needs at least one value to print")
    signed = [v.dtype.is_ptr() or v.dtype.is_floating() or v.dtype.is_int_signed() for v in values]
    signed = [s and not v.dtype.is_bool() for s, v in zip(signed, values)]
    _builder.print(prefix, [v.handle for v in values], signed, bool(_unwrap(hex)))


@builtin
def device_assert(cond: Any, msg: Any = "", _builder: Any = None) -> None:
    """In debug mode, reports every element of ``cond`` that is false with
    ``msg`` and the assertion's file, line and function; nothing otherwise."""
    cond, msg = _unwrap(cond), _unwrap(msg)
    if not isinstance(msg, str):
        raise CompilationError(f"device_assert needs a string message, got {msg!r}")
    if not debug_mode.get():
        return
    if not isinstance(cond, tensor):
        if not cond:
            raise CompilationError(f"device_assert of a condition that is false at compile time: {msg}")
        return
    loc = _builder.get_loc()
    file, line = (loc[0], loc[1]) if loc else ("<unknown>", 0)
    _builder.device_assert(semantic.to_bool(cond, _builder).handle, msg, file, line, current_function.get())
