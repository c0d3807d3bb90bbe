"""The allocator for memory that kernels ask for at launch
(``triton.runtime._allocation``, set with :func:`kiln.set_allocator`).

A kernel that needs global scratch memory (Triton's device-side TMA
descriptors, for one) gets it by calling the allocator set here with the
size and alignment in bytes and the launch's stream; it returns an object
with ``data_ptr()`` that must stay alive until the launch is over. The
default, :class:`NullAllocator`, refuses. No Kiln kernel needs such memory
today (Kiln's in-kernel tensor descriptors are built from masked loads and
stores), so the setting is recorded and read back (:func:`get_allocator`),
and :func:`allocate` is where a backend that needs scratch would call it.

The setting is a context variable, as in Triton: each thread (and asyncio
task) starts with the default and sees only what it set itself.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Optional, Protocol

__all__ = ["Allocator", "Buffer", "NullAllocator", "allocate", "get_allocator", "set_allocator"]


class Buffer(Protocol):
    """What an allocator returns: memory that has an address."""

    def data_ptr(self) -> int:
        ...


class Allocator(Protocol):
    """``allocator(size, alignment, stream) -> Buffer``: ``size`` and
    ``alignment`` in bytes, ``stream`` the launch's stream handle (None
    where the backend has no streams)."""

    def __call__(self, size: int, alignment: int, stream: Optional[int]) -> Buffer:
        ...


class NullAllocator:
    """The default allocator: refuses, telling how to set one."""

    def __call__(self, size: int, alignment: int, stream: Optional[int]) -> Buffer:
        raise RuntimeError("Kernel requires a runtime memory allocation, but no allocator was set. "
                           "Use triton.set_allocator (kiln.set_allocator) to specify an allocator.")


_allocator: ContextVar[Allocator] = ContextVar("kiln_allocator", default=NullAllocator())


def set_allocator(allocator: Allocator) -> None:
    """Sets the allocator of launches that need memory (``triton.set_allocator``).

    Raises:
        TypeError: when ``allocator`` is not callable.
    """
    if not callable(allocator):
        raise TypeError(f"set_allocator expects a callable (size, alignment, stream) -> buffer, got "
                        f"{type(allocator).__name__}")
    _allocator.set(allocator)


def get_allocator() -> Allocator:
    """The allocator set in this context (a :class:`NullAllocator` if none)."""
    return _allocator.get()


def allocate(size: int, alignment: int, stream: Optional[int]) -> Buffer:
    """Memory from the current allocator, checked to have an address aligned
    to ``alignment``.

    Raises:
        RuntimeError: from :class:`NullAllocator` when no allocator is set.
        TypeError: when the allocator's result has no ``data_ptr()``.
        ValueError: when its address is not aligned as asked.
    """
    buffer = get_allocator()(size, alignment, stream)
    data_ptr = getattr(buffer, "data_ptr", None)
    if not callable(data_ptr):
        raise TypeError(f"the allocator returned {type(buffer).__name__}, which has no data_ptr()")
    address = data_ptr()
    if alignment > 0 and address % alignment:
        raise ValueError(f"the allocator returned address {address:#x}, not aligned to {alignment} bytes")
    return buffer
