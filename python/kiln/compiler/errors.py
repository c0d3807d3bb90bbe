"""Compilation errors under Triton's names (``triton.compiler.errors``).

They are Kiln's own classes (:mod:`kiln.errors`), so ``except
triton.compiler.errors.CompilationError`` catches what Kiln raises."""

from kiln.errors import CompilationError, CompileTimeAssertionFailure

__all__ = ["CompilationError", "CompileTimeAssertionFailure"]
