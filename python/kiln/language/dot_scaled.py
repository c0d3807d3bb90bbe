"""``kl.dot_scaled``: the matrix product of two blocks in microscaling (MX)
formats, with Triton's semantics.

``dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format,
acc=None, fast_math=False, lhs_k_pack=True, rhs_k_pack=True,
out_dtype=float32)`` multiplies an [M, K] block by a [K, N] block (or a
batch of them: [B, M, K] by [B, K, N]), each operand in one of the formats

* ``"e2m1"``: fp4 (1 sign, 2 exponent bits with bias 1, 1 mantissa bit;
  values 0, 0.5, 1, 1.5, 2, 3, 4, 6), two to a ``uint8``, the first
  element in the low four bits. Packed along K by default (lhs [M, K//2],
  rhs [K//2, N]); ``lhs_k_pack=False`` packs the lhs along M ([M//2, K]),
  ``rhs_k_pack=False`` the rhs along N ([K, N//2]).
* ``"e4m3"``, ``"e5m2"``: fp8 (``kl.float8e4nv``, ``kl.float8e5``), as
  those types or as their bytes (``uint8``).
* ``"bf16"``, ``"fp16"``: 16-bit floats.

Each operand may have a scale (``None`` for none): e8m0 exponents as a
``uint8`` block, one for every 32 consecutive elements along K, of shape
[M, K//32] for the lhs and [N, K//32] for the rhs (never transposed); the
scale byte ``s`` stands for 2^(s - 127), and 0xFF for NaN. The result is
``(lhs * lhs_scale) @ (rhs * rhs_scale) + acc``, accumulated in fp32.

No target Kiln compiles for has block-scaled tensor-core instructions, so
the product is emulated as Triton's documentation describes: each operand is
decoded, multiplied by its scale, rounded to the compute type (bf16, or
fp16 when either operand's format is fp16) and multiplied by ``kl.dot``
with an fp32 accumulator. Every e2m1 and fp8 value and every product of one
with a power of two in range is exact in fp32, so the decoding and scaling
are done in fp32 and rounded once. ``fast_math=True`` leaves out the
NaN handling of 0xFF scales (such a scale then reads as +inf).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from kiln.errors import CompilationError
from kiln.language import fp8, semantic, shapes
from kiln.language.core import (
    _unwrap, bfloat16, builtin, dtype, float8e4nv, float8e5, float16, float32, tensor, uint8, uint32,
)
from kiln.language.dot import dot_impl

Builder = Any

_FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")
#: The element type an operand of each format is read as.
_FORMAT_DTYPES = {"e4m3": float8e4nv, "e5m2": float8e5, "bf16": bfloat16, "fp16": float16}
#: Elements of K that share one scale (the MX block size for e8m0 scales).
_GROUP_SIZE = 32
#: fp32 bits of 2^-127, the value of scale byte 0 (an fp32 subnormal).
_SMALLEST_SCALE_BITS = 0x00400000
#: fp32 bits of 0.5, the one nonzero e2m1 subnormal.
_E2M1_HALF_BITS = 0x3F000000


def _fail(message: str) -> CompilationError:
    return CompilationError(message)


class _Operand(NamedTuple):
    """One side of the product, checked: ``value`` as given (e2m1 bytes still
    packed), ``rows``/``cols`` its logical (unpacked) matrix dimensions."""
    value: tensor
    fmt: str
    k_pack: bool
    rows: int
    cols: int


def _format(value: Any, what: str) -> str:
    fmt = _unwrap(value)
    if not isinstance(fmt, str) or fmt not in _FORMATS:
        raise _fail(f"kl.dot_scaled: {what} must be one of {', '.join(_FORMATS)}, got {fmt!r}")
    return fmt


def _flag(value: Any, what: str) -> bool:
    flag = _unwrap(value)
    if not isinstance(flag, bool):
        raise _fail(f"kl.dot_scaled: {what} must be a compile-time bool, got {flag!r}")
    return flag


def _operand(value: Any, fmt: str, k_pack: bool, side: str, b: Builder) -> _Operand:
    """Checks an operand against its format and reads its element type: fp8
    bytes and 16-bit integers are bit casts of the format's type."""
    x = semantic.to_tensor(_unwrap(value), b)
    if len(x.shape) not in (2, 3):
        raise _fail(f"kl.dot_scaled: {side} must be a 2-D or 3-D block, got shape {x.shape}")
    ty = x.dtype
    if fmt == "e2m1":
        if not (ty.is_int() and ty.primitive_bitwidth == 8):
            raise _fail(f"kl.dot_scaled: an e2m1 {side} holds two fp4 values per byte and must be uint8, got {ty}")
    else:
        want = _FORMAT_DTYPES[fmt]
        if ty != want:
            if not (ty.is_int() and ty.primitive_bitwidth == want.primitive_bitwidth):
                raise _fail(f"kl.dot_scaled: a {fmt} {side} must be {want} (or its bits as a "
                            f"{want.primitive_bitwidth}-bit integer), got {ty}")
            x = semantic.cast(x, want, b, bitcast=True)
        if not k_pack:
            raise _fail(f"kl.dot_scaled: only e2m1 operands can be packed along a dimension other than K; "
                        f"{side}_k_pack=False with format {fmt}")
    rows, cols = x.shape[-2:]
    if fmt == "e2m1":
        # The lhs is [M, K] and the rhs [K, N]: packing along K doubles the
        # lhs's columns and the rhs's rows, packing along M or N the others.
        doubles_cols = k_pack if side == "lhs" else not k_pack
        rows, cols = (rows, 2 * cols) if doubles_cols else (2 * rows, cols)
    return _Operand(x, fmt, k_pack, rows, cols)


