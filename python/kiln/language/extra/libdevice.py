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

from kiln.language.core import _unwrap, builtin, float32, float64, int32, int64, uint32, uint64

_F32 = (float32,)
_F64 = (float64,)


def _define(name: str, table: dict, doc: str,
            compose: Callable[[list, Any], Any] | None = None) -> Callable[..., Any]:
    """A libdevice function taking the argument types in ``table``. With
    ``compose``, the call is built from kernel arithmetic on the promoted,
    broadcast arguments instead of calling the libdevice symbol."""
    def fn(*args: Any, _builder: Any = None) -> Any:
        from kiln.language import semantic
        arity = len(next(iter(table)))
        if len(args) != arity:
            from kiln.errors import CompilationError
            raise CompilationError(f"libdevice.{name} takes {arity} argument{'s' if arity > 1 else ''}, "
                                   f"got {len(args)}")
        if compose is not None:
            operands, _, _ = semantic.resolve_extern_call(f"libdevice.{name}", [_unwrap(a) for a in args], table,
                                                          _builder)
            return compose(operands, _builder)
        return semantic.extern_elementwise(f"libdevice.{name}", [_unwrap(a) for a in args], table, _builder)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.accepted_types = tuple(table)  # type: ignore[attr-defined]
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
