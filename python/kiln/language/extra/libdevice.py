"""NVIDIA libdevice functions, with ``triton.language.extra.libdevice``'s
names and argument types: ``from kiln.language.extra import libdevice``, then
``libdevice.erfinv(x)`` inside a kernel.

Each function accepts the element types listed in its table (fp32 and fp64
for most, as libdevice does); arguments of other types are first promoted
together as arithmetic would promote them, and a call that still matches no
variant is a ``CompilationError`` naming the function and what it accepts.
Each call becomes one ``kiln.extern_elementwise`` op naming the libdevice
symbol: the GPU links libdevice, and the CPU backend runs host equivalents
of these same functions.
"""

from __future__ import annotations

from typing import Any, Callable

from kiln.language.core import _unwrap, builtin, dtype, float32, float64, int32, int64, tensor, uint32, uint64

_F32 = (float32,)
_F64 = (float64,)


def _compiling_for_cpu() -> bool:
    from kiln.language import target_info
    return target_info._compile_target.get() == "cpu"


def _define(name: str, table: dict, doc: str,
            compose: Callable[[list, Any], Any] | None = None,
            host: Callable[[list, Any, Any], Any] | None = None, gpu_only: bool = False) -> Callable[..., Any]:
    """A libdevice function taking the argument types in ``table``. With
    ``compose``, the call is built from kernel arithmetic on the promoted,
    broadcast arguments instead of calling the libdevice symbol. With
    ``host``, so is the CPU backend's (``host(operands, result_type,
    builder)``), while the GPU calls the symbol. ``gpu_only``: the CPU
    backend has no version, and a call compiled for it is an error."""
    def fn(*args: Any, _builder: Any = None) -> Any:
        from kiln.errors import CompilationError
        from kiln.language import semantic
        arity = len(next(iter(table)))
        if len(args) != arity:
            raise CompilationError(f"libdevice.{name} takes {arity} argument{'s' if arity > 1 else ''}, "
                                   f"got {len(args)}")
        if gpu_only and _compiling_for_cpu():
            raise CompilationError(f"libdevice.{name} runs on NVIDIA GPUs only: the CPU backend has no version "
                                   f"of {', '.join(symbol for symbol, _ in table.values())}")
        if compose is not None or (host is not None and _compiling_for_cpu()):
            operands, _, result = semantic.resolve_extern_call(f"libdevice.{name}", [_unwrap(a) for a in args],
                                                               table, _builder)
            if compose is not None:
                return compose(operands, _builder)
            return host(operands, result.scalar, _builder)
        return semantic.extern_elementwise(f"libdevice.{name}", [_unwrap(a) for a in args], table, _builder)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.accepted_types = tuple(table)  # type: ignore[attr-defined]
    fn.gpu_only = gpu_only  # type: ignore[attr-defined]
    return builtin(fn)


def _float(name: str, f32: str, f64: str, arity: int = 1, doc: str = "") -> Callable[..., Any]:
    """A function with an fp32 and an fp64 variant of `arity` arguments."""
    return _define(name, {_F32 * arity: (f32, float32), _F64 * arity: (f64, float64)},
                   doc or f"Element-wise {name} (libdevice {f32} / {f64}).")


def _fp32_only(name: str, symbol: str, arity: int = 1) -> Callable[..., Any]:
    return _define(name, {_F32 * arity: (symbol, float32)}, f"Element-wise {name} (libdevice {symbol}); fp32 only.")


def _predicate(name: str, f32: str, f64: str) -> Callable[..., Any]:
    """A test returning int32 (non-zero where true), as libdevice's do."""
    return _define(name, {_F32: (f32, int32), _F64: (f64, int32)},
                   f"Element-wise {name} as an int32, non-zero where true (libdevice {f32} / {f64}).")


def _unary(name: str) -> Callable[..., Any]:
    return _float(name, f"__nv_{name}f", f"__nv_{name}")


