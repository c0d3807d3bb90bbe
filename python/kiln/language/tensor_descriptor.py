"""Tensor descriptors: ``kl.make_tensor_descriptor`` and the loads and stores
through them (Triton's ``tl.make_tensor_descriptor``, ``desc.load``,
``desc.store``).

A descriptor names a strided tensor of ``shape`` and ``strides`` (elements;
the last stride is 1) starting at ``base``, read and written in blocks of the
constant ``block_shape``: ``desc.load([i, j])`` is the block whose first
element is at ``[i, j]``, elements outside ``shape`` reading as zero (or NaN,
with ``padding_option="nan"``), and ``desc.store([i, j], v)`` writes the
elements of that block inside ``shape`` only.

:class:`tensor_descriptor` is a frontend value, like a block pointer: its
runtime fields (the base pointer, the shape, the strides but the last) are
scalar tensors or Python ints, flattened into loop-carried values, branch
results and helper arguments by the frontend. A kernel parameter given a
host ``kiln.tools.tensor_descriptor.TensorDescriptor`` is one too
(:func:`from_kernel_argument`).

Loads and stores are emitted in one place, :func:`emit_load` and
:func:`emit_store`: as a masked load or store of a block of pointers
(``base + sum_d (offsets[d] + arange(block_shape[d])) * strides[d]``, in
bounds where ``0 <= index < shape[d]`` on every dimension), which every
backend runs. On a target with the TMA unit (sm_90a) a descriptor also
carries a tensor map: a host descriptor's, which the launcher encodes, or,
for one made in the kernel, a ``kiln.make_tensor_map`` that the compiler
makes a parameter the launcher encodes where the descriptor is computed from
the kernel's arguments alone (and drops otherwise). Loads name the map and
their coordinates, and the compiler copies them with the TMA unit where they
feed a pipelined dot (see docs/design/tensor_descriptors.md).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from kiln.errors import CompilationError
from kiln.language.compile_time import current_launch_shape
from kiln.language.core import (_constexpr_int, _unwrap, builtin, dtype_from_signature, int32, int64, tensor,
                                validate_block_shape)

__all__ = ["tensor_descriptor", "make_tensor_descriptor", "load_tensor_descriptor", "store_tensor_descriptor",
           "from_kernel_argument", "emit_load", "emit_store"]

_MAX_RANK = 5
_PADDINGS = ("zero", "nan")


class tensor_descriptor:
    """A tensor descriptor value (what ``kl.make_tensor_descriptor`` returns).

    Attributes:
        base: the scalar pointer to element ``[0, ..., 0]``.
        shape: per dimension, a scalar int64 tensor or a Python int.
        strides: likewise; the last is always the Python int 1.
        block_shape: the block's dimensions, Python ints (powers of two).
        padding: what out-of-bounds elements load as, "zero" or "nan".
        tensor_map: a host descriptor's TMA tensor map (a kernel parameter),
            or None.
    """

    def __init__(self, base: tensor, shape: tuple, strides: tuple, block_shape: tuple, padding: str = "zero",
                 tensor_map: Optional[tensor] = None) -> None:
        self.base = base
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.block_shape = tuple(block_shape)
        self.padding = padding
        self.tensor_map = tensor_map

    @property
    def dtype(self) -> Any:
        """The element type."""
        return self.base.dtype.element_ty

    @property
    def rank(self) -> int:
        return len(self.block_shape)

    @property
    def runtime_fields(self) -> tuple:
        """The fields that may be runtime values, in the order
        :meth:`with_runtime_fields` takes (the last stride, always 1, is not one)."""
        return (self.base, self.shape, self.strides[:-1], self.tensor_map)

    def with_runtime_fields(self, fields: tuple) -> "tensor_descriptor":
        """A descriptor with this one's static fields and ``fields``."""
        base, shape, strides, tensor_map = fields
        return tensor_descriptor(base, shape, tuple(strides) + (1,), self.block_shape, self.padding, tensor_map)

    @property
    def static_key(self) -> tuple:
        """What must agree between two descriptors that one variable holds."""
        return (self.base.type, self.block_shape, self.padding, self.tensor_map is None)

    @builtin
    def load(self, offsets: Any, _builder: Any = None) -> tensor:
        """The ``block_shape`` block at ``offsets`` (one per dimension);
        elements outside ``shape`` read as the padding (zero by default)."""
        return emit_load(self, _offsets(self, offsets, "load", _builder), _builder)

    @builtin
    def store(self, offsets: Any, value: Any, _builder: Any = None) -> None:
        """Writes ``value`` (of ``block_shape``, or broadcastable to it) to
        the block at ``offsets``, skipping elements outside ``shape``."""
        emit_store(self, _offsets(self, offsets, "store", _builder), _unwrap(value), _builder)

    def __repr__(self) -> str:
        return f"tensor_descriptor({self.base.type}, block_shape={list(self.block_shape)})"

    def __bool__(self) -> bool:
        raise CompilationError("a tensor descriptor cannot be used as a Python bool")


# -- construction ------------------------------------------------------------------


