"""Type rules of the Kiln language and their translation to IR builder calls.

Every function takes tensors (or Python constants) and the
``kiln._C.ir.Builder`` and returns tensors. This is the only place that
knows Triton's promotion rules:

* int with float -> the float type; fp16 with bf16 -> fp32; fp16/bf16 with
  fp32 -> fp32; anything with fp64 -> fp64;
* two integers of one signedness -> the wider; signed with unsigned -> the
  unsigned type if it is at least as wide, else the signed one (C's rule);
* a Python int literal adopts the integer type of the other operand (and
  the float type of a float operand); a Python float literal with an integer
  operand is fp32;
* ``/`` on integers divides in fp32; ``//`` and ``%`` truncate (C semantics);
  ``/`` and ``%`` on fp16/bf16 compute in fp32;
* a scalar combined with a block is splat to the block's shape; blocks
  broadcast numpy-style.

Errors are raised as ``CompilationError`` without a location; the frontend
adds the location of the expression being compiled.
"""

from __future__ import annotations

import builtins
import warnings
from typing import Any, Optional, Sequence

from kiln.errors import CompilationError
from kiln.language.core import (block_type, bfloat16, dtype, float16, float32, float64, int1, int32, int64,
                                pointer_type, tensor, uint8, uint32, uint64, validate_block_shape)

Builder = Any  # kiln._C.ir.Builder


def _fail(message: str) -> CompilationError:
    return CompilationError(message)


def _with_shape(scalar_ty: dtype, shape: list[int]) -> dtype:
    return block_type(scalar_ty, shape) if shape else scalar_ty


def ir_result(handle: Any, element: dtype) -> tensor:
    """The value a builder call returned, a block or a scalar as its IR type
    says, with the shape read from that type (which the op's verifier
    checked); ``element`` is its element dtype, whose signedness the
    signless IR type does not hold."""
    if handle.type.is_block():
        return tensor(handle, block_type(element, list(handle.type.shape)))
    return tensor(handle, element)


# ---------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------


def constant(value: Any, ty: dtype, b: Builder) -> tensor:
    """A constant of scalar type ``ty`` (or a splat block when ``ty`` is a block)."""
    scalar = ty.scalar
    if scalar.is_fp8():
        return cast(constant(value, _with_shape(float32, ty.shape if ty.is_block() else []), b), scalar, b)
    if scalar.is_floating():
        return ir_result(b.float_const(float(value), ty.to_ir(b)), ty.scalar)
    if scalar.is_int():
        value = int(value)
        lo, hi = _int_range(scalar)
        if not lo <= value <= hi:
            raise _fail(f"constant {value} does not fit in {scalar}")
        return ir_result(b.int_const(value, ty.to_ir(b)), ty.scalar)
    raise _fail(f"cannot make a constant of type {ty}")


def _int_range(ty: dtype) -> tuple[int, int]:
    w = ty.int_bitwidth
    if ty.is_bool():
        return (0, 1)
    if ty.is_int_unsigned():
        return (0, 2**w - 1)
    return (-(2 ** (w - 1)), 2 ** (w - 1) - 1)


_FLOAT32_NORMAL_MIN = 2.0**-126
_FLOAT32_MAX = (2 - 2.0**-23) * 2.0**127


def _literal_dtype(value: Any) -> dtype:
    """The type Triton gives a Python literal on its own."""
    if isinstance(value, bool):
        return int1
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return int32
        if 2**31 <= value < 2**32:
            return uint32
        if -(2**63) <= value < 2**63:
            return int64
        if 2**63 <= value < 2**64:
            return uint64
        raise _fail(f"integer constant {value} does not fit in 64 bits")
    if isinstance(value, float):
        # float32 unless the value is a finite nonzero number outside
        # float32's normal range (it would overflow or lose its precision):
        # then float64. inf, nan and 0 are float32.
        magnitude = builtins.abs(value)
        if magnitude != magnitude or magnitude in (0.0, float("inf")):
            return float32
        if _FLOAT32_NORMAL_MIN <= magnitude <= _FLOAT32_MAX:
            return float32
        from kiln.language.core import float64
        return float64
    raise _fail(f"a value of type {type(value).__name__} ({value!r}) cannot be used as a tensor")


