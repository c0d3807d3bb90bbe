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

from kiln.language.core import _unwrap, builtin, float32, float64, int32, int64

_F32 = (float32,)
_F64 = (float64,)


def _define(name: str, table: dict, doc: str) -> Callable[..., Any]:
    def fn(*args: Any, _builder: Any = None) -> Any:
        from kiln.language import semantic
        arity = len(next(iter(table)))
        if len(args) != arity:
            from kiln.errors import CompilationError
            raise CompilationError(f"libdevice.{name} takes {arity} argument{'s' if arity > 1 else ''}, "
                                   f"got {len(args)}")
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

# Special functions.
erf = _unary("erf")
erfc = _unary("erfc")
erfinv = _unary("erfinv")
lgamma = _unary("lgamma")
tgamma = _unary("tgamma")

# Roots.
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
cbrt = _unary("cbrt")
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
