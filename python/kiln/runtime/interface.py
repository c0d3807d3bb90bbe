"""Triton's kernel-object protocol (``triton.KernelInterface``) and its
``MockTensor``, for code written against Triton's runtime classes."""

from __future__ import annotations

import functools
from typing import Any, Callable, Generic, Optional, Sequence, TypeVar

__all__ = ["KernelInterface", "MockTensor"]

T = TypeVar("T")


class KernelInterface(Generic[T]):
    """What every launchable kernel object offers (``triton.KernelInterface``):
    ``kernel[grid](*args, **kwargs)`` is ``kernel.run(*args, grid=grid,
    warmup=False, **kwargs)``.

    :class:`kiln.JITFunction`, :class:`kiln.Autotuner` and
    :class:`kiln.Heuristics` are KernelInterfaces; a Triton program's own
    kernel wrapper that subclasses it defines ``run``."""

    run: Callable[..., Any]

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        """``kernel[grid]``: a launcher taking the kernel's arguments."""
        return functools.partial(self.run, grid=grid, warmup=False)


class MockTensor:
    """A tensor with a dtype and a shape but no memory
    (``triton.MockTensor``): compiling a kernel with
    ``kernel.warmup(MockTensor(torch.float32), ..., grid=...)`` needs only
    the element types, not data.

    It is placed on the active driver's device (the GPU, or the CPU for the
    CPU backend) unless ``device`` says otherwise, so a warmup compiles for
    the target real tensors would run on. Its address is 0: it must never
    be launched on."""

    def __init__(self, dtype: Any, shape: Optional[Sequence[int]] = None, device: Any = None) -> None:
        self.dtype = dtype
        self.shape = list(shape) if shape is not None else [1]
        if device is None:
            from kiln.runtime import driver

            device = driver.active.get_active_torch_device()
        self.device = device

    @staticmethod
    def wrap_dtype(arg: Any) -> Any:
        """``arg`` as a MockTensor when it is a torch dtype, else ``arg``
        (so that dtypes can stand for tensors in a warmup's arguments)."""
        if arg.__class__.__name__ == "dtype" and arg.__class__.__module__ == "torch":
            return MockTensor(arg)
        return arg

    def stride(self) -> tuple[int, ...]:
        """Row-major strides of ``shape``, in elements."""
        strides = [1] * len(self.shape)
        for axis in range(len(self.shape) - 2, -1, -1):
            strides[axis] = strides[axis + 1] * self.shape[axis + 1]
        return tuple(strides)

    @staticmethod
    def data_ptr() -> int:
        return 0

    def __repr__(self) -> str:
        return f"MockTensor({self.dtype}, shape={self.shape}, device={self.device})"
