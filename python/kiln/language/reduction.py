"""Reductions and scans: ``kl.reduce``, ``kl.associative_scan`` and the
standard ones built on them (``sum``, ``max``, ``argmax``, ``cumsum``, ...).

``reduce`` and ``associative_scan`` take a combine function, a
``@kiln.jit`` function of scalars, and emit ``kiln.reduce`` / ``kiln.scan``
with that function called in their combine region (the inliner then
inlines it). The standard reductions pick their combine function and
promote their input exactly as Triton's do:

* ``sum`` and ``cumsum`` widen integers narrower than 32 bits to (u)int32,
  unless ``dtype`` says otherwise; ``sum`` keeps the type of floats;
* ``cumsum`` and ``cumprod`` compute bfloat16 in float32; ``cumprod`` keeps
  every other type;
* ``max`` and ``min`` compute fp16/bf16 in fp32 and integers narrower than
  32 bits in int32; with ``return_indices`` (and ``argmax``/``argmin``)
  only bfloat16 is widened;
* ``argmax``/``argmin`` return int32 indices and, by default, the first
  index of the extreme value.

``axis=None`` reduces over every axis, last axis first, which combines the
elements in row-major order; indices are then row-major flat indices.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence, Union

from kiln.errors import CompilationError
from kiln.language import semantic
from kiln.language.core import _unwrap, builtin, dtype, int32, tensor, uint32

Builder = Any  # kiln._C.ir.Builder
Generator = Any  # kiln.compiler.frontend.CodeGenerator


def _fail(message: str) -> CompilationError:
    return CompilationError(message)


def _as_tuple(input: Any) -> tuple[list[tensor], bool]:
    """The blocks of a reduction's input and whether it was a tuple."""
    if isinstance(input, (tuple, list)):
        values = [_unwrap(v) for v in input]
        is_tuple = True
    else:
        values, is_tuple = [_unwrap(input)], False
    for v in values:
        if not isinstance(v, tensor) or not v.shape:
            raise _fail(f"reductions and scans take blocks, got {v!r}")
    shape = values[0].shape
    for v in values[1:]:
        if v.shape != shape:
            raise _fail(f"the blocks of a tuple reduction must have one shape, got {shape} and {v.shape}")
    return values, is_tuple


def _check_axis(axis: Any, rank: int, allow_none: bool) -> Optional[int]:
    axis = _unwrap(axis)
    if axis is None:
        if not allow_none:
            raise _fail("a scan needs an axis")
        return None
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise _fail(f"axis must be a constant integer (or None), got {axis!r}")
    if not -rank <= axis < rank:
        raise _fail(f"axis {axis} is out of range for a block of rank {rank} (shape must have the axis)")
    return axis % rank


def _check_combine(combine_fn: Any, operands: int, what: str) -> None:
    from kiln.compiler.frontend import is_kernel_source

    if not is_kernel_source(combine_fn):
        raise _fail(f"the combine function of {what} must be a @kiln.jit function, got {combine_fn!r}")
    params = [p for p in inspect.signature(combine_fn.fn).parameters.values()
              if p.name not in getattr(combine_fn, "constexpr_names", ())]
    if len(params) != 2 * operands:
        raise _fail(f"the combine function {combine_fn.__name__} of {what} takes {len(params)} arguments, "
                    f"but combining {operands} block(s) needs {2 * operands}: (accumulated..., new...)")


def _combine_region(op: Any, values: list[tensor], combine_fn: Any, what: str, b: Builder,
                    generator: Generator) -> None:
    """Fills the combine block of `op` with a call of `combine_fn`."""
    n = len(values)
    ip = b.get_insertion_point()
    b.set_insertion_point_to_end(op.block)
    try:
        args = [tensor(op.block.arg(i), values[i % n].dtype) for i in range(2 * n)]
        returned = generator.call_function(combine_fn, args)
        results = list(returned) if isinstance(returned, tuple) else [returned]
        if len(results) != n:
            raise _fail(f"the combine function {combine_fn.__name__} of {what} returned {len(results)} value(s), "
                        f"expected {n}")
        for result, value in zip(results, values):
            if not isinstance(result, tensor) or result.shape or result.dtype != value.dtype:
                got = result.type if isinstance(result, tensor) else type(result).__name__
                raise _fail(f"the combine function {combine_fn.__name__} of {what} must return scalars of the "
                            f"input type {value.dtype}, got {got}")
        b.create_combine_return([r.handle for r in results])
    finally:
        b.restore_insertion_point(ip)


def _reduce_axis(values: list[tensor], axis: int, combine_fn: Any, b: Builder,
                 generator: Generator) -> list[tensor]:
    op = b.create_reduce([v.handle for v in values], axis)
    _combine_region(op, values, combine_fn, "kl.reduce", b, generator)
    results = []
    for handle, v in zip(op.results, values):
        shape = v.shape[:axis] + v.shape[axis + 1:]
        results.append(tensor(handle, semantic._with_shape(v.dtype, shape)))
    return results