def to_tensor(value: Any, b: Builder) -> tensor:
    """``value`` as a tensor; Python literals become constants of their type."""
    if isinstance(value, tensor):
        return value
    from kiln.language.core import constexpr
    if isinstance(value, constexpr):
        value = value.value
    return constant(value, _literal_dtype(value), b)


def _literal_like(value: Any, other: tensor, b: Builder) -> tensor:
    """A Python literal combined with ``other``: it adopts other's type
    (Triton's rule for int and float literals); an int literal must fit in
    an integer type."""
    ty = other.dtype
    if isinstance(value, (bool, int)) and not isinstance(value, float):
        if ty.is_floating():
            return constant(value, ty, b)
        if ty.is_int() and not ty.is_bool():
            lo, hi = _int_range(ty)
            if not lo <= value <= hi:
                # Triton's rule (and words): the literal takes the tensor's
                # type, so it must fit; widening the result instead would
                # give another type than Triton does.
                raise _fail(f"Scalar {value} is out of range for type {ty}")
            return constant(value, ty, b)
        if ty.is_bool() and isinstance(value, bool):
            return constant(value, ty, b)
        return to_tensor(value, b)
    if isinstance(value, float):
        return constant(value, ty if ty.is_floating() else float32, b)
    return to_tensor(value, b)


def _operands(x: Any, y: Any, b: Builder) -> tuple[tensor, tensor]:
    if isinstance(x, tensor) and not isinstance(y, tensor):
        return x, _literal_like(y, x, b)
    if isinstance(y, tensor) and not isinstance(x, tensor):
        return _literal_like(x, y, b), y
    return to_tensor(x, b), to_tensor(y, b)


# ---------------------------------------------------------------------------
# Promotion and casts
# ---------------------------------------------------------------------------


def integer_promote(a: dtype, c: dtype) -> dtype:
    if a == c:
        return a
    if a.is_bool():
        return c
    if c.is_bool():
        return a
    if a.is_int_unsigned() == c.is_int_unsigned():
        return a if a.int_bitwidth >= c.int_bitwidth else c
    unsigned, signed = (a, c) if a.is_int_unsigned() else (c, a)
    return unsigned if unsigned.int_bitwidth >= signed.int_bitwidth else signed


def computation_type(a: dtype, c: dtype, div_or_mod: bool = False) -> dtype:
    """The type both operands of an arithmetic op are converted to."""
    if a.is_ptr() or c.is_ptr():
        raise _fail(f"arithmetic on pointers of types {a} and {c} is not supported")
    if a.is_fp8() or c.is_fp8():
        return _fp8_computation_type(a, c, div_or_mod)
    if a.is_fp64() or c.is_fp64():
        return float64
    if a.is_fp32() or c.is_fp32():
        return float32
    if (a.is_fp16() and c.is_bf16()) or (a.is_bf16() and c.is_fp16()):
        return float32
    for half in (float16, bfloat16):
        if a == half or c == half:
            return float32 if div_or_mod else half
    if div_or_mod:
        _check_same_signedness(a, c)
    return integer_promote(a, c)


def _check_same_signedness(a: dtype, c: dtype) -> None:
    """Refuses /, // and % between a signed and an unsigned integer type, as
    Triton does: C's promotion would divide a negative value as a huge
    unsigned one."""
    if (a.is_int() and c.is_int() and not a.is_bool() and not c.is_bool()
            and a.is_int_unsigned() != c.is_int_unsigned()):
        raise _fail(f"Cannot use /, // or % with {a} and {c} because they have different signedness; the result "
                    f"would rarely be useful. Cast them to the same signedness")


