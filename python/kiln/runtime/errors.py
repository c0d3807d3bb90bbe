"""Runtime errors under the module names Triton gives them
(``triton.runtime.errors``); the classes are :mod:`kiln.errors`'."""

from kiln.errors import InterpreterError, OutOfResources, PTXASError

__all__ = ["InterpreterError", "OutOfResources", "PTXASError"]