def reduce_impl(input: Any, axis: Any, combine_fn: Any, keep_dims: bool, b: Builder,
                generator: Generator) -> Any:
    """``kl.reduce``: the checks, then one ``kiln.reduce`` per reduced axis."""
    values, is_tuple = _as_tuple(input)
    rank = len(values[0].shape)
    axis = _check_axis(axis, rank, allow_none=True)
    _check_combine(combine_fn, len(values), "kl.reduce")
    axes = list(range(rank - 1, -1, -1)) if axis is None else [axis]
    for a in axes:
        values = _reduce_axis(values, a, combine_fn, b, generator)
    if keep_dims:
        if axis is None:
            values = [semantic.splat(v, [1] * rank, b) for v in values]
        else:
            values = [semantic.expand_dims(v, axis, b) if v.shape else semantic.splat(v, [1], b)
                      for v in values]
    return tuple(values) if is_tuple else values[0]


def scan_impl(input: Any, axis: Any, combine_fn: Any, reverse: bool, b: Builder, generator: Generator) -> Any:
    """``kl.associative_scan``: one ``kiln.scan``."""
    values, is_tuple = _as_tuple(input)
    axis = _check_axis(axis, len(values[0].shape), allow_none=False)
    _check_combine(combine_fn, len(values), "kl.associative_scan")
    op = b.create_scan([v.handle for v in values], axis, bool(_unwrap(reverse)))
    _combine_region(op, values, combine_fn, "kl.associative_scan", b, generator)
    results = [tensor(handle, v.type) for handle, v in zip(op.results, values)]
    return tuple(results) if is_tuple else results[0]


# ---------------------------------------------------------------------------
# The generic builtins
# ---------------------------------------------------------------------------


@builtin
def reduce(input: Any, axis: Any, combine_fn: Callable, keep_dims: bool = False, _builder: Builder = None,
           _generator: Generator = None) -> Any:
    """Reduces ``input`` (a block or a tuple of blocks of one shape) along
    ``axis`` (every axis if None) with ``combine_fn``, a ``@kiln.jit``
    function taking (accumulated..., new...) scalars and returning the
    combined scalar(s). ``keep_dims`` keeps reduced axes with size 1."""
    return reduce_impl(input, axis, combine_fn, bool(_unwrap(keep_dims)), _builder, _generator)


@builtin
def associative_scan(input: Any, axis: Any, combine_fn: Callable, reverse: bool = False,
                     _builder: Builder = None, _generator: Generator = None) -> Any:
    """Inclusive scan of ``input`` (a block or a tuple of blocks) along
    ``axis`` with the associative ``combine_fn`` (earlier value first);
    from the end when ``reverse``."""
    return scan_impl(input, axis, combine_fn, reverse, _builder, _generator)


# ---------------------------------------------------------------------------
# Promotions of the standard reductions
# ---------------------------------------------------------------------------


def _sum_dtype(x: tensor, dtype_arg: Any) -> Optional[dtype]:
    requested = _unwrap(dtype_arg)
    if requested is not None:
        if not isinstance(requested, dtype):
            raise _fail(f"dtype must be a kl dtype, got {requested!r}")
        return requested
    if x.dtype.is_bool():
        return int32
    if x.dtype.is_int() and x.dtype.int_bitwidth < 32:
        return uint32 if x.dtype.is_int_unsigned() else int32
    return None


def _promote_sum(x: tensor, dtype_arg: Any, b: Builder) -> tensor:
    target = _sum_dtype(x, dtype_arg)
    return semantic.cast(x, target, b) if target is not None and target != x.dtype else x


def _promote_bfloat16(x: tensor, b: Builder) -> tensor:
    """bfloat16 computed in float32 (Triton's scans do so: bfloat16 keeps
    too few mantissa bits for a running sum or product)."""
    from kiln.language.core import bfloat16, float32
    return semantic.cast(x, float32, b) if x.dtype == bfloat16 else x


def _promote_extreme(x: tensor, b: Builder) -> tensor:
    from kiln.language.core import float32
    if x.dtype.is_floating() and x.dtype.primitive_bitwidth < 32:
        return semantic.cast(x, float32, b)
    if (x.dtype.is_int() or x.dtype.is_bool()) and x.dtype.primitive_bitwidth < 32:
        return semantic.cast(x, int32, b)
    return x


def _flat_indices(x: tensor, axis: Optional[int], b: Builder) -> tensor:
    """int32 indices of `x`'s elements along `axis` (row-major flat indices
    when `axis` is None), broadcast to `x`'s shape."""
    shape = x.shape
    rank = len(shape)
    total = None
    stride = 1
    for d in range(rank - 1, -1, -1):
        if axis is not None and d != axis:
            continue
        index = semantic.arange(0, shape[d], b)
        for _ in range(rank - 1 - d):
            index = semantic.expand_dims(index, len(index.shape), b)
        for _ in range(d):
            index = semantic.expand_dims(index, 0, b)
        if stride != 1:
            index = semantic.mul(index, stride, b)
        total = index if total is None else semantic.add(total, index, b)
        stride *= shape[d]
    return semantic.broadcast_to(total, shape, b)


def reduce_with_indices(x: tensor, axis: Any, combine_fn: Any, keep_dims: bool, b: Builder,
                        generator: Generator) -> tuple[tensor, tensor]:
    """(value, int32 index) reduction used by argmax/argmin and
    ``max(return_indices=True)``."""
    values, _ = _as_tuple(x)
    axis = _check_axis(axis, len(values[0].shape), allow_none=True)
    indices = _flat_indices(values[0], axis, b)
    value, index = reduce_impl((values[0], indices), axis, combine_fn, keep_dims, b, generator)
    return value, index


Number = Union[int, float]
__all__: Sequence[str] = ["reduce", "associative_scan"]