def cast(x: tensor, dst: dtype, b: Builder, bitcast: bool = False) -> tensor:
    """``x`` converted element-wise to the scalar type ``dst``."""
    if not isinstance(dst, dtype) or isinstance(dst, block_type):
        raise _fail(f"cast needs a scalar dtype such as kl.float32, got {dst!r}")
    x = to_tensor(x, b)
    src = x.dtype
    if src == dst:
        return x
    out_ty = _with_shape(dst, x.shape)
    if src.is_ptr() or dst.is_ptr():
        # bitcast=True changes nothing here, as in Triton: a pointer cast
        # keeps the address in every case.
        return pointer_cast(x, dst, b)
    if src.is_fp8() or dst.is_fp8():
        from kiln.language import fp8
        return fp8.cast(x, dst, b, bitcast)
    if bitcast:
        if src.primitive_bitwidth != dst.primitive_bitwidth:
            raise _fail(f"cannot bitcast {src} to {dst}: bit widths {src.primitive_bitwidth} and "
                        f"{dst.primitive_bitwidth} differ")
        if src.is_int() and dst.is_int():
            return tensor(x.handle, out_ty)
        return ir_result(b.cast("bitcast", x.handle, out_ty.to_ir(b)), out_ty.scalar)
    if dst.is_bool():
        return not_equal(x, 0, b)
    if src.is_int() and dst.is_int():
        sw, dw = src.int_bitwidth, dst.int_bitwidth
        if sw == dw:
            return tensor(x.handle, out_ty)  # signedness only lives in the dtype
        if dw > sw:
            op = "extui" if src.is_int_unsigned() or src.is_bool() else "extsi"
        else:
            op = "trunci"
        return ir_result(b.cast(op, x.handle, out_ty.to_ir(b)), out_ty.scalar)
    if src.is_floating() and dst.is_floating():
        if src.primitive_bitwidth == dst.primitive_bitwidth:  # fp16 <-> bf16
            return cast(cast(x, float32, b), dst, b)
        op = "extf" if dst.primitive_bitwidth > src.primitive_bitwidth else "truncf"
        return ir_result(b.cast(op, x.handle, out_ty.to_ir(b)), out_ty.scalar)
    if src.is_int() and dst.is_floating():
        op = "uitofp" if src.is_int_unsigned() or src.is_bool() else "sitofp"
        return ir_result(b.cast(op, x.handle, out_ty.to_ir(b)), out_ty.scalar)
    if src.is_floating() and dst.is_int():
        op = "fptoui" if dst.is_int_unsigned() else "fptosi"
        return ir_result(b.cast(op, x.handle, out_ty.to_ir(b)), out_ty.scalar)
    raise _fail(f"cannot cast {src} to {dst}")


# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------


def splat(x: tensor, shape: list[int], b: Builder) -> tensor:
    return ir_result(b.splat(x.handle, shape), x.dtype)


def expand_dims(x: tensor, axis: int, b: Builder) -> tensor:
    rank = len(x.shape)
    if axis < 0:
        axis += rank + 1
    if not 0 <= axis <= rank:
        raise _fail(f"expand_dims axis {axis} is out of range for a value of rank {rank}")
    if not x.shape:
        return splat(x, [1], b)
    return ir_result(b.expand_dims(x.handle, axis), x.dtype)


def broadcast_shapes(a: list[int], c: list[int]) -> list[int]:
    """numpy's broadcast of two shapes; CompilationError naming both if they
    are incompatible."""
    rank = max(len(a), len(c))
    pa, pc = [1] * (rank - len(a)) + a, [1] * (rank - len(c)) + c
    out = []
    for da, dc in zip(pa, pc):
        if da != dc and da != 1 and dc != 1:
            raise _fail(f"incompatible shapes for broadcasting: {a} and {c}")
        out.append(dc if da == 1 else da)
    return out


def check_power_of_two_shape(shape: Sequence[int]) -> None:
    """Every dimension of a block is a power of two (Triton's message)."""
    for index, d in enumerate(shape):
        if d <= 0 or d & (d - 1):
            raise _fail(f"Shape element {index} must be a power of 2")


def broadcast_to(x: tensor, shape: list[int], b: Builder) -> tensor:
    if x.shape == shape:
        return x
    check_power_of_two_shape(shape)
    validate_block_shape(shape)
    if not x.shape:
        return splat(x, shape, b)
    if broadcast_shapes(x.shape, shape) != shape:
        raise _fail(f"cannot broadcast shape {x.shape} to {shape}")
    while len(x.shape) < len(shape):
        x = expand_dims(x, 0, b)
    if x.shape == shape:
        return x
    return ir_result(b.broadcast(x.handle, shape), x.dtype)


def broadcast_pair(x: tensor, y: tensor, b: Builder) -> tuple[tensor, tensor]:
    if x.shape == y.shape:
        return x, y
    shape = broadcast_shapes(x.shape, y.shape)
    return broadcast_to(x, shape, b), broadcast_to(y, shape, b)


# ---------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------


