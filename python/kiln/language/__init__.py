"""Kiln's kernel language, imported by users as ``kl``.

``import kiln.language as kl`` plays the role of ``import triton.language as
tl``: the same names (``kl.program_id``, ``kl.arange``, ``kl.load``,
``kl.store``, ``kl.constexpr``, ``kl.float32``, ...) with the same meaning.
"""

from kiln.language.core import (
    TRITON_MAX_TENSOR_NUMEL,
    abs,
    arange,
    bfloat16,
    block_type,
    broadcast_to,
    builtin,
    cast,
    cdiv,
    ceil,
    constexpr,
    constexpr_type,
    cos,
    dtype,
    erf,
    exp,
    exp2,
    expand_dims,
    float16,
    float32,
    float64,
    floor,
    full,
    int1,
    int8,
    int16,
    int32,
    int64,
    load,
    log,
    log2,
    maximum,
    minimum,
    num_programs,
    pointer_type,
    program_id,
    range,
    rsqrt,
    sin,
    sqrt,
    static_assert,
    static_print,
    static_range,
    store,
    tanh,
    tensor,
    uint8,
    uint16,
    uint32,
    uint64,
    where,
    zeros,
)
from kiln.language.reduction import associative_scan, reduce
from kiln.language.standard import (argmax, argmin, cumprod, cumsum, max, min, reduce_or, softmax, sort, sum,
                                    xor_sum)
from kiln.language.atomics import (
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xchg,
    atomic_xor,
)
from kiln.language.debugging import device_assert, device_print
from kiln.language.hints import assume, debug_barrier, max_constancy, max_contiguous, multiple_of

__all__ = [
    "TRITON_MAX_TENSOR_NUMEL", "abs", "arange", "bfloat16", "block_type", "broadcast_to", "builtin", "cast", "cdiv", "ceil", "constexpr", "constexpr_type",
    "cos", "dtype", "erf", "exp", "exp2", "expand_dims", "float16", "float32", "float64", "floor", "full", "int1",
    "int8", "int16", "int32", "int64", "load", "log", "log2", "maximum", "minimum", "num_programs",
    "pointer_type", "program_id", "range", "rsqrt", "sin", "sqrt", "static_assert", "static_print",
    "static_range", "store", "tanh", "tensor", "uint8", "uint16", "uint32", "uint64", "where", "zeros",
    # reductions and scans
    "argmax", "argmin", "associative_scan", "cumprod", "cumsum", "max", "min", "reduce", "reduce_or", "softmax", "sort",
    "sum", "xor_sum",
    # Atomics.
    "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or", "atomic_xchg",
    "atomic_xor",
    # Hints and debugging.
    "assume", "debug_barrier", "device_assert", "device_print", "max_constancy", "max_contiguous", "multiple_of",
]

# Element-wise math beyond the basic functions (triton.language.math), and
# `kl.extra.libdevice` (as `triton.language.extra.libdevice`).
from kiln.language.core import (  # noqa: E402
    PropagateNan,
    clamp,
    div_rn,
    fdiv,
    fma,
    inline_asm_elementwise,
    sigmoid,
    sqrt_rn,
    umulhi,
)
from kiln.language import extra  # noqa: E402

__all__ += ["PropagateNan", "clamp", "div_rn", "extra", "fdiv", "fma", "inline_asm_elementwise", "sigmoid", "sqrt_rn",
            "umulhi"]

# Block pointers (Triton's tensor pointers).
from kiln.language.block_pointer import advance, make_block_ptr  # noqa: E402

__all__ += ["advance", "make_block_ptr"]

# Tensor descriptors (Triton's tl.make_tensor_descriptor).
from kiln.language.tensor_descriptor import (  # noqa: E402
    load_tensor_descriptor,
    make_tensor_descriptor,
    store_tensor_descriptor,
    tensor_descriptor,
)

__all__ += ["load_tensor_descriptor", "make_tensor_descriptor", "store_tensor_descriptor", "tensor_descriptor"]

# Python functions run at compile time (triton.constexpr_function).
from kiln.language.compile_time import constexpr_function  # noqa: E402

__all__ += ["constexpr_function"]

