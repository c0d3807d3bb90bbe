"""Kiln's implementation of ``triton._internal_testing``: the helpers that
Triton's own test suite imports (device queries, random inputs, conversions
between numpy, torch and kernel arguments).

Under :mod:`kiln.compat`, ``import triton._internal_testing`` gives this
module.

The device queries answer for the target that
``kiln.runtime.driver.active.get_current_target()`` reports: a CUDA GPU
(``backend == "cuda"``, ``arch`` its compute capability as an int, 90 on an
H100/H200), or Kiln's CPU backend (``backend == "cpu"``, ``arch == "host"``)
when there is no GPU or ``KILN_BACKEND=cpu`` (which ``--device cpu`` sets
under ``python -m kiln.compat -m pytest``, see
:mod:`kiln.compat.pytest_plugin`). On the CPU every ``is_cuda``/``is_hip``/
``is_xpu`` query is False and ``get_arch()`` is ``"host"``. Kiln has no
interpreter: :func:`is_interpreter` is always False. See docs/compat.md.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Optional, Set, Tuple, Union

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln.errors import KilnError
from kiln.runtime.driver import GPUTarget
from kiln.runtime.jit import TensorWrapper, type_canonicalisation_dict

__all__ = [
    "int_dtypes", "uint_dtypes", "integral_dtypes", "float_dtypes", "float_dtypes_with_bfloat16", "dtypes",
    "dtypes_with_bfloat16", "torch_float8_dtypes", "torch_dtypes", "tma_dtypes",
    "is_interpreter", "get_current_target", "is_cuda", "is_ampere_or_newer", "is_hopper_or_newer", "is_hopper",
    "is_blackwell", "is_sm12x", "is_hip", "is_hip_cdna", "is_hip_cdna2", "is_hip_cdna3", "is_hip_cdna4",
    "is_hip_gfx11", "is_hip_gfx12", "is_hip_gfx1250", "get_hip_lds_size", "is_xpu", "get_arch",
    "numpy_random", "to_triton", "to_numpy", "str_to_triton_dtype", "torch_dtype_name", "unwrap_tensor",
    "supports_tma", "supports_ws", "tma_skip_msg", "requires_tma", "default_alloc_fn", "_fresh_knobs_impl",
]

# -- dtype lists (numpy / torch names) --------------------------------------------

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
#: The float8 formats torch has that kernels take as arguments.
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
#: The dtypes torch has for all of the above (torch has no uint16/32/64 arithmetic).
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
#: Element types a TMA descriptor moves (no 64-bit ones).
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})

# -- the target -------------------------------------------------------------------


def is_interpreter() -> bool:
    """Whether kernels run in Triton's interpreter: never on Kiln, which
    compiles every kernel (its CPU backend plays the interpreter's role of
    running kernels without a GPU). ``TRITON_INTERPRET`` is not read."""
    return False


def get_current_target() -> Optional[GPUTarget]:
    """The target kernels compile for now (the active driver's)."""
    return kiln.runtime.driver.active.get_current_target()


def _cuda_major() -> Optional[int]:
    """The major compute capability of the current CUDA target, or None
    when the target is not CUDA."""
    target = get_current_target()
    if target is None or target.backend != "cuda":
        return None
    return int(target.arch) // 10


def is_cuda() -> bool:
    return _cuda_major() is not None


def is_ampere_or_newer() -> bool:
    major = _cuda_major()
    return major is not None and major >= 8


def is_hopper_or_newer() -> bool:
    major = _cuda_major()
    return major is not None and major >= 9


def is_hopper() -> bool:
    return _cuda_major() == 9


def is_blackwell() -> bool:
    return _cuda_major() == 10


def is_sm12x() -> bool:
    return _cuda_major() == 12


def _hip_arch() -> Optional[str]:
    """The gfx name of the current HIP target, or None when it is not HIP
    (Kiln has no HIP backend today, so always None; the queries stay
    target-driven for when it has one)."""
    target = get_current_target()
    if target is None or target.backend != "hip":
        return None
    return str(target.arch)


def is_hip() -> bool:
    return _hip_arch() is not None


def is_hip_cdna2() -> bool:
    return _hip_arch() == "gfx90a"


def is_hip_cdna3() -> bool:
    return _hip_arch() == "gfx942"


def is_hip_cdna4() -> bool:
    return _hip_arch() == "gfx950"


def is_hip_cdna() -> bool:
    return _hip_arch() in ("gfx90a", "gfx942", "gfx950")


def is_hip_gfx11() -> bool:
    return "gfx11" in (_hip_arch() or "")


def is_hip_gfx12() -> bool:
    return "gfx12" in (_hip_arch() or "")


def is_hip_gfx1250() -> bool:
    return "gfx1250" in (_hip_arch() or "")


def get_hip_lds_size() -> int:
    """Bytes of local data share per workgroup on the HIP target."""
    return 160 * 1024 if is_hip_cdna4() else 64 * 1024


def is_xpu() -> bool:
    target = get_current_target()
    return target is not None and target.backend == "xpu"


def get_arch() -> str:
    """The target's architecture as text: "90" for sm_90, "host" on the CPU."""
    target = get_current_target()
    return "" if target is None else str(target.arch)


def supports_tma(byval_only: bool = False) -> bool:
    """Whether tensor-descriptor kernels run on the current target.

    True on the CPU backend (descriptors are plain masked loads and stores
    there, as in Triton's interpreter) and on CUDA GPUs of compute
    capability 9 or more (Hopper's TMA unit). ``byval_only`` (descriptors
    passed by value, which older CUDA toolkits also allow) gives the same
    answer: Kiln needs no toolkit feature beyond what it already requires."""
    del byval_only
    target = get_current_target()
    if target is not None and target.backend == "cpu":
        return True
    major = _cuda_major()
    return major is not None and major >= 9


def supports_ws() -> bool:
    """Whether kernels with warp-specialized loops run here: on the CPU
    backend and on CUDA GPUs of capability 9 or more, as in Triton. Kiln
    accepts ``warp_specialize=`` everywhere and specializes the loops it
    can (TMA copies on sm_90a); others run unspecialized."""
    target = get_current_target()
    if target is not None and target.backend == "cpu":
        return True
    major = _cuda_major()
    return major is not None and major >= 9


def tma_skip_msg(byval_only: bool = False) -> str:
    """Why a test that needs :func:`supports_tma` was skipped."""
    what = "TMA descriptors passed by value" if byval_only else "TMA tensor descriptors"
    return f"needs {what}: an NVIDIA GPU of compute capability 9.0 or more, or Kiln's CPU backend"


#: A pytest mark that skips a test where :func:`supports_tma` is False.
requires_tma = pytest.mark.skipif(not supports_tma(), reason=tma_skip_msg())

# -- dtypes -------------------------------------------------------------------------


def str_to_triton_dtype(name: str) -> kl.dtype:
    """The kernel-language dtype of a dtype name: torch's and numpy's
    ("int32", "bool", "bfloat16", "float8_e5m2"), the language's
    ("float8e4nv", "int1") or a signature's ("fp16", "i32").

    Raises:
        ValueError: for a name Kiln has no dtype for.
    """
    canonical = type_canonicalisation_dict.get(name)
    try:
        if canonical is None:
            raise KilnError(name)
        return kl.str_to_ty(canonical)
    except KilnError:
        raise ValueError(f"no Kiln dtype is called {name!r}") from None


def torch_dtype_name(dtype: Any) -> str:
    """The name of a kernel-language dtype (its ``name``: "int32", "fp16")
    or of a torch dtype ("float16" for ``torch.float16``).

    Raises:
        TypeError: for anything else.
    """
    if isinstance(dtype, kl.dtype):
        return dtype.name
    if type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        match = re.fullmatch(r"torch\.(\w+)", str(dtype))
        if match:
            return match.group(1)
    raise TypeError(f"not a kernel-language or torch dtype: {type(dtype).__name__}")


# -- test data ------------------------------------------------------------------------


def numpy_random(shape: Union[int, Tuple[int, ...]], dtype_str: str, rs: Optional[np.random.RandomState] = None,
                 low: Optional[int] = None, high: Optional[int] = None) -> np.ndarray:
    """A reproducible random numpy array of ``shape`` for ``dtype_str``.

    Integers are uniform in ``[low, high)`` (clipped to the type's range,
    the whole range by default) and never 0, so that division tests never
    divide by zero; floats are standard normal (``bfloat16``: float32 values
    that bfloat16 holds exactly); float8 types give int8 bit patterns of
    moderate values (20 to 39); ``bool`` is a fair coin. ``rs`` defaults to
    a fresh ``RandomState(17)``: pass one to draw different arrays.

    Raises:
        ValueError: for an unknown ``dtype_str``.
    """
    shape = (shape, ) if isinstance(shape, int) else tuple(shape)
    rs = np.random.RandomState(17) if rs is None else rs
    if dtype_str in integral_dtypes:
        info = np.iinfo(dtype_str)
        lo = info.min if low is None else max(low, info.min)
        hi = info.max if high is None else min(high, info.max)
        values = rs.randint(lo, hi, shape, dtype=dtype_str)
        values[values == 0] = 1
        return values
    if dtype_str and "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        # Keep the top 16 bits of each float32: exactly a bfloat16 value.
        bits = rs.normal(0, 1, shape).astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
        return bits.view(np.float32)
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise ValueError(f"numpy_random: unknown dtype {dtype_str!r}")


def to_triton(x: np.ndarray, device: Any, dst_type: Optional[str] = None) -> Any:
    """A kernel argument on ``device`` holding numpy array ``x``.

    Unsigned arrays become their signed torch counterpart reinterpreted
    (:func:`kiln.reinterpret`) as the unsigned kernel type (torch lacks most
    unsigned types); with a
    float8 ``dst_type``, ``x`` holds the bytes and is reinterpreted as that
    type; float32 with ``dst_type="bfloat16"`` is converted; anything else
    is ``torch.tensor(x)``."""
    import torch

    name = x.dtype.name
    if name in uint_dtypes:
        signed = x.astype(name[1:])  # same bits, signed type
        return kiln.reinterpret(torch.tensor(signed, device=device), getattr(kl, name))
    if dst_type and "float8" in dst_type:
        return kiln.reinterpret(torch.tensor(x, device=device), str_to_triton_dtype(dst_type))
    if name == "float32" and dst_type == "bfloat16":
        return torch.tensor(x, device=device).bfloat16()
    return torch.tensor(x, device=device)


def to_numpy(x: Any) -> np.ndarray:
    """The host numpy array of a kernel argument made by :func:`to_triton`
    (bfloat16 comes back as float32, which holds it exactly).

    Raises:
        ValueError: for anything but a torch tensor or a reinterpreted one.
    """
    import torch

    if isinstance(x, TensorWrapper):
        return x.base.cpu().numpy().astype(torch_dtype_name(x.dtype))
    if isinstance(x, torch.Tensor):
        if x.dtype is torch.bfloat16:
            return x.cpu().float().numpy()
        return x.cpu().numpy()
    raise ValueError(f"not a tensor a kernel takes: {type(x).__name__}")


def unwrap_tensor(t: Any) -> Any:
    """The torch tensor under a reinterpreted tensor, or ``t`` itself."""
    if isinstance(t, TensorWrapper):
        return t.base
    return t


def default_alloc_fn(size: int, align: int, stream: Optional[int]) -> Any:
    """An allocator for :func:`kiln.set_allocator`: ``size`` bytes of torch
    memory on the active driver's device (torch's allocator aligns far more
    than kernels ask)."""
    import torch

    del align, stream
    return torch.empty(size, dtype=torch.int8, device=kiln.runtime.driver.active.get_active_torch_device())


# -- knobs ---------------------------------------------------------------------------------


def _fresh_knobs_impl(skipped_attr: Optional[Set[str]] = None) -> Tuple[Callable[[], Any], Callable[[], None]]:
    """Two functions for a fixture that runs a test with every knob at its
    default: ``fresh()`` swaps each knob set of :mod:`kiln.knobs` (except
    those named in ``skipped_attr``) for a fresh one, removes their
    environment variables and returns the knobs module; ``reset()`` puts the
    sets, the variables and ``propagate_env`` back exactly as they were."""
    from kiln import knobs

    skipped = set(skipped_attr or ())
    originals = {name: value for name, value in vars(knobs).items()
                 if isinstance(value, knobs.base_knobs) and name not in skipped}
    keys = sorted({knob.key for knobset in originals.values() for knob in knobset.knob_descriptors.values()
                   if knob.key})
    saved_environment = {key: os.environ.get(key) for key in keys}
    saved_propagate_env = knobs.propagate_env

    def fresh() -> Any:
        for key in keys:
            os.environ.pop(key, None)
        for name, knobset in originals.items():
            setattr(knobs, name, knobset.copy().reset())
        knobs.propagate_env = True
        return knobs

    def reset() -> None:
        for name, knobset in originals.items():
            setattr(knobs, name, knobset)
        for key, value in saved_environment.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        knobs.propagate_env = saved_propagate_env

    return fresh, reset
