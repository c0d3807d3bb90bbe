"""Compile errors under the module names Triton gives them
(``triton.compiler.errors``); the classes are :mod:`kiln.errors`'."""

from kiln.errors import CompilationError, CompileTimeAssertionFailure, UnsupportedLanguageConstruct

__all__ = ["CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"]
