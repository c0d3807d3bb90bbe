"""Type rules of the element-wise math beyond the basic functions (``kl.fma``,
``kl.fdiv``, ``kl.umulhi``, ``kl.clamp``, extern and inline-asm element-wise
calls) and of rounding floating-point down-conversions (``cast``'s
``fp_downcast_rounding``).

Part of :mod:`kiln.language.semantic`, which exports every name here.
"""

from __future__ import annotations

import builtins
from typing import Any, Optional

from kiln.language.core import dtype, float32, int1, tensor

from kiln.language.semantic import (Builder, _fail, _with_shape, to_tensor, _literal_like, _operands, computation_type,
                                    cast, broadcast_shapes, broadcast_to, _arith, _emit, add, sub, truediv, minus,
                                    greater_than, minimum, maximum, where, math_unary, abs, _reject_fp8, ir_result)


# ---------------------------------------------------------------------------
# Element-wise math beyond the basic functions
# ---------------------------------------------------------------------------


def fma(x: Any, y: Any, z: Any, b: Builder) -> tensor:
    """``x * y + z`` rounded once; the three operands promote as for ``+``."""
    x, y = _operands(x, y, b)
    z = z if isinstance(z, tensor) else _literal_like(z, x, b)
    ty = computation_type(computation_type(x.dtype, y.dtype), z.dtype)
    if not ty.is_floating():
        raise _fail(f"kl.fma needs floating-point arguments, got {x.dtype}, {y.dtype} and {z.dtype}")
    x, y, z = (cast(v, ty, b) for v in (x, y, z))
    _reject_fp8("kl.fma", x)
    shape = broadcast_shapes(broadcast_shapes(x.shape, y.shape), z.shape)
    x, y, z = (broadcast_to(v, shape, b) if shape else v for v in (x, y, z))
    return ir_result(b.fma(x.handle, y.handle, z.handle), x.dtype)


def fdiv(x: Any, y: Any, b: Builder, ieee_rounding: bool = False) -> tensor:
    """Triton's fdiv: floating-point operands only, promoted as for ``/``.

    As in Triton, fp32 ``/`` may be approximate on the GPU (``div.full.f32``,
    within 2 ulp); ``ieee_rounding`` asks for the correctly rounded quotient
    (libdevice's ``__nv_fdiv_rn``; the CPU always rounds correctly)."""
    x, y = _operands(x, y, b)
    if not x.dtype.is_floating() or not y.dtype.is_floating():
        raise _fail(f"fdiv needs floating-point operands, got {x.dtype} and {y.dtype}")
    if ieee_rounding:
        x, y, ty = _arith(x, y, b, div_or_mod=True)
        if ty == float32:
            return extern_elementwise("div_rn", [x, y], {(float32, float32): ("__nv_fdiv_rn", float32)}, b)
    return truediv(x, y, b)


def umulhi(x: Any, y: Any, b: Builder) -> tensor:
    x, y, ty = _arith(x, y, b)
    if not ty.is_int() or ty.int_bitwidth not in (32, 64):
        raise _fail(f"kl.umulhi needs 32- or 64-bit integer operands, got {ty}")
    return _emit(b, "umulhi", x, y)


def clamp(x: Any, lo: Any, hi: Any, propagate_nan: Any, b: Builder) -> tensor:
    """``minimum(maximum(x, lo), hi)``, floating point only (Triton's
    order, so a NaN ``x`` without propagation gives ``lo``)."""
    x = to_tensor(x, b)
    for value in (x, lo, hi):
        if isinstance(value, tensor) and not value.dtype.is_floating():
            raise _fail(f"kl.clamp supports floating-point values only, got {value.dtype}")
    if not x.dtype.is_floating():
        raise _fail(f"kl.clamp supports floating-point values only, got {x.dtype}")
    return minimum(maximum(x, lo, b, propagate_nan), hi, b, propagate_nan)


def sigmoid(x: Any, b: Builder) -> tensor:
    """Triton's ``1 / (1 + exp(-x))``, with its types."""
    x = to_tensor(x, b)
    return truediv(1, add(1, math_unary("exp", "sigmoid", minus(x, b), b), b), b)


def _type_list(types: tuple) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def extern_elementwise(name: str, args: list[Any], table: dict, b: Builder) -> tensor:
    """Calls the function ``table`` lists for the arguments' element types,
    element-wise. As in Triton, arguments whose types are not listed are
    first promoted together as arithmetic would promote them."""
    args, symbol, result_ty = resolve_extern_call(name, args, table, b)
    return ir_result(b.extern_elementwise(symbol, [a.handle for a in args], result_ty.to_ir(b)), result_ty.scalar)


