"""Conversions between the 8-bit float types and fp32, as integer IR.

``kl.float8e4nv`` (OCP E4M3FN: bias 7, 3 mantissa bits, no infinities, NaN
is S.1111.111, largest finite 448) and ``kl.float8e5`` (E5M2: bias 15, 2
mantissa bits, IEEE-like with infinities and NaNs, largest finite 57344) are
bytes in the IR: their values are ``i8`` and their pointers ``!kiln.ptr<i8>``,
so loads, stores, ``where`` and bit casts need nothing new. Conversions to
and from fp32 are written once each, with 32-bit integer operations that
vectorize on the CPU and map to plain ALU instructions on the GPU: the
encoder here, the decoder in the compiler (the builder's ``fp8_to_f32``),
which also decodes the operands of fp8 dots where a target has no fp8 tensor
cores. Every other conversion goes through fp32 (exactly, except fp64 ->
fp8, which rounds twice, and integers wider than fp32's 24-bit significand).

The encoder follows Triton 3.x on sm_90 (``cvt.rn.satfinite.e4m3x2.f32`` and
``cvt.rn.satfinite.e5m2x2.f32``): round to nearest even; finite values and
infinities beyond the largest finite value saturate to it, keeping the sign;
NaN stays NaN (0x7f or 0xff). No floating-point arithmetic is used, so the
result does not depend on denormal flushing or on fp-contraction of the code
around it. See docs/design/fp8.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kiln.language.core import dtype, float32, tensor, uint8, uint32

Builder = Any  # kiln._C.ir.Builder


class _Format(NamedTuple):
    bias: int
    mantissa_bits: int
    max_finite_code: int  # the magnitude byte of the largest finite value
    ir_name: str


_FORMATS = {
    "fp8e4nv": _Format(bias=7, mantissa_bits=3, max_finite_code=0x7E, ir_name="e4m3"),
    "fp8e5": _Format(bias=15, mantissa_bits=2, max_finite_code=0x7B, ir_name="e5m2"),
}

_NAN_CODE = 0x7F  # a NaN in both formats (what the PTX cvt instructions produce)
_F32_INF = 0x7F800000


def _with_shape(scalar: dtype, like: tensor) -> dtype:
    from kiln.language.core import block_type
    return block_type(scalar, like.shape) if like.shape else scalar


def _reinterpret(x: tensor, scalar: dtype) -> tensor:
    """``x`` with another 8-bit element type; the IR value (an i8) is unchanged."""
    return tensor(x.handle, _with_shape(scalar, x))


def ir_format(scalar: dtype) -> str:
    """The IR's name of an fp8 type's format (``kiln.dot``'s ``aFloat8``)."""
    return _FORMATS[scalar.name].ir_name


def to_float32(x: tensor, b: Builder) -> tensor:
    """fp8 -> fp32, exactly (every fp8 value is an fp32 value). The decoder
    is the compiler's (it also decodes the operands of fp8 dots that a
    target cannot multiply natively)."""
    handle = b.fp8_to_f32(x.handle, ir_format(x.dtype.scalar))
    return tensor(handle, _with_shape(float32, x))


def _round_shift_right(value: tensor, amount: Any, b: Builder) -> tensor:
    """``value >> amount`` rounded to nearest, ties to even (``amount`` >= 1)."""
    from kiln.language import semantic as s
    half_minus_one = s.sub(s.lshift(1, s.sub(amount, 1, b), b), 1, b) if isinstance(amount, tensor) \
        else (1 << (amount - 1)) - 1
    lowest_kept = s.and_(s.rshift(value, amount, b), 1, b)
    return s.rshift(s.add(s.add(value, half_minus_one, b), lowest_kept, b), amount, b)


def from_float32(x: tensor, dst: dtype, b: Builder) -> tensor:
    """fp32 -> fp8, round to nearest even, saturating to the largest finite
    value (infinities too), NaN to NaN."""
    from kiln.language import semantic as s
    fmt = _FORMATS[dst.name]
    m = fmt.mantissa_bits
    bits = s.cast(x, uint32, b, bitcast=True)
    sign = s.and_(s.rshift(bits, 24, b), 0x80, b)
    magnitude = s.and_(bits, 0x7FFFFFFF, b)
    # Normal results: drop 23 - m mantissa bits with rounding (a carry into
    # the exponent is the right answer), then rebias the exponent.
    normal = s.sub(_round_shift_right(magnitude, 23 - m, b), (127 - fmt.bias) << m, b)
    # Subnormal results: the significand with its implicit bit, shifted to
    # units of the smallest subnormal, 2^(1 - bias - m). Rounding up into
    # the smallest normal gives its code, 1 << m. The amount is clamped to
    # [1, 31] so lanes that take the normal path stay well defined.
    exponent = s.rshift(magnitude, 23, b)
    significand = s.or_(s.and_(magnitude, 0x7FFFFF, b), 0x800000, b)
    amount = s.maximum(s.minimum(s.sub(151 - fmt.bias - m, exponent, b), 31, b), 1, b)
    subnormal = _round_shift_right(significand, amount, b)
    smallest_normal = (128 - fmt.bias) << 23
    code = s.where(s.less_than(magnitude, smallest_normal, b), subnormal, normal, b)
    code = s.minimum(code, fmt.max_finite_code, b)
    code = s.where(s.greater_than(magnitude, _F32_INF, b), _NAN_CODE, code, b)
    byte = s.cast(s.or_(code, sign, b), uint8, b)
    return _reinterpret(byte, dst)


def cast(x: tensor, dst: dtype, b: Builder, bitcast: bool) -> tensor:
    """``semantic.cast`` where the source or the destination is an fp8 type."""
    from kiln.language import semantic as s
    src = x.dtype.scalar
    if bitcast:
        if src.primitive_bitwidth != 8 or dst.primitive_bitwidth != 8 or dst.is_bool():
            raise s._fail(f"cannot bitcast {src} to {dst}: bit widths {src.primitive_bitwidth} and "
                          f"{dst.primitive_bitwidth} differ")
        return _reinterpret(x, dst)
    if src.is_fp8():
        return s.cast(to_float32(x, b), dst, b)
    if not (src.is_int() or src.is_floating()):
        raise s._fail(f"cannot cast {src} to {dst}")
    return from_float32(s.cast(x, float32, b), dst, b)
