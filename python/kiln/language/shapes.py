"""Shape ops of ``kiln.language``, as Triton's: ``reshape view ravel trans
permute broadcast join split interleave cat flip gather histogram``, the
tensor methods ``x.reshape(...)``, ``x.trans(...)``,
``x.permute(...)``, ... and ``x.T`` (the frontend handles the attribute).

Each checks what the type checker can see (sizes, ranks, permutations) and
raises ``CompilationError`` naming the shapes involved, then emits one of the
kiln shape ops (``kiln.reshape``, ``kiln.trans``, ``kiln.join``,
``kiln.split``, ``kiln.cat``, ``kiln.flip``, ``kiln.gather``,
``kiln.histogram``). ``interleave`` is ``join`` then ``reshape``.

``can_reorder`` (``reshape``, ``ravel``, ``cat``) only permits the compiler
to reorder elements; Kiln always keeps the row-major order, which is one of
the orders allowed.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

from kiln.errors import CompilationError
from kiln.language import reduction, semantic
from kiln.language.core import _unwrap, builtin, expand_dims, int1, int32, tensor
from kiln.runtime.jit import jit

Builder = Any
Generator = Any


def _fail(message: str) -> CompilationError:
    return CompilationError(message)


def _block(value: Any, what: str, b: Builder) -> tensor:
    x = semantic.to_tensor(_unwrap(value), b)
    if not x.shape:
        raise _fail(f"kl.{what} takes a block, got a scalar of type {x.dtype}")
    return x


def _int_list(values: Any, what: str) -> list[int]:
    """``*shape``/``*dims`` given either as one tuple or list or as separate
    integers, as Triton accepts them."""
    values = [_unwrap(v) for v in values]
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        values = [_unwrap(v) for v in values[0]]
    for v in values:
        if isinstance(v, tensor):
            raise _fail(f"{what} must be compile-time constants (kl.constexpr), got a runtime value")
        if isinstance(v, bool) or not isinstance(v, int):
            raise _fail(f"{what} must be integer constants, got {v!r}")
    return values


def _check_block_shape(shape: list[int], what: str) -> None:
    for d in shape:
        if d <= 0 or d & (d - 1):
            raise _fail(f"kl.{what}: block dimensions must be powers of two, got shape {shape}")


# ---------------------------------------------------------------------------
# Implementations (also used by the frontend for `x.T`)
# ---------------------------------------------------------------------------


@jit
def _take_first(a, b):
    return a


def _unsplat(x: tensor, b: Builder, generator: Generator) -> tensor:
    """A block of one element as a scalar."""
    if x.numel != 1:
        raise _fail(f"only a block of one element can become a scalar, got shape {x.shape}")
    if len(x.shape) > 1:
        x = reshape_impl(x, [1], b)
    return reduction.reduce_impl(x, 0, _take_first, False, b, generator)


def reshape_impl(x: tensor, shape: list[int], b: Builder) -> tensor:
    n = 1
    for d in shape:
        n *= d
    if n != x.numel:
        raise _fail(f"kl.reshape cannot change the number of elements: shape {x.shape} has {x.numel}, "
                    f"shape {shape} has {n}")
    _check_block_shape(shape, "reshape")
    if not x.shape:
        return semantic.splat(x, shape, b)
    if x.shape == shape:
        return x
    return semantic.ir_result(b.reshape(x.handle, shape), x.dtype)


def permute_impl(x: tensor, dims: list[int], b: Builder) -> tensor:
    rank = len(x.shape)
    if len(dims) != rank:
        raise _fail(f"kl.permute needs one dim per dimension of the block: got dims {tuple(dims)} for a block "
                    f"of shape {x.shape}")
    if sorted(dims) != list(range(rank)):
        raise _fail(f"permute dims must be a permutation of 0, 1, ..., n-1, but were {tuple(dims)} "
                    f"(block of shape {x.shape})")
    if dims == list(range(rank)):
        return x
    return semantic.ir_result(b.trans(x.handle, dims), x.dtype)


def _same_dtype(x: tensor, y: tensor, what: str) -> None:
    if x.dtype != y.dtype:
        raise _fail(f"kl.{what} needs blocks of one dtype, got {x.dtype} and {y.dtype}")


def join_impl(a: Any, c: Any, b: Builder) -> tensor:
    x, y = semantic.to_tensor(_unwrap(a), b), semantic.to_tensor(_unwrap(c), b)
    _same_dtype(x, y, "join")
    x, y = semantic.broadcast_pair(x, y, b)
    if not x.shape:
        # Two scalars: a block of two elements.
        x, y = semantic.splat(x, [1], b), semantic.splat(y, [1], b)
        joined = semantic.ir_result(b.join(x.handle, y.handle), x.dtype)
        return reshape_impl(joined, [2], b)
    return semantic.ir_result(b.join(x.handle, y.handle), x.dtype)


def split_impl(a: Any, b: Builder, generator: Generator) -> tuple[tensor, tensor]:
    x = _block(a, "split", b)
    if x.shape[-1] != 2:
        raise _fail(f"kl.split needs a block whose last dimension is 2, got shape {x.shape}")
    was_rank_1 = len(x.shape) == 1
    if was_rank_1:
        x = semantic.expand_dims(x, 0, b)
    lhs, rhs = b.split(x.handle)
    out = semantic.ir_result(lhs, x.dtype), semantic.ir_result(rhs, x.dtype)
    if was_rank_1:
        return _unsplat(out[0], b, generator), _unsplat(out[1], b, generator)
    return out


# ---------------------------------------------------------------------------
# Builtins
# ---------------------------------------------------------------------------


@builtin
def reshape(input: Any, *shape: Any, can_reorder: bool = False, _builder: Builder = None,
            _generator: Generator = None) -> tensor:
    """``input`` with the same elements in row-major order and shape
    ``shape`` (a tuple, or separate integers); ``()`` makes a one-element
    block a scalar."""
    dims = _int_list(shape, "reshape sizes")
    x = semantic.to_tensor(_unwrap(input), _builder)
    if not dims:
        return _unsplat(x, _builder, _generator) if x.shape else x
    return reshape_impl(x, dims, _builder)


@builtin
def item(input: Any, _builder: Builder = None, _generator: Generator = None) -> tensor:
    """The one element of a one-element block, as a scalar (a scalar is
    returned as it is)."""
    x = semantic.to_tensor(_unwrap(input), _builder)
    if not x.shape:
        return x
    if x.numel != 1:
        raise _fail(f"item() needs a block of one element, got shape {x.shape}")
    return _unsplat(x, _builder, _generator)


@builtin
def view(input: Any, *shape: Any, _builder: Builder = None) -> tensor:
    """Deprecated alias of ``reshape(input, *shape, can_reorder=True)``."""
    warnings.warn("view is deprecated, please use reshape with can_reorder being true.")
    x = semantic.to_tensor(_unwrap(input), _builder)
    return reshape_impl(x, _int_list(shape, "view sizes"), _builder)


@builtin
def ravel(x: Any, can_reorder: bool = False, _builder: Builder = None) -> tensor:
    """``x`` as a 1-D block."""
    x = _block(x, "ravel", _builder)
    return reshape_impl(x, [x.numel], _builder)


@builtin
def trans(input: Any, *dims: Any, _builder: Builder = None) -> tensor:
    """``input`` with its dimensions permuted (``dims`` as a tuple or as
    separate integers); without ``dims``, its last two dimensions swapped
    (a 2-D transpose, batched over the others), as Triton's."""
    x = _block(input, "trans", _builder)
    order = _int_list(dims, "trans dims")
    if not order:
        rank = len(x.shape)
        if rank < 2:
            raise _fail(f"kl.trans without dims needs a block of 2 or more dimensions, got shape {x.shape}")
        order = list(range(rank - 2)) + [rank - 1, rank - 2]
    return permute_impl(x, order, _builder)


