"""Block pointers: ``kl.make_block_ptr``, ``kl.advance`` and the loads and
stores through them (Triton's "tensor pointers").

A block pointer describes a ``block_shape`` window at ``offsets`` into a
tensor of ``shape`` and ``strides`` whose first element is at ``base``.
Kiln keeps it in the frontend: :class:`block_pointer` holds the runtime
fields (base, shape, strides and offsets, all scalar tensors) and the static
ones (block shape, order). A load or store through it becomes an ordinary
load or store of a block of pointers,
``base + sum_d (offsets[d] + arange(0, block_shape[d])) * strides[d]``
(each term broadcast to the block's rank), masked by
``0 <= offsets[d] + arange(...) < shape[d]`` on the dimensions named in
``boundary_check``. ``advance`` adds to the offsets and returns a new block
pointer. The frontend flattens the runtime fields into loop-carried values,
branch results and call arguments (see ``frontend.md``).

As in Triton, shapes and strides are int64 and offsets int32; ``order`` is
accepted and checked, but does not change the result (it is a layout hint).
"""

from __future__ import annotations

from typing import Any

from kiln.errors import CompilationError
from kiln.language.core import _unwrap, builtin, int32, int64, tensor

__all__ = ["block_pointer", "make_block_ptr", "advance"]

_PADDING_OPTIONS = ("", "zero", "nan")


class block_pointer:
    """A block pointer value (what ``kl.make_block_ptr`` returns).

    ``base`` is a scalar pointer tensor; ``shape`` and ``strides`` are tuples
    of scalar int64 tensors, ``offsets`` a tuple of scalar int32 tensors;
    ``block_shape`` and ``order`` are tuples of Python ints.
    """

    def __init__(self, base: tensor, shape: tuple, strides: tuple, offsets: tuple, block_shape: tuple,
                 order: tuple) -> None:
        self.base = base
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offsets = tuple(offsets)
        self.block_shape = tuple(block_shape)
        self.order = tuple(order)

    @property
    def dtype(self) -> Any:
        """The element type of the pointed-to tensor."""
        return self.base.dtype.element_ty

    @property
    def runtime_fields(self) -> tuple:
        """The runtime fields, in the order :meth:`with_runtime_fields` takes."""
        return (self.base, self.shape, self.strides, self.offsets)

    def with_runtime_fields(self, fields: tuple) -> "block_pointer":
        """A block pointer with this one's static fields and ``fields``."""
        base, shape, strides, offsets = fields
        return block_pointer(base, shape, strides, offsets, self.block_shape, self.order)

    @property
    def static_key(self) -> tuple:
        """What must agree between two block pointers that one variable holds
        (in both branches of an if, or around a loop)."""
        return (self.base.type, self.block_shape, self.order)

    def __repr__(self) -> str:
        return f"block_pointer({self.base.type}, block_shape={list(self.block_shape)})"

    def __bool__(self) -> bool:
        raise CompilationError("a block pointer cannot be used as a Python bool")


def _as_tuple(value: Any, what: str) -> tuple:
    value = _unwrap(value)
    if isinstance(value, (list, tuple)):
        return tuple(_unwrap(v) for v in value)
    raise CompilationError(f"make_block_ptr: {what} must be a tuple or list, got {type(value).__name__}")


def _scalar(value: Any, ty: Any, what: str, b: Any) -> tensor:
    from kiln.language import semantic
    if isinstance(value, bool) or not isinstance(value, (int, tensor)):
        raise CompilationError(f"{what} must be an integer (a constant or a scalar runtime value), got {value!r}")
    t = semantic.to_tensor(value, b)
    if t.shape or not t.dtype.is_int():
        raise CompilationError(f"{what} must be a scalar integer, got {t.type}")
    return semantic.cast(t, ty, b)


