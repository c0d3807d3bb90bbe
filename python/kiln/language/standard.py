"""The standard reductions and scans of ``kiln.language``, as Triton's:
``sum max min argmax argmin xor_sum reduce_or cumsum cumprod softmax``.

Each is a builtin that promotes its input (see ``reduction.py``) and calls
``kl.reduce`` / ``kl.associative_scan`` with one of the ``@kiln.jit``
combine functions below.
"""

from __future__ import annotations

from typing import Any, Optional

from kiln.errors import CompilationError
from kiln.language import core, reduction, semantic
from kiln.language.core import _unwrap, builtin, tensor
from kiln.runtime.jit import jit

Builder = Any
Generator = Any


# ---------------------------------------------------------------------------
# Combine functions
# ---------------------------------------------------------------------------


@jit
def _sum_combine(a, b):
    return a + b


@jit
def _prod_combine(a, b):
    return a * b


@jit
def _max_combine(a, b):
    return core.maximum(a, b)


@jit
def _min_combine(a, b):
    return core.minimum(a, b)


@jit
def _xor_combine(a, b):
    return a ^ b


@jit
def _or_combine(a, b):
    return a | b


@jit
def _argmax_combine_left(value1, index1, value2, index2):
    # The larger value; on a tie, the smaller index (the first occurrence).
    gt = (value1 > value2) | ((value1 == value2) & (index1 < index2))
    return core.where(gt, value1, value2), core.where(gt, index1, index2)


@jit
def _argmax_combine_any(value1, index1, value2, index2):
    gt = value1 > value2
    return core.where(gt, value1, value2), core.where(gt, index1, index2)


@jit
def _argmin_combine_left(value1, index1, value2, index2):
    lt = (value1 < value2) | ((value1 == value2) & (index1 < index2))
    return core.where(lt, value1, value2), core.where(lt, index1, index2)


@jit
def _argmin_combine_any(value1, index1, value2, index2):
    lt = value1 < value2
    return core.where(lt, value1, value2), core.where(lt, index1, index2)


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------


def _block(input: Any, what: str) -> tensor:
    input = _unwrap(input)
    if not isinstance(input, tensor) or not input.shape:
        raise CompilationError(f"kl.{what} takes a block, got {input!r}")
    if input.dtype.is_ptr():
        # Checked here, at the caller's line: the combine functions above
        # would otherwise fail inside this file.
        raise CompilationError(f"kl.{what} takes a block of numbers, got a block of pointers ({input.dtype})")
    return input


@builtin
def sum(input: Any, axis: Any = None, keep_dims: bool = False, dtype: Optional[core.dtype] = None,
        _builder: Builder = None, _generator: Generator = None) -> tensor:
    """Sum of ``input`` along ``axis`` (all axes if None). Integers narrower
    than 32 bits are summed in (u)int32 unless ``dtype`` is given."""
    x = reduction._promote_sum(_block(input, "sum"), dtype, _builder)
    return reduction.reduce_impl(x, axis, _sum_combine, bool(_unwrap(keep_dims)), _builder, _generator)


def _extreme(name: str, input: Any, axis: Any, return_indices: Any, tie_break_left: Any, keep_dims: Any,
             b: Builder, generator: Generator) -> Any:
    x = _block(input, name)
    keep = bool(_unwrap(keep_dims))
    if _unwrap(return_indices):
        # With indices only bfloat16 is widened (as in Triton): the value
        # returned keeps the input's type otherwise.
        x = reduction._promote_bfloat16(x, b)
        left = bool(_unwrap(tie_break_left))
        if name == "max":
            combine = _argmax_combine_left if left else _argmax_combine_any
        else:
            combine = _argmin_combine_left if left else _argmin_combine_any
        return reduction.reduce_with_indices(x, axis, combine, keep, b, generator)
    x = reduction._promote_extreme(x, b)
    combine = _max_combine if name == "max" else _min_combine
    return reduction.reduce_impl(x, axis, combine, keep, b, generator)


@builtin
def max(input: Any, axis: Any = None, return_indices: bool = False, return_indices_tie_break_left: bool = True,
        keep_dims: bool = False, _builder: Builder = None, _generator: Generator = None) -> Any:
    """Maximum of ``input`` along ``axis``; with ``return_indices``, also
    the int32 index of the maximum (the first one if
    ``return_indices_tie_break_left``)."""
    return _extreme("max", input, axis, return_indices, return_indices_tie_break_left, keep_dims, _builder,
                    _generator)


