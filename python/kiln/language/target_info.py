"""Queries about the target a kernel is being compiled for, as Triton's
``triton.language.target_info``.

Each query is a :class:`kiln.constexpr_function`: a kernel calls it while
it is compiled and gets a constant (``if target_info.is_cuda(): ...`` keeps
one branch). The target is the one the kernel is being compiled for
(``"cpu"`` for Kiln's CPU backend, ``"sm_90a"``, ...); outside a
compilation it is the active driver's
(``kiln.runtime.driver.active.get_current_target()``).

On Kiln's CPU backend the target is ``GPUTarget("cpu", "host", 1)``: it is
neither CUDA nor HIP, so ``is_cuda()``, ``is_hip()`` and every
``cuda_capability_geq(...)`` are False there.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator, Optional

from kiln.language.compile_time import constexpr_function
from kiln.runtime.driver import GPUTarget, nvidia_capability

__all__ = ["current_target", "cuda_capability_geq", "is_cuda", "is_hip", "is_hip_cdna3", "is_hip_cdna4"]

#: The target string of the kernel being compiled (set by the compiler).
_compile_target: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("kiln_compile_target",
                                                                               default=None)

def target_of(name: str) -> GPUTarget:
    """The ``GPUTarget`` of a Kiln target string: ``"cpu"`` is
    ``GPUTarget("cpu", "host", 1)``, ``"sm_90a"`` ``GPUTarget("cuda", 90, 32)``;
    another backend's target keeps its name as the architecture."""
    if name == "cpu":
        return GPUTarget("cpu", "host", 1)
    capability = nvidia_capability(name)
    if capability is not None:
        return GPUTarget("cuda", capability, 32)
    return GPUTarget(name, name, 1)


@contextlib.contextmanager
def compiling_for(target: str) -> Iterator[None]:
    """Makes :func:`current_target` report ``target`` (a Kiln target string)
    while the compiler generates a kernel for it."""
    token = _compile_target.set(target)
    try:
        yield
    finally:
        _compile_target.reset(token)


def current_target() -> Optional[GPUTarget]:
    """The target being compiled for; outside a compilation, the active
    driver's; None if neither is known."""
    name = _compile_target.get()
    if name is not None:
        return target_of(name)
    from kiln.runtime import driver

    try:
        return driver.active.get_current_target()
    except RuntimeError:
        return None


@constexpr_function
def is_cuda() -> bool:
    """Whether the target is an NVIDIA GPU."""
    target = current_target()
    return target is not None and target.backend == "cuda"


@constexpr_function
def cuda_capability_geq(major: int, minor: int = 0) -> bool:
    """Whether the target is an NVIDIA GPU of compute capability at least
    ``(major, minor)`` (False on any other target), e.g. to guard code that
    needs newer instructions."""
    target = current_target()
    if target is None or target.backend != "cuda":
        return False
    return int(target.arch) >= major * 10 + minor


@constexpr_function
def is_hip() -> bool:
    """Whether the target is an AMD GPU (Kiln has no such backend: False)."""
    target = current_target()
    return target is not None and target.backend == "hip"


@constexpr_function
def is_hip_cdna3() -> bool:
    """Whether the target is AMD's CDNA3 (gfx942)."""
    target = current_target()
    return target is not None and target.backend == "hip" and target.arch == "gfx942"


@constexpr_function
def is_hip_cdna4() -> bool:
    """Whether the target is AMD's CDNA4 (gfx950)."""
    target = current_target()
    return target is not None and target.backend == "hip" and target.arch == "gfx950"