def _arith(x: Any, y: Any, b: Builder, div_or_mod: bool = False) -> tuple[tensor, tensor, dtype]:
    x, y = _operands(x, y, b)
    ty = computation_type(x.dtype, y.dtype, div_or_mod)
    x, y = broadcast_pair(cast(x, ty, b), cast(y, ty, b), b)
    return x, y, ty


def _emit(b: Builder, name: str, x: tensor, y: tensor) -> tensor:
    _reject_fp8(_FP8_REJECTED_OPS.get(name, name), x)
    return ir_result(b.binary(name, x.handle, y.handle), x.dtype)


def _pointer_offset(ptr: tensor, offset: Any, b: Builder, negate: bool) -> tensor:
    offset = to_tensor(offset, b) if not isinstance(offset, tensor) else offset
    if not offset.dtype.is_int():
        raise _fail(f"a pointer can only be offset by an integer, got {offset.dtype}")
    if (offset.dtype.is_int_unsigned() and offset.dtype.primitive_bitwidth < 64) or offset.dtype == int1:
        # Offsets are signed: an unsigned one (or a bool) is zero-extended
        # first, so that 200 as a uint8 moves forward by 200 elements, not
        # back by 56.
        offset = cast(offset, int64, b)
    if negate:
        offset = minus(offset, b)
    ptr, offset = broadcast_pair(ptr, offset, b)
    return ir_result(b.addptr(ptr.handle, offset.handle), ptr.dtype)


def add(x: Any, y: Any, b: Builder) -> tensor:
    if isinstance(y, tensor) and y.dtype.is_ptr() and not (isinstance(x, tensor) and x.dtype.is_ptr()):
        x, y = y, x
    if isinstance(x, tensor) and x.dtype.is_ptr():
        if isinstance(y, tensor) and y.dtype.is_ptr():
            raise _fail("cannot add two pointers")
        return _pointer_offset(x, y, b, negate=False)
    x, y, ty = _arith(x, y, b)
    return _emit(b, "addf" if ty.is_floating() else "addi", x, y)


def sub(x: Any, y: Any, b: Builder) -> tensor:
    if isinstance(x, tensor) and x.dtype.is_ptr():
        if isinstance(y, tensor) and y.dtype.is_ptr():
            raise _fail("subtracting pointers is not supported")
        return _pointer_offset(x, y, b, negate=True)
    if isinstance(y, tensor) and y.dtype.is_ptr():
        raise _fail("cannot subtract a pointer from a number")
    x, y, ty = _arith(x, y, b)
    return _emit(b, "subf" if ty.is_floating() else "subi", x, y)


def mul(x: Any, y: Any, b: Builder) -> tensor:
    x, y, ty = _arith(x, y, b)
    return _emit(b, "mulf" if ty.is_floating() else "muli", x, y)


def truediv(x: Any, y: Any, b: Builder) -> tensor:
    x, y = _operands(x, y, b)
    if x.dtype.is_int() and y.dtype.is_int():
        _check_same_signedness(x.dtype, y.dtype)
        x, y = cast(x, float32, b), cast(y, float32, b)
    x, y, ty = _arith(x, y, b, div_or_mod=True)
    return _emit(b, "divf", x, y)


def floordiv(x: Any, y: Any, b: Builder) -> tensor:
    x, y, ty = _arith(x, y, b, div_or_mod=True)
    if not ty.is_int():
        raise _fail(f"// needs integer operands, got {ty}; use / for floating-point division")
    return _emit(b, "divui" if ty.is_int_unsigned() else "divsi", x, y)


def mod(x: Any, y: Any, b: Builder) -> tensor:
    x, y, ty = _arith(x, y, b, div_or_mod=True)
    if ty.is_floating():
        return _emit(b, "remf", x, y)
    return _emit(b, "remui" if ty.is_int_unsigned() else "remsi", x, y)


def _bitwise_operands(x: Any, y: Any, b: Builder) -> tuple[tensor, tensor, dtype]:
    """The operands of a bitwise operator or shift, promoted; refuses
    non-integers in Triton's words, naming the operands' own types."""
    x, y = _operands(x, y, b)
    if not x.dtype.scalar.is_int() or not y.dtype.scalar.is_int():
        raise _fail(f"invalid operands of type {x.dtype.scalar} and {y.dtype.scalar}: bitwise operators need "
                    f"integer operands")
    return _arith(x, y, b)