def _scale(value: Any, side: str, expected: list[int], b: Builder) -> Optional[tensor]:
    """The scale block, checked against the shape its operand implies."""
    value = _unwrap(value)
    if value is None:
        return None
    s = semantic.to_tensor(value, b)
    if s.shape != expected:
        raise _fail(f"{side}_scale must be a tensor of shape {expected}. Got {[str(d) for d in s.shape]}")
    if s.dtype != uint8:
        raise _fail(f"kl.dot_scaled: {side}_scale holds e8m0 exponents and must be uint8, got {s.dtype}")
    return s


def _e2m1_to_float32(nibbles: tensor, b: Builder) -> tensor:
    """fp4 e2m1 codes (the low four bits of a uint32 block) -> fp32, exactly."""
    s = semantic
    magnitude = s.and_(nibbles, 0x7, b)
    sign = s.lshift(s.and_(nibbles, 0x8, b), 28, b)
    # Normal codes 2..7 are 1.0, 1.5, ..., 6.0: exponent (code >> 1) - 1 and
    # mantissa bit (code & 1), which lines up as (code + 252) << 22 in fp32
    # bits. Code 1 is the subnormal 0.5, code 0 zero.
    normal = s.lshift(s.add(magnitude, 252, b), 22, b)
    subnormal = s.where(s.equal(magnitude, 1, b), _E2M1_HALF_BITS, 0, b)
    bits = s.or_(s.where(s.greater_equal(magnitude, 2, b), normal, subnormal, b), sign, b)
    return s.cast(bits, float32, b, bitcast=True)


def _interleave(first: tensor, second: tensor, axis: int, b: Builder) -> tensor:
    """``first`` and ``second`` alternating along ``axis`` (-1 or -2)."""
    joined = shapes.join_impl(first, second, b)  # [..., R, C, 2]
    rank = len(joined.shape)
    if axis == -2:
        order = list(range(rank - 3)) + [rank - 3, rank - 1, rank - 2]
        joined = shapes.permute_impl(joined, order, b)  # [..., R, 2, C]
    new_shape = list(first.shape)
    new_shape[axis] *= 2
    return shapes.reshape_impl(joined, new_shape, b)


def _decode(op: _Operand, side: str, b: Builder) -> tensor:
    """The operand's values as fp32, unpacked to its logical shape."""
    x = op.value
    if op.fmt == "e2m1":
        words = semantic.cast(x, uint32, b)
        low = _e2m1_to_float32(semantic.and_(words, 0xF, b), b)
        high = _e2m1_to_float32(semantic.rshift(words, 4, b), b)
        # K is the lhs's last dimension and the rhs's second to last.
        packed_along_last = op.k_pack == (side == "lhs")
        return _interleave(low, high, -1 if packed_along_last else -2, b)
    if x.dtype.is_fp8():
        return fp8.to_float32(x, b)
    return semantic.cast(x, float32, b)