@builtin
def min(input: Any, axis: Any = None, return_indices: bool = False, return_indices_tie_break_left: bool = True,
        keep_dims: bool = False, _builder: Builder = None, _generator: Generator = None) -> Any:
    """Minimum of ``input`` along ``axis``; see :func:`max`."""
    return _extreme("min", input, axis, return_indices, return_indices_tie_break_left, keep_dims, _builder,
                    _generator)


@builtin
def argmax(input: Any, axis: Any, tie_break_left: bool = True, keep_dims: bool = False, _builder: Builder = None,
           _generator: Generator = None) -> tensor:
    """int32 index of the maximum of ``input`` along ``axis``."""
    return _extreme("max", input, axis, True, tie_break_left, keep_dims, _builder, _generator)[1]


@builtin
def argmin(input: Any, axis: Any, tie_break_left: bool = True, keep_dims: bool = False, _builder: Builder = None,
           _generator: Generator = None) -> tensor:
    """int32 index of the minimum of ``input`` along ``axis``."""
    return _extreme("min", input, axis, True, tie_break_left, keep_dims, _builder, _generator)[1]


@builtin
def xor_sum(input: Any, axis: Any = None, keep_dims: bool = False, _builder: Builder = None,
            _generator: Generator = None) -> tensor:
    """Bitwise xor of the (integer) elements of ``input`` along ``axis``."""
    x = _block(input, "xor_sum")
    if not x.dtype.is_int():
        raise CompilationError(f"kl.xor_sum needs integers, got {x.dtype}")
    return reduction.reduce_impl(x, axis, _xor_combine, bool(_unwrap(keep_dims)), _builder, _generator)


@builtin
def reduce_or(input: Any, axis: Any, keep_dims: bool = False, _builder: Builder = None,
              _generator: Generator = None) -> tensor:
    """Bitwise or of the (integer or boolean) elements of ``input`` along
    ``axis`` (None: all of them), as Triton's ``tl.reduce_or``; the result
    keeps the input's type."""
    x = _block(input, "reduce_or")
    if not x.dtype.is_int():
        raise CompilationError(f"kl.reduce_or needs integers, got {x.dtype}")
    return reduction.reduce_impl(x, axis, _or_combine, bool(_unwrap(keep_dims)), _builder, _generator)


# ---------------------------------------------------------------------------
# Scans
# ---------------------------------------------------------------------------


@builtin
def cumsum(input: Any, axis: int = 0, reverse: bool = False, dtype: Optional[core.dtype] = None,
           _builder: Builder = None, _generator: Generator = None) -> tensor:
    """Inclusive cumulative sum along ``axis``: bfloat16 is summed in float32,
    then the input is promoted as :func:`sum` does."""
    x = reduction._promote_bfloat16(_block(input, "cumsum"), _builder)
    x = reduction._promote_sum(x, dtype, _builder)
    return reduction.scan_impl(x, axis, _sum_combine, reverse, _builder, _generator)


@builtin
def cumprod(input: Any, axis: int = 0, reverse: bool = False, _builder: Builder = None,
            _generator: Generator = None) -> tensor:
    """Inclusive cumulative product along ``axis``: bfloat16 is multiplied
    in float32; other types keep theirs (integers wrap, as in Triton)."""
    x = reduction._promote_bfloat16(_block(input, "cumprod"), _builder)
    return reduction.scan_impl(x, axis, _prod_combine, reverse, _builder, _generator)


# ---------------------------------------------------------------------------
# Softmax
# ---------------------------------------------------------------------------


@builtin
def softmax(x: Any, dim: Any = None, keep_dims: bool = False, ieee_rounding: bool = False,
            _builder: Builder = None, _generator: Generator = None) -> tensor:
    """exp(x - max(x)) / sum(exp(x - max(x))) along ``dim`` (0 if None), as
    Triton computes it: the max and sum broadcast back against ``x``
    (``keep_dims`` keeps their reduced axis for that)."""
    b = _builder
    x = _block(x, "softmax")
    if not x.dtype.is_floating():
        raise CompilationError(f"kl.softmax needs a floating-point block, got {x.dtype}")
    axis = 0 if _unwrap(dim) is None else _unwrap(dim)
    keep = bool(_unwrap(keep_dims))
    z = semantic.sub(x, reduction.reduce_impl(reduction._promote_extreme(x, b), axis, _max_combine, keep, b,
                                              _generator), b)
    numerator = semantic.math_unary("exp", "exp", z, b)
    denominator = reduction.reduce_impl(numerator, axis, _sum_combine, keep, b, _generator)
    return semantic.truediv(numerator, denominator, b)


