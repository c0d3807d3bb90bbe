"""``kiln.constexpr_function``: plain Python functions a kernel calls while
it is being compiled (Triton's ``triton.constexpr_function``).

Decorating a function marks it as safe to run on compile-time values: inside
a ``@kiln.jit`` function, a call with constant arguments (constexprs, Python
numbers, dtypes, tuples of them) runs the Python function right away and the
result is a constant; a runtime argument is a compile error. Outside kernels
it is an ordinary call.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
from typing import Any, Callable, Optional

__all__ = ["constexpr_function", "is_constexpr_function", "must_use_result", "unused_result_message",
           "KernelLaunchShape", "current_launch_shape"]


@dataclasses.dataclass(frozen=True)
class KernelLaunchShape:
    """What the kernel being compiled knows of its launch: the target
    ("cpu", "sm_90a", ...), its warps per program and threads per warp."""

    target: str
    num_warps: int
    threads_per_warp: int = 32


# Set by the compiler while it builds a kernel's IR (kl.extra.cuda.num_warps
# reads it); None outside a compile.
current_launch_shape: contextvars.ContextVar[Optional[KernelLaunchShape]] = contextvars.ContextVar(
    "kiln_launch_shape", default=None)


class constexpr_function:
    """A Python function callable from kernels on compile-time values."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"constexpr_function decorates a function, got {type(fn).__name__}")
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"constexpr_function({getattr(self.fn, '__qualname__', self.fn)!r})"


def is_constexpr_function(value: Any) -> bool:
    return isinstance(value, constexpr_function)


def must_use_result(fn: Any, message: Any = True) -> Any:
    """Marks a ``@kiln.jit`` function whose result a kernel must use
    (``triton.must_use_result``): a call written as a statement, its result
    dropped, is a ``CompilationError`` at the call. Also a decorator
    factory, ``@must_use_result("why")``, whose text is added to the error.

    Returns ``fn`` itself, marked."""
    if isinstance(fn, str):
        text = fn
        return lambda function: must_use_result(function, text)
    if not hasattr(fn, "src") or not hasattr(fn, "arg_names"):
        raise TypeError(f"must_use_result marks a @kiln.jit function, got {type(fn).__name__}")
    fn._must_use_result = message
    return fn


def unused_result_message(fn: Any) -> str:
    """The error for a dropped result of ``fn``, or "" when it may be dropped."""
    mark = getattr(fn, "_must_use_result", False)
    if not mark:
        return ""
    text = f"The result of {fn.__name__} is not being used."
    return f"{text} {mark}" if isinstance(mark, str) else text
