"""Conversions between the 8-bit float types and fp32.

``kl.float8e4nv`` (OCP E4M3FN: bias 7, 3 mantissa bits, no infinities, NaN
is S.1111.111, largest finite 448) and ``kl.float8e5`` (E5M2: bias 15, 2
mantissa bits, IEEE-like with infinities and NaNs, largest finite 57344) are
bytes in the IR: their values are ``i8`` and their pointers ``!kiln.ptr<i8>``,
so loads, stores, ``where`` and bit casts need nothing new. Both conversions
with fp32 are the compiler's: the decoder (the builder's ``fp8_to_f32``,
exact, with integer operations; it also decodes the operands of fp8 dots
where a target has no fp8 tensor cores) and the rounding op
``kiln.f32_to_float8`` (the builder's ``f32_to_fp8``). Every other
conversion goes through fp32 (exactly, except fp64 -> fp8, which rounds
twice, and integers wider than fp32's 24-bit significand).

The rounding follows Triton 3.x on sm_90 (``cvt.rn.satfinite.e4m3x2.f32`` and
``cvt.rn.satfinite.e5m2x2.f32``, which sm_90 and later GPUs run): round to
nearest even; finite values and infinities beyond the largest finite value
saturate to it, keeping the sign; any NaN becomes 0x7f. Other
targets compute the same bytes with integer operations, so the result does
not depend on denormal flushing or on fp-contraction of the code around it.
See docs/design/fp8.md.
"""
from __future__ import annotations

from typing import Any

from kiln.language.core import dtype, float32, tensor, uint8

Builder = Any  # kiln._C.ir.Builder


#: The IR's name (``kiln.float8`` attribute) of each fp8 type's format.
_IR_FORMATS = {"fp8e4nv": "e4m3", "fp8e5": "e5m2"}


def _with_shape(scalar: dtype, like: tensor) -> dtype:
    from kiln.language.core import block_type
    return block_type(scalar, like.shape) if like.shape else scalar


def _reinterpret(x: tensor, scalar: dtype) -> tensor:
    """``x`` with another 8-bit element type; the IR value (an i8) is unchanged."""
    return tensor(x.handle, _with_shape(scalar, x))


def ir_format(scalar: dtype) -> str:
    """The IR's name of an fp8 type's format (``kiln.dot``'s ``aFloat8``)."""
    return _IR_FORMATS[scalar.name]


def to_float32(x: tensor, b: Builder) -> tensor:
    """fp8 -> fp32, exactly (every fp8 value is an fp32 value). The decoder
    is the compiler's (it also decodes the operands of fp8 dots that a
    target cannot multiply natively)."""
    handle = b.fp8_to_f32(x.handle, ir_format(x.dtype.scalar))
    return tensor(handle, _with_shape(float32, x))


def from_float32(x: tensor, dst: dtype, b: Builder) -> tensor:
    """fp32 -> fp8, round to nearest even, saturating to the largest finite
    value (infinities too), NaN to NaN: ``kiln.f32_to_float8``, which sm_90
    and later GPUs compute in one instruction per pair and other targets
    with integer ops (the compiler's kiln-expand-float8-rounding)."""
    byte = tensor(b.f32_to_fp8(x.handle, _IR_FORMATS[dst.name]), _with_shape(uint8, x))
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