# Random numbers (triton.language.random; also reachable as kl.random.*).
from kiln.language import random  # noqa: E402
from kiln.language.random import (  # noqa: E402
    pair_uniform_to_normal,
    philox,
    philox_impl,
    rand,
    rand4x,
    randint,
    randint4x,
    randn,
    randn4x,
    uint_to_uniform_float,
)

__all__ += ["pair_uniform_to_normal", "philox", "philox_impl", "rand", "rand4x", "randint", "randint4x", "randn",
            "randn4x", "random", "uint_to_uniform_float"]

# Block creation beyond kl.zeros and kl.full.
from kiln.language.standard import bitonic_merge, swizzle2d, topk, zeros_like  # noqa: E402

__all__ += ["bitonic_merge", "swizzle2d", "topk", "zeros_like"]

# Shape ops (and the tensor methods reshape, trans, permute, ...).
from kiln.language.shapes import (  # noqa: E402
    broadcast,
    cat,
    flip,
    gather,
    histogram,
    interleave,
    join,
    permute,
    ravel,
    reshape,
    split,
    trans,
    view,
)

__all__ += ["broadcast", "cat", "flip", "gather", "histogram", "interleave", "join", "permute", "ravel", "reshape",
            "split", "trans", "view"]

# 8-bit floats (OCP E4M3FN and E5M2), stored as bytes; see docs/design/fp8.md.
# Triton's other fp8 formats are named so that kernels naming them compile
# to a clear error.
from kiln.language.core import float8e4b8, float8e4b15, float8e4nv, float8e5, float8e5b16  # noqa: E402
from kiln.language.core import str_to_ty, void  # noqa: E402

__all__ += ["float8e4b8", "float8e4b15", "float8e4nv", "float8e5", "float8e5b16", "str_to_ty", "void"]

# Matrix products.
from kiln.language.dot import dot  # noqa: E402
from kiln.language.dot_scaled import dot_scaled  # noqa: E402

__all__ += ["dot", "dot_scaled"]

# Triton's spellings: tl.math.<fn>, tl.add/sub/mul as functions, the int32
# pointer type, and the block methods x.broadcast_to(...) and x.abs().
from kiln.language import math  # noqa: E402
from kiln.language.core import add, const, mul, sub  # noqa: E402

pi32_t = pointer_type(int32)
# The builtins Triton also makes tensor methods (x.sum(axis=0), x.exp(), ...).
for _method in (broadcast_to, abs, exp, exp2, log, log2, sqrt, rsqrt, sin, cos, floor, ceil, erf, sqrt_rn, fma,
                umulhi, cdiv, sum, max, min, argmax, argmin, xor_sum, reduce_or, cumsum, cumprod, sort, topk, reduce,
                associative_scan):
    setattr(tensor, _method.__name__, _method)
del _method

__all__ += ["add", "const", "math", "mul", "pi32_t", "sub"]


import builtins as _builtins  # noqa: E402
import typing as _typing  # noqa: E402


class _TupleMeta(type):
    """Makes ``isinstance(t, kl.tuple)`` hold for every Python tuple: in a
    kernel, the tuples Triton types as ``tl.tuple`` are Python tuples."""

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, _builtins.tuple)


class tuple(metaclass=_TupleMeta):  # noqa: A001 - Triton's name
    """Triton's ``tl.tuple``: ``kl.tuple(iterable)`` is the Python tuple of
    its elements, which may be runtime values (``kl.tuple([x, y + 1])``);
    it then compares and concatenates as any tuple (``kl.tuple((1, 2)) ==
    (1, 2)``, ``kl.tuple((4, 5)) + (6, 7)``)."""

    def __new__(cls, iterable: _typing.Iterable[_typing.Any] = ()) -> _typing.Any:
        return _builtins.tuple(iterable)


__all__ += ["tuple"]


# Compile-time queries of the target (triton.language.target_info), loop
# conditions with hints (tl.condition), slices (tl.slice), and scalar
# functions mapped over blocks (tl.map_elementwise).
from kiln.language import target_info  # noqa: E402
from kiln.language.core import condition, slice  # noqa: E402
from kiln.language.elementwise import map_elementwise  # noqa: E402

__all__ += ["condition", "map_elementwise", "slice", "target_info"]
