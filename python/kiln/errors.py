"""Exceptions Kiln raises to users.

``CompilationError`` points at the kernel source: its message names
``file:line:col``, quotes the source line and draws a caret under the column,
the way Python's own ``SyntaxError`` does, so that a mistake in a kernel reads
like a mistake in any Python code.
"""

from __future__ import annotations

from typing import Optional

__all__ = ["KilnError", "TritonError", "AutotunerError", "CompilationError", "CompileTimeAssertionFailure",
           "UnsupportedLanguageConstruct", "LaunchOptionError", "InterpreterError", "PTXASError", "OutOfBoundsError",
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
        text += "\n" + _source_with_caret(source_line, col)
    return text


def _source_with_caret(source_line: str, col: int) -> str:
    """The source line, and under it a caret at the 1-based column."""
    # Tabs are kept in the caret line so the caret stays under the column
    # whatever the terminal's tab width.
    prefix = "".join(c if c == "\t" else " " for c in source_line[:max(col - 1, 0)])
    return f"{source_line}\n{prefix}^"


class KilnError(Exception):
    """Base class of every error Kiln raises on purpose."""


#: Triton's name for the base class of its errors (``triton.TritonError``).
TritonError = KilnError


class CompilationError(KilnError):
    """A kernel could not be compiled; located at the offending source.

    The message reads like Python's own report of a ``SyntaxError``: where
    (``file:line:col``, and for a located error the jit function and the
    position in it as Triton counts it), the source line with a caret under
    the column, and last what went wrong::

        kernel.py:12:9: error in my_kernel at 3:8:
                y = x + undefined
                        ^
        name 'undefined' is not defined

    ``at 3:8`` is Triton's position: line 3 of the function (its ``def``
    line is line 1) and the 0-based column in its dedented source, so that
    code matching Triton's messages keeps working.

    When the error is reported at a call (of a ``@kiln.jit`` helper, or of a
    builtin whose check failed), ``__cause__`` is the error inside the
    callee: for a helper, the ``CompilationError`` located in the helper;
    for a builtin, the exception its check raised, whose text is the bare
    message.

    Attributes:
        message: what went wrong, without the location.
        error_message: the same text (Triton's name for it).
        filename: the kernel's source file (``None`` if unknown).
        lineno: 1-based line in ``filename`` (``None`` if unknown).
        col: 1-based column (``None`` if unknown).
        source_line: the text of that line (``None`` if unavailable).
        function: the name of the jit function the error is in (``None``
            if unknown).
        fn_lineno, fn_col: the position in that function, Triton's way:
            1-based line counted from the ``def`` line, 0-based column.
        src: the source of that function (``None`` if unknown).
    """

    def __init__(self, message: str, filename: Optional[str] = None, lineno: Optional[int] = None,
                 col: Optional[int] = None, source_line: Optional[str] = None, *, function: Optional[str] = None,
                 fn_lineno: Optional[int] = None, fn_col: Optional[int] = None, src: Optional[str] = None) -> None:
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line.rstrip("\r\n") if source_line is not None else None
        self.function = function
        self.fn_lineno = fn_lineno
        self.fn_col = fn_col
        self.src = src
        super().__init__(self._format())

    @property
    def error_message(self) -> str:
        """Triton's name for :attr:`message`."""
        return self.message

    def summary(self) -> str:
        """One line: ``file:line:col: message`` (just the message when the
        location is unknown), for lists of errors."""
        first = self.message.splitlines()[0] if self.message else ""
        if self.filename is None or self.lineno is None:
            return first
        return f"{self.filename}:{self.lineno}:{self.col if self.col is not None else 1}: {first}"

    def __str__(self) -> str:
        # Formatted from the attributes (not from ``args``) so that a copy
        # made by pickling, which restores them after __init__, reads the same.
        return self._format()

    def _format(self) -> str:
        if self.filename is None or self.lineno is None:
            return self.message
        col = self.col if self.col is not None else 1
        where = ""
        if self.function is not None and self.fn_lineno is not None:
            where = f" in {self.function} at {self.fn_lineno}:{self.fn_col if self.fn_col is not None else '?'}"
        text = f"{self.filename}:{self.lineno}:{col}: error{where}:"
        if self.source_line:
            text += "\n" + _source_with_caret(self.source_line, col)
        return f"{text}\n{self.message}"

    def __reduce__(self):
        return (type(self), (self.message, self.filename, self.lineno, self.col, self.source_line),
                {"function": self.function, "fn_lineno": self.fn_lineno, "fn_col": self.fn_col, "src": self.src})


class CompileTimeAssertionFailure(CompilationError):
    """A ``kl.static_assert`` (or an ``assert`` on compile-time values)
    failed. Its message is the kernel's own, so it has no ``__cause__``."""


class UnsupportedLanguageConstruct(CompilationError):
    """The kernel uses Python syntax that kernels cannot contain."""


class LaunchOptionError(KilnError, ValueError, AssertionError):
    """A compile or launch option is invalid (``num_warps`` not a power of
    2, ``num_stages`` below 1). A ``ValueError``, and an ``AssertionError``
    too, which is what Triton raises for these, so that code catching
    either works."""


class InterpreterError(KilnError):
    """Triton's error for a kernel failing under its interpreter
    (``TRITON_INTERPRET=1``). Kiln has no interpreter and never raises it;
    it exists so that code catching it runs unchanged."""


class PTXASError(KilnError):
    """Triton's error for ``ptxas`` failing. Kiln reports a ``ptxas``
    failure as a :class:`CompilationError`; this name exists so that code
    catching it runs unchanged."""


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