@builtin
def permute(input: Any, *dims: Any, _builder: Builder = None) -> tensor:
    """``input`` with dimension ``i`` of the result being dimension
    ``dims[i]`` of ``input``."""
    return permute_impl(_block(input, "permute", _builder), _int_list(dims, "permute dims"), _builder)


@builtin
def broadcast(input: Any, other: Any, _builder: Builder = None) -> tuple[tensor, tensor]:
    """``input`` and ``other`` broadcast to their common shape."""
    x = semantic.to_tensor(_unwrap(input), _builder)
    y = semantic.to_tensor(_unwrap(other), _builder)
    return semantic.broadcast_pair(x, y, _builder)


@builtin
def join(a: Any, b: Any, _builder: Builder = None) -> tensor:
    """``a`` and ``b`` (broadcast to one shape) joined along a new minor
    dimension of size 2; two scalars give a block of shape [2]."""
    return join_impl(a, b, _builder)


@builtin
def split(a: Any, _builder: Builder = None, _generator: Generator = None) -> tuple[tensor, tensor]:
    """The inverse of :func:`join`: ``a[..., 0]`` and ``a[..., 1]`` (two
    scalars for a block of shape [2])."""
    return split_impl(a, _builder, _generator)


@builtin
def interleave(a: Any, b: Any, _builder: Builder = None) -> tensor:
    """The elements of ``a`` and ``b`` alternating along their last
    dimension: ``join(a, b).reshape(a.shape[:-1] + [2 * a.shape[-1]])``."""
    c = join_impl(a, b, _builder)
    if len(c.shape) == 1:
        return c
    return reshape_impl(c, c.shape[:-2] + [2 * c.shape[-2]], _builder)