def _binary(name: str) -> Callable[..., Any]:
    return _float(name, f"__nv_{name}f", f"__nv_{name}", arity=2)


# Exponentials and logarithms.
exp = _unary("exp")
exp2 = _unary("exp2")
exp10 = _unary("exp10")
expm1 = _unary("expm1")
log = _unary("log")
log2 = _unary("log2")
log10 = _unary("log10")
log1p = _unary("log1p")
pow = _define("pow", {  # noqa: A001 - libdevice's name
    (float32, int32): ("__nv_powif", float32),
    (float64, int32): ("__nv_powi", float64),
    _F32 * 2: ("__nv_powf", float32),
    _F64 * 2: ("__nv_pow", float64),
}, "Element-wise x ** y (libdevice __nv_powf / __nv_pow; __nv_powif / __nv_powi for an int32 exponent).")

# Trigonometric and hyperbolic functions.
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
atan2 = _binary("atan2")
sinh = _unary("sinh")
cosh = _unary("cosh")
tanh = _unary("tanh")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
hypot = _binary("hypot")
rhypot = _binary("rhypot")
norm3d = _float("norm3d", "__nv_norm3df", "__nv_norm3d", arity=3)
rnorm3d = _float("rnorm3d", "__nv_rnorm3df", "__nv_rnorm3d", arity=3)
norm4d = _float("norm4d", "__nv_norm4df", "__nv_norm4d", arity=4)
rnorm4d = _float("rnorm4d", "__nv_rnorm4df", "__nv_rnorm4d", arity=4)
sinpi = _unary("sinpi")
cospi = _unary("cospi")

# Special functions.
erf = _unary("erf")
erfc = _unary("erfc")
erfinv = _unary("erfinv")
lgamma = _unary("lgamma")
tgamma = _unary("tgamma")
erfcinv = _unary("erfcinv")
erfcx = _unary("erfcx")
normcdf = _unary("normcdf")
normcdfinv = _unary("normcdfinv")

# Bessel functions.
j0 = _unary("j0")
j1 = _unary("j1")
y0 = _unary("y0")
y1 = _unary("y1")
cyl_bessel_i0 = _unary("cyl_bessel_i0")
cyl_bessel_i1 = _unary("cyl_bessel_i1")
jn = _define("jn", {
    (int32, float32): ("__nv_jnf", float32),
    (int32, float64): ("__nv_jn", float64),
}, "Element-wise Bessel function of the first kind of order n (libdevice __nv_jnf / __nv_jn).")
yn = _define("yn", {
    (int32, float32): ("__nv_ynf", float32),
    (int32, float64): ("__nv_yn", float64),
}, "Element-wise Bessel function of the second kind of order n (libdevice __nv_ynf / __nv_yn).")

# Roots.
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
cbrt = _unary("cbrt")
rcbrt = _unary("rcbrt")
sqrt_rn = _float("sqrt_rn", "__nv_fsqrt_rn", "__nv_dsqrt_rn")

# Rounding and remainders.
floor = _unary("floor")
ceil = _unary("ceil")
trunc = _unary("trunc")
round = _unary("round")  # noqa: A001 - libdevice's name
rint = _unary("rint")
nearbyint = _unary("nearbyint")
fmod = _binary("fmod")
remainder = _binary("remainder")

