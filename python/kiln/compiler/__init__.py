"""Kiln's compiler: the frontend (Python AST to the kiln dialect) and the
driver of the backends' stages (``kiln.compiler.compiler``).

As ``triton.compiler``, it offers :class:`ASTSource` and :func:`compile`, and
the error classes under ``kiln.compiler.errors``."""

from kiln.compiler import errors
from kiln.compiler.compiler import ASTSource, CompiledKernel, compile

__all__ = ["ASTSource", "CompiledKernel", "compile", "errors"]