def inline_asm_elementwise(asm: str, constraints: str, args: list[Any], dtypes: Any, is_pure: bool, pack: int,
                           b: Builder) -> Any:
    """``kl.inline_asm_elementwise``: the arguments broadcast to one shape,
    one result of that shape per dtype (a tuple when ``dtypes`` is one)."""
    from kiln.language.core import _unwrap
    several = not isinstance(dtypes, dtype)
    if several:
        try:
            result_dtypes = [_unwrap(d) for d in dtypes]
        except TypeError:
            raise _fail(f"inline_asm_elementwise needs dtype as a dtype or a tuple of dtypes, got {dtypes!r}") from None
    else:
        result_dtypes = [dtypes]
    if not result_dtypes:
        raise _fail("inline_asm_elementwise needs at least one result dtype; return a dummy value if the "
                    "assembly has no output")
    for d in result_dtypes:
        if not isinstance(d, dtype) or d.is_ptr() or d == int1:
            raise _fail(f"inline_asm_elementwise results must have number types other than int1, got {d!r}")
    tensors = [to_tensor(a, b) for a in args]
    for t in tensors:
        if t.dtype.scalar == int1:
            raise _fail("inline_asm_elementwise cannot pass int1 values: cast them to an integer type first")
    shape: list[int] = []
    for t in tensors:
        shape = broadcast_shapes(shape, t.shape)
    tensors = [broadcast_to(t, shape, b) for t in tensors]
    result_types = [_with_shape(d, shape) for d in result_dtypes]
    handles = b.elementwise_inline_asm(asm, constraints, is_pure, pack, [t.handle for t in tensors],
                                       [t.to_ir(b) for t in result_types])
    results = [tensor(h, t) for h, t in zip(handles, result_types)]
    return builtins.tuple(results) if several else results[0]


def resolve_extern_call(name: str, args: list[Any], table: dict, b: Builder) -> tuple[list[tensor], str, dtype]:
    """The arguments of an element-wise call of ``table``'s function,
    promoted and broadcast to one shape, with the symbol and result type
    that ``table`` gives for them; refuses types that ``table`` lacks."""
    if not args:
        raise _fail(f"{name} needs at least one argument")
    args = [to_tensor(a, b) if not isinstance(a, tensor) else a for a in args]
    given = tuple(a.dtype for a in args)
    types = given
    if types not in table and all(t.is_int() or t.is_floating() for t in types):
        ty = types[0]
        for t in types[1:]:
            ty = computation_type(ty, t)
        args = [cast(a, ty, b) for a in args]
        types = tuple(a.dtype for a in args)
    if types not in table:
        accepted = ", ".join(_type_list(t) for t in table)
        raise _fail(f"{name} does not accept arguments of type {_type_list(given)}; it accepts {accepted}")
    symbol, result = table[types]
    shape: list[int] = []
    for a in args:
        shape = broadcast_shapes(shape, a.shape)
    args = [broadcast_to(a, shape, b) if shape else a for a in args]
    return args, symbol, _with_shape(result, shape)


# ---------------------------------------------------------------------------
# Rounding of floating-point down-conversions (cast's fp_downcast_rounding)
# ---------------------------------------------------------------------------

_ROUNDINGS = ("rtne", "rtz")


def cast_with_rounding(x: Any, dst: dtype, b: Builder, rounding: Optional[str], bitcast: bool = False) -> tensor:
    """``cast``, where ``rounding`` ("rtne" or "rtz") picks how a float is
    rounded to a narrower float type, as Triton's ``fp_downcast_rounding``.

    Round toward zero is computed from the round-to-nearest-even result
    ``y``: where ``|y| > |x|`` (it rounded away from zero, possibly to inf),
    the next value toward zero is ``y``'s bit pattern minus one, since floats
    are sign and magnitude. NaNs compare false and stay NaN."""
    if rounding is None:
        return cast(x, dst, b, bitcast=bitcast)
    if rounding not in _ROUNDINGS:
        raise _fail(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
    x = to_tensor(x, b)
    if bitcast or not (x.dtype.is_floating() and isinstance(dst, dtype) and dst.is_floating()
                       and dst.primitive_bitwidth < x.dtype.primitive_bitwidth):
        raise _fail(f"fp_downcast_rounding is only for conversions to a narrower float type, got {x.dtype} to "
                    f"{dst!r}{' with bitcast' if bitcast else ''}")
    nearest = cast(x, dst, b)
    if rounding == "rtne":
        return nearest
    if dst.is_fp8():
        raise _fail(f"fp_downcast_rounding='{rounding}' is not supported for {dst!r}: conversions to fp8 round to "
                    f"nearest even ('rtne')")
    from kiln.language.core import int16, int32 as _int32
    bits_ty = {16: int16, 32: _int32}[dst.primitive_bitwidth]
    widened = cast(nearest, x.dtype, b)
    away = greater_than(abs(widened, b), abs(x, b), b)
    bits = cast(nearest, bits_ty, b, bitcast=True)
    toward_zero = cast(sub(bits, 1, b), dst, b, bitcast=True)
    return where(away, toward_zero, nearest, b)
