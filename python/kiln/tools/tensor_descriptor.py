"""Host tensor descriptors: ``TensorDescriptor`` (as ``triton.tools.tensor_descriptor``).

A :class:`TensorDescriptor` passed as a kernel argument makes that parameter
a tensor descriptor inside the kernel (see
:mod:`kiln.language.tensor_descriptor`): ``desc.load([i, j])`` reads the
``block_shape`` block at those element offsets, zero-filling (or NaN-filling,
with ``padding="nan"``) what lies outside ``shape``, and ``desc.store`` writes
only the elements inside it.

The runtime flattens the descriptor into kernel parameters: the base pointer,
the shape and the strides (each an integer parameter, specialized like any
other), with the block shape and the padding compiled in as constants. A
launch checks what Triton requires of descriptors for the Hopper TMA unit:
the last stride is 1, and the base address and the other strides (in bytes)
are multiples of 16.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

__all__ = ["TensorDescriptor"]

_MAX_RANK = 5
_PADDINGS = ("zero", "nan")


# Element sizes by dtype name (the part after "torch."), for objects that
# only say their dtype.
_SIZES_BY_NAME = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
    "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "float8_e4m3fn": 1, "float8_e5m2": 1,
    "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
}


def _element_size(base: Any) -> Optional[int]:
    """Bytes per element of a torch tensor, numpy array or similar, None if unknown."""
    element_size = getattr(base, "element_size", None)
    if callable(element_size):
        return int(element_size())
    itemsize = getattr(base, "itemsize", None)
    if isinstance(itemsize, int):
        return itemsize
    dtype = getattr(base, "dtype", None)
    itemsize = getattr(dtype, "itemsize", None)
    if isinstance(itemsize, int):
        return itemsize
    return _SIZES_BY_NAME.get(str(dtype).rsplit(".", 1)[-1])


def _ints(values: Sequence[Any], what: str) -> tuple[int, ...]:
    try:
        result = tuple(values)
    except TypeError:
        raise TypeError(f"TensorDescriptor: {what} must be a sequence of ints, got {type(values).__name__}") from None
    for value in result:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"TensorDescriptor: {what} must hold ints, got {value!r}")
    return result


class TensorDescriptor:
    """A ``block_shape`` window onto the strided tensor of ``shape`` and
    ``strides`` (in elements) whose first element is ``base``'s.

    Attributes:
        base: the tensor (or array) holding the data; it is passed as the
            base pointer.
        shape, strides, block_shape: tuples of ints, one per dimension (1 to 5).
        padding: what out-of-bounds elements load as: "zero" or "nan".
    """

    # The JIT recognizes descriptor arguments by this class attribute.
    __kiln_tensor_descriptor__ = True

    def __init__(self, base: Any, shape: Sequence[int], strides: Sequence[int], block_shape: Sequence[int],
                 padding: str = "zero") -> None:
        """
        Raises:
            ValueError: for ranks that disagree or are not 1 to 5, block
                dimensions that are not powers of two, or an unknown padding.
            TypeError: for shapes, strides or block shapes that are not ints.
        """
        self.base = base
        self.shape = _ints(shape, "shape")
        self.strides = _ints(strides, "strides")
        self.block_shape = _ints(block_shape, "block_shape")
        self.padding = padding
        rank = len(self.shape)
        if not 1 <= rank <= _MAX_RANK:
            raise ValueError(f"TensorDescriptor: rank must be 1 to {_MAX_RANK}, got shape {list(self.shape)}")
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"TensorDescriptor: shape {list(self.shape)}, strides {list(self.strides)} and "
                             f"block_shape {list(self.block_shape)} must have the same rank")
        for size in self.block_shape:
            if size <= 0 or size & (size - 1):
                raise ValueError(f"TensorDescriptor: block_shape dimensions must be powers of two, got "
                                 f"{list(self.block_shape)}")
        if padding not in _PADDINGS:
            raise ValueError(f"TensorDescriptor: padding must be 'zero' or 'nan', got {padding!r}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: Sequence[int], padding: str = "zero") -> "TensorDescriptor":
        """A descriptor of all of ``tensor`` (its shape and strides), read in
        blocks of ``block_shape``."""
        return TensorDescriptor(tensor, tuple(tensor.shape), tuple(tensor.stride()), block_shape, padding)

    def layout_problem(self) -> Optional[str]:
        """Why this descriptor cannot be launched with (last stride not 1,
        strides not multiples of 16 bytes), or None. The base address is
        checked by the launch, which reads it anyway."""
        if self.strides[-1] != 1:
            return f"its last stride must be 1, got strides {list(self.strides)}"
        size = _element_size(self.base)
        if size is None:
            return f"the element size of its base ({type(self.base).__name__}) is unknown"
        for stride in self.strides[:-1]:
            if stride * size % 16:
                return (f"its strides must be multiples of 16 bytes except the last, got strides "
                        f"{list(self.strides)} of {size}-byte elements")
        return None

    def kernel_fields(self) -> tuple:
        """What the kernel parameter is made of, in the order the runtime
        flattens it: base, shape, strides, block shape, padding. The
        sequences are tuples here even where a hook assigned lists to the
        fields (as Triton's dataclass allows)."""
        return (self.base, tuple(self.shape), tuple(self.strides), tuple(self.block_shape), self.padding)

    def __repr__(self) -> str:
        return (f"TensorDescriptor(shape={list(self.shape)}, strides={list(self.strides)}, "
                f"block_shape={list(self.block_shape)}, padding={self.padding!r})")
