"""Runtime errors under Triton's names (``triton.runtime.errors``)."""

from __future__ import annotations

from kiln.errors import KilnError, OutOfResources

__all__ = ["InterpreterError", "OutOfResources"]


class InterpreterError(KilnError):
    """An error of Triton's interpreter (``TRITON_INTERPRET=1``).

    Kiln has no interpreter, so Kiln never raises it: it exists so that
    Triton programs that catch it, or choose it as the error to expect when
    ``TRITON_INTERPRET`` is set, run unchanged. Kernels always compile on
    Kiln, and their errors are :class:`kiln.CompilationError`."""