def _bitwise(name: str, x: Any, y: Any, b: Builder) -> tensor:
    x, y, ty = _bitwise_operands(x, y, b)
    return _emit(b, name, x, y)


def and_(x: Any, y: Any, b: Builder) -> tensor:
    return _bitwise("andi", x, y, b)


def or_(x: Any, y: Any, b: Builder) -> tensor:
    return _bitwise("ori", x, y, b)


def xor_(x: Any, y: Any, b: Builder) -> tensor:
    return _bitwise("xori", x, y, b)


def lshift(x: Any, y: Any, b: Builder) -> tensor:
    return _bitwise("shli", x, y, b)


def rshift(x: Any, y: Any, b: Builder) -> tensor:
    # As in Triton, the shifted value's own type (the tensor operand's, when
    # it is a Python number) picks the shift, before the operands are
    # promoted: int8 >> uint8 shifts arithmetically in uint8 (C's x >> y
    # keeps x's type), uint32 >> int32 logically.
    own = x if isinstance(x, tensor) else y
    arithmetic = isinstance(own, tensor) and own.dtype.is_int_signed() and not own.dtype.is_bool()
    x, y, ty = _bitwise_operands(x, y, b)
    return _emit(b, "shrsi" if arithmetic else "shrui", x, y)


def minus(x: Any, b: Builder) -> tensor:
    x = to_tensor(x, b)
    if x.dtype.is_ptr():
        raise _fail("cannot negate a pointer")
    _reject_fp8("unary -", x)
    if x.dtype.is_floating():
        return ir_result(b.unary("negf", x.handle), x.dtype)
    return sub(constant(0, x.dtype, b), x, b)


def invert(x: Any, b: Builder) -> tensor:
    x = to_tensor(x, b)
    if not x.dtype.is_int():
        raise _fail(f"~ needs an integer operand, got {x.dtype}")
    ones = constant(1 if x.dtype.is_bool() else (2**x.dtype.int_bitwidth - 1 if x.dtype.is_int_unsigned() else -1),
                    x.dtype, b)
    return xor_(x, ones, b)


def to_bool(x: Any, b: Builder) -> tensor:
    x = to_tensor(x, b)
    return x if x.dtype.is_bool() else not_equal(x, 0, b)


def logical_not(x: Any, b: Builder) -> tensor:
    x = to_tensor(x, b)
    if x.dtype.is_bool():
        return xor_(x, True, b)
    return equal(x, 0, b)


def logical_and(x: Any, y: Any, b: Builder) -> tensor:
    return and_(to_bool(x, b), to_bool(y, b), b)


def logical_or(x: Any, y: Any, b: Builder) -> tensor:
    return or_(to_bool(x, b), to_bool(y, b), b)


def power(x: tensor, exponent: Any, b: Builder) -> tensor:
    """``x ** n`` for a constant integer ``n >= 0``, by repeated squaring."""
    if isinstance(exponent, tensor) or isinstance(exponent, bool) or not isinstance(exponent, int) \
            or exponent < 0:
        raise _fail("** needs a non-negative constant (kl.constexpr) integer exponent; "
                    "use kl.exp and kl.log for other powers")
    x = to_tensor(x, b)
    result: Optional[tensor] = None
    base = x
    n = exponent
    while n:
        if n & 1:
            result = base if result is None else mul(result, base, b)
        n >>= 1
        if n:
            base = mul(base, base, b)
    return result if result is not None else full(x.shape, 1, x.dtype, b) if x.shape else constant(1, x.dtype, b)


# ---------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------

_FLOAT_PREDICATES = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_SIGNED_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_UNSIGNED_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def _compare(kind: str, x: Any, y: Any, b: Builder) -> tensor:
    x, y = _operands(x, y, b)
    if x.dtype.is_ptr() or y.dtype.is_ptr():
        raise _fail(f"comparing pointers ({x.dtype} and {y.dtype}) is not supported")
    x, y, ty = _arith(x, y, b)
    result_ty = _with_shape(int1, x.shape)
    _reject_fp8(_COMPARISON_SYMBOLS[kind], x)
    if ty.is_floating():
        return ir_result(b.cmpf(_FLOAT_PREDICATES[kind], x.handle, y.handle), result_ty.scalar)
    table = _UNSIGNED_PREDICATES if ty.is_int_unsigned() else _SIGNED_PREDICATES
    return ir_result(b.cmpi(table[kind], x.handle, y.handle), result_ty.scalar)