def _sequence(value: Any, what: str) -> tuple:
    value = _unwrap(value)
    if isinstance(value, (list, tuple)):
        return tuple(_unwrap(v) for v in value)
    raise CompilationError(f"make_tensor_descriptor: {what} must be a list or tuple, got {type(value).__name__}")


def _extent(value: Any, what: str, b: Any) -> Any:
    """A shape or stride entry: Python ints stay constants (folded into the
    address arithmetic); runtime integers become int64 scalars."""
    from kiln.language import semantic
    if isinstance(value, bool) or not isinstance(value, (int, tensor)):
        raise CompilationError(f"{what} must be an integer (a constant or a scalar runtime value), got {value!r}")
    if isinstance(value, int):
        return value
    if value.shape or not value.dtype.is_int():
        raise CompilationError(f"{what} must be a scalar integer, got {value.type}")
    return semantic.cast(value, int64, b)


def _check_block_shape(block_shape: Sequence[Any], rank: int, who: str) -> tuple:
    if len(block_shape) != rank:
        raise CompilationError(f"{who}: block_shape has {len(block_shape)} dimensions but shape has {rank}")
    dims = tuple(_constexpr_int(d, f"{who}: a block_shape dimension") for d in block_shape)
    for d in dims:
        if d <= 0 or d & (d - 1):
            raise CompilationError(f"{who}: block_shape dimensions must be powers of two, got {list(dims)}")
    validate_block_shape(dims)
    return dims


def _check_padding(padding: Any, base: tensor, who: str) -> str:
    padding = _unwrap(padding)
    if padding not in _PADDINGS:
        raise CompilationError(f"{who}: padding_option must be 'zero' or 'nan', got {padding!r}")
    if padding == "nan" and not base.dtype.element_ty.is_floating():
        raise CompilationError(f"{who}: padding_option 'nan' needs floating-point elements, got "
                               f"{base.dtype.element_ty}")
    return padding


@builtin
def make_tensor_descriptor(base: Any, shape: Any, strides: Any, block_shape: Any, padding_option: Any = "zero",
                           _builder: Any = None) -> tensor_descriptor:
    """A descriptor of the tensor of ``shape`` and ``strides`` (in elements,
    the last one 1) starting at the pointer ``base``, accessed in blocks of
    ``block_shape`` (constant powers of two), as Triton's
    ``tl.make_tensor_descriptor``. Ranks 1 to 5."""
    who = "make_tensor_descriptor"
    base = _unwrap(base)
    if not isinstance(base, tensor) or not base.dtype.is_ptr() or base.shape:
        what = base.type if isinstance(base, tensor) else type(base).__name__
        raise CompilationError(f"{who}: base must be a scalar pointer, got {what}")
    shape, strides = _sequence(shape, "shape"), _sequence(strides, "strides")
    block_shape = _sequence(block_shape, "block_shape")
    rank = len(shape)
    if not 1 <= rank <= _MAX_RANK:
        raise CompilationError(f"{who}: tensors of 1 to {_MAX_RANK} dimensions are supported, got {rank}")
    if len(strides) != rank:
        raise CompilationError(f"{who}: strides has {len(strides)} entries but shape has {rank}")
    last = strides[-1]
    if isinstance(last, tensor) or isinstance(last, bool) or last != 1:
        got = "a runtime value" if isinstance(last, tensor) else repr(last)
        raise CompilationError(f"{who}: the last stride must be the constant 1 (the last dimension is "
                               f"contiguous), got {got}")
    block = _check_block_shape(block_shape, rank, who)
    # Triton's rule: a TMA copy moves at least 16 contiguous bytes per row.
    element_bytes = base.dtype.element_ty.primitive_bitwidth // 8
    if block[-1] * element_bytes < 16:
        raise CompilationError(f"Descriptor block shape must have at least 16 bytes in the last dimension, but got "
                               f"{block[-1]} * {element_bytes} = {block[-1] * element_bytes} bytes")
    padding = _check_padding(padding_option, base, who)
    extents = tuple(_extent(v, f"{who}: shape[{i}]", _builder) for i, v in enumerate(shape))
    steps = tuple(_extent(v, f"{who}: strides[{i}]", _builder) for i, v in enumerate(strides[:-1]))
    return tensor_descriptor(base, extents, steps + (1,), block, padding,
                             _tensor_map(base, extents, steps, padding, _builder))


def _tensor_map(base: tensor, shape: Sequence[Any], strides: Sequence[Any], padding: str,
                b: Any) -> Optional[tensor]:
    """The tensor map of a descriptor made in the kernel, where the target's
    TMA unit may copy through it (sm_90a, as for host descriptors), else None."""
    from kiln.language import semantic
    launch = current_launch_shape.get()
    if launch is None or launch.target != "sm_90a":
        return None

    def as_int64(value: Any) -> Any:
        return semantic.cast(semantic.to_tensor(value, b), int64, b).handle

    handle = b.make_tensor_map(base.handle, [as_int64(v) for v in shape], [as_int64(v) for v in strides],
                               padding == "nan")
    return tensor(handle, dtype_from_signature("nvTmaDesc"))