def _scale_factors(scale: tensor, fast_math: bool, b: Builder) -> tensor:
    """e8m0 bytes [..., R, K//32] -> fp32 factors 2^(s - 127) repeated 32
    times along K: [..., R, K]. 0xFF is NaN unless ``fast_math``."""
    s = semantic
    words = s.cast(scale, uint32, b)
    bits = s.where(s.equal(words, 0, b), _SMALLEST_SCALE_BITS, s.lshift(words, 23, b), b)
    factors = s.cast(bits, float32, b, bitcast=True)
    if not fast_math:
        factors = s.where(s.equal(words, 0xFF, b), float("nan"), factors, b)
    repeated = s.expand_dims(factors, len(factors.shape), b)
    repeated = s.broadcast_to(repeated, factors.shape + [_GROUP_SIZE], b)
    return shapes.reshape_impl(repeated, factors.shape[:-1] + [factors.shape[-1] * _GROUP_SIZE], b)


def _upcast(op: _Operand, scale: Optional[tensor], compute: dtype, side: str, fast_math: bool,
            b: Builder) -> tensor:
    """The operand as a ``compute`` block of its logical shape, scaled."""
    if scale is None and op.value.dtype == compute:
        return op.value
    values = _decode(op, side, b)
    if scale is not None:
        factors = _scale_factors(scale, fast_math, b)
        if side == "rhs":
            # The rhs's scale is [N, K//32]: its factors are [N, K].
            rank = len(factors.shape)
            factors = shapes.permute_impl(factors, list(range(rank - 2)) + [rank - 1, rank - 2], b)
        values = semantic.mul(values, factors, b)
    return semantic.cast(values, compute, b)


@builtin
def dot_scaled(lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any,
               acc: Any = None, fast_math: Any = False, lhs_k_pack: Any = True, rhs_k_pack: Any = True,
               out_dtype: Any = float32, _builder: Builder = None) -> tensor:
    """The matrix product of two blocks in microscaling formats, plus
    ``acc`` when given (see the module's documentation)."""
    b = _builder
    lhs_fmt = _format(lhs_format, "lhs_format")
    rhs_fmt = _format(rhs_format, "rhs_format")
    fast_math = _flag(fast_math, "fast_math")
    a = _operand(lhs, lhs_fmt, _flag(lhs_k_pack, "lhs_k_pack"), "lhs", b)
    c = _operand(rhs, rhs_fmt, _flag(rhs_k_pack, "rhs_k_pack"), "rhs", b)
    a_shape, c_shape = a.value.shape, c.value.shape
    if len(a_shape) != len(c_shape):
        raise _fail(f"kl.dot_scaled: both operands must be 2-D or both 3-D, got shapes {a_shape} and {c_shape}")
    batch = a_shape[:-2]
    if batch != c_shape[:-2]:
        raise _fail(f"kl.dot_scaled: the batch dimensions of shapes {a_shape} and {c_shape} differ")
    m, k = a.rows, a.cols
    if c.rows != k:
        raise _fail(f"kl.dot_scaled: the operands hold different numbers of elements along K: {k} "
                    f"(lhs {lhs_fmt} of shape {a_shape}) and {c.rows} (rhs {rhs_fmt} of shape {c_shape})")
    n = c.cols
    for what, d in (("M", m), ("N", n), ("K", k)):
        if d < 16:
            raise _fail(f"kl.dot_scaled: {what} must be at least 16, got {d} "
                        f"(lhs of shape {a_shape}, rhs of shape {c_shape})")
    scales = [_unwrap(lhs_scale), _unwrap(rhs_scale)]
    if any(s is not None for s in scales) and k % _GROUP_SIZE:
        raise _fail(f"kl.dot_scaled: scaled operands need K to be a multiple of {_GROUP_SIZE}, got K = {k}")
    a_scale = _scale(scales[0], "lhs", batch + [m, k // _GROUP_SIZE], b)
    c_scale = _scale(scales[1], "rhs", batch + [n, k // _GROUP_SIZE], b)

    out_dtype = _unwrap(out_dtype)
    if out_dtype != float32:
        raise _fail(f"kl.dot_scaled: out_dtype must be float32, got {out_dtype}")
    out_shape = batch + [m, n]
    acc = _unwrap(acc)
    if acc is not None:
        acc = semantic.to_tensor(acc, b)
        if acc.shape != out_shape or acc.dtype != out_dtype:
            raise _fail(f"kl.dot_scaled: acc must be a {out_dtype} block of shape {out_shape}, "
                        f"got {acc.dtype} of shape {acc.shape}")

    compute = float16 if "fp16" in (lhs_fmt, rhs_fmt) else bfloat16
    x = _upcast(a, a_scale, compute, "lhs", fast_math, b)
    y = _upcast(c, c_scale, compute, "rhs", fast_math, b)
    return dot_impl(x, y, acc, "ieee", None, out_dtype, b)
