"""Compiling kernels in the background, as Triton's ``triton.AsyncCompileMode``.

Inside ``with kiln.AsyncCompileMode(executor):``, a launch or warmup whose
kernel is not compiled yet submits the compilation to ``executor`` (a
``concurrent.futures.Executor``, such as a ``ThreadPoolExecutor``) instead
of compiling in the calling thread:

* ``kernel.warmup(...)`` returns at once with a :class:`FutureKernel`, whose
  ``result()`` waits for the compilation and gives the compiled kernel (the
  kernel is then loaded, in the thread that asks, and cached as usual);
* ``kernel[grid](...)`` waits for its kernel and launches it.

Several warmups of one specialization share one compilation. Leaving the
``with`` block waits for every compilation submitted in it and raises the
first compile error, unless ``ignore_errors=True``. A kernel already
compiled is used as it is: ``warmup`` then returns the compiled kernel.
"""

from __future__ import annotations

import contextvars
from concurrent.futures import Executor, Future, as_completed
from typing import Any, Callable, Hashable, Optional

__all__ = ["AsyncCompileMode", "FutureKernel", "active_mode"]


class FutureKernel:
    """A kernel being compiled in an :class:`AsyncCompileMode`'s executor.

    ``result()`` waits for the compilation and returns the compiled kernel
    (a ``kiln.CompiledKernel``), finishing it in the calling thread the first
    time (loading and caching it); a compile error is raised there."""

    def __init__(self, finalize: Callable[[Any], Any], future: Future) -> None:
        self.future = future
        self.kernel: Any = None
        self._finalize = finalize

    def result(self, ignore_errors: bool = False) -> Any:
        """The compiled kernel, once compiled; with ``ignore_errors``, None
        instead of raising a compile error."""
        if self.kernel is not None:
            return self.kernel
        try:
            compiled = self.future.result()
            self.kernel = self._finalize(compiled)
        except Exception:
            if ignore_errors:
                return None
            raise
        return self.kernel

    def __repr__(self) -> str:
        state = "done" if self.future.done() else "compiling"
        return f"<FutureKernel {state}>"


class AsyncCompileMode:
    """``with AsyncCompileMode(executor):`` compiles the kernels launched or
    warmed up inside it in ``executor`` (see the module's description).

    One mode may be active at a time in a thread (or asyncio task); entering
    a second raises RuntimeError."""

    def __init__(self, executor: Executor, *, ignore_errors: bool = False) -> None:
        self.executor = executor
        self.ignore_errors = ignore_errors
        self._futures: dict[Hashable, FutureKernel] = {}
        self._token: Optional[contextvars.Token] = None

    def submit(self, key: Hashable, compile_fn: Callable[[], Any], finalize: Callable[[Any], Any]) -> FutureKernel:
        """The compilation of ``key``: ``compile_fn`` runs in the executor
        (once per key while this mode lasts); ``finalize`` turns its result
        into the kernel ``FutureKernel.result()`` returns."""
        existing = self._futures.get(key)
        if existing is not None:
            return existing
        future_kernel = FutureKernel(finalize, self.executor.submit(compile_fn))
        self._futures[key] = future_kernel
        return future_kernel

    def __enter__(self) -> "AsyncCompileMode":
        if active_mode.get() is not None:
            raise RuntimeError("Another AsyncCompileMode is already active")
        self._token = active_mode.set(self)
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        try:
            by_future = {fk.future: fk for fk in self._futures.values()}
            for future in as_completed(list(by_future)):
                # An exception already leaving the block is not replaced by a compile error.
                by_future[future].result(ignore_errors=self.ignore_errors or exc_type is not None)
        finally:
            if self._token is not None:
                active_mode.reset(self._token)
                self._token = None


#: The mode active in this context, if any.
active_mode: contextvars.ContextVar[Optional[AsyncCompileMode]] = contextvars.ContextVar(
    "kiln_async_compile_mode", default=None)
