"""``kiln.reinterpret``: an array whose kernel pointer has another element type.

torch has no uint16, uint32 or uint64 arithmetic (and numpy arrays cannot go
to the GPU), so a kernel over unsigned integers, or over fp8 bytes, takes its
data as a tensor of another type of the same size, reinterpreted:
``kiln.reinterpret(torch_int32_tensor, kl.uint32)`` returns a
:class:`TensorWrapper` that a kernel receives as a ``*u32`` pointer to the
same memory. Nothing is copied or converted: the kernel reads the bits.
The contract is Triton's ``triton.reinterpret`` /
``triton.runtime.jit.TensorWrapper``.

The wrapper behaves like its base for everything but the element type: its
address, shape, strides, device (and with them the CPU-or-GPU choice, the
meta-tensor refusal, the read-only refusal of a numpy base and checked mode's
bounds, which cover the base's bytes) are the base's. As in Triton, the
element size is not checked against the new type: reinterpreting int8
storage as ``kl.uint32`` is allowed, and indexing past the base's bytes is
the kernel's out-of-bounds access (checked mode reports it).

The base is a torch tensor (on any device), a numpy array, or any object
with ``data_ptr()``, ``dtype``, ``shape``, ``stride()`` and
``element_size()``.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence, Union

__all__ = ["TensorWrapper", "reinterpret", "type_canonicalisation_dict"]


#: Triton's type names and aliases -> its canonical signature spellings
#: ("float32" -> "fp32", "uint8" -> "u8", "bool" -> "u1"); every canonical
#: spelling maps to itself. ``kiln.language.str_to_ty`` turns the canonical
#: spellings into dtypes.
type_canonicalisation_dict: dict[str, str] = {
    # Booleans are one-bit unsigned integers, as in Triton.
    "bool": "u1", "int1": "u1", "uint1": "u1", "i1": "u1",
    "int8": "i8", "int16": "i16", "int": "i32", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32",
    "double": "fp64", "float64": "fp64",
    "float8e4nv": "fp8e4nv", "float8_e4m3fn": "fp8e4nv", "float8e5": "fp8e5", "float8_e5m2": "fp8e5",
    "float8e4b15": "fp8e4b15", "float8e4b8": "fp8e4b8", "float8_e4m3fnuz": "fp8e4b8",
    "float8e5b16": "fp8e5b16", "float8_e5m2fnuz": "fp8e5b16",
    "void": "void",
}
type_canonicalisation_dict.update({canonical: canonical for canonical in list(type_canonicalisation_dict.values())})


def _is_numpy(value: Any) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray)


class TensorWrapper:
    """An array (``base``) seen by kernels as elements of ``dtype``.

    Made by :func:`reinterpret`. Kernels receive it as a pointer to
    ``dtype``; the host sees the base's memory, shape and strides.

    Attributes:
        base: the wrapped array.
        dtype: the element type kernels see (a ``kiln.language.dtype``).
    """

    # Marks the class for the JIT's argument handling (as the runtime reads
    # other array protocols by class, not by isinstance).
    __kiln_tensor_wrapper__ = True

    def __init__(self, base: Any, dtype: Any) -> None:
        _check_dtype(dtype)
        if isinstance(base, TensorWrapper):
            base = base.base
        if not (_is_numpy(base) or (hasattr(base, "data_ptr") and hasattr(base, "dtype"))):
            raise TypeError(f"cannot reinterpret a {type(base).__name__}: expected a torch tensor, a numpy array "
                            f"or an array with data_ptr() and dtype")
        self.base = base
        self.dtype = dtype

    # -- what the runtime reads (as of a torch tensor) -----------------------

    def data_ptr(self) -> int:
        """The address of the base's first element."""
        if _is_numpy(self.base):
            return self.base.ctypes.data
        return self.base.data_ptr()

    @property
    def shape(self) -> Any:
        """The base's shape."""
        return self.base.shape

    @property
    def device(self) -> Any:
        """The base's device (``"cpu"`` for a numpy array without one)."""
        return getattr(self.base, "device", "cpu")

    @property
    def is_meta(self) -> bool:
        """Whether the base is a torch meta tensor (no data)."""
        return bool(getattr(self.base, "is_meta", False))

    def get_device(self) -> int:
        """The base's CUDA device index, -1 on the CPU (as torch's)."""
        if _is_numpy(self.base):
            return -1
        get_device = getattr(self.base, "get_device", None)
        if get_device is not None:
            return get_device()
        device = self.device
        if getattr(device, "type", device) == "cpu":
            return -1
        index = getattr(device, "index", None)
        return -1 if index is None else index

    def stride(self, *dim: int) -> Union[int, tuple]:
        """The base's strides in elements, or the one of dimension ``dim``."""
        if _is_numpy(self.base):
            strides = tuple(step // self.base.itemsize for step in self.base.strides)
            return strides[dim[0]] if dim else strides
        return self.base.stride(*dim)

    def element_size(self) -> int:
        """The base's element size in bytes (as Triton's wrapper: the size of
        the storage, which ``dtype`` is not checked against)."""
        if _is_numpy(self.base):
            return self.base.itemsize
        return self.base.element_size()

    def numel(self) -> int:
        """The number of elements of the base."""
        if _is_numpy(self.base):
            return int(self.base.size)
        return self.base.numel()

    def dim(self) -> int:
        """The number of dimensions of the base."""
        return len(self.shape)

    # -- copies, keeping the interpretation ------------------------------------

    def clone(self) -> "TensorWrapper":
        """A wrapper of a copy of the base, of the same dtype."""
        return TensorWrapper(self.base.copy() if _is_numpy(self.base) else self.base.clone(), self.dtype)

    def copy_(self, other: Any) -> "TensorWrapper":
        """Copies ``other``'s elements (a wrapper's base, or an array) into
        the base, bit for bit when both are wrappers; returns self."""
        source = other.base if isinstance(other, TensorWrapper) else other
        if _is_numpy(self.base):
            self.base[...] = source
        else:
            self.base.copy_(source)
        return self

    def cpu(self) -> "TensorWrapper":
        """A wrapper of the base on the CPU (the base itself if it is there)."""
        return self if _is_numpy(self.base) else TensorWrapper(self.base.cpu(), self.dtype)

    def to(self, device: Any) -> "TensorWrapper":
        """A wrapper of the base moved to ``device`` (a torch base)."""
        if _is_numpy(self.base):
            raise TypeError("a reinterpreted numpy array cannot move to a device; wrap a torch tensor")
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes: Sequence[int]) -> "TensorWrapper":
        """A wrapper of a new uninitialized base of ``sizes``, of the same
        storage type, device and dtype."""
        if _is_numpy(self.base):
            import numpy
            return TensorWrapper(numpy.empty(sizes, dtype=self.base.dtype), self.dtype)
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"

    def __repr__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base!r})"