@builtin
def make_block_ptr(base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any, order: Any,
                   _builder: Any = None) -> block_pointer:
    """A pointer to the ``block_shape`` block at ``offsets`` in the tensor of
    ``shape`` and ``strides`` that starts at ``base`` (as Triton's
    ``tl.make_block_ptr``). ``order`` lists the dimensions from the fastest
    varying to the slowest; it must be a permutation of the dimensions."""
    from kiln.language.core import _constexpr_int, validate_block_shape
    base = _unwrap(base)
    if not isinstance(base, tensor) or not base.dtype.is_ptr() or base.shape:
        what = base.type if isinstance(base, tensor) else type(base).__name__
        raise CompilationError(f"make_block_ptr: base must be a scalar pointer, got {what}")
    shape, strides = _as_tuple(shape, "shape"), _as_tuple(strides, "strides")
    offsets, block_shape = _as_tuple(offsets, "offsets"), _as_tuple(block_shape, "block_shape")
    order = _as_tuple(order, "order")
    rank = len(shape)
    if rank == 0:
        raise CompilationError("make_block_ptr: shape must have at least one dimension")
    for what, values in (("strides", strides), ("offsets", offsets), ("block_shape", block_shape),
                         ("order", order)):
        if len(values) != rank:
            raise CompilationError(f"make_block_ptr: expected {what} of rank {rank} (the rank of shape), got "
                                   f"{len(values)}")
    block_shape = tuple(_constexpr_int(d, "make_block_ptr: a block_shape dimension") for d in block_shape)
    for d in block_shape:
        if d <= 0 or d & (d - 1):
            raise CompilationError(f"make_block_ptr: block_shape dimensions must be powers of two, got "
                                   f"{list(block_shape)}")
    validate_block_shape(block_shape)
    order = tuple(_constexpr_int(d, "make_block_ptr: an order entry") for d in order)
    if sorted(order) != list(range(rank)):
        raise CompilationError(f"make_block_ptr: order must be a permutation of {list(range(rank))}, got "
                               f"{list(order)}")
    return block_pointer(
        base,
        tuple(_scalar(v, int64, f"make_block_ptr: shape[{i}]", _builder) for i, v in enumerate(shape)),
        tuple(_scalar(v, int64, f"make_block_ptr: strides[{i}]", _builder) for i, v in enumerate(strides)),
        tuple(_scalar(v, int32, f"make_block_ptr: offsets[{i}]", _builder) for i, v in enumerate(offsets)),
        block_shape, order)


@builtin
def advance(base: Any, offsets: Any, _builder: Any = None) -> block_pointer:
    """``base`` moved by ``offsets`` elements along each dimension."""
    from kiln.language import semantic
    base = _unwrap(base)
    if not isinstance(base, block_pointer):
        raise CompilationError(f"advance needs a block pointer (from kl.make_block_ptr), got "
                               f"{base.type if isinstance(base, tensor) else type(base).__name__}")
    offsets = _unwrap(offsets)
    if not isinstance(offsets, (list, tuple)):
        raise CompilationError(f"advance: offsets must be a tuple or list, got {type(offsets).__name__}")
    if len(offsets) != len(base.offsets):
        raise CompilationError(f"advance: expected {len(base.offsets)} offsets (the block pointer's rank), got "
                               f"{len(offsets)}")
    moved = []
    for i, (current, delta) in enumerate(zip(base.offsets, offsets)):
        delta = _unwrap(delta)
        if isinstance(delta, int) and not isinstance(delta, bool) and delta == 0:
            moved.append(current)
            continue
        delta = _scalar(delta, int32, f"advance: offsets[{i}]", _builder)
        moved.append(semantic.add(current, delta, _builder))
    return block_pointer(base.base, base.shape, base.strides, tuple(moved), base.block_shape, base.order)


def _boundary_dims(boundary_check: Any, rank: int) -> list[int]:
    boundary_check = _unwrap(boundary_check)
    if boundary_check is None:
        return []
    if isinstance(boundary_check, int) and not isinstance(boundary_check, bool):
        boundary_check = (boundary_check,)
    if not isinstance(boundary_check, (list, tuple)):
        raise CompilationError(f"boundary_check must be a tuple of dimensions, got {boundary_check!r}")
    dims = []
    for d in boundary_check:
        d = _unwrap(d)
        if isinstance(d, bool) or not isinstance(d, int):
            raise CompilationError(f"boundary_check entries must be constant integers, got {d!r}")
        if not 0 <= d < rank:
            raise CompilationError(f"boundary_check dimension {d} is out of range for a block pointer of rank "
                                   f"{rank}")
        if d not in dims:
            dims.append(d)
    return sorted(dims)