def equal(x: Any, y: Any, b: Builder) -> tensor:
    return _compare("eq", x, y, b)


def not_equal(x: Any, y: Any, b: Builder) -> tensor:
    return _compare("ne", x, y, b)


def less_than(x: Any, y: Any, b: Builder) -> tensor:
    return _compare("lt", x, y, b)


def less_equal(x: Any, y: Any, b: Builder) -> tensor:
    return _compare("le", x, y, b)


def greater_than(x: Any, y: Any, b: Builder) -> tensor:
    return _compare("gt", x, y, b)


def greater_equal(x: Any, y: Any, b: Builder) -> tensor:
    return _compare("ge", x, y, b)


# ---------------------------------------------------------------------------
# Builtins
# ---------------------------------------------------------------------------


def program_id(axis: int, b: Builder) -> tensor:
    if axis not in (0, 1, 2):
        raise _fail(f"program_id axis must be 0, 1, or 2 but got {axis}")
    return ir_result(b.program_id(axis), int32)


def num_programs(axis: int, b: Builder) -> tensor:
    if axis not in (0, 1, 2):
        raise _fail(f"num_programs axis must be 0, 1, or 2 but got {axis}")
    return ir_result(b.num_programs(axis), int32)


def arange(start: int, end: int, b: Builder) -> tensor:
    if start < 0 or end <= start:
        raise _fail(f"arange needs 0 <= start < end, got start={start}, end={end}")
    if end >= 2**31:
        raise _fail(f"arange end must fit in int32, got {end}")
    length = end - start
    if length & (length - 1):
        # Triton's words, which code matching its messages relies on; the
        # located error quotes the call with its bounds.
        raise _fail("arange's range must be a power of 2")
    validate_block_shape([length])
    return ir_result(b.make_range(start, end), int32)


def full(shape: list[int], value: Any, ty: dtype, b: Builder) -> tensor:
    if not isinstance(ty, dtype) or isinstance(ty, (block_type, pointer_type)):
        raise _fail(f"full needs a scalar number dtype, got {ty!r}")
    check_power_of_two_shape(shape)
    validate_block_shape(shape)
    if isinstance(value, tensor):
        if value.shape:
            raise _fail(f"full needs a scalar value, got a block of shape {value.shape}")
        value = cast(value, ty, b)
        return splat(value, shape, b) if shape else value
    return constant(value, _with_shape(ty, shape), b)