def _check_dtype(dtype: Any) -> None:
    from kiln.language.core import block_type, pointer_type
    from kiln.language.core import dtype as kl_dtype

    if not isinstance(dtype, kl_dtype) or isinstance(dtype, (pointer_type, block_type)):
        raise TypeError(f"reinterpret needs a scalar element type such as kiln.language.uint32, got {dtype!r}")
    if dtype.name == "void":
        raise TypeError("cannot reinterpret an array as void elements")


def reinterpret(tensor: Any, dtype: Any) -> Any:
    """``tensor`` seen by kernels as elements of ``dtype`` (Triton's
    ``triton.reinterpret``).

    Args:
        tensor: a torch tensor, numpy array or :class:`TensorWrapper`.
        dtype: a scalar ``kiln.language`` dtype (``kl.uint32``,
            ``kl.float8e4nv``, ...), or the base's own torch/numpy dtype,
            which undoes a reinterpretation.

    Returns:
        A :class:`TensorWrapper` of ``tensor`` (of a wrapper's base), or the
        base itself when ``dtype`` is the base's own dtype.

    Raises:
        TypeError: for something that is not an array, or a dtype that is
            neither a scalar ``kiln.language`` dtype nor the base's own.
    """
    base = tensor.base if isinstance(tensor, TensorWrapper) else tensor
    if not (_is_numpy(base) or (hasattr(base, "data_ptr") and hasattr(base, "dtype"))):
        raise TypeError(f"cannot reinterpret a {type(tensor).__name__}: expected a torch tensor, a numpy array or a "
                        f"TensorWrapper")
    own = base.dtype
    try:
        same = dtype == own and type(dtype) is type(own)
    except Exception:  # noqa: BLE001 - a foreign dtype's comparison: not the base's own
        same = False
    if same:
        return base
    return TensorWrapper(base, dtype)