def _axis_block(values: tensor, axis: int, rank: int, b: Any) -> tensor:
    """A 1-D block laid along ``axis`` of a rank-``rank`` block (size-1
    dimensions elsewhere), ready to broadcast."""
    from kiln.language import semantic
    for dim in range(rank):
        if dim != axis:
            values = semantic.expand_dims(values, dim, b)
    return values


def pointers_and_mask(ptr: block_pointer, boundary_check: Any, b: Any) -> tuple[tensor, Any]:
    """The block of pointers a load or store through ``ptr`` accesses, and
    the mask of ``boundary_check`` (None when no dimension is checked)."""
    from kiln.language import semantic
    rank = len(ptr.block_shape)
    dims = _boundary_dims(boundary_check, rank)
    shape = list(ptr.block_shape)
    offset = None  # int64 element offsets, summed over the dimensions
    mask = None
    for axis, size in enumerate(ptr.block_shape):
        index = semantic.add(semantic.arange(0, size, b), ptr.offsets[axis], b)  # int32, [size]
        index = semantic.cast(_axis_block(index, axis, rank, b), int64, b)
        term = semantic.mul(index, ptr.strides[axis], b)
        offset = term if offset is None else semantic.add(offset, term, b)
        if axis in dims:
            inside = semantic.logical_and(semantic.greater_equal(index, 0, b),
                                          semantic.less_than(index, ptr.shape[axis], b), b)
            mask = inside if mask is None else semantic.logical_and(mask, inside, b)
    pointers = semantic.add(ptr.base, semantic.broadcast_to(offset, shape, b), b)
    if mask is not None:
        mask = semantic.broadcast_to(mask, shape, b)
    return pointers, mask


def _padding(padding_option: Any, element: Any) -> Any:
    padding_option = _unwrap(padding_option)
    if padding_option is None:
        padding_option = ""
    if not isinstance(padding_option, str) or padding_option not in _PADDING_OPTIONS:
        raise CompilationError(f"unknown padding_option {padding_option!r}; expected '', 'zero' or 'nan'")
    if padding_option == "nan":
        if not element.is_floating():
            raise CompilationError(f"padding_option 'nan' needs a floating-point block pointer, got {element}")
        return float("nan")
    if padding_option == "zero":
        return 0
    return None


def load(ptr: block_pointer, mask: Any, other: Any, boundary_check: Any, padding_option: Any, cache_modifier: str,
         eviction_policy: str, volatile: bool, b: Any) -> tensor:
    """A load through a block pointer (``mask`` and ``other`` must be None)."""
    from kiln.language import semantic
    if mask is not None or other is not None:
        raise CompilationError("load through a block pointer takes no mask or other; use boundary_check and "
                               "padding_option")
    pad = _padding(padding_option, ptr.dtype)
    pointers, in_bounds = pointers_and_mask(ptr, boundary_check, b)
    if in_bounds is None:
        return semantic.load(pointers, None, None, cache_modifier, eviction_policy, volatile, b)
    # Triton leaves masked-off elements unspecified without a padding option;
    # zero keeps results reproducible.
    return semantic.load(pointers, in_bounds, 0 if pad is None else pad, cache_modifier, eviction_policy,
                         volatile, b)


def _broadcasts_to(shape: list[int], target: list[int]) -> bool:
    if len(shape) > len(target):
        return False
    return all(d in (1, t) for d, t in zip(shape[::-1], target[::-1]))


def store(ptr: block_pointer, value: Any, mask: Any, boundary_check: Any, cache_modifier: str,
          eviction_policy: str, b: Any) -> None:
    """A store through a block pointer (``mask`` must be None); ``value``
    must have the block pointer's block shape or broadcast to it."""
    from kiln.language import semantic
    if mask is not None:
        raise CompilationError("store through a block pointer takes no mask; use boundary_check")
    if isinstance(value, tensor) and value.shape and not _broadcasts_to(value.shape, list(ptr.block_shape)):
        raise CompilationError(f"store through a block pointer of block shape {list(ptr.block_shape)} got a value "
                               f"of shape {value.shape}")
    pointers, in_bounds = pointers_and_mask(ptr, boundary_check, b)
    semantic.store(pointers, value, in_bounds, cache_modifier, eviction_policy, b)


def is_block_pointer(value: Any) -> bool:
    return isinstance(_unwrap(value), block_pointer)

