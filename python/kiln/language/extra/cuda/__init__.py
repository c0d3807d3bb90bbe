"""NVIDIA-specific kernel functions, as ``triton.language.extra.cuda``:
``kl.extra.cuda.smid()``, ``kl.extra.cuda.globaltimer()``,
``kl.extra.cuda.num_warps()``, ...

``libdevice`` here is the same module as ``kiln.language.extra.libdevice``.
The special-register reads (``globaltimer``, ``smid``) are inline PTX, so
they compile for NVIDIA targets only; on the CPU backend they are a
``CompilationError`` at the call.
"""

from __future__ import annotations

import sys
from typing import Any

from kiln.errors import CompilationError
from kiln.language.compile_time import KernelLaunchShape, current_launch_shape
from kiln.language.core import builtin, constexpr, int32, int64, tensor
from kiln.language.extra import libdevice
from kiln.runtime.driver import nvidia_capability

__all__ = ["libdevice", "globaltimer", "smid", "num_threads", "num_warps", "gdc_wait", "gdc_launch_dependents"]

# `import triton.language.extra.cuda.libdevice` names the same module.
sys.modules.setdefault(__name__ + ".libdevice", libdevice)


def _launch_shape(what: str) -> KernelLaunchShape:
    shape = current_launch_shape.get()
    if shape is None:
        raise CompilationError(f"kl.extra.cuda.{what}() can only be called while a kernel is being compiled")
    return shape


def _gpu_only(what: str) -> KernelLaunchShape:
    shape = _launch_shape(what)
    if shape.target == "cpu":
        raise CompilationError(f"kl.extra.cuda.{what}() reads an NVIDIA GPU register (inline PTX); "
                               "the CPU backend cannot run it")
    return shape


def _read_register(register: str, result: Any, constraint: str, is_pure: bool, builder: Any) -> tensor:
    from kiln.language import semantic
    width = result.primitive_bitwidth
    return semantic.inline_asm_elementwise(f"mov.u{width} $0, %{register};", f"={constraint}", [], result,
                                           is_pure, 1, builder)


@builtin
def globaltimer(_builder: Any = None) -> tensor:
    """The GPU's global nanosecond timer (PTX ``%globaltimer``), an int64.
    Each call reads it anew: two reads are never merged."""
    _gpu_only("globaltimer")
    return _read_register("globaltimer", int64, "l", False, _builder)


@builtin
def smid(_builder: Any = None) -> tensor:
    """The index of the streaming multiprocessor running this program (PTX
    ``%smid``), an int32."""
    _gpu_only("smid")
    return _read_register("smid", int32, "r", True, _builder)


@builtin
def num_warps(_builder: Any = None) -> constexpr:
    """The warps per program of the kernel being compiled, a constexpr."""
    return constexpr(_launch_shape("num_warps").num_warps)


@builtin
def num_threads(_builder: Any = None) -> constexpr:
    """The threads per program of the kernel being compiled (warps times
    threads per warp), a constexpr."""
    shape = _launch_shape("num_threads")
    return constexpr(shape.num_warps * shape.threads_per_warp)


def _has_grid_dependency_control(target: str) -> bool:
    """Whether `target` (an NVIDIA chip, "sm_90a") has PTX griddepcontrol:
    compute capability 9.0 and later."""
    capability = nvidia_capability(target)
    return capability is not None and capability >= 90


def _grid_dependency_control(what: str, instruction: str, builder: Any) -> None:
    from kiln.language import semantic
    shape = _gpu_only(what)
    # Before sm_90 no launch is programmatically dependent: there is
    # nothing to wait for or release.
    if not _has_grid_dependency_control(shape.target):
        return None
    # The instruction has no output; a dummy one gives the op its result.
    semantic.inline_asm_elementwise(f"griddepcontrol.{instruction}; // $0", "=r", [], int32, False, 1, builder)
    return None


@builtin
def gdc_wait(_builder: Any = None) -> None:
    """Waits until the grids this one depends on (programmatic dependent
    launch) have completed and their memory is visible (PTX
    ``griddepcontrol.wait``). Without such a launch it returns at once."""
    return _grid_dependency_control("gdc_wait", "wait", _builder)


@builtin
def gdc_launch_dependents(_builder: Any = None) -> None:
    """Lets the grids that depend on this one (programmatic dependent
    launch) start before it completes (PTX
    ``griddepcontrol.launch_dependents``). Without such a launch it does
    nothing."""
    return _grid_dependency_control("gdc_launch_dependents", "launch_dependents", _builder)