# Arithmetic.
abs = _define("abs", {  # noqa: A001 - libdevice's name
    (int32,): ("__nv_abs", int32),
    (int64,): ("__nv_llabs", int64),
    (float32,): ("__nv_fabsf", float32),
    (float64,): ("__nv_fabs", float64),
}, "Element-wise absolute value (libdevice __nv_abs / __nv_llabs / __nv_fabsf / __nv_fabs).")
fma = _float("fma", "__nv_fmaf", "__nv_fma", arity=3)
fmin = _binary("fmin")
fmax = _binary("fmax")
fdim = _binary("fdim")
copysign = _binary("copysign")
nextafter = _binary("nextafter")
div_rn = _float("div_rn", "__nv_fdiv_rn", "__nv_ddiv_rn", arity=2)
rcp_rn = _float("rcp_rn", "__nv_frcp_rn", "__nv_drcp_rn")
ldexp = _define("ldexp", {
    (float32, int32): ("__nv_ldexpf", float32),
    (float64, int32): ("__nv_ldexp", float64),
}, "Element-wise x * 2 ** n (libdevice __nv_ldexpf / __nv_ldexp).")
scalbn = _define("scalbn", {
    (float32, int32): ("__nv_scalbnf", float32),
    (float64, int32): ("__nv_scalbn", float64),
}, "Element-wise x * 2 ** n (libdevice __nv_scalbnf / __nv_scalbn).")
logb = _unary("logb")
ilogb = _define("ilogb", {_F32: ("__nv_ilogbf", int32), _F64: ("__nv_ilogb", int32)},
                "Element-wise unbiased exponent of x as an int32 (libdevice __nv_ilogbf / __nv_ilogb).")
saturatef = _define("saturatef", {_F32: ("__nv_saturatef", float32)},
                    "Element-wise clamp to [0, 1], NaN to 0 (libdevice __nv_saturatef); fp32 only.")

# Correctly rounded operations in each rounding mode: to nearest even (rn),
# toward zero (rz), down (rd) and up (ru).
add_rn = _float("add_rn", "__nv_fadd_rn", "__nv_dadd_rn", arity=2)
add_rz = _float("add_rz", "__nv_fadd_rz", "__nv_dadd_rz", arity=2)
add_rd = _float("add_rd", "__nv_fadd_rd", "__nv_dadd_rd", arity=2)
add_ru = _float("add_ru", "__nv_fadd_ru", "__nv_dadd_ru", arity=2)
mul_rn = _float("mul_rn", "__nv_fmul_rn", "__nv_dmul_rn", arity=2)
mul_rz = _float("mul_rz", "__nv_fmul_rz", "__nv_dmul_rz", arity=2)
mul_rd = _float("mul_rd", "__nv_fmul_rd", "__nv_dmul_rd", arity=2)
mul_ru = _float("mul_ru", "__nv_fmul_ru", "__nv_dmul_ru", arity=2)
div_rz = _float("div_rz", "__nv_fdiv_rz", "__nv_ddiv_rz", arity=2)
div_rd = _float("div_rd", "__nv_fdiv_rd", "__nv_ddiv_rd", arity=2)
div_ru = _float("div_ru", "__nv_fdiv_ru", "__nv_ddiv_ru", arity=2)
rcp_rz = _float("rcp_rz", "__nv_frcp_rz", "__nv_drcp_rz")
rcp_rd = _float("rcp_rd", "__nv_frcp_rd", "__nv_drcp_rd")
rcp_ru = _float("rcp_ru", "__nv_frcp_ru", "__nv_drcp_ru")
sqrt_rz = _float("sqrt_rz", "__nv_fsqrt_rz", "__nv_dsqrt_rz")
sqrt_rd = _float("sqrt_rd", "__nv_fsqrt_rd", "__nv_dsqrt_rd")
sqrt_ru = _float("sqrt_ru", "__nv_fsqrt_ru", "__nv_dsqrt_ru")
fma_rn = _float("fma_rn", "__nv_fmaf_rn", "__nv_fma_rn", arity=3)
fma_rz = _float("fma_rz", "__nv_fmaf_rz", "__nv_fma_rz", arity=3)
fma_rd = _float("fma_rd", "__nv_fmaf_rd", "__nv_fma_rd", arity=3)
fma_ru = _float("fma_ru", "__nv_fmaf_ru", "__nv_fma_ru", arity=3)

# Reinterpretations of the bits.
float_as_int = _define("float_as_int", {_F32: ("__nv_float_as_int", int32)},
                       "Element-wise bits of an fp32 as an int32 (libdevice __nv_float_as_int).")