# ---------------------------------------------------------------------------
# Block creation (Triton keeps zeros_like with its standard functions)
# ---------------------------------------------------------------------------


@jit
def swizzle2d(i, j, size_i, size_j, size_g):
    """Where the row-major position ``(i, j)`` of a ``size_i`` x ``size_j``
    grid goes in the grouped order (Triton's ``tl.swizzle2d``): the rows are
    cut into groups of ``size_g`` (the last group may have fewer), and each
    group is filled column by column. A matmul that maps its program ids so
    visits the output tiles in an order where consecutive programs reuse
    the same rows of A and columns of B."""
    linear = i * size_j + j
    per_group = size_g * size_j
    first_row = (linear // per_group) * size_g
    rows = core.minimum(size_i - first_row, size_g)
    within = linear % per_group
    return first_row + within % rows, within // rows


@builtin
def zeros_like(input: Any, _builder: Builder = None) -> tensor:
    """A block of zeros with the shape and dtype of ``input``."""
    input = _unwrap(input)
    if not isinstance(input, tensor):
        raise CompilationError(f"zeros_like needs a runtime value, got {input!r}")
    if input.dtype.is_ptr():
        raise CompilationError(f"zeros_like needs a block of numbers, got {input.type}")
    return semantic.full(list(input.shape), 0, input.dtype, _builder)


# ---------------------------------------------------------------------------
# Sorting
# ---------------------------------------------------------------------------


def _last_axis(x: tensor, dim: Any, what: str) -> int:
    """The last axis of ``x``, checked against ``dim``: the bitonic networks
    below work along it only (as Triton's)."""
    rank = len(x.shape)
    axis = rank - 1 if _unwrap(dim) is None else _unwrap(dim)
    if isinstance(axis, bool) or not isinstance(axis, int) or axis % rank != rank - 1:
        raise CompilationError(f"kl.{what} only works along the last dimension ({rank - 1}), got dim={axis!r}")
    return rank - 1


def _power_of_two(n: int, what: str, name: str) -> None:
    if n < 1 or n & (n - 1):
        raise CompilationError(f"kl.{what} needs a power of two for {name}, got {n}")


def _axis_index(x: tensor, b: Builder) -> tensor:
    """Each element's int32 index along the last axis, broadcast to ``x``'s
    shape."""
    index = semantic.arange(0, x.shape[-1], b)
    for _ in range(len(x.shape) - 1):
        index = semantic.expand_dims(index, 0, b)
    return semantic.broadcast_to(index, x.shape, b)


def _runs_ascending(index: tensor, size: int, descending: bool, b: Builder) -> tensor:
    """Where runs of ``size`` elements alternate ascending (even runs) and
    descending (odd runs), flipped if ``descending``: pairs of adjacent
    runs then form bitonic sequences of twice the size."""
    ascending = semantic.equal(semantic.and_(index, size, b), 0, b)
    return semantic.logical_not(ascending, b) if descending else ascending


def _merge(x: tensor, index: tensor, ascending: Any, distance: int, b: Builder) -> tensor:
    """The compare-and-exchange steps of a bitonic merge along the last
    axis, at ``distance``, ``distance/2``, ..., 1: each element is paired
    with the one whose index differs in that bit (a gather along the axis),
    the lower of the pair keeps the smaller where ``ascending`` (a block of
    bools, or a Python bool for all) and the larger elsewhere."""
    from kiln.language import shapes

    if isinstance(ascending, bool):
        ascending = semantic.full(x.shape, int(ascending), core.int1, b)
    axis = len(x.shape) - 1
    while distance >= 1:
        partner = shapes.gather(x, semantic.xor_(index, distance, b), axis, _builder=b)
        lower = semantic.equal(semantic.and_(index, distance, b), 0, b)
        keep_smaller = semantic.equal(lower, ascending, b)
        partner_smaller = semantic.less_than(partner, x, b)
        partner_larger = semantic.greater_than(partner, x, b)
        take = semantic.where(keep_smaller, partner_smaller, partner_larger, b)
        x = semantic.where(take, partner, x, b)
        distance //= 2
    return x


@builtin
def sort(x: Any, dim: Any = None, descending: Any = False, _builder: Builder = None) -> tensor:
    """``x`` sorted along its last dimension (``dim`` must be it, as in
    Triton), ascending unless ``descending``.

    A bitonic sorting network: log2(n)·(log2(n)+1)/2 steps, each pairing
    every element with the one whose index differs in one bit (a gather
    along the axis) and keeping the smaller or the larger of the two.
    """
    b = _builder
    x = _block(x, "sort")
    _last_axis(x, dim, "sort")
    n = x.shape[-1]
    index = _axis_index(x, b)
    down = bool(_unwrap(descending))
    size = 2
    while size <= n:
        # Runs of `size` elements, sorted alternately ascending and
        # descending (the last run, the whole axis, in the requested order).
        ascending = (not down) if size == n else _runs_ascending(index, size, down, b)
        x = _merge(x, index, ascending, size // 2, b)
        size *= 2
    return x


@builtin
def bitonic_merge(x: Any, dim: Any = None, descending: Any = False, _builder: Builder = None) -> tensor:
    """One bitonic merge along the last dimension of ``x`` (a power of two,
    ``dim`` must be it), as Triton's ``tl.bitonic_merge``: a bitonic
    sequence (one that rises then falls, or falls then rises) comes out
    sorted, ascending unless ``descending``. Other inputs go through the
    same compare-and-exchange network and come out permuted, not sorted."""
    b = _builder
    x = _block(x, "bitonic_merge")
    _last_axis(x, dim, "bitonic_merge")
    n = x.shape[-1]
    _power_of_two(n, "bitonic_merge", "the size of the last dimension")
    return _merge(x, _axis_index(x, b), not bool(_unwrap(descending)), n // 2, b)


@builtin
def topk(x: Any, k: Any, dim: Any = None, _builder: Builder = None) -> tensor:
    """The ``k`` largest elements along the last dimension of ``x`` (``dim``
    must be it), largest first, as Triton's ``tl.topk``: a block of the
    shape of ``x`` with its last dimension ``k``. ``k`` and that dimension
    are powers of two, ``k`` at most the dimension.

    Bitonic top-k: runs of ``k`` are sorted alternately ascending and
    descending; then, while there are more than ``k`` elements, each
    ascending run and the descending run after it become their elementwise
    maximum (a bitonic sequence holding the ``k`` largest of the two runs),
    which a bitonic merge sorts again.
    """
    from kiln.language import shapes

    b = _builder
    x = _block(x, "topk")
    _last_axis(x, dim, "topk")
    k = _unwrap(k)
    if isinstance(k, bool) or not isinstance(k, int):
        raise CompilationError(f"kl.topk needs a constant integer k, got {k!r}")
    n = x.shape[-1]
    _power_of_two(n, "topk", "the size of the last dimension")
    _power_of_two(k, "topk", "k")
    if k > n:
        raise CompilationError(f"kl.topk needs k at most the size of the last dimension ({n}), got k={k}")
    index = _axis_index(x, b)
    size = 2
    while size <= k:
        ascending = False if size == n else _runs_ascending(index, size, False, b)
        x = _merge(x, index, ascending, size // 2, b)
        size *= 2
    outer = list(x.shape[:-1])
    while x.shape[-1] > k:
        m = x.shape[-1]
        # [..., m] -> [..., m/2k, k, 2]: the two runs of each pair side by
        # side in a last axis of two, which split takes apart.
        pairs = shapes.permute_impl(shapes.reshape_impl(x, outer + [m // (2 * k), 2, k], b),
                                    list(range(len(outer))) + [len(outer), len(outer) + 2, len(outer) + 1], b)
        first, second = shapes.split_impl(pairs, b, None)
        larger = semantic.where(semantic.greater_than(second, first, b), second, first, b)
        x = shapes.reshape_impl(larger, outer + [m // 2], b)
        index = _axis_index(x, b)
        ascending = False if m // 2 == k else _runs_ascending(index, k, False, b)
        x = _merge(x, index, ascending, k // 2, b)
    return x