def from_kernel_argument(base: tensor, shape: Sequence[Any], strides: Sequence[Any], block_shape: Sequence[int],
                         padding: str, tensor_map: Optional[tensor], b: Any) -> tensor_descriptor:
    """The descriptor a kernel parameter holds when launched with a host
    ``TensorDescriptor``, from its flattened parameters (``tensor_map`` is
    None where the target has no TMA unit). The launch checked that the last
    stride is 1, so its parameter is not read."""
    who = "a TensorDescriptor argument"
    rank = len(shape)
    block = _check_block_shape(block_shape, rank, who)
    return tensor_descriptor(
        base,
        tuple(_extent(v, f"{who}: shape[{i}]", b) for i, v in enumerate(shape)),
        tuple(_extent(v, f"{who}: strides[{i}]", b) for i, v in enumerate(strides[:-1])) + (1,),
        block, _check_padding(padding, base, who), tensor_map)


# -- loads and stores ------------------------------------------------------------


def _offsets(desc: tensor_descriptor, offsets: Any, what: str, b: Any) -> list:
    """The offsets of an access: one integer per dimension, as int64 scalars
    or Python ints."""
    offsets = _unwrap(offsets)
    if not isinstance(desc, tensor_descriptor):
        raise CompilationError(f"{what} needs a tensor descriptor, got {type(desc).__name__}")
    if not isinstance(offsets, (list, tuple)):
        raise CompilationError(f"tensor descriptor {what}: offsets must be a list or tuple, got "
                               f"{type(offsets).__name__}")
    if len(offsets) != desc.rank:
        raise CompilationError(f"tensor descriptor {what}: expected {desc.rank} offsets (the descriptor's rank), "
                               f"got {len(offsets)}")
    return [_extent(_unwrap(v), f"tensor descriptor {what}: offsets[{i}]", b) for i, v in enumerate(offsets)]


def _pointers_and_mask(desc: tensor_descriptor, offsets: list, b: Any) -> tuple[tensor, tensor]:
    """The block of pointers of the access at ``offsets`` and its in-bounds mask."""
    from kiln.language import semantic
    from kiln.language.block_pointer import _axis_block
    rank = desc.rank
    block = list(desc.block_shape)
    address = None  # int64 element offsets, summed over the dimensions
    mask = None
    for axis, size in enumerate(desc.block_shape):
        index = semantic.cast(semantic.arange(0, size, b), int64, b)
        offset = offsets[axis]
        if not (isinstance(offset, int) and offset == 0):
            index = semantic.add(index, offset, b)
        index = _axis_block(index, axis, rank, b)
        stride = desc.strides[axis]
        term = index if isinstance(stride, int) and stride == 1 else semantic.mul(index, stride, b)
        address = term if address is None else semantic.add(address, term, b)
        inside = semantic.logical_and(semantic.greater_equal(index, 0, b),
                                      semantic.less_than(index, desc.shape[axis], b), b)
        mask = inside if mask is None else semantic.logical_and(mask, inside, b)
    pointers = semantic.add(desc.base, semantic.broadcast_to(address, block, b), b)
    return pointers, semantic.broadcast_to(mask, block, b)


def emit_load(desc: tensor_descriptor, offsets: list, b: Any) -> tensor:
    """Emits the load of the block at ``offsets`` (validated by the caller)."""
    from kiln.language import semantic
    pointers, mask = _pointers_and_mask(desc, offsets, b)
    other = float("nan") if desc.padding == "nan" else 0
    coords = []
    if desc.tensor_map is not None:
        # The TMA unit's coordinates are 32-bit signed integers.
        coords = [semantic.cast(semantic.to_tensor(offset, b), int32, b) for offset in offsets]
    return semantic.load(pointers, mask, other, "", "", False, b, desc.tensor_map, coords)


def emit_store(desc: tensor_descriptor, offsets: list, value: Any, b: Any) -> None:
    """Emits the store of ``value`` to the block at ``offsets`` (validated by the caller)."""
    from kiln.language import semantic
    from kiln.language.block_pointer import _broadcasts_to
    if isinstance(value, tensor) and value.shape and not _broadcasts_to(value.shape, list(desc.block_shape)):
        raise CompilationError(f"tensor descriptor store: the value has shape {value.shape}, which does not "
                               f"broadcast to the block shape {list(desc.block_shape)}")
    pointers, mask = _pointers_and_mask(desc, offsets, b)
    semantic.store(pointers, value, mask, "", "", b)


@builtin
def load_tensor_descriptor(desc: Any, offsets: Any, _builder: Any = None) -> tensor:
    """``desc.load(offsets)`` (as Triton's ``tl.load_tensor_descriptor``)."""
    desc = _unwrap(desc)
    return emit_load(desc, _offsets(desc, offsets, "load", _builder), _builder)


@builtin
def store_tensor_descriptor(desc: Any, offsets: Any, value: Any, _builder: Any = None) -> None:
    """``desc.store(offsets, value)`` (as Triton's ``tl.store_tensor_descriptor``)."""
    desc = _unwrap(desc)
    emit_store(desc, _offsets(desc, offsets, "store", _builder), _unwrap(value), _builder)
