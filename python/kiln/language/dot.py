"""``kl.dot``: the block matrix product, with Triton's semantics.

``dot(a, b, acc=None, input_precision=None, max_num_imprecise_acc=None,
out_dtype=float32)`` multiplies an [M, K] block by a [K, N] block (or a
batch of them: [B, M, K] by [B, K, N]) and adds ``acc``. fp16 and bf16
operands accumulate in fp32 (fp16 also in fp16, with ``out_dtype=float16``),
int8 operands in int32, fp32 operands in fp32 with ``input_precision``
"tf32" (the default, as Triton's), "tf32x3", "ieee", or "bf16x3"/"bf16x6"
(sums of 3 or 6 bf16 products of the operands' bf16 parts). fp8 operands
(``float8e4nv``, ``float8e5``, mixed or not) accumulate in fp32 (or fp16):
on sm_90a's warpgroup MMA natively; elsewhere decoded to fp16, which holds
every fp8 value exactly, and multiplied as fp16.

``max_num_imprecise_acc`` applies to fp8 operands only: left out (Triton's
sm_90 default, 2**30), the native instructions accumulate a whole dot at
their own reduced precision; a bound of at most K asks to add partial sums
of that many products (at least one instruction's) into the fp32
accumulator (on wgmma, as Triton does; decoded to fp16 elsewhere, which is
precise).

K must be at least 16 (32 for 8-bit operands), as in Triton; M and N must
be at least 16 (Triton also takes smaller ones), all powers of two.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from kiln.errors import CompilationError
from kiln.language import fp8, semantic, shapes
from kiln.language.core import (
    _unwrap, bfloat16, builtin, dtype, float16, float32, float64, int32, tensor,
)

Builder = Any

#: Accepted spellings of ``input_precision``, as Triton's (lower case).
_PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")

#: fp32 operands computed as sums of bf16 products: each operand split into
#: this many bf16 parts (x = x0 + x1 + ...), and the products x_i * y_j kept
#: for i + j below the number of parts (3 products of 2 parts, 6 of 3).
_BF16_SPLITS = {"bf16x3": 2, "bf16x6": 3}


def _fail(message: str) -> CompilationError:
    return CompilationError(message)


def _default_precision() -> str:
    """Triton reads its default from TRITON_F32_DEFAULT; Kiln from
    KILN_F32_DEFAULT (same values)."""
    return os.environ.get("KILN_F32_DEFAULT", "tf32")


def _operand(value: Any, what: str, b: Builder) -> tensor:
    x = semantic.to_tensor(_unwrap(value), b)
    if len(x.shape) < 2:
        raise _fail(f"kl.dot: {what} must be a block of 2 or more dimensions, got shape {x.shape}")
    return x


def _flatten_batch(x: tensor, b: Builder) -> tensor:
    """A block of rank 4 or more as the 3-D block of its matrices: its batch
    dimensions (all but the last two) made one."""
    batch = 1
    for size in x.shape[:-2]:
        batch *= size
    return shapes.reshape_impl(x, [batch] + x.shape[-2:], b)


#: Triton's default max_num_imprecise_acc for fp8 dots on sm_90.
_UNBOUNDED_IMPRECISE_ACC = 1 << 30


def _imprecise_acc(value: Any, fp8: bool, k: int) -> int:
    """``max_num_imprecise_acc`` as Triton checks it: a compile-time
    integer, at most K for fp8 operands (the only ones it applies to).
    Left out, fp8 dots may accumulate all K products imprecisely: Triton's
    default on sm_90, a bound no dot reaches."""
    value = _unwrap(value)
    if value is None:
        return _UNBOUNDED_IMPRECISE_ACC if fp8 else 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail("kl.dot: max_num_imprecise_acc must be a compile-time constant integer")
    if value < 0:
        raise _fail(f"kl.dot: max_num_imprecise_acc must not be negative, got {value}")
    if fp8 and value > k:
        raise _fail(f"max_num_imprecise_acc ({value}) must be <= K ({k})")
    return value


def dot_impl(a: Any, b_: Any, acc: Any, input_precision: Optional[str],
             max_num_imprecise_acc: Optional[int], out_dtype: dtype, b: Builder) -> tensor:
    x = _operand(a, "the first operand", b)
    y = _operand(b_, "the second operand", b)
    if len(x.shape) != len(y.shape):
        raise _fail(f"kl.dot: operands of shapes {x.shape} and {y.shape} have different ranks")
    if x.shape[-1] != y.shape[-2]:
        raise _fail(f"kl.dot: the inner dimensions of shapes {x.shape} and {y.shape} differ "
                    f"({x.shape[-1]} != {y.shape[-2]})")
    if x.shape[:-2] != y.shape[:-2]:
        raise _fail(f"kl.dot: the batch dimensions of shapes {x.shape} and {y.shape} differ")
    xt, yt = x.dtype, y.dtype
    fp8_formats = ("", "")
    if xt.is_fp8() and yt.is_fp8():
        fp8_formats = (fp8.ir_format(xt.scalar), fp8.ir_format(yt.scalar))
    elif xt.is_fp8() or yt.is_fp8():
        raise _fail(f"kl.dot: an fp8 operand needs an fp8 partner, got {xt} and {yt}")
    elif xt != yt:
        raise _fail(f"kl.dot: operands must have one dtype, got {xt} and {yt}")
    # fp8 operands take fp16's accumulators.
    elem = float16 if xt.is_fp8() else x.dtype
    if elem.name == "uint8":
        # Triton takes uint8 as far as its dtype check, then refuses it.
        raise _fail("kl.dot: uint8 operands are not supported: only int8 integers "
                    "(as Triton's tl.dot)")
    if not (elem.is_fp16() or elem.is_bf16() or elem.is_fp32() or elem.is_fp64() or elem.name == "int8"):
        raise _fail(f"kl.dot: unsupported operand dtype {xt} (expected fp16, bf16, fp32, fp64, int8 or fp8)")

    # Triton's rule and wording for the inner dimension: K >= 16, or K >= 32
    # for 8-bit operands.
    min_k = 32 if x.dtype.scalar.primitive_bitwidth == 8 else 16
    if x.shape[-1] < min_k:
        raise _fail(f"kl.dot: Input shapes should have M >= 1, N >= 1 and K >= {min_k}, "
                    f"got {x.shape} * {y.shape}")
    # M or N below 16 are multiplied without tensor cores (as in Triton).

    out_dtype = _unwrap(out_dtype)
    if elem.name == "int8":
        out_dtype = int32
    elif elem.is_fp64():
        # As Triton's: fp64 operands multiply into fp64, whatever out_dtype says.
        out_dtype = float64
    elif not isinstance(out_dtype, dtype) or not (out_dtype.is_fp32() or (out_dtype.is_fp16() and elem.is_fp16())):
        raise _fail(f"kl.dot: out_dtype {out_dtype} is not supported for {xt} operands "
                    f"(float32, or float16 for fp16 operands)")

    precision = _unwrap(input_precision)
    if precision is None:
        precision = _default_precision() if elem.is_fp32() else "ieee"
    precision = str(precision).lower()
    if precision not in _PRECISIONS:
        raise _fail(f"kl.dot: input_precision must be one of {', '.join(_PRECISIONS)}, got {precision!r}")
    if not elem.is_fp32():
        precision = "ieee"

    shape = x.shape[:-1] + [y.shape[-1]]
    acc = _unwrap(acc)
    if acc is None:
        c = semantic.full(shape, 0, out_dtype, b)
    else:
        c = semantic.to_tensor(acc, b)
        if c.shape != shape:
            raise _fail(f"kl.dot: acc has shape {c.shape}, expected {shape}")
        if c.dtype != out_dtype:
            if elem.name == "int8" or elem.is_fp64() or not (c.dtype.is_fp32() or c.dtype.is_fp16()):
                raise _fail(f"kl.dot: acc has dtype {c.dtype}, expected {out_dtype}")
            out_dtype = c.dtype
            if out_dtype.is_fp16() and not elem.is_fp16():
                raise _fail(f"kl.dot: an fp16 acc needs fp16 operands, got {elem}")
    if len(shape) > 3:
        # The IR's dot is 2-D or 3-D: more batch dimensions are one, then
        # the result takes its shape back.
        x, y, c = (_flatten_batch(v, b) for v in (x, y, c))
    if precision in _BF16_SPLITS:
        result = _split_bf16_dot(x, y, c, _BF16_SPLITS[precision], b)
    else:
        imprecise = _imprecise_acc(max_num_imprecise_acc, xt.is_fp8(), x.shape[-1])
        result = semantic.ir_result(b.dot(x.handle, y.handle, c.handle, precision, imprecise, *fp8_formats),
                                    out_dtype)
    if result.shape != shape:
        result = shapes.reshape_impl(result, shape, b)
    return result


def _bf16_parts(x: tensor, parts: int, b: Builder) -> list[tensor]:
    """`x` (fp32) as `parts` bf16 blocks whose sum is `x` to about 8 bits
    more per part: each part is the bf16 rounding of what the earlier ones
    leave."""
    pieces = []
    rest = x
    for index in range(parts):
        piece = semantic.cast(rest, bfloat16, b)
        pieces.append(piece)
        if index + 1 < parts:
            rest = semantic.sub(rest, semantic.cast(piece, float32, b), b)
    return pieces


def _split_bf16_dot(x: tensor, y: tensor, c: tensor, parts: int, b: Builder) -> tensor:
    """``input_precision="bf16x3"``/``"bf16x6"``: the fp32 product as bf16
    tensor-core products of the operands' parts (Triton's meaning), the
    small terms first so that they are not lost against the large one."""
    xs, ys = _bf16_parts(x, parts, b), _bf16_parts(y, parts, b)
    acc = c
    for order in reversed(range(parts)):
        for i in range(order + 1):
            acc = semantic.ir_result(b.dot(xs[i].handle, ys[order - i].handle, acc.handle, "ieee", 0, "", ""), acc.dtype)
    return acc


@builtin
def dot(input: Any, other: Any, acc: Any = None, input_precision: Optional[str] = None,
        allow_tf32: Optional[bool] = None, max_num_imprecise_acc: Optional[int] = None,
        out_dtype: dtype = float32, _builder: Builder = None) -> tensor:
    """The matrix product ``input @ other`` (plus ``acc`` when given).

    ``allow_tf32`` is Triton's deprecated spelling: ``True`` means "tf32",
    ``False`` means "ieee"; it cannot be combined with ``input_precision``.
    """
    allow_tf32 = _unwrap(allow_tf32)
    if allow_tf32 is not None:
        if _unwrap(input_precision) is not None:
            raise _fail("kl.dot: give only one of input_precision and allow_tf32")
        input_precision = "tf32" if allow_tf32 else "ieee"
    return dot_impl(input, other, acc, input_precision, max_num_imprecise_acc, out_dtype, _builder)