@builtin
def cat(input: Any, other: Any, can_reorder: bool = False, _builder: Builder = None) -> tensor:
    """``input`` followed by ``other`` (1-D blocks of one shape and dtype).
    As in Triton, ``can_reorder`` must be True."""
    if not _unwrap(can_reorder):
        raise _fail("current implementation of `cat` always may reorder elements")
    x, y = _block(input, "cat", _builder), _block(other, "cat", _builder)
    if len(x.shape) != 1 or x.shape != y.shape:
        raise _fail(f"kl.cat takes two 1-D blocks of one shape, got shapes {x.shape} and {y.shape}")
    _same_dtype(x, y, "cat")
    return semantic.ir_result(_builder.cat(x.handle, y.handle), x.dtype)


@builtin
def flip(x: Any, dim: Any = None, _builder: Builder = None) -> tensor:
    """``x`` reversed along ``dim`` (the last dimension if None)."""
    x = _block(x, "flip", _builder)
    rank = len(x.shape)
    axis = _unwrap(dim)
    axis = rank - 1 if axis is None else axis
    if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
        raise _fail(f"kl.flip dim must be a constant in [{-rank}, {rank}), got {axis!r} (shape {x.shape})")
    axis %= rank
    if x.shape[axis] == 1:
        return x
    return semantic.ir_result(_builder.flip(x.handle, axis), x.dtype)


@builtin
def gather(src: Any, index: Any, axis: Any, _builder: Builder = None) -> tensor:
    """``out[i][j] = src[index[i][j]][j]`` for axis 0 (and likewise for
    other axes and ranks): the result has ``index``'s shape."""
    x, idx = _block(src, "gather", _builder), _block(index, "gather", _builder)
    if not idx.dtype.is_int():
        raise _fail(f"kl.gather index must be an integer tensor, got {idx.dtype}")
    rank = len(x.shape)
    if len(idx.shape) != rank:
        raise _fail(f"kl.gather needs source and index tensors of the same rank, got shapes {x.shape} "
                    f"and {idx.shape}")
    a = _unwrap(axis)
    if isinstance(a, bool) or not isinstance(a, int) or not -rank <= a < rank:
        raise _fail(f"kl.gather axis must be a constant in [{-rank}, {rank}), got {a!r}")
    a %= rank
    for d in range(rank):
        if d != a and x.shape[d] != idx.shape[d]:
            raise _fail(f"kl.gather index dim {d} must match the source (all dims but axis {a}), got shapes "
                        f"{x.shape} and {idx.shape}")
    return semantic.ir_result(_builder.gather(x.handle, idx.handle, a), x.dtype)


@builtin
def histogram(input: Any, num_bins: Any, mask: Optional[Any] = None, _builder: Builder = None) -> tensor:
    """int32 counts of the values of the 1-D integer block ``input`` in
    each of the bins ``0 .. num_bins - 1`` (other values are not counted),
    skipping elements whose ``mask`` is False."""
    b = _builder
    x = _block(input, "histogram", b)
    if len(x.shape) != 1 or not x.dtype.is_int():
        raise _fail(f"kl.histogram takes a 1-D block of integers, got {x.type}")
    bins = _unwrap(num_bins)
    if isinstance(bins, bool) or not isinstance(bins, int) or bins <= 0 or bins & (bins - 1):
        raise _fail(f"kl.histogram num_bins must be a power-of-two constant, got {bins!r}")
    # Values are compared as signed integers: a narrow one is widened as
    # its own type says (an unsigned uint8 255 falls in bin 255).
    if x.dtype.primitive_bitwidth < 32:
        x = semantic.cast(x, int32, b)
    mask = _unwrap(mask)
    mask_handle = None
    if mask is not None:
        m = semantic.to_tensor(mask, b)
        if m.shape and m.shape != x.shape:
            raise _fail(f"kl.histogram mask must have the input's shape {x.shape}, got {m.shape}")
        m = semantic.cast(m, int1, b)
        mask_handle = semantic.broadcast_to(m, list(x.shape), b).handle
    return semantic.ir_result(b.histogram(x.handle, mask_handle, bins), int32)


# The tensor methods Triton defines for these (``x.reshape(...)``, ...).
for _name, _fn in [("reshape", reshape), ("view", view), ("ravel", ravel), ("trans", trans),
                   ("permute", permute), ("split", split), ("flip", flip), ("gather", gather),
                   ("histogram", histogram), ("expand_dims", expand_dims), ("item", item)]:
    setattr(tensor, _name, _fn)
del _name, _fn