int_as_float = _define("int_as_float", {(int32,): ("__nv_int_as_float", float32)},
                       "Element-wise int32 bits as an fp32 (libdevice __nv_int_as_float).")
double_as_longlong = _define("double_as_longlong", {_F64: ("__nv_double_as_longlong", int64)},
                             "Element-wise bits of an fp64 as an int64 (libdevice __nv_double_as_longlong).")
longlong_as_double = _define("longlong_as_double", {(int64,): ("__nv_longlong_as_double", float64)},
                             "Element-wise int64 bits as an fp64 (libdevice __nv_longlong_as_double).")

# Integer intrinsics.
popc = _define("popc", {(int32,): ("__nv_popc", int32), (int64,): ("__nv_popcll", int32)},
               "Element-wise number of set bits, as an int32 (libdevice __nv_popc / __nv_popcll).")
clz = _define("clz", {(int32,): ("__nv_clz", int32), (int64,): ("__nv_clzll", int32)},
              "Element-wise number of leading zero bits, as an int32 (libdevice __nv_clz / __nv_clzll).")
ffs = _define("ffs", {(int32,): ("__nv_ffs", int32), (int64,): ("__nv_ffsll", int32)},
              "Element-wise 1-based position of the lowest set bit, 0 for 0 (libdevice __nv_ffs / __nv_ffsll).")
brev = _define("brev", {(int32,): ("__nv_brev", int32), (int64,): ("__nv_brevll", int64)},
               "Element-wise bit reversal (libdevice __nv_brev / __nv_brevll).")
mulhi = _define("mulhi", {
    (int32, int32): ("__nv_mulhi", int32),
    (uint32, uint32): ("__nv_umulhi", uint32),
    (int64, int64): ("__nv_mul64hi", int64),
    (uint64, uint64): ("__nv_umul64hi", uint64),
}, "Element-wise high half of the full product (libdevice __nv_mulhi / __nv_umulhi / __nv_mul64hi / __nv_umul64hi).")


def _mul24(operands: list, b: Any) -> Any:
    # Built from shifts and a wrapping multiply rather than by calling
    # __nv_mul24: LLVM rewrites that call into a multiply marked as never
    # overflowing, and the optimizer then widens it to the full 48-bit
    # product, where mul24 keeps its low 32 bits.
    from kiln.language import semantic
    low24 = [semantic.rshift(semantic.lshift(v, 8, b), 8, b) if v.dtype.is_int_signed()
             else semantic.and_(v, 0xFFFFFF, b) for v in operands]
    return semantic.mul(low24[0], low24[1], b)


mul24 = _define("mul24", {
    (int32, int32): ("__nv_mul24", int32),
    (uint32, uint32): ("__nv_umul24", uint32),
}, "Element-wise low 32 bits of the product of the low 24 bits of each, sign-extended for int32 "
   "(libdevice __nv_mul24 / __nv_umul24).", compose=_mul24)
hadd = _define("hadd", {
    (int32, int32): ("__nv_hadd", int32),
    (uint32, uint32): ("__nv_uhadd", uint32),
}, "Element-wise (x + y) >> 1 without overflow (libdevice __nv_hadd / __nv_uhadd).")
rhadd = _define("rhadd", {
    (int32, int32): ("__nv_rhadd", int32),
    (uint32, uint32): ("__nv_urhadd", uint32),
}, "Element-wise (x + y + 1) >> 1 without overflow (libdevice __nv_rhadd / __nv_urhadd).")
sad = _define("sad", {
    (int32, int32, uint32): ("__nv_sad", uint32),
    (uint32, uint32, uint32): ("__nv_usad", uint32),
}, "Element-wise |x - y| + z (libdevice __nv_sad / __nv_usad).")
byte_perm = _define("byte_perm", {(int32, int32, int32): ("__nv_byte_perm", int32)},
                    "Element-wise byte selection from y:x by selector s (libdevice __nv_byte_perm).")

