"""Which backend runs a launch, and the runtime's environment settings.

The rules, in order of precedence (see docs/design/cpu_backend.md):

1. ``kernel[grid](..., backend="cpu" | "cuda")``, the launch option;
2. ``kiln.jit(backend=...)``, the kernel's option;
3. the ``KILN_BACKEND`` environment variable;
4. otherwise the arrays decide: CPU arrays run on the CPU backend, CUDA
   tensors on the GPU; a launch with both is a ``ValueError`` naming one
   argument of each kind; a launch with no arrays at all runs on the GPU when
   a CUDA device is usable, else on the CPU.

Names are looked up in the backend registry (:mod:`kiln.backends`), so
``"nvidia"`` is another name of ``"cuda"`` and any registered backend can be
forced by name; the array-driven default (rule 4) knows only the CPU and
CUDA.

The environment is read on every launch (so a test or a user can change it
between launches), through :func:`environment`, which costs tens of
nanoseconds rather than the half microsecond of ``os.environ.get``.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from typing import Any, Iterable, Iterator, Optional

from kiln import backends as _registry
from kiln.runtime.arrays import ArrayKind, array_kind

__all__ = [
    "CPU",
    "CUDA",
    "BACKEND_ENV",
    "CHECKED_ENV",
    "THREADS_ENV",
    "DEBUG_ENV",
    "CPU_TARGET_ENV",
    "FP_FUSION_ENV",
    "OVERRIDE_ARCH_ENV",
    "POINTER_TENSOR_MAPS_ENV",
    "pointer_tensor_maps",
    "override_arch",
    "default_fp_fusion",
    "environment",
    "normalize",
    "parse_checked",
    "parse_all_checked",
    "ALL_CHECKED_ENV",
    "cpu_target",
    "parse_flag",
    "parse_threads",
    "array_device",
    "choose",
    "META",
    "meta_tensor_error",
]

CPU = "cpu"
CUDA = "cuda"
# Where array_device puts a torch "meta" tensor: a shape and a dtype, no data.
META = "meta"

BACKEND_ENV = "KILN_BACKEND"
CHECKED_ENV = "KILN_CPU_CHECKED"  # the CPU backend's own name, kept as an alias
ALL_CHECKED_ENV = "KILN_CHECKED"  # checked mode on every backend
THREADS_ENV = "KILN_CPU_THREADS"
DEBUG_ENV = "KILN_DEBUG"
CPU_TARGET_ENV = "KILN_CPU_TARGET"
FP_FUSION_ENV = "TRITON_DEFAULT_FP_FUSION"  # Triton's knobs.language.default_fp_fusion
OVERRIDE_ARCH_ENV = "TRITON_OVERRIDE_ARCH"  # Triton's knobs.runtime.override_arch
#: Whether loops' loads through pointers to rows of a parameter get tensor
#: maps, the loop versioned on a check in the program: TMA copies on sm_90a
#: (on unless set false), read as the TMA unit reads them on the CPU (off
#: unless set true; a way to test them without a GPU). See
#: docs/design/pointer_tensor_maps.md. Read when a kernel is compiled.
POINTER_TENSOR_MAPS_ENV = "KILN_POINTER_TENSOR_MAPS"

# os.environ keeps its contents in ``_data`` (bytes keys on POSIX) and
# updates it on every assignment, so reading it directly is both current and
# ~25x cheaper than os.environ.get, which encodes and decodes on each call.
_ENV_DATA = getattr(os.environ, "_data", None)
if os.name == "posix" and isinstance(_ENV_DATA, dict):
    (_BACKEND_KEY, _CHECKED_KEY, _THREADS_KEY, _DEBUG_KEY, _ALL_CHECKED_KEY, _CPU_TARGET_KEY, _FP_FUSION_KEY,
     _OVERRIDE_ARCH_KEY) = (name.encode() for name in (BACKEND_ENV, CHECKED_ENV, THREADS_ENV, DEBUG_ENV, ALL_CHECKED_ENV,
                                                       CPU_TARGET_ENV, FP_FUSION_ENV, OVERRIDE_ARCH_ENV))

    def environment() -> tuple[Optional[bytes], ...]:
        """The raw (``KILN_BACKEND``, ``KILN_CPU_CHECKED``, ``KILN_DEBUG``, ``KILN_CHECKED``, ``KILN_CPU_TARGET``,
        ``TRITON_DEFAULT_FP_FUSION``, ``TRITON_OVERRIDE_ARCH``) values, or None when unset.

        They are part of every launch's cache key; :func:`normalize`,
        :func:`parse_checked`, :func:`cpu_target`, :func:`default_fp_fusion` and :func:`override_arch`
        interpret them on a cache miss.
        """
        return (_ENV_DATA.get(_BACKEND_KEY), _ENV_DATA.get(_CHECKED_KEY), _ENV_DATA.get(_DEBUG_KEY),
                _ENV_DATA.get(_ALL_CHECKED_KEY), _ENV_DATA.get(_CPU_TARGET_KEY), _ENV_DATA.get(_FP_FUSION_KEY),
                _ENV_DATA.get(_OVERRIDE_ARCH_KEY))

    def threads_setting() -> Optional[bytes]:
        """The raw ``KILN_CPU_THREADS`` value, or None when unset."""
        return _ENV_DATA.get(_THREADS_KEY)
else:  # another platform or Python: the portable, slower way

    def environment() -> tuple[Optional[str], ...]:  # type: ignore[misc]
        """The raw (``KILN_BACKEND``, ``KILN_CPU_CHECKED``, ``KILN_DEBUG``, ``KILN_CHECKED``, ``KILN_CPU_TARGET``,
        ``TRITON_DEFAULT_FP_FUSION``, ``TRITON_OVERRIDE_ARCH``) values, or None when unset."""
        return (os.environ.get(BACKEND_ENV), os.environ.get(CHECKED_ENV), os.environ.get(DEBUG_ENV),
                os.environ.get(ALL_CHECKED_ENV), os.environ.get(CPU_TARGET_ENV), os.environ.get(FP_FUSION_ENV),
                os.environ.get(OVERRIDE_ARCH_ENV))

    def threads_setting() -> Optional[str]:  # type: ignore[misc]
        """The raw ``KILN_CPU_THREADS`` value, or None when unset."""
        return os.environ.get(THREADS_ENV)


def pointer_tensor_maps() -> Optional[bool]:
    """What ``KILN_POINTER_TENSOR_MAPS`` says of tensor maps on loops'
    pointer loads, None when it is unset or empty (read when a kernel
    compiles, not part of a launch's key).

    Raises:
        ValueError: for a value that is not a recognizable boolean.
    """
    raw = os.environ.get(POINTER_TENSOR_MAPS_ENV)
    return None if raw is None or raw == "" else parse_flag(raw, POINTER_TENSOR_MAPS_ENV)


def override_arch(environment: tuple) -> Optional[str]:
    """The architecture ``TRITON_OVERRIDE_ARCH`` (``knobs.runtime.override_arch``)
    names for kernels launched without ``arch=``, or None when unset."""
    raw = environment[6] if len(environment) > 6 else None
    return None if raw is None or raw in ("", b"") else _text(raw)


def default_fp_fusion(environment: tuple) -> bool:
    """Whether kernels may fuse a multiply and an add into an fma when the
    launch does not say (``enable_fp_fusion``): ``TRITON_DEFAULT_FP_FUSION``
    (``knobs.language.default_fp_fusion``), on when unset."""
    raw = environment[5] if len(environment) > 5 else None
    return True if raw is None or raw in ("", b"") else parse_flag(raw, FP_FUSION_ENV)


def _text(value: Any) -> Any:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def normalize(name: Any, origin: str) -> Optional[str]:
    """The canonical name (``"cpu"``, ``"cuda"``, ...) of a registered
    backend's name or alias, None for None or "".

    ``origin`` says where the name came from, for the error message.

    Raises:
        ValueError: for a name no backend answers to.
    """
    name = _text(name)
    if name is None or name == "":
        return None
    try:
        return _registry.get_backend(name).name
    except ValueError as error:
        raise ValueError(f"{origin}: {error}") from None


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def parse_flag(value: Any, variable: str) -> bool:
    """Interprets the boolean environment variable ``variable`` whose raw
    value is ``value`` (None when unset, which is False).

    Raises:
        ValueError: for a value that is not a recognizable boolean.
    """
    value = _text(value)
    if value is None:
        return False
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"{variable}={value!r} is not a boolean; use 1 or 0")


def parse_all_checked(environment: tuple) -> bool:
    """Interprets ``KILN_CHECKED`` in a tuple of :func:`environment`'s
    (checked mode on every backend; a shorter tuple has it unset).

    Raises:
        ValueError: for a value that is not a recognizable boolean.
    """
    return len(environment) > 3 and parse_flag(environment[3], ALL_CHECKED_ENV)


def parse_checked(value: Any) -> bool:
    """Interprets ``KILN_CPU_CHECKED`` (None when unset), the CPU backend's
    alias of ``KILN_CHECKED``.

    Raises:
        ValueError: for a value that is not a recognizable boolean.
    """
    return parse_flag(value, CHECKED_ENV)


def cpu_target(value: Any) -> str:
    """The CPU backend's target specification from the raw ``KILN_CPU_TARGET``
    value: ``"host"`` when unset or empty, else the value with the spaces
    around its comma-separated words removed (it is parsed and checked by
    the backend, see docs/design/cpu_backend.md)."""
    text = _text(value)
    if text is None or not text.strip():
        return "host"
    return ",".join(word.strip() for word in text.split(","))


_THREADS_CACHE: dict[Any, int] = {}


def parse_threads(value: Any, origin: str) -> int:
    """The CPU thread count from ``num_threads=`` or ``KILN_CPU_THREADS``.

    0 (or an unset variable) means every core. Memoized, because the
    environment variable is read on every launch.

    Raises:
        ValueError: for a negative number or something that is not an int.
    """
    try:
        return _THREADS_CACHE[value]
    except (KeyError, TypeError):
        pass
    text = _text(value)
    if text is None:
        count = 0
    elif isinstance(text, int) and not isinstance(text, bool):
        count = text
    elif isinstance(text, str) and text.strip().lstrip("+").isdigit():
        count = int(text)
    elif isinstance(text, str) and text.strip() == "":
        count = 0
    else:
        raise ValueError(f"{origin} must be a non-negative int (0: every core), got {text!r}")
    if count < 0:
        raise ValueError(f"{origin} must be a non-negative int (0: every core), got {count}")
    if isinstance(value, (bytes, str)) or value is None:
        _THREADS_CACHE[value] = count
    return count


#: The most registers a thread may have on NVIDIA GPUs (sm_50 and later).
MAX_REGISTERS_PER_THREAD = 255


def check_maxnreg(maxnreg: Any, who: str) -> None:
    """Raises ValueError unless ``maxnreg`` is None or a register count a
    thread can have (Triton's ``maxnreg`` launch and config option)."""
    if maxnreg is None:
        return
    if (not isinstance(maxnreg, int) or isinstance(maxnreg, bool)
            or not 1 <= maxnreg <= MAX_REGISTERS_PER_THREAD):
        raise ValueError(f"{who}: maxnreg must be None or an int from 1 to {MAX_REGISTERS_PER_THREAD}, "
                         f"got {maxnreg!r}")


def check_num_ctas(num_ctas: Any, who: str) -> None:
    """Raises ValueError unless ``num_ctas`` is 1 (or None, the default).

    Triton's ``num_ctas`` makes each program a thread-block cluster of that
    many CTAs sharing the block (Hopper and later). Kiln does not launch
    clusters yet, so any other count is refused rather than ignored: on every
    backend, so that a program behaves the same on the CPU and the GPU (see
    docs/design/runtime.md)."""
    if num_ctas is None or (num_ctas.__class__ is int and num_ctas == 1):
        return
    if not isinstance(num_ctas, int) or isinstance(num_ctas, bool) or num_ctas < 1:
        raise ValueError(f"{who}: num_ctas must be a positive int, got {num_ctas!r}")
    raise ValueError(f"{who}: num_ctas={num_ctas}: thread-block clusters are not supported yet; use num_ctas=1")


def array_device(value: Any) -> Optional[str]:
    """Where an array argument lives: ``"cpu"``, ``"cuda:N"``, or None if
    ``value`` is not an array.

    Recognizes torch tensors and other objects with ``data_ptr()`` and
    ``dtype`` (by ``get_device()`` or ``device``), numpy arrays and other
    objects with ``__array_interface__`` (always host memory), and DLPack
    producers (by ``__dlpack_device__()``). An object with ``data_ptr()``
    whose device cannot be told is taken to be a CUDA array, as before the
    CPU backend existed.
    """
    cls = value.__class__
    kind = array_kind(cls)
    if kind is None or kind == ArrayKind.TORCH and not hasattr(value, "dtype"):
        return None
    if kind == ArrayKind.TORCH:
        if getattr(value, "is_meta", False):
            return META
        get_device = getattr(value, "get_device", None)
        if get_device is not None:
            index = get_device()
        else:
            device = getattr(value, "device", None)
            if device is None:
                return CUDA
            if getattr(device, "type", None) == "cpu" or device == "cpu":
                return CPU
            index = getattr(device, "index", None)
        if index is None:
            return CUDA
        return CPU if index < 0 else f"cuda:{index}"
    if kind == ArrayKind.CUDA_INTERFACE:
        # The protocol holds no device: ask DLPack (CuPy), else a device
        # attribute with an integer id or index (CuPy, Numba).
        if not hasattr(cls, "__dlpack_device__"):
            device = getattr(value, "device", None)
            index = getattr(device, "id", getattr(device, "index", None))
            return f"cuda:{index}" if isinstance(index, int) and index >= 0 else CUDA
    elif kind != ArrayKind.DLPACK:  # numpy arrays and __array_interface__ describe host memory
        return CPU
    if hasattr(cls, "__dlpack_device__"):
        device_type, index = value.__dlpack_device__()
        if int(device_type) == _DLPACK_CPU:
            return CPU
        if int(device_type) in (_DLPACK_CUDA, _DLPACK_CUDA_HOST, _DLPACK_CUDA_MANAGED):
            return f"cuda:{index}"
        return f"dlpack device type {int(device_type)}:{index}"
    return CPU  # DLPack without __dlpack_device__ predates devices other than the CPU


# DLPack's DLDeviceType values (dlpack.h).
_DLPACK_CPU = 1
_DLPACK_CUDA = 2
_DLPACK_CUDA_HOST = 3
_DLPACK_CUDA_MANAGED = 13


def meta_tensor_error(kernel_name: str, name: str) -> ValueError:
    """The error for a meta tensor passed as argument ``name``: every
    backend refuses one (its data pointer is 0, so a launch would fault)."""
    return ValueError(f"kernel {kernel_name}: argument '{name}' is a tensor on the 'meta' device, which has no "
                      f"data; pass a tensor on the CPU or a GPU")


def choose(kernel_name: str, names: Iterable[str], values: Iterable[Any], forced: Optional[str]) -> str:
    """The backend of a launch whose runtime arguments are ``names``/``values``.

    ``forced`` is the normalized override (launch option, kernel option or
    environment), or None. A forced backend is returned as is: the backend's
    own argument checks then report arrays on the wrong device with its own
    message. The CUDA backend is asked whether it is available only when no
    argument is an array.

    Raises:
        ValueError: when CPU arrays and CUDA arrays are mixed.
    """
    if forced is not None:
        return forced
    first_cpu = first_cuda = None
    for name, value in zip(names, values):
        device = array_device(value)
        if device is None:
            continue
        if device == META:
            raise meta_tensor_error(kernel_name, name)
        if device == CPU:
            first_cpu = first_cpu or name
        else:
            first_cuda = first_cuda or (name, device)
        if first_cpu and first_cuda:
            cuda_name, cuda_device = first_cuda
            raise ValueError(f"kernel {kernel_name}: argument '{first_cpu}' is on the CPU but argument "
                             f"'{cuda_name}' is on {cuda_device}; the arrays of one launch must all be on the CPU "
                             f"or all on the GPU")
    if first_cpu:
        return CPU
    if first_cuda:
        return CUDA
    return CUDA if _registry.get_backend(CUDA).is_available() else CPU


def seconds_setting(name: str, default: float, allow_zero: bool, complaint: str) -> float:
    """A duration in seconds from the environment variable ``name``:
    ``default`` when unset or empty, else a finite number, positive (or 0
    when ``allow_zero``).

    Raises:
        ValueError: ``"{name}={text!r} {complaint}"`` for anything else.
    """
    text = os.environ.get(name)
    if not text or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= 0 if allow_zero else value > 0) or value == float("inf"):
        raise ValueError(f"{name}={text!r} {complaint}")
    return value


def user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel of the first caller outside the kiln
    package: a warning about a launch names the user's launch line, however
    many of Kiln's frames (autotuner, heuristics, launch wrappers) lie between."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = sys._getframe(1)  # the caller of this function: level 1 for warn
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame = frame.f_back
        level += 1
    return level


def native_launch_environment() -> tuple[Optional[dict], tuple]:
    """What the native launch path (``kiln._C.launch``) reads on every call:
    os.environ's data dict and the keys of the variables a launch depends on
    (those of :func:`environment`, then ``KILN_CPU_THREADS``); (None, ())
    where that dict is not available, which turns the native path off."""
    if os.name != "posix" or not isinstance(_ENV_DATA, dict):
        return None, ()
    return _ENV_DATA, (_BACKEND_KEY, _CHECKED_KEY, _DEBUG_KEY, _ALL_CHECKED_KEY, _CPU_TARGET_KEY, _FP_FUSION_KEY,
                       _OVERRIDE_ARCH_KEY, _THREADS_KEY)


#: Set while a function that launches kernels runs only to find its outputs'
#: shapes (kiln.torch's fake implementations, during torch.compile's
#: tracing): launches then do nothing.
_LAUNCHES_SKIPPED: contextvars.ContextVar[bool] = contextvars.ContextVar("kiln_launches_skipped", default=False)


def launches_skipped() -> bool:
    """Whether kernel launches are skipped here (see :func:`skipping_launches`)."""
    return _LAUNCHES_SKIPPED.get()


def launches_skipped_variable() -> contextvars.ContextVar[bool]:
    """The context variable behind :func:`launches_skipped`, which the
    native launch path reads itself."""
    return _LAUNCHES_SKIPPED


@contextlib.contextmanager
def skipping_launches() -> Iterator[None]:
    """Within this block (this thread or task), ``kernel[grid](...)`` checks
    nothing, compiles nothing and launches nothing, and returns None."""
    token = _LAUNCHES_SKIPPED.set(True)
    try:
        yield
    finally:
        _LAUNCHES_SKIPPED.reset(token)
