"""Exceptions Kiln raises to users.

``CompilationError`` points at the kernel source: its message names
``file:line:col``, quotes the source line and draws a caret under the column,
the way Python's own ``SyntaxError`` does, so that a mistake in a kernel reads
like a mistake in any Python code.
"""

from __future__ import annotations

from typing import Optional

__all__ = ["KilnError", "AutotunerError", "CompilationError", "CompileTimeAssertionFailure", "OutOfBoundsError",
           "OutOfResources", "DeviceAssertionError"]


def _located_text(located: str, unlocated: str, filename: Optional[str], lineno: Optional[int],
                  col: Optional[int], source_line: Optional[str]) -> str:
    """``file:line:col: <located>``, then the source line with a caret under
    the column; just ``unlocated`` when the location is unknown."""
    if filename is None or lineno is None:
        return unlocated
    col = col if col is not None else 1
    text = f"{filename}:{lineno}:{col}: {located}"
    if source_line:
        # Tabs are kept in the caret line so the caret stays under the
        # column whatever the terminal's tab width.
        prefix = "".join(c if c == "\t" else " " for c in source_line[:max(col - 1, 0)])
        text += f"\n{source_line}\n{prefix}^"
    return text


class KilnError(Exception):
    """Base class of every error Kiln raises on purpose."""


class CompilationError(KilnError):
    """A kernel could not be compiled; located at the offending source.

    Attributes:
        message: what went wrong, without the location.
        filename: the kernel's source file (``None`` if unknown).
        lineno: 1-based line in ``filename`` (``None`` if unknown).
        col: 1-based column (``None`` if unknown).
        source_line: the text of that line (``None`` if unavailable).
    """

    def __init__(self, message: str, filename: Optional[str] = None, lineno: Optional[int] = None,
                 col: Optional[int] = None, source_line: Optional[str] = None) -> None:
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line.rstrip("\r\n") if source_line is not None else None
        super().__init__(self._format())

    @property
    def error_message(self) -> str:
        """Triton's name for :attr:`message`."""
        return self.message

    def _format(self) -> str:
        return _located_text(f"error: {self.message}", self.message, self.filename, self.lineno, self.col,
                             self.source_line)

    def __reduce__(self):
        return (type(self), (self.message, self.filename, self.lineno, self.col, self.source_line))


class CompileTimeAssertionFailure(CompilationError):
    """A ``kl.static_assert`` failed: the kernel's own compile-time check,
    located at the call (as Triton's class of the same name)."""


class OutOfResources(KilnError):
    """A compiled kernel needs more of a hardware resource than the device has.

    Attributes:
        required: the amount the kernel needs.
        limit: the amount the device offers.
        name: the resource ("shared memory", "registers", ...).
    """

    def __init__(self, required: int, limit: int, name: str) -> None:
        self.required = required
        self.limit = limit
        self.name = name
        super().__init__(f"out of resources: {name}, required: {required}, hardware limit: {limit}. "
                         f"Reducing block sizes or `num_stages` may help.")

    def __reduce__(self):
        return (type(self), (self.required, self.limit, self.name))


class AutotunerError(KilnError):
    """``kiln.autotune`` found no config to run: every config failed to
    compile or run, or ``prune_configs_by`` pruned them all. The message
    lists each config with the reason it was skipped."""


class OutOfBoundsError(KilnError, IndexError):
    """A checked launch found a load, store or atomic outside its argument's buffer.

    Raised after the launch, by the CPU or the NVIDIA backend in checked
    mode (``KILN_CHECKED=1`` or ``kiln.jit(checked=True)``; the CPU also
    reads ``KILN_CPU_CHECKED=1``); the faulting access was skipped, so no
    memory outside the buffers was touched. It is
    an ``IndexError`` too, so code that catches indexing errors catches it.

    Attributes:
        message: the description, naming the parameter and the element index.
        filename, lineno, col: the kernel source location of the access
            (``None`` when the backend did not report one).
        parameter: the kernel parameter whose buffer was overrun (``None``
            when it could not be told).
        index: the offending element index (``None`` if not reported).
        source_line: the text of that source line, quoted under the message.
    """

    def __init__(self, message: str, filename: Optional[str] = None, lineno: Optional[int] = None,
                 col: Optional[int] = None, parameter: Optional[str] = None, index: Optional[int] = None,
                 source_line: Optional[str] = None) -> None:
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.parameter = parameter
        self.index = index
        self.source_line = source_line.rstrip("\r\n") if source_line is not None else None
        super().__init__(self._format())

    def _format(self) -> str:
        return _located_text(self.message, self.message, self.filename, self.lineno, self.col, self.source_line)

    def __reduce__(self):
        return (type(self), (self.message, self.filename, self.lineno, self.col, self.parameter, self.index,
                             self.source_line))


class DeviceAssertionError(KilnError, AssertionError):
    """A ``kl.device_assert`` failed in a CPU launch (compiled in debug mode).

    Raised after the launch; its message names the assertion's
    ``file:line``, function and message and the first failing program and
    element. The failing programs ran to completion (a GPU would trap
    instead).
    """