# Classification.
isnan = _predicate("isnan", "__nv_isnanf", "__nv_isnand")
isinf = _predicate("isinf", "__nv_isinff", "__nv_isinfd")
signbit = _predicate("signbit", "__nv_signbitf", "__nv_signbitd")
finitef = _define("finitef", {_F32: ("__nv_finitef", int32)}, "Element-wise isfinite as an int32; fp32 only.")
isfinited = _define("isfinited", {_F64: ("__nv_isfinited", int32)}, "Element-wise isfinite as an int32; fp64 only.")

# Fast approximations (fp32 only).
fast_expf = _fp32_only("fast_expf", "__nv_fast_expf")
fast_exp10f = _fp32_only("fast_exp10f", "__nv_fast_exp10f")
fast_logf = _fp32_only("fast_logf", "__nv_fast_logf")
fast_log2f = _fp32_only("fast_log2f", "__nv_fast_log2f")
fast_log10f = _fp32_only("fast_log10f", "__nv_fast_log10f")
fast_sinf = _fp32_only("fast_sinf", "__nv_fast_sinf")
fast_cosf = _fp32_only("fast_cosf", "__nv_fast_cosf")
fast_tanf = _fp32_only("fast_tanf", "__nv_fast_tanf")
fast_powf = _fp32_only("fast_powf", "__nv_fast_powf", arity=2)
fast_dividef = _fp32_only("fast_dividef", "__nv_fast_fdividef", arity=2)


# ---------------------------------------------------------------------------
# Conversions with a rounding mode, subtraction in each rounding mode, and
# more reinterpretations. The GPU calls libdevice; the CPU backend computes
# each from kernel operations and host functions above, exactly (same
# results, saturation of out-of-range conversions and NaN to 0 included).
# ---------------------------------------------------------------------------

_MODES = ("rn", "rz", "rd", "ru")
# The libdevice function rounding a float to an integral value in each mode.
_INTEGRAL = {"rn": ("__nv_rintf", "__nv_rint"), "rz": ("__nv_truncf", "__nv_trunc"),
             "rd": ("__nv_floorf", "__nv_floor"), "ru": ("__nv_ceilf", "__nv_ceil")}


def _call(symbol32: str, symbol64: str, args: list, result: Any, b: Any) -> tensor:
    """A host function on `args` (of one float type), as extern_elementwise."""
    from kiln.language import semantic
    ty = args[0].dtype.scalar
    table = {tuple(a.dtype.scalar for a in args): (symbol32 if ty == float32 else symbol64, result or ty)}
    return semantic.extern_elementwise("libdevice", args, table, b)


def _step(value: tensor, toward: float, b: Any) -> tensor:
    """The float next to each element of `value` toward `toward`."""
    from kiln.language import semantic
    target = semantic.constant(toward, value.dtype.scalar, b)
    return _call("__nv_nextafterf", "__nv_nextafter", [value, semantic.broadcast_to(target, value.shape, b)], None, b)


def _directed(mode: str, nearest: tensor, greater: tensor, less: tensor, nonnegative: Any, b: Any) -> tensor:
    """`nearest` (a round-to-nearest result) moved one step where its mode
    asks: `greater` / `less` say where it exceeds / falls short of the
    exact value, `nonnegative` where that value is not negative."""
    from kiln.language import semantic
    if mode == "rn":
        return nearest
    if mode == "rd":
        return semantic.where(greater, _step(nearest, float("-inf"), b), nearest, b)
    if mode == "ru":
        return semantic.where(less, _step(nearest, float("inf"), b), nearest, b)
    away = semantic.where(nonnegative, greater, less, b) if isinstance(nonnegative, tensor) else \
        (greater if nonnegative else less)
    return semantic.where(away, _step(nearest, 0.0, b), nearest, b)


