"""The numpy reference the kernel fuzzer checks kernels against.

A value is a block (or a 0-d scalar) of one Kiln dtype. Integers are held
as object arrays of Python ints, wrapped into their type's range after
every operation, so wrapping, C's truncating division and shifts are exact.
Floats are held in float64 together with a per-element bound on how far the
kernel's value may be from it (each operation in the kernel's type rounds;
transcendental functions are approximations), so a result is compared
within that bound. Where the bound makes the kernel's answer ambiguous (a
comparison of two nearly equal floats, a float truncated to an integer
close to an integer boundary, an overflow) or where the language leaves the
result undefined (a shift by the bit width or more, a float converted to
an integer type that cannot hold it, NaN in `kl.maximum`), the element is
marked undefined and not compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np


@dataclass(frozen=True)
class DType:
    """A Kiln scalar type as the fuzzer knows it."""

    name: str  # the kl attribute: "int8", "float16", ...
    kind: str  # "b" (int1), "i" (signed), "u" (unsigned), "f" (float)
    bits: int

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        """True for signed, unsigned and boolean integers, as kl's is_int()."""
        return self.kind in "biu"

    @property
    def bounds(self) -> tuple[int, int]:
        if self.kind == "b":
            return (0, 1)
        if self.kind == "u":
            return (0, 2**self.bits - 1)
        return (-(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1)

    @property
    def epsilon(self) -> float:
        """Relative rounding error of one operation in this type (the
        float64 reference's own rounding included)."""
        return {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24, "float64": 2.0**-50}[self.name]

    @property
    def tiny(self) -> float:
        """Absolute slack for results near zero (subnormals, flush to zero)."""
        return {"float16": 2.0**-14, "bfloat16": 2.0**-126, "float32": 2.0**-126, "float64": 2.0**-1022}[self.name]

    @property
    def largest(self) -> float:
        return {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
                "float64": 1.7976931348623157e308}[self.name]

    @property
    def mantissa_bits(self) -> int:
        return {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[self.name]

    def __str__(self) -> str:
        return self.name


INT1 = DType("int1", "b", 1)
INT8, INT16, INT32, INT64 = (DType(f"int{w}", "i", w) for w in (8, 16, 32, 64))
UINT8, UINT16, UINT32, UINT64 = (DType(f"uint{w}", "u", w) for w in (8, 16, 32, 64))
FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = (DType("float16", "f", 16), DType("bfloat16", "f", 16),
                                       DType("float32", "f", 32), DType("float64", "f", 64))
INTEGERS = (INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64)
FLOATS = (FLOAT16, BFLOAT16, FLOAT32, FLOAT64)
ALL = INTEGERS + FLOATS


def integer_promote(a: DType, c: DType) -> DType:
    """kiln.language.semantic.integer_promote."""
    if a == c:
        return a
    if a.kind == "b":
        return c
    if c.kind == "b":
        return a
    if (a.kind == "u") == (c.kind == "u"):
        return a if a.bits >= c.bits else c
    unsigned, signed = (a, c) if a.kind == "u" else (c, a)
    return unsigned if unsigned.bits >= signed.bits else signed


def computation_type(a: DType, c: DType, div_or_mod: bool = False) -> DType:
    """The type both operands of an arithmetic op are converted to."""
    if FLOAT64 in (a, c):
        return FLOAT64
    if FLOAT32 in (a, c):
        return FLOAT32
    if {a, c} == {FLOAT16, BFLOAT16}:
        return FLOAT32
    for half in (FLOAT16, BFLOAT16):
        if half in (a, c):
            return FLOAT32 if div_or_mod else half
    return integer_promote(a, c)


def literal_type(value: object, other: DType) -> DType:
    """The type a Python literal takes next to a block of type `other`."""
    if isinstance(value, float):
        return other if other.is_float else FLOAT32
    if other.is_float:
        return other
    lo, hi = other.bounds
    if other.kind != "b" and lo <= value <= hi:
        return other
    if -(2**31) <= value < 2**31:
        return INT32
    if value < 2**32 and value >= 0:
        return UINT32
    return INT64 if value < 2**63 else UINT64


@dataclass
class Value:
    """A block or scalar of `dtype`: its exact (integers) or float64
    (floats) elements, the error bound of each float element, and which
    elements are undefined."""

    dtype: DType
    v: np.ndarray
    err: np.ndarray
    undef: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return self.v.shape


class Trap(Exception):
    """The reference cannot predict the kernel's output (a branch on an
    undefined value, a loop too long to follow); `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _map(fn: Callable[..., object], arity: int) -> Callable[..., np.ndarray]:
    """`fn` applied element-wise, always giving an object array (numpy's
    ufuncs of 0-d inputs give bare scalars)."""
    ufunc = np.frompyfunc(fn, arity, 1)
    return lambda *arrays: np.asarray(ufunc(*arrays), dtype=object)


def _wrap(values: np.ndarray, ty: DType) -> np.ndarray:
    lo, hi = ty.bounds
    span = hi - lo + 1
    return _map(lambda x: (int(x) - lo) % span + lo, 1)(values)


def _ints(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=object)


def make(ty: DType, values: np.ndarray) -> Value:
    values = np.asarray(values)
    if ty.is_float:
        data = values.astype(np.float64)
    else:
        data = _wrap(_ints(values), ty)
    return Value(ty, data, np.zeros(data.shape), np.zeros(data.shape, dtype=bool))


def _finish_float(ty: DType, v: np.ndarray, err: np.ndarray, undef: np.ndarray) -> Value:
    """A float result: adds its rounding to `err`, and marks elements
    undefined where the value is not finite or may overflow."""
    with np.errstate(all="ignore"):
        v = np.asarray(v, dtype=np.float64)
        err = np.asarray(err, dtype=np.float64) + np.abs(v) * ty.epsilon + ty.tiny
        bad = ~np.isfinite(v) | ~np.isfinite(err) | (np.abs(v) + err >= ty.largest)
    return Value(ty, v, err, np.asarray(undef | bad))


def _bcast(*values: Value) -> list[Value]:
    shape = np.broadcast_shapes(*(x.shape for x in values))
    return [Value(x.dtype, np.broadcast_to(x.v, shape), np.broadcast_to(x.err, shape),
                  np.broadcast_to(x.undef, shape)) for x in values]


def cast(x: Value, dst: DType) -> Value:
    """kl.cast / .to(): C conversions, with a float that an integer type
    cannot hold (or that is too close to a boundary) undefined."""
    src = x.dtype
    if src == dst:
        return x
    if dst.kind == "b":
        if src.is_float:
            with np.errstate(all="ignore"):
                unsure = (np.abs(x.v) <= x.err) & (x.err > 0)
            return Value(dst, _ints((x.v != 0).astype(int)), np.zeros(x.shape), x.undef | unsure | np.isnan(x.v))
        return Value(dst, _ints((x.v != 0).astype(int)), np.zeros(x.shape), x.undef.copy())
    if src.is_int and dst.is_int:
        return Value(dst, _wrap(x.v, dst), np.zeros(x.shape), x.undef.copy())
    if src.is_int and dst.is_float:
        v = np.array(x.v, dtype=np.float64) if x.v.size else np.zeros(x.shape)
        exact_below = 2.0**dst.mantissa_bits
        err = np.where(np.abs(v) > exact_below, np.abs(v) * dst.epsilon * 2, 0.0)
        result = _finish_float(dst, v, err, x.undef)
        result.err = np.where(np.abs(v) > exact_below, result.err, 0.0)
        return result
    if src.is_float and dst.is_float:
        return _finish_float(dst, x.v, x.err, x.undef)
    # float -> integer: truncation toward zero; out of range is undefined.
    lo, hi = dst.bounds
    with np.errstate(all="ignore"):
        low, high = np.trunc(x.v - x.err), np.trunc(x.v + x.err)
        undef = x.undef | ~np.isfinite(x.v) | (low != high) | (np.trunc(x.v) < lo) | (np.trunc(x.v) > hi)
        safe = np.where(undef, 0.0, np.trunc(x.v))
    values = _map(int, 1)(safe) if safe.size else _ints(safe)
    return Value(dst, np.asarray(values, dtype=object).reshape(x.shape), np.zeros(x.shape), undef)


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _c_rem(a: int, b: int) -> int:
    return a - b * _c_div(a, b)


_CDIV = _map(_c_div, 2)
_CREM = _map(_c_rem, 2)


def _int_binary(op: str, a: Value, b: Value, ty: DType, signed_shift: bool = False) -> Value:
    undef = a.undef | b.undef
    x, y = a.v, b.v
    if op in ("//", "%"):
        zero = (y == 0)
        lo, _ = ty.bounds
        overflow = (x == lo) & (y == -1) if ty.kind == "i" else np.zeros(x.shape, dtype=bool)
        # The language leaves these unspecified; the CPU backend must not
        # trap on them (cpu_backend.md), whatever value it gives.
        safe = np.where(zero, 1, y)
        result = (_CDIV if op == "//" else _CREM)(x, safe)
        return Value(ty, _wrap(_ints(result), ty), np.zeros(x.shape), undef | zero | overflow)
    if op in ("<<", ">>"):
        bad = (y < 0) | (y >= ty.bits)
        safe = np.where(bad, 0, y)
        if op == "<<":
            result = _map(lambda p, q: int(p) << int(q), 2)(x, safe)
        else:
            # Arithmetic for signed types, logical for unsigned: on the
            # wrapped values both are Python's >>. A signed value promoted
            # to an unsigned type still shifts arithmetically (as Triton):
            # its bits read as signed first.
            half = 2**(ty.bits - 1)
            if signed_shift and ty.kind == "u":
                x = _map(lambda p: int(p) - 2 * half if int(p) >= half else int(p), 1)(x)
            result = _map(lambda p, q: int(p) >> int(q), 2)(x, safe)
        return Value(ty, _wrap(_ints(result), ty), np.zeros(x.shape), undef | bad)
    fn: Callable[[int, int], int] = {
        "+": lambda p, q: p + q, "-": lambda p, q: p - q, "*": lambda p, q: p * q,
        "&": lambda p, q: p & q, "|": lambda p, q: p | q, "^": lambda p, q: p ^ q,
        "max": lambda p, q: max(p, q), "min": lambda p, q: min(p, q),
    }[op]
    result = _map(lambda p, q: fn(int(p), int(q)), 2)(x, y)
    return Value(ty, _wrap(_ints(result), ty), np.zeros(x.shape), undef)


def _float_binary(op: str, a: Value, b: Value, ty: DType) -> Value:
    x, y, ex, ey = a.v, b.v, a.err, b.err
    undef = a.undef | b.undef
    with np.errstate(all="ignore"):
        if op == "+":
            return _finish_float(ty, x + y, ex + ey, undef)
        if op == "-":
            return _finish_float(ty, x - y, ex + ey, undef)
        if op == "*":
            return _finish_float(ty, x * y, np.abs(x) * ey + np.abs(y) * ex + ex * ey, undef)
        if op == "/":
            r = x / y
            near_zero = np.abs(y) <= ey
            err = (ex + np.abs(r) * ey) / np.where(near_zero, 1.0, np.abs(y) - ey)
            return _finish_float(ty, r, err, undef | near_zero | (y == 0))
        if op == "%":
            q = x / y
            # remf is fmod: x - trunc(x / y) * y; ambiguous near the jumps.
            qlo, qhi = np.trunc(q - _div_error(x, y, ex, ey)), np.trunc(q + _div_error(x, y, ex, ey))
            r = np.fmod(x, y)
            err = ex + np.abs(np.trunc(q)) * ey + np.abs(r) * ty.epsilon * 4
            return _finish_float(ty, r, err, undef | (qlo != qhi) | (np.abs(y) <= ey) | (y == 0))
        if op in ("max", "min"):
            r = np.maximum(x, y) if op == "max" else np.minimum(x, y)
            return Value(ty, r, np.maximum(ex, ey), undef | np.isnan(x) | np.isnan(y))
    raise ValueError(f"no float reference for {op}")


def _div_error(x: np.ndarray, y: np.ndarray, ex: np.ndarray, ey: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        q = np.abs(x / y)
        denominator = np.maximum(np.abs(y) - ey, 1e-300)
        return (ex + q * ey) / denominator + q * 2.0**-20 + 1e-300


def binary(op: str, a: Value, b: Value, ty: DType) -> Value:
    """`a op b` with both operands already of computation type `ty`."""
    signed_shift = op == ">>" and a.dtype.kind == "i"
    a, b = _bcast(cast(a, ty), cast(b, ty))
    if ty.is_float:
        return _float_binary(op, a, b, ty)
    return _int_binary(op, a, b, ty, signed_shift)


def compare(op: str, a: Value, b: Value, ty: DType) -> Value:
    a, b = _bcast(cast(a, ty), cast(b, ty))
    undef = a.undef | b.undef
    if ty.is_float:
        x, y = a.v, b.v
        with np.errstate(all="ignore"):
            unsure = np.abs(x - y) <= (a.err + b.err)
            unsure &= (a.err + b.err) > 0
        undef = undef | unsure
    else:
        x, y = a.v.astype(object), b.v.astype(object)
    with np.errstate(all="ignore"):
        result = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                  "==": np.equal, "!=": np.not_equal}[op](x, y)
    result = np.asarray(result, dtype=bool)
    return Value(INT1, _ints(result.astype(int)), np.zeros(result.shape), np.asarray(undef))


def negate(a: Value) -> Value:
    if a.dtype.is_float:
        return Value(a.dtype, -a.v, a.err.copy(), a.undef.copy())
    return Value(a.dtype, _wrap(-a.v, a.dtype), a.err.copy(), a.undef.copy())


def invert(a: Value) -> Value:
    if a.dtype.kind == "b":
        return Value(a.dtype, _ints(1 - a.v), a.err.copy(), a.undef.copy())
    return Value(a.dtype, _wrap(_map(lambda p: ~int(p), 1)(a.v), a.dtype), a.err.copy(), a.undef.copy())


def absolute(a: Value) -> Value:
    if a.dtype.is_float:
        return Value(a.dtype, np.abs(a.v), a.err.copy(), a.undef.copy())
    return Value(a.dtype, _wrap(_map(lambda p: abs(int(p)), 1)(a.v), a.dtype), a.err.copy(),
                 a.undef.copy())


def _erf(x: np.ndarray) -> np.ndarray:
    import math
    return np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x.astype(np.float64)


MONOTONE: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda v: 1.0 / np.sqrt(v), "tanh": np.tanh, "erf": _erf,
    "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)), "floor": np.floor, "ceil": np.ceil,
}
PERIODIC = {"sin": np.sin, "cos": np.cos}

# Relative error of each function, in units of the type's epsilon: the
# CPU backend's and the GPU's approximations are within a few ulp.
_ULPS = {"floor": 0, "ceil": 0, "sqrt": 2}


def math_function(name: str, a: Value) -> Value:
    """kl.<name>(a) for a float `a` (fp16 and bf16 computed in float32)."""
    ty = a.dtype
    x, ex = a.v, a.err
    ulps = _ULPS.get(name, 16)
    with np.errstate(all="ignore"):
        if name in MONOTONE:
            f = MONOTONE[name]
            r = f(x)
            spread = np.maximum(np.abs(f(x - ex) - r), np.abs(f(x + ex) - r))
            spread = np.where(ex > 0, spread, 0.0)
            out = _finish_float(ty, r, spread + np.abs(r) * ty.epsilon * ulps, a.undef)
            if name in ("floor", "ceil"):
                out.err = np.where(ex > 0, out.err, 0.0)
            return out
        r = PERIODIC[name](x)
        err = ex + (np.abs(x) + 1.0) * ty.epsilon * ulps
        return _finish_float(ty, r, err, a.undef | (np.abs(x) > 1e4))


def where(c: Value, a: Value, b: Value, ty: DType) -> Value:
    c, a, b = _bcast(c, cast(a, ty), cast(b, ty))
    pick = c.v.astype(bool)
    v = np.where(pick, a.v, b.v)
    if not ty.is_float:
        v = _ints(v)
    return Value(ty, v, np.where(pick, a.err, b.err), c.undef | np.where(pick, a.undef, b.undef))


def reduce(kind: str, a: Value, axis: int, keep_dims: bool) -> Value:
    """kl.sum / kl.max / kl.min along `axis`, in kiln's accumulator types."""
    ty = a.dtype
    if kind == "sum":
        if ty.kind == "b":
            ty = INT32
        elif ty.is_int and ty.bits < 32:
            ty = UINT32 if ty.kind == "u" else INT32
    else:
        if ty.is_float and ty.bits < 32:
            ty = FLOAT32
        elif ty.is_int and ty.bits < 32:
            ty = INT32
    a = cast(a, ty)
    undef = np.any(a.undef, axis=axis, keepdims=keep_dims)
    if ty.is_float:
        with np.errstate(all="ignore"):
            if kind == "sum":
                n = a.shape[axis]
                r = np.sum(a.v, axis=axis, keepdims=keep_dims)
                magnitude = np.sum(np.abs(a.v) + a.err, axis=axis, keepdims=keep_dims)
                err = (np.sum(a.err, axis=axis, keepdims=keep_dims) + magnitude * ty.epsilon * (n + 1))
                # The kernel adds in an order of its choosing: a partial sum
                # may overflow even where the total does not.
                return _finish_float(ty, r, err, undef | (magnitude >= ty.largest))
            r = (np.max if kind == "max" else np.min)(a.v, axis=axis, keepdims=keep_dims)
            err = np.max(a.err, axis=axis, keepdims=keep_dims)
            nan = np.any(np.isnan(a.v), axis=axis, keepdims=keep_dims)
            return Value(ty, np.asarray(r, dtype=np.float64), np.asarray(err), np.asarray(undef | nan))
    if kind == "sum":
        r = np.sum(a.v, axis=axis, keepdims=keep_dims) if a.v.size else np.zeros(())
        r = _wrap(_ints(np.asarray(r, dtype=object)), ty)
    else:
        r = (np.max if kind == "max" else np.min)(a.v, axis=axis, keepdims=keep_dims)
        r = _ints(np.asarray(r, dtype=object))
    r = np.asarray(r, dtype=object).reshape(np.shape(undef))
    return Value(ty, r, np.zeros(r.shape), np.asarray(undef))


def expand(a: Value, axis: int) -> Value:
    return Value(a.dtype, np.expand_dims(a.v, axis), np.expand_dims(a.err, axis), np.expand_dims(a.undef, axis))


def broadcast_to(a: Value, shape: tuple[int, ...]) -> Value:
    return Value(a.dtype, np.broadcast_to(a.v, shape).copy(), np.broadcast_to(a.err, shape).copy(),
                 np.broadcast_to(a.undef, shape).copy())


def mismatches(ty: DType, got: np.ndarray, expected: Value, written: Optional[np.ndarray] = None) -> np.ndarray:
    """Elements of `got` (the kernel's output, of type `ty`) that differ
    from `expected` beyond its error bound, ignoring undefined elements."""
    expected = cast(expected, ty)
    if ty.is_float:
        g = np.asarray(got, dtype=np.float64)
        with np.errstate(all="ignore"):
            bad = np.abs(g - expected.v) > expected.err + np.abs(expected.v) * ty.epsilon + ty.tiny
            bad |= np.isnan(g) != np.isnan(expected.v)
    else:
        g = _ints(np.asarray(got).astype(object))
        g = _map(int, 1)(g)
        bad = np.asarray(g != expected.v, dtype=bool)
    return bad & ~expected.undef


def _sum_type(ty: DType) -> DType:
    """The accumulator type of kl.sum and kl.cumsum."""
    if ty.kind == "b":
        return INT32
    if ty.is_int and ty.bits < 32:
        return UINT32 if ty.kind == "u" else INT32
    return ty


def cumsum(a: Value, axis: int) -> Value:
    """kl.cumsum along `axis`: inclusive prefix sums, in kl.sum's types."""
    ty = _sum_type(a.dtype)
    a = cast(a, ty)
    undef = np.logical_or.accumulate(a.undef, axis=axis)
    if ty.is_float:
        with np.errstate(all="ignore"):
            n = a.shape[axis]
            magnitude = np.cumsum(np.abs(a.v) + a.err, axis=axis)
            err = np.cumsum(a.err, axis=axis) + magnitude * ty.epsilon * (n + 1)
            return _finish_float(ty, np.cumsum(a.v, axis=axis), err, undef | (magnitude >= ty.largest))
    return Value(ty, _wrap(np.cumsum(a.v, axis=axis).astype(object), ty), np.zeros(a.shape), undef)


def arg_extreme(kind: str, a: Value, axis: int, keep_dims: bool) -> Value:
    """kl.argmax / kl.argmin along `axis` (the first index on a tie), int32.
    Floats are undefined where another element is within the error bounds
    of the extreme."""
    values = a.v if a.dtype.is_float else a.v.astype(object)
    sign = 1 if kind == "argmax" else -1
    moved = np.moveaxis(values, axis, -1)
    err = np.moveaxis(a.err, axis, -1)
    undef = np.moveaxis(a.undef, axis, -1)
    out = np.zeros(moved.shape[:-1], dtype=object)
    bad = np.zeros(moved.shape[:-1], dtype=bool)
    for index in np.ndindex(*moved.shape[:-1]):
        row = [sign * x for x in moved[index]]
        best = max(range(len(row)), key=lambda i: (row[i], -i))
        out[index] = best
        if np.any(undef[index]):
            bad[index] = True
        elif a.dtype.is_float:
            row_f = np.array(row, dtype=np.float64)
            close = row_f >= row_f[best] - (err[index] + err[index][best])
            bad[index] = bool(np.isnan(row_f).any() or close.sum() > 1)
    if keep_dims:
        out, bad = np.expand_dims(out, axis), np.expand_dims(bad, axis)
    return Value(INT32, out, np.zeros(out.shape), bad)


def rearrange(a: Value, fn: Callable[[np.ndarray], np.ndarray]) -> Value:
    """A shape op (flip, reshape, transpose, ...) applied to every part of `a`."""
    return Value(a.dtype, np.ascontiguousarray(fn(a.v)), np.ascontiguousarray(fn(a.err)),
                 np.ascontiguousarray(fn(a.undef)))
