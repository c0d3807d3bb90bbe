"""Compiler hints and debugging builtins: ``kl.multiple_of``,
``kl.max_contiguous``, ``kl.max_constancy``, ``kl.assume`` and
``kl.debug_barrier``, with Triton's signatures.

Hints state facts the compiler cannot prove; the axis-info analysis
combines them with what it proves, so a hint can widen memory accesses
(``kl.multiple_of(pid * stride, 16)`` lets a row start be 16-aligned). A
false hint makes the kernel wrong, as in Triton. Each claim is rounded down
to the largest power of two dividing it, which the claim implies.
"""

from __future__ import annotations

from typing import Any

from kiln.errors import CompilationError
from kiln.language import semantic
from kiln.language.core import _unwrap, builtin, constexpr, tensor

__all__ = ["multiple_of", "max_contiguous", "max_constancy", "assume", "debug_barrier"]


def _claims(input: Any, values: Any, name: str) -> tuple[tensor, list[int]]:
    input = _unwrap(input)
    if not isinstance(input, tensor) or not input.dtype.is_int() or input.dtype.is_bool():
        ty = input.type if isinstance(input, tensor) else type(input).__name__
        raise CompilationError(f"{name} needs an integer tensor, got {ty}")
    values = _unwrap(values)
    if isinstance(values, (int, constexpr)) and not isinstance(values, bool):
        values = [values]
    if not isinstance(values, (list, tuple)) or not all(
            isinstance(_unwrap(v), int) and not isinstance(_unwrap(v), bool) for v in values):
        raise CompilationError(f"{name} needs a constant integer or a list of them, got {values!r}")
    values = [int(_unwrap(v)) for v in values]
    rank = max(1, len(input.shape))
    if len(values) != rank:
        raise CompilationError(f"{name} needs {rank} value{'s' if rank > 1 else ''} (one per dimension), "
                               f"got {len(values)}")
    if any(v <= 0 for v in values):
        raise CompilationError(f"{name} values must be positive, got {values}")
    return input, [v & -v for v in values]


def _hint(input: Any, values: Any, name: str, kind: str, b: Any) -> tensor:
    input, claims = _claims(input, values, name)
    arrays = {"divisibility": [], "contiguity": [], "constancy": []}
    arrays[kind] = claims
    return semantic.ir_result(
        b.axis_hint(input.handle, arrays["divisibility"], arrays["contiguity"], arrays["constancy"]), input.dtype)


@builtin
def multiple_of(input: Any, values: Any, _builder: Any = None) -> tensor:
    """``input``, whose elements the user guarantees are multiples of ``values``."""
    return _hint(input, values, "multiple_of", "divisibility", _builder)


@builtin
def max_contiguous(input: Any, values: Any, _builder: Any = None) -> tensor:
    """``input``, whose runs of ``values`` consecutive elements increase by one."""
    return _hint(input, values, "max_contiguous", "contiguity", _builder)


@builtin
def max_constancy(input: Any, values: Any, _builder: Any = None) -> tensor:
    """``input``, whose runs of ``values`` consecutive elements are equal."""
    return _hint(input, values, "max_constancy", "constancy", _builder)


@builtin
def assume(cond: Any, _builder: Any = None) -> None:
    """States that ``cond`` holds. ``x % c == 0`` on a scalar integer ``x``
    tells the compiler ``x`` is a multiple of ``c``; other conditions (such
    as ``x > 0``) are accepted and not used yet."""
    cond = _unwrap(cond)
    if not isinstance(cond, tensor):
        if not cond:
            raise CompilationError("kl.assume of a condition that is false at compile time")
        return
    _builder.assume(semantic.to_bool(cond, _builder).handle)


@builtin
def debug_barrier(_builder: Any = None) -> None:
    """Waits until every thread of the program gets here (``bar.sync 0`` on
    the GPU; nothing on the CPU, where a program is one thread)."""
    _builder.debug_barrier()