def _float_to_float(mode: str) -> Callable[[list, Any, Any], tensor]:
    def host(args: list, result: dtype, b: Any) -> tensor:
        from kiln.language import semantic
        x = args[0]
        nearest = semantic.cast(x, result, b)
        back = semantic.cast(nearest, x.dtype.scalar, b)
        return _directed(mode, nearest, semantic.greater_than(back, x, b), semantic.less_than(back, x, b),
                         semantic.greater_equal(x, 0.0, b), b)
    return host


def _saturating_to_int(value: tensor, ty: dtype, b: Any) -> tensor:
    """Integral floats converted to the integer type `ty` as the GPU's cvt
    does: out-of-range values saturate to its limits, NaN becomes 0."""
    from kiln.language import semantic
    bits = ty.int_bitwidth
    lowest = -(2 ** (bits - 1)) if ty.is_int_signed() else 0
    limit = 2 ** (bits - 1) if ty.is_int_signed() else 2 ** bits  # the first value too large (a power of two)
    too_low = semantic.less_than(value, float(lowest), b)
    too_high = semantic.greater_equal(value, float(limit), b)
    nan = semantic.not_equal(value, value, b)
    out = semantic.logical_or(semantic.logical_or(too_low, too_high, b), nan, b)
    safe = semantic.where(out, semantic.constant(0.0, value.dtype.scalar, b), value, b)
    converted = semantic.cast(safe, ty, b)
    converted = semantic.where(too_high, semantic.constant(limit - 1, ty, b), converted, b)
    converted = semantic.where(too_low, semantic.constant(lowest, ty, b), converted, b)
    return semantic.where(nan, semantic.constant(0, ty, b), converted, b)


def _float_to_int(mode: str, ty: dtype) -> Callable[[list, Any, Any], tensor]:
    """Round in `mode`, then convert to `ty` (an integer type whose bits the
    result type, of libdevice's declared signedness, takes)."""
    def host(args: list, result: dtype, b: Any) -> tensor:
        from kiln.language import semantic
        integral = _call(*_INTEGRAL[mode], [args[0]], None, b)
        return semantic.cast(_saturating_to_int(integral, ty, b), result, b, bitcast=True)
    return host


def _int_to_float(mode: str) -> Callable[[list, Any, Any], tensor]:
    def host(args: list, result: dtype, b: Any) -> tensor:
        from kiln.language import semantic
        x = args[0]
        nearest = semantic.cast(x, result, b)
        if x.dtype.int_bitwidth <= 32:
            # Both sides are exact in fp64.
            exact, near = semantic.cast(x, float64, b), semantic.cast(nearest, float64, b)
            greater, less = semantic.greater_than(near, exact, b), semantic.less_than(near, exact, b)
        else:
            # Compared as integers: the rounded value is integral, and only
            # 2**63 (2**64 unsigned) is beyond the integer type.
            limit = float(2 ** 63 if x.dtype.is_int_signed() else 2 ** 64)
            big = semantic.greater_equal(nearest, limit, b)
            fitted = semantic.cast(semantic.where(big, semantic.constant(0.0, result, b), nearest, b),
                                   x.dtype.scalar, b)
            greater = semantic.logical_or(big, semantic.greater_than(fitted, x, b), b)
            less = semantic.logical_and(semantic.logical_not(big, b), semantic.less_than(fitted, x, b), b)
        nonnegative = semantic.greater_equal(x, 0, b) if x.dtype.is_int_signed() else True
        return _directed(mode, nearest, greater, less, nonnegative, b)
    return host


def _conversion(name: str, source: dtype, result: dtype, symbol: str, host: Callable[[list, Any, Any], Any],
                what: str, everywhere: bool = False) -> Callable[..., Any]:
    if everywhere:
        return _define(name, {(source,): (symbol, result)}, f"Element-wise {what} (libdevice {symbol}).",
                       compose=_on_every_target(host, result))
    return _define(name, {(source,): (symbol, result)}, f"Element-wise {what} (libdevice {symbol}).", host=host)


