"""The active CUDA driver, as the JIT sees it.

Wraps :mod:`kiln._C.driver` (libcuda opened at run time) and torch's notion of
the current device and stream. The functions :func:`current_device` and
:func:`current_stream` run on every launch: the first call resolves the
fastest source (torch's raw C entry points when torch has CUDA) and rebinds
the module-level names to it, so later calls are a single C call.

Nothing here touches the GPU at import time, so ``import kiln`` works on
machines with no GPU and no driver; asking for a device there raises
``RuntimeError("no CUDA device found: ...")``.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from kiln.errors import OutOfResources

try:
    from kiln._C import driver as _cdriver

    _IMPORT_ERROR = ""
except ImportError as error:  # the extension is not built
    _cdriver = None
    _IMPORT_ERROR = f"the kiln._C extension could not be imported ({error})"

__all__ = [
    "is_available",
    "unavailable_reason",
    "check_available",
    "device_count",
    "current_device",
    "current_stream",
    "get_device_properties",
    "get_device_capability",
    "get_target",
    "nvidia_capability",
    "load_binary",
    "encode_tensor_map",
    "launch",
    "synchronize",
    "reset",
    "GPUTarget",
    "ActiveDriver",
    "active",
]


def is_available() -> bool:
    """True when libcuda was opened and sees at least one device."""
    return _cdriver is not None and _cdriver.is_available()


def unavailable_reason() -> str:
    """Why :func:`is_available` is False ("" when it is True)."""
    if _cdriver is None:
        return _IMPORT_ERROR
    return _cdriver.unavailable_reason()


def check_available() -> None:
    """Raises ``RuntimeError("no CUDA device found: <reason>")`` without a GPU."""
    if not is_available():
        raise RuntimeError(f"no CUDA device found: {unavailable_reason()}")


def device_count() -> int:
    """The number of CUDA devices (0 when the driver is unavailable)."""
    return _cdriver.device_count() if _cdriver is not None else 0


def _torch_with_cuda() -> Any:
    """torch, if it is installed and built with CUDA that sees a device."""
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch  # noqa: F811 - only imported when a launch needs it
        except ImportError:
            return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:  # a broken CUDA install in torch: fall back to the driver
        return None


def _activate() -> None:
    """Binds current_device/current_stream to their fastest implementation."""
    global current_device, current_stream
    check_available()
    torch = _torch_with_cuda()
    if torch is not None:
        torch.cuda.init()  # torch's lazy CUDA init; cheap when already done
        get_device: Callable[[], int] = torch._C._cuda_getDevice
        raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw_stream is None:  # older torch: the slower public API

            def raw_stream(device: int) -> int:
                return torch.cuda.current_stream(device).cuda_stream

        current_device = get_device
        current_stream = raw_stream
        return

    # No torch (or a CPU-only torch): the driver's current context decides,
    # and work goes to the default stream.
    def driver_device() -> int:
        device = _cdriver.current_device()
        _cdriver.set_current_device(device)
        return device

    def default_stream(device: int) -> int:
        return 0

    current_device = driver_device
    current_stream = default_stream


def current_device() -> int:
    """The index of the current CUDA device (torch's current device)."""
    _activate()
    return current_device()


def current_stream(device: int) -> int:
    """The raw handle of the current stream on ``device`` (torch's)."""
    _activate()
    return current_stream(device)


_UNRESOLVED = (current_device, current_stream)


def reset() -> None:
    """Forgets the resolved device and stream sources and cached properties,
    so the next launch looks again (for tests)."""
    global current_device, current_stream
    current_device, current_stream = _UNRESOLVED
    _PROPERTIES.clear()
    _LAUNCH_PROPERTIES.clear()


_PROPERTIES: dict[int, dict] = {}
#: Each device's properties but its clock rates: what a launch needs.
_LAUNCH_PROPERTIES: dict[int, dict] = {}


def get_device_properties(device: int) -> dict:
    """The device's properties (cached): name, capability, multiprocessor_count,
    max_shared_mem (opt-in bytes per block), warp_size, sm_clock_rate, ..."""
    properties = _PROPERTIES.get(device)
    if properties is None:
        check_available()
        properties = _cdriver.get_device_properties(device)
        _PROPERTIES[device] = properties
    return properties


def _launch_properties(device: int) -> dict:
    """:func:`get_device_properties` without the clock rates, which the
    driver takes about a millisecond to tell and no compile or launch needs
    (cached)."""
    properties = _PROPERTIES.get(device) or _LAUNCH_PROPERTIES.get(device)
    if properties is None:
        check_available()
        properties = _cdriver.get_device_properties(device, clock_rates=False)
        _LAUNCH_PROPERTIES[device] = properties
    return properties


def get_device_capability(device: int) -> tuple[int, int]:
    """(major, minor) compute capability of ``device``."""
    return tuple(_launch_properties(device)["capability"])


def get_target(device: int) -> str:
    """The compiler target for ``device``: "sm_90a" on Hopper, else "sm_XY"."""
    return target_for_capability(*get_device_capability(device))


def target_for_capability(major: int, minor: int) -> str:
    """The compiler target for a chip of compute capability major.minor:
    "sm_90a" on Hopper, else "sm_XY"."""
    if (major, minor) == (9, 0):
        # Hopper's wgmma and TMA instructions exist only on the "a" target.
        return "sm_90a"
    return f"sm_{major}{minor}"


#: An NVIDIA chip name as get_target writes it: "sm_80", "sm_90a".
_NVIDIA_CHIP = re.compile(r"sm_(\d+)a?")


def nvidia_capability(target: str) -> Optional[int]:
    """The compute capability of an NVIDIA chip name as one number (90 for
    "sm_90a"), or None if ``target`` is not one."""
    chip = _NVIDIA_CHIP.fullmatch(target) if isinstance(target, str) else None
    return int(chip.group(1)) if chip else None


def load_binary(name: str, cubin: bytes | str, shared: int, device: int) -> tuple[int, int, int, int]:
    """Loads a cubin (or PTX text) on ``device``.

    Returns (module_handle, function_handle, n_regs, n_spills).
    """
    check_available()
    limit = _launch_properties(device).get("max_shared_mem")
    if limit is not None and shared > limit:
        raise OutOfResources(shared, limit, f"shared memory (bytes per block on cuda:{device})")
    return _cdriver.load_binary(name, cubin, shared, device)


def launch(grid_x: int, grid_y: int, grid_z: int, num_warps: int, shared_mem: int, stream: int,
           function: int, arg_codes: str, args: tuple) -> None:
    """Launches a loaded kernel (see python/src/driver.cc for ``arg_codes``).

    The JIT calls :mod:`kiln._C.driver`'s launch directly; this wrapper is for
    other callers and for tests to replace.
    """
    if _cdriver is None:
        check_available()
    _cdriver.launch(grid_x, grid_y, grid_z, num_warps, shared_mem, stream, function, arg_codes, args)


if _cdriver is not None:
    # The JIT's hot path calls this name: the C function itself, no wrapper.
    launch = _cdriver.launch  # noqa: F811


def encode_tensor_map(address: int, shape: list[int], stride_bytes: list[int], box: list[int], element_bytes: int,
                      bfloat16: bool, swizzle_bytes: int, nan_fill: bool) -> bytes:
    """The 128 bytes of a tiled TMA tensor map over a row-major tensor
    (dimensions outermost first), for a kernel's tensor-map parameter."""
    check_available()
    return _cdriver.encode_tensor_map(address, shape, stride_bytes, box, element_bytes, bfloat16, swizzle_bytes,
                                      nan_fill)


def synchronize() -> None:
    """Waits for all work on the current device."""
    check_available()
    _cdriver.synchronize()


# -- Triton's driver object -------------------------------------------------------


@dataclass(frozen=True)
class GPUTarget:
    """A compile target, as Triton's ``GPUTarget``.

    Attributes:
        backend: "cuda", or "cpu" for Kiln's CPU backend.
        arch: the compute capability as an int (90 for sm_90) on CUDA;
            "host" on the CPU.
        warp_size: threads per warp (1 on the CPU, whose programs are not
            split into threads).
    """

    backend: str
    arch: Union[int, str]
    warp_size: int


def cpu_device_properties() -> dict:
    """What the CPU backend's "device" offers, under the GPU's keys: its
    cores as multiprocessors, one lane a warp, and as ``max_shared_mem``
    the stack of a worker thread, where a program's block temporaries
    (dot operand tiles, for instance) live."""
    import platform
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    stack = soft if soft != resource.RLIM_INFINITY and soft > 0 else 8 << 20
    return {"name": platform.processor() or platform.machine(), "capability": None,
            "multiprocessor_count": os.cpu_count() or 1, "max_shared_mem": stack, "warp_size": 1}


class DriverUtils:
    """``driver.active.utils``: device queries under Triton's names."""

    @staticmethod
    def get_device_properties(device: Union[int, str]) -> dict:
        """:func:`get_device_properties`, with Triton's ``warpSize`` key as
        well; for ``"cpu"`` (the CPU backend's current device),
        :func:`cpu_device_properties`.

        Raises:
            RuntimeError: for a GPU index without a GPU.
        """
        properties = dict(cpu_device_properties() if device == "cpu" else get_device_properties(device))
        properties["warpSize"] = properties["warp_size"]
        return properties


class ActiveDriver:
    """``kiln.runtime.driver.active``, as ``triton.runtime.driver.active``.

    It is the CUDA driver when a GPU is available and ``KILN_BACKEND`` does
    not ask for the CPU; otherwise the CPU backend's, whose torch device is
    the CPU: a ported script that makes its tensors on
    ``get_active_torch_device()`` then launches its kernels on the CPU
    backend; its device properties are :func:`cpu_device_properties`.
    """

    utils = DriverUtils()

    @staticmethod
    def uses_gpu() -> bool:
        """Whether kernels launched on this driver's tensors run on a GPU."""
        from kiln.runtime import launch_settings as _settings

        return _settings.normalize(_settings.environment()[0], _settings.BACKEND_ENV) != _settings.CPU and \
            is_available()

    def get_current_device(self) -> Union[int, str]:
        """The current CUDA device's index, or "cpu"."""
        return current_device() if self.uses_gpu() else "cpu"

    def get_current_stream(self, device: Optional[int] = None) -> int:
        """The raw handle of the current stream on ``device`` (the current
        device's by default); 0 on the CPU, which has no streams."""
        if not self.uses_gpu():
            return 0
        return current_stream(current_device() if device is None else device)

    def get_current_target(self) -> GPUTarget:
        """The target kernels compile for here."""
        if not self.uses_gpu():
            return GPUTarget("cpu", "host", 1)
        device = current_device()
        major, minor = get_device_capability(device)
        return GPUTarget("cuda", major * 10 + minor, _launch_properties(device)["warp_size"])

    def get_active_torch_device(self) -> Any:
        """The torch device tensors for this driver's kernels belong on."""
        import torch

        return torch.device("cuda", current_device()) if self.uses_gpu() else torch.device("cpu")

    def get_device_interface(self) -> Any:
        """torch's module for this driver's device: ``torch.cuda`` or ``torch.cpu``."""
        import torch

        return torch.cuda if self.uses_gpu() else torch.cpu


#: The driver of this machine, as ``triton.runtime.driver.active``.
active = ActiveDriver()
