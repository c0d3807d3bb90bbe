"""Kiln: a block-level GPU kernel language and JIT compiler.

Write kernels as Python functions decorated with :func:`kiln.jit`, operating
on whole blocks with :mod:`kiln.language`, and launch them over a grid::

    import kiln
    import kiln.language as kl

    @kiln.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
        offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
        mask = offs < n
        kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)

    add_kernel[(kiln.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)

The public API follows Triton's (``kiln`` for ``triton``, ``kiln.language``
for ``triton.language``).
"""

from __future__ import annotations

__version__ = "0.1.0"

from kiln import knobs, language, testing, tools
from kiln.compiler.compiler import CompiledKernel, compile
from kiln.errors import (AutotunerError, CompilationError, InterpreterError, KilnError, OutOfBoundsError,
                         OutOfResources, TritonError)
from kiln.language.compile_time import constexpr_function, must_use_result
from kiln.runtime._allocation import set_allocator
from kiln.runtime._async_compile import AsyncCompileMode, FutureKernel
from kiln.runtime.autotuner import Autotuner, Config, autotune
from kiln.runtime.heuristics import Heuristics, heuristics
from kiln.runtime.interface import KernelInterface, MockTensor
from kiln.runtime.jit import JITFunction, jit
from kiln.runtime.tensor_wrapper import TensorWrapper, reinterpret


def cdiv(x: int, y: int) -> int:
    """Ceiling division of two integers: the number of blocks of ``y`` that
    cover ``x`` (as ``triton.cdiv``)."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of two not below ``n`` (0 for ``n`` below 1), as
    ``triton.next_power_of_2``: a block size that covers ``n`` elements."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


__all__ = [
    "AsyncCompileMode",
    "Autotuner",
    "AutotunerError",
    "CompilationError",
    "CompiledKernel",
    "Config",
    "FutureKernel",
    "Heuristics",
    "InterpreterError",
    "JITFunction",
    "KernelInterface",
    "KilnError",
    "MockTensor",
    "OutOfBoundsError",
    "OutOfResources",
    "TensorWrapper",
    "TritonError",
    "autotune",
    "cdiv",
    "compile",
    "constexpr_function",
    "heuristics",
    "jit",
    "knobs",
    "language",
    "must_use_result",
    "next_power_of_2",
    "reinterpret",
    "set_allocator",
    "testing",
    "tools",
    "__version__",
]