def _on_every_target(host: Callable[[list, Any, Any], Any], result: dtype) -> Callable[[list, Any], Any]:
    """``host`` as the GPU's version too. For float-to-integer conversions:
    LLVM rewrites libdevice's conversion intrinsics into plain conversions,
    for which NaN and out-of-range values are undefined (NaN came out as the
    integer type's minimum), where CUDA documents saturation and NaN to 0."""
    return lambda operands, b: host(operands, result, b)


_MODE_WORDS = {"rn": "rounded to nearest even", "rz": "rounded toward zero", "rd": "rounded down",
               "ru": "rounded up"}
_INT_NAMES = {"int": (int32, int32), "uint": (uint32, int32), "ll": (int64, int64), "ull": (uint64, int64)}

for _mode in _MODES:
    _words = _MODE_WORDS[_mode]
    globals()[f"double2float_{_mode}"] = _conversion(
        f"double2float_{_mode}", float64, float32, f"__nv_double2float_{_mode}", _float_to_float(_mode),
        f"fp64 to fp32 {_words}")
    for _src_name, _src in (("float", float32), ("double", float64)):
        for _int_name, (_int_type, _declared) in _INT_NAMES.items():
            # Triton declares the unsigned conversions' results signed (the same bits).
            globals()[f"{_src_name}2{_int_name}_{_mode}"] = _conversion(
                f"{_src_name}2{_int_name}_{_mode}", _src, _declared, f"__nv_{_src_name}2{_int_name}_{_mode}",
                _float_to_int(_mode, _int_type),
                f"{_src} to {_int_type} {_words}, saturating at its limits, NaN to 0", everywhere=True)
    for _int_name, _int_type in (("int", int32), ("uint", uint32), ("ll", int64), ("ull", uint64)):
        for _dst_name, _dst in (("float", float32), ("double", float64)):
            if _dst == float64 and _int_type.int_bitwidth == 32 and _mode != "rn":
                continue  # exact: libdevice has only the _rn form
            globals()[f"{_int_name}2{_dst_name}_{_mode}"] = _conversion(
                f"{_int_name}2{_dst_name}_{_mode}", _int_type, _dst, f"__nv_{_int_name}2{_dst_name}_{_mode}",
                _int_to_float(_mode), f"{_int_type} to {_dst} {_words}")


def _sub(mode: str) -> Callable[[list, Any, Any], tensor]:
    def host(args: list, result: dtype, b: Any) -> tensor:
        from kiln.language import semantic
        x, y = args
        if mode == "rn":
            return semantic.sub(x, y, b)
        # x - y is x + (-y) in every rounding mode.
        return _call(f"__nv_fadd_{mode}", f"__nv_dadd_{mode}", [x, semantic.minus(y, b)], None, b)
    return host


sub_rn = _define("sub_rn", {_F32 * 2: ("__nv_fsub_rn", float32), _F64 * 2: ("__nv_dsub_rn", float64)},
                 "Element-wise x - y rounded to nearest even (libdevice __nv_fsub_rn / __nv_dsub_rn).",
                 host=_sub("rn"))
sub_rz = _define("sub_rz", {_F32 * 2: ("__nv_fsub_rz", float32), _F64 * 2: ("__nv_dsub_rz", float64)},
                 "Element-wise x - y rounded toward zero (libdevice __nv_fsub_rz / __nv_dsub_rz).", host=_sub("rz"))
sub_rd = _define("sub_rd", {_F32 * 2: ("__nv_fsub_rd", float32), _F64 * 2: ("__nv_dsub_rd", float64)},
                 "Element-wise x - y rounded down (libdevice __nv_fsub_rd / __nv_dsub_rd).", host=_sub("rd"))
sub_ru = _define("sub_ru", {_F32 * 2: ("__nv_fsub_ru", float32), _F64 * 2: ("__nv_dsub_ru", float64)},
                 "Element-wise x - y rounded up (libdevice __nv_fsub_ru / __nv_dsub_ru).", host=_sub("ru"))