def _memory_hint(value: Any, allowed: Optional[tuple[str, ...]], what: str) -> str:
    """The name of a cache modifier or eviction policy as the IR spells it
    (no leading dot; empty for the default). With `allowed` None the op's
    verifier decides which names the access takes (the cache modifiers: a
    load's differ from a store's), and its error is reported at the call."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _fail(f"{what} must be a string, got {value!r}")
    name = value[1:] if value.startswith(".") else value
    if name in ("", "normal", "evict_normal"):
        name = ""
    if name and allowed is not None and name not in allowed:
        raise _fail(f"unsupported {what} '{value}'; expected one of {', '.join(repr(a) for a in allowed)}")
    return name


def _mask(mask: Any, ptr: tensor, b: Builder) -> tensor:
    mask = to_tensor(mask, b)
    if not mask.dtype.is_bool():
        raise _fail(f"mask must be a boolean (int1) value, got {mask.dtype}")
    return broadcast_to(mask, ptr.shape, b) if ptr.shape else mask


def _pointer_operand(pointer: Any, what: str) -> tensor:
    if not isinstance(pointer, tensor) or not pointer.dtype.is_ptr():
        ty = pointer.type if isinstance(pointer, tensor) else type(pointer).__name__
        raise _fail(f"{what} needs a pointer argument, got {ty}")
    return pointer


def load(pointer: Any, mask: Any, other: Any, cache_modifier: str, eviction_policy: str, volatile: bool,
         b: Builder, tensor_map: Optional[tensor] = None, tensor_coords: Sequence[tensor] = ()) -> tensor:
    """A masked load; ``tensor_map`` and ``tensor_coords`` name the same
    block for the TMA unit (a host tensor descriptor's load, see kiln.load)."""
    ptr = _pointer_operand(pointer, "load")
    cache = _memory_hint(cache_modifier, None, "cache_modifier")
    evict = _memory_hint(eviction_policy, ("evict_first", "evict_last"), "eviction_policy")
    if other is not None and mask is None:
        raise _fail("load: `other` needs a `mask`")
    # Triton broadcasts a scalar pointer to the shape of a block mask.
    shapes = [ptr.shape] + [v.shape for v in (mask, other) if isinstance(v, tensor)]
    shape: list[int] = []
    for s in shapes:
        shape = broadcast_shapes(shape, s)
    ptr = broadcast_to(ptr, shape, b) if shape else ptr
    mask_t = _mask(mask, ptr, b) if mask is not None else None
    other_t = None
    if other is not None:
        elem = ptr.dtype.element_ty
        other_t = cast(_literal_like(other, tensor(None, elem), b) if not isinstance(other, tensor) else other,
                       elem, b)
        other_t = broadcast_to(other_t, ptr.shape, b) if ptr.shape else other_t
    result_ty = _with_shape(ptr.dtype.element_ty, ptr.shape)
    handle = b.load(ptr.handle, mask_t.handle if mask_t is not None else None,
                    other_t.handle if other_t is not None else None, cache, evict, volatile,
                    tensor_map.handle if tensor_map is not None else None,
                    [coord.handle for coord in tensor_coords])
    return tensor(handle, result_ty)


def store(pointer: Any, value: Any, mask: Any, cache_modifier: str, eviction_policy: str, b: Builder) -> None:
    ptr = _pointer_operand(pointer, "store")
    if ptr.dtype.const:
        raise _fail("Cannot store to a constant pointer (a kl.const parameter, or a pointer derived from one)")
    cache = _memory_hint(cache_modifier, None, "cache_modifier")
    evict = _memory_hint(eviction_policy, ("evict_first", "evict_last"), "eviction_policy")
    elem = ptr.dtype.element_ty
    val = value if isinstance(value, tensor) else _literal_like(value, tensor(None, elem), b)
    shape = broadcast_shapes(ptr.shape, val.shape)
    if isinstance(mask, tensor):
        shape = broadcast_shapes(shape, mask.shape)
    ptr = broadcast_to(ptr, shape, b) if shape else ptr
    val = cast(val, elem, b)
    val = broadcast_to(val, shape, b) if shape else val
    mask_t = _mask(mask, ptr, b) if mask is not None else None
    b.store(ptr.handle, val.handle, mask_t.handle if mask_t is not None else None, cache, evict)


def minimum(x: Any, y: Any, b: Builder, propagate_nan: Any = None) -> tensor:
    x, y, ty = _arith(x, y, b)
    if ty.is_floating():
        return _emit(b, "minimumf" if _propagates_nan(propagate_nan) else "minnumf", x, y)
    return _emit(b, "minui" if ty.is_int_unsigned() else "minsi", x, y)


def maximum(x: Any, y: Any, b: Builder, propagate_nan: Any = None) -> tensor:
    x, y, ty = _arith(x, y, b)
    if ty.is_floating():
        return _emit(b, "maximumf" if _propagates_nan(propagate_nan) else "maxnumf", x, y)
    return _emit(b, "maxui" if ty.is_int_unsigned() else "maxsi", x, y)


def _pointer_pair(x: Any, y: Any, b: Builder) -> tuple[tensor, tensor]:
    """``x`` and ``y`` for a ``where`` between pointers: both must point to
    the same element type (as Triton requires); shapes broadcast."""
    types = [v.dtype if isinstance(v, tensor) else type(v).__name__ for v in (x, y)]
    if not all(isinstance(v, tensor) and v.dtype.is_ptr() for v in (x, y)):
        raise _fail(f"where cannot choose between a pointer and a non-pointer, got {types[0]} and {types[1]}")
    if x.dtype != y.dtype:
        raise _fail(f"where needs pointers of one type, got {types[0]} and {types[1]}")
    return broadcast_pair(x, y, b)


def where(condition: Any, x: Any, y: Any, b: Builder) -> tensor:
    if isinstance(condition, tensor) and not condition.dtype.is_bool():
        # As Triton, which means to refuse such conditions in a later release.
        warnings.warn(f"kl.where with a non-boolean condition is deprecated and will error out in a future "
                      f"release; got {condition.dtype}: compare it with 0 (cond != 0)", UserWarning, stacklevel=2)
    cond = to_bool(condition, b)
    if any(isinstance(v, tensor) and v.dtype.is_ptr() for v in (x, y)):
        x, y = _pointer_pair(x, y, b)
    else:
        x, y, _ = _arith(x, y, b)
    shape = broadcast_shapes(cond.shape, x.shape)
    x, y = broadcast_to(x, shape, b) if shape else x, broadcast_to(y, shape, b) if shape else y
    if cond.shape:
        cond = broadcast_to(cond, shape, b)
    return ir_result(b.select(cond.handle, x.handle, y.handle), x.dtype)


def math_unary(op: str, name: str, x: Any, b: Builder) -> tensor:
    x = to_tensor(x, b)
    if not x.dtype.is_floating():
        raise _fail(f"kl.{name} needs a floating-point argument, got {x.dtype}; convert it with .to(kl.float32)")
    _reject_fp8(f"kl.{name}", x)
    return ir_result(b.unary(op, x.handle), x.dtype)


def abs(x: Any, b: Builder) -> tensor:  # noqa: A001 - Triton's name
    x = to_tensor(x, b)
    if x.dtype.scalar.is_fp8():
        # As Triton: the sign bit cleared (NaN stays NaN, -0 becomes +0).
        # fp8 values are bytes in the IR, so this is an and on the byte.
        x.dtype.scalar.to_ir(b)  # refuses the fp8 formats Kiln does not compute with
        byte_type = block_type(uint8, x.shape) if x.shape else uint8
        return tensor(and_(tensor(x.handle, byte_type), 0x7F, b).handle, x.type)
    if x.dtype.is_floating():
        return ir_result(b.unary("absf", x.handle), x.dtype)
    if x.dtype.is_int_unsigned() or x.dtype.is_bool():
        return x
    if x.dtype.is_int():
        return ir_result(b.unary("absi", x.handle), x.dtype)
    raise _fail(f"kl.abs needs a number, got {x.dtype}")


def _propagates_nan(propagate_nan: Any) -> bool:
    from kiln.language.core import PropagateNan
    return propagate_nan is PropagateNan.ALL



# ---------------------------------------------------------------------------
# fp8: promotion, and the operations that need a conversion first
# ---------------------------------------------------------------------------

_FP8_REJECTED_OPS = {"addf": "+", "subf": "-", "mulf": "*", "divf": "/", "remf": "%",
                     "minimumf": "kl.minimum", "minnumf": "kl.minimum",
                     "maximumf": "kl.maximum", "maxnumf": "kl.maximum"}
_COMPARISON_SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _fp8_computation_type(a: dtype, c: dtype, div_or_mod: bool) -> dtype:
    """Triton's promotion with an fp8 operand: a wider float wins (fp16 with
    fp8 is fp16, or fp32 for / and %; bf16 with fp8 is fp32), two different
    fp8 types meet in fp16, and one fp8 type stays itself (so that ``where``
    selects bytes; arithmetic on it is then rejected by ``_reject_fp8``)."""
    if a.is_fp64() or c.is_fp64():
        return float64
    if a.is_fp32() or c.is_fp32() or a.is_bf16() or c.is_bf16():
        return float32
    if a.is_fp16() or c.is_fp16():
        return float32 if div_or_mod else float16
    if a.is_fp8() and c.is_fp8():
        return a if a == c else float16
    raise _fail(f"cannot combine {a!r} with {c!r}: convert the fp8 operand with .to(kl.float32) first")


def _reject_fp8(op: str, x: tensor) -> None:
    """fp8 values have no arithmetic of their own (as in Triton): name the
    op and the type, and say how to compute instead."""
    ty = x.dtype.scalar
    if ty.is_fp8():
        raise _fail(f"{op} is not supported on {ty!r} values; convert them with .to(kl.float32) (or kl.float16) "
                    f"first")


# The element-wise math beyond the basic functions and rounded casts live in
# semantic_math.py, which builds on the rules above; they are this module's
# names too.
from kiln.language.semantic_pointers import pointer_cast  # noqa: E402
from kiln.language.semantic_math import (cast_with_rounding, clamp, extern_elementwise, fdiv, fma,  # noqa: E402
                                         inline_asm_elementwise, resolve_extern_call, sigmoid, umulhi)