def _to_int64(rounding: tuple[str, str]) -> Callable[[list, Any, Any], tensor]:
    def host(args: list, result: dtype, b: Any) -> tensor:
        return _saturating_to_int(_call(*rounding, [args[0]], None, b), int64, b)
    return host


llrint = _define("llrint", {_F32: ("__nv_llrintf", int64), _F64: ("__nv_llrint", int64)},
                 "Element-wise x rounded to the nearest integer (ties to even), as an int64 (libdevice "
                 "__nv_llrintf / __nv_llrint).",
                 compose=_on_every_target(_to_int64(("__nv_rintf", "__nv_rint")), int64))
llround = _define("llround", {_F32: ("__nv_llroundf", int64), _F64: ("__nv_llround", int64)},
                  "Element-wise x rounded to the nearest integer (ties away from zero), as an int64 (libdevice "
                  "__nv_llroundf / __nv_llround).",
                  compose=_on_every_target(_to_int64(("__nv_roundf", "__nv_round")), int64))


def _hiloint2double(args: list, result: dtype, b: Any) -> tensor:
    from kiln.language import semantic
    hi, lo = args
    high = semantic.lshift(semantic.cast(hi, int64, b), 32, b)
    low = semantic.cast(semantic.cast(lo, uint32, b, bitcast=True), int64, b)  # zero-extended
    return semantic.cast(semantic.or_(high, low, b), float64, b, bitcast=True)


def _double_half(high: bool) -> Callable[[list, Any, Any], tensor]:
    def host(args: list, result: dtype, b: Any) -> tensor:
        from kiln.language import semantic
        bits = semantic.cast(args[0], int64, b, bitcast=True)
        return semantic.cast(semantic.rshift(bits, 32, b) if high else bits, int32, b)
    return host


def _bits(args: list, result: dtype, b: Any) -> tensor:
    from kiln.language import semantic
    return semantic.cast(args[0], result, b, bitcast=True)


hiloint2double = _define("hiloint2double", {(int32, int32): ("__nv_hiloint2double", float64)},
                         "Element-wise fp64 whose high and low 32 bits are hi and lo (libdevice "
                         "__nv_hiloint2double).", host=_hiloint2double)
double2hiint = _define("double2hiint", {_F64: ("__nv_double2hiint", int32)},
                       "Element-wise high 32 bits of an fp64, as an int32 (libdevice __nv_double2hiint).",
                       host=_double_half(True))
double2loint = _define("double2loint", {_F64: ("__nv_double2loint", int32)},
                       "Element-wise low 32 bits of an fp64, as an int32 (libdevice __nv_double2loint).",
                       host=_double_half(False))
uint_as_float = _define("uint_as_float", {(uint32,): ("__nv_uint_as_float", float32)},
                        "Element-wise uint32 bits as an fp32 (libdevice __nv_uint_as_float).", host=_bits)
float_as_uint = _define("float_as_uint", {_F32: ("__nv_float_as_uint", int32)},
                        "Element-wise bits of an fp32, as an int32 as Triton declares it (libdevice "
                        "__nv_float_as_uint).", host=_bits)

# No CPU version: libdevice's own approximations, which the host has no
# exact counterpart of.
rsqrt_rn = _define("rsqrt_rn", {_F32: ("__nv_frsqrt_rn", float32)},
                   "Element-wise 1 / sqrt(x) rounded to nearest even (libdevice __nv_frsqrt_rn); fp32 only; "
                   "NVIDIA GPUs only.", gpu_only=True)
rcp64h = _define("rcp64h", {_F64: ("__nv_rcp64h", float64)},
                 "Element-wise reciprocal of the high 32 bits of an fp64, an approximation (libdevice "
                 "__nv_rcp64h); NVIDIA GPUs only.", gpu_only=True)

del _mode, _words, _src_name, _src, _int_name, _int_type, _declared, _dst_name, _dst
