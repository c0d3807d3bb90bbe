"""Element-wise math on every backend present: kl's math functions and
`kiln.language.extra.libdevice`, each against torch in float64 on fresh
random inputs inside the function's domain (never zero), over the dtypes
the function accepts, with sizes that need masks. One kernel compile serves
all sizes of a (function, dtype) pair."""

import math
from decimal import Decimal, localcontext

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.language.extra import libdevice

SIZES = (1, 17, 1000)
BLOCK = 256
TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64}
# (rtol, atol) for a result rounded to each dtype; fp32 allows for the GPU's
# ex2.approx/rsqrt.approx and libdevice's few-ulp functions.
TOLERANCES = {"fp16": (2e-3, 1e-3), "bf16": (1.6e-2, 1e-2), "fp32": (1e-5, 1e-6), "fp64": (1e-12, 1e-13)}


def random_inputs(arrays, n, dtype, low, high, seed):
    """Uniform in [low, high], stored in `dtype`, with values near zero
    moved away from it."""
    gen = torch.Generator().manual_seed(seed)
    x = low + (high - low) * torch.rand(n, dtype=torch.float64, generator=gen)
    x = torch.where(x.abs() < 0.05, torch.full_like(x, 0.5 if low < 0.5 <= high else (low + high) / 2), x)
    return arrays.to_backend(x.to(dtype))


def check(out, expected, dtype_name, tolerances=None):
    rtol, atol = tolerances or TOLERANCES[dtype_name]
    torch.testing.assert_close(out.cpu().double(), expected.cpu().double(), rtol=rtol, atol=atol, equal_nan=True)


# -- kl's functions ---------------------------------------------------------


@kiln.jit
def unary_kernel(x_ptr, out_ptr, n, FN: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=1)
    if FN == "exp":
        y = kl.exp(x)
    elif FN == "exp2":
        y = kl.exp2(x)
    elif FN == "log":
        y = kl.log(x)
    elif FN == "log2":
        y = kl.log2(x)
    elif FN == "sin":
        y = kl.sin(x)
    elif FN == "cos":
        y = kl.cos(x)
    elif FN == "sqrt":
        y = kl.sqrt(x)
    elif FN == "sqrt_rn":
        y = kl.sqrt_rn(x)
    elif FN == "rsqrt":
        y = kl.rsqrt(x)
    elif FN == "floor":
        y = kl.floor(x)
    elif FN == "ceil":
        y = kl.ceil(x)
    elif FN == "erf":
        y = kl.erf(x)
    elif FN == "tanh":
        y = kl.tanh(x)
    elif FN == "abs":
        y = kl.abs(x)
    else:
        y = kl.sigmoid(x)
    kl.store(out_ptr + offs, y, mask=mask)


# name: (torch reference, low, high)
KL_UNARY = {
    "exp": (torch.exp, -4, 4),
    "exp2": (torch.exp2, -4, 4),
    "log": (torch.log, 0.1, 10),
    "log2": (torch.log2, 0.1, 10),
    "sin": (torch.sin, -4, 4),
    "cos": (torch.cos, -4, 4),
    "sqrt": (torch.sqrt, 0.1, 10),
    "rsqrt": (torch.rsqrt, 0.1, 10),
    "floor": (torch.floor, -10, 10),
    "ceil": (torch.ceil, -10, 10),
    "erf": (torch.erf, -3, 3),
    "tanh": (torch.tanh, -3, 3),
    "abs": (torch.abs, -10, 10),
    "sigmoid": (torch.sigmoid, -6, 6),
}


def run_unary(arrays, fn_name, dtype_name, reference, low, high, seed):
    dtype = TORCH_DTYPES[dtype_name]
    for n in SIZES:
        x = random_inputs(arrays, n, dtype, low, high, seed=seed + n)
        # sigmoid of a half-precision input is fp32, as in Triton.
        out_dtype = torch.float32 if fn_name == "sigmoid" and dtype_name in ("fp16", "bf16") else dtype
        out = arrays.full(n, float("nan"), out_dtype)
        unary_kernel[(kiln.cdiv(n, BLOCK),)](x, out, n, FN=fn_name, BLOCK=BLOCK)
        check(out, reference(x.double()).to(dtype).double() if out_dtype == dtype else reference(x.double()),
              dtype_name)


@pytest.mark.parametrize("dtype_name", list(TORCH_DTYPES))
@pytest.mark.parametrize("fn_name", list(KL_UNARY))
def test_kl_unary(arrays, fn_name, dtype_name):
    reference, low, high = KL_UNARY[fn_name]
    run_unary(arrays, fn_name, dtype_name, reference, low, high, seed=sum(map(ord, fn_name)))


@kiln.jit
def binary_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, FN: kl.constexpr, NAN: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=1)
    y = kl.load(y_ptr + offs, mask=mask, other=1)
    z = kl.load(z_ptr + offs, mask=mask, other=1)
    if FN == "fma":
        r = kl.fma(x, y, z)
    elif FN == "fdiv":
        r = kl.fdiv(x, y)
    elif FN == "fdiv_ieee":
        r = kl.fdiv(x, y, ieee_rounding=True)
    elif FN == "div_rn":
        r = kl.div_rn(x, y)
    elif FN == "minimum":
        r = kl.minimum(x, y, propagate_nan=NAN)
    elif FN == "maximum":
        r = kl.maximum(x, y, propagate_nan=NAN)
    else:
        r = kl.clamp(x, y, z, propagate_nan=NAN)
    kl.store(out_ptr + offs, r, mask=mask)


def three_inputs(arrays, n, dtype, seed):
    x, y, z = (random_inputs(arrays, n, dtype, -4, 4, seed=seed + k) for k in range(3))
    return x, y, z


@pytest.mark.parametrize("dtype_name", list(TORCH_DTYPES))
def test_fma(arrays, dtype_name):
    dtype = TORCH_DTYPES[dtype_name]
    for n in SIZES:
        x, y, z = three_inputs(arrays, n, dtype, seed=n)
        out = arrays.full(n, float("nan"), dtype)
        binary_kernel[(kiln.cdiv(n, BLOCK),)](x, y, z, out, n, FN="fma", NAN=kl.PropagateNan.NONE, BLOCK=BLOCK)
        check(out, (x.double() * y.double() + z.double()).to(dtype), dtype_name)


@pytest.mark.parametrize("fn_name,dtype_name", [("fdiv", "fp16"), ("fdiv", "fp32"), ("fdiv", "fp64"),
                                                ("div_rn", "fp32"), ("fdiv_ieee", "fp32")])
def test_division(arrays, fn_name, dtype_name):
    dtype = TORCH_DTYPES[dtype_name]
    # fdiv of half-precision values divides (and returns) fp32, as `/` does.
    out_dtype = torch.float32 if dtype_name == "fp16" else dtype
    for n in SIZES:
        x, y, z = three_inputs(arrays, n, dtype, seed=n)
        out = arrays.full(n, float("nan"), out_dtype)
        binary_kernel[(kiln.cdiv(n, BLOCK),)](x, y, z, out, n, FN=fn_name, NAN=kl.PropagateNan.NONE, BLOCK=BLOCK)
        expected = x.to(out_dtype) / y.to(out_dtype)
        if fn_name == "fdiv" and out_dtype == torch.float32 and arrays.backend == "cuda":
            # As Triton's, fp32 `/` and fdiv are div.full.f32 on the GPU:
            # within 2 ulp.
            torch.testing.assert_close(out, expected, rtol=2.5e-7, atol=0)
        else:
            # IEEE division is correctly rounded: exact equality with torch's.
            assert torch.equal(out, expected)


@pytest.mark.parametrize("dtype_name", ["bf16", "fp32", "fp64"])
@pytest.mark.parametrize("propagate", ["NONE", "ALL"])
def test_minimum_maximum_clamp_nans(arrays, dtype_name, propagate):
    dtype = TORCH_DTYPES[dtype_name]
    nan_mode = getattr(kl.PropagateNan, propagate)
    n = 1000
    x, y, z = three_inputs(arrays, n, dtype, seed=3)
    # NaNs in x at every 7th element and in y at every 11th.
    x[::7] = float("nan")
    y[::11] = float("nan")
    lo, hi = torch.minimum(y, z), torch.maximum(y, z)
    lo[::11] = -1.0
    xd, yd = x.double().cpu(), y.double().cpu()
    if propagate == "ALL":
        expected = {"minimum": torch.minimum(xd, yd), "maximum": torch.maximum(xd, yd)}
        expected_clamp = torch.minimum(torch.maximum(xd, lo.double().cpu()), hi.double().cpu())
    else:
        expected = {"minimum": torch.fmin(xd, yd), "maximum": torch.fmax(xd, yd)}
        expected_clamp = torch.fmin(torch.fmax(xd, lo.double().cpu()), hi.double().cpu())
    for fn_name in ("minimum", "maximum"):
        out = arrays.full(n, 7.0, dtype)
        binary_kernel[(kiln.cdiv(n, BLOCK),)](x, y, z, out, n, FN=fn_name, NAN=nan_mode, BLOCK=BLOCK)
        check(out, expected[fn_name], dtype_name, (0, 0))
    out = arrays.full(n, 7.0, dtype)
    binary_kernel[(kiln.cdiv(n, BLOCK),)](x, lo, hi, out, n, FN="clamp", NAN=nan_mode, BLOCK=BLOCK)
    check(out, expected_clamp, dtype_name, (0, 0))


@kiln.jit
def umulhi_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.umulhi(kl.load(x_ptr + offs, mask=mask), kl.load(y_ptr + offs, mask=mask)), mask=mask)


@pytest.mark.parametrize("dtype,bits", [(torch.int32, 32), (torch.int64, 64)])
def test_umulhi(arrays, dtype, bits):
    info = torch.iinfo(dtype)
    for n in SIZES:
        x, y = (arrays.randint(info.min, info.max, n, dtype, seed=n + k) for k in (0, 1))
        out = arrays.full(n, 0, dtype)
        umulhi_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
        mask = (1 << bits) - 1
        expected = [((a & mask) * (b & mask)) >> bits for a, b in zip(x.tolist(), y.tolist())]
        expected = [e - (1 << bits) if e > info.max else e for e in expected]
        assert out.tolist() == expected


# -- libdevice --------------------------------------------------------------


@kiln.jit
def libdevice_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, FN: kl.constexpr, ARITY: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=1)
    fn = getattr(libdevice, FN)
    if ARITY == 1:
        r = fn(x)
    elif ARITY == 2:
        r = fn(x, kl.load(y_ptr + offs, mask=mask, other=1))
    else:
        r = fn(x, kl.load(y_ptr + offs, mask=mask, other=1), kl.load(z_ptr + offs, mask=mask, other=1))
    kl.store(out_ptr + offs, r, mask=mask)


def _round_half_away(x):
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


def _ieee_remainder(x, y):
    return torch.tensor([math.remainder(a, b) for a, b in zip(x.tolist(), y.tolist())], dtype=torch.float64)


def _pi_reduced(fn, x):
    """fn(pi * x), with x's integer part taken out exactly first: pi * x
    itself would lose the result's digits near the zeros."""
    n = torch.round(x)
    return fn(math.pi * (x - n)) * torch.where(n % 2 == 0, 1.0, -1.0)


_PI = Decimal("3.14159265358979323846264338327950288419716939937510")
_EULER = Decimal("0.57721566490153286060651209008240243104215933593992")


def _bessel(kind, order, x):
    """J_order(x) or Y_order(x) (order 0 or 1) from their power series in
    60-digit decimals: torch's float64 Bessel functions are off by up to
    1e-6 beyond x = 4."""
    with localcontext() as ctx:
        ctx.prec = 60
        d = Decimal(abs(x))
        q = d * d / 4
        j = tail = Decimal(0)
        term = (d / 2) ** order / math.factorial(order)  # (x/2)^(2k+n) / (k! (k+n)!), signed
        harmonic = Decimal(0)  # H_k
        harmonic_n = Decimal(order)  # H_(k+n), for n <= 1
        for k in range(120):
            if k:
                harmonic += Decimal(1) / k
                harmonic_n += Decimal(1) / (k + order)
                term *= -q / (k * (k + order))
            j += term
            tail += (harmonic + harmonic_n) * term
        if kind == "j":
            return float(j if x >= 0 or order == 0 else -j)
        y = 2 / _PI * ((d / 2).ln() + _EULER) * j - tail / _PI
        if order == 1:
            y -= 2 / (_PI * d)
        return float(y)


def _bessel_reference(kind, order):
    return lambda x: torch.tensor([_bessel(kind, order, v) for v in x.tolist()], dtype=torch.float64)


# libdevice's documented bounds for j0/j1/y0/y1 beyond |x| = 8 are absolute.
BESSEL_FP32 = (1e-5, 3e-6)
BESSEL_FP64 = (1e-12, 1e-11)
FAST = (1e-4, 1e-5)  # the GPU's fast approximations, in fp32
# name: (reference on float64 inputs, (low, high) per argument, fp32 tolerance override)
LIBDEVICE = {
    "exp": (torch.exp, [(-4, 4)], None),
    "exp2": (torch.exp2, [(-4, 4)], None),
    "exp10": (lambda x: torch.pow(10.0, x), [(-3, 3)], None),
    "expm1": (torch.expm1, [(-2, 2)], None),
    "log": (torch.log, [(0.1, 10)], None),
    "log2": (torch.log2, [(0.1, 10)], None),
    "log10": (torch.log10, [(0.1, 10)], None),
    "log1p": (torch.log1p, [(-0.5, 3)], None),
    "pow": (torch.pow, [(0.1, 4), (-2, 2)], None),
    "sin": (torch.sin, [(-4, 4)], None),
    "cos": (torch.cos, [(-4, 4)], None),
    "tan": (torch.tan, [(-1.2, 1.2)], None),
    "asin": (torch.asin, [(-0.9, 0.9)], None),
    "acos": (torch.acos, [(-0.9, 0.9)], None),
    "atan": (torch.atan, [(-4, 4)], None),
    "atan2": (torch.atan2, [(-4, 4), (-4, 4)], None),
    "sinh": (torch.sinh, [(-3, 3)], None),
    "cosh": (torch.cosh, [(-3, 3)], None),
    "tanh": (torch.tanh, [(-3, 3)], None),
    "asinh": (torch.asinh, [(-4, 4)], None),
    "acosh": (torch.acosh, [(1.1, 5)], None),
    "atanh": (torch.atanh, [(-0.9, 0.9)], None),
    "hypot": (torch.hypot, [(-4, 4), (-4, 4)], None),
    "erf": (torch.erf, [(-3, 3)], None),
    "erfc": (torch.erfc, [(-3, 3)], None),
    "erfinv": (torch.erfinv, [(-0.95, 0.95)], None),
    "lgamma": (torch.lgamma, [(0.5, 5)], None),
    "tgamma": (lambda x: torch.lgamma(x).exp(), [(0.5, 5)], None),
    "sqrt": (torch.sqrt, [(0.1, 10)], None),
    "rsqrt": (torch.rsqrt, [(0.1, 10)], None),
    "cbrt": (lambda x: torch.sign(x) * x.abs().pow(1 / 3), [(-8, 8)], None),
    "sqrt_rn": (torch.sqrt, [(0.1, 10)], None),
    "floor": (torch.floor, [(-10, 10)], None),
    "ceil": (torch.ceil, [(-10, 10)], None),
    "trunc": (torch.trunc, [(-10, 10)], None),
    "round": (_round_half_away, [(-10, 10)], None),
    "rint": (torch.round, [(-10, 10)], None),
    "nearbyint": (torch.round, [(-10, 10)], None),
    "fmod": (torch.fmod, [(-10, 10), (0.5, 3)], None),
    "remainder": (_ieee_remainder, [(-10, 10), (0.5, 3)], None),
    "abs": (torch.abs, [(-10, 10)], None),
    "fma": (lambda x, y, z: x * y + z, [(-4, 4), (-4, 4), (-4, 4)], None),
    "fmin": (torch.fmin, [(-4, 4), (-4, 4)], None),
    "fmax": (torch.fmax, [(-4, 4), (-4, 4)], None),
    "fdim": (lambda x, y: torch.clamp(x - y, min=0), [(-4, 4), (-4, 4)], None),
    "copysign": (torch.copysign, [(-4, 4), (-4, 4)], None),
    "div_rn": (torch.div, [(-4, 4), (-4, 4)], None),
    "rcp_rn": (torch.reciprocal, [(-4, 4)], None),
    "j0": (_bessel_reference("j", 0), [(-10, 10)], BESSEL_FP32),
    "j1": (_bessel_reference("j", 1), [(-10, 10)], BESSEL_FP32),
    "y0": (_bessel_reference("y", 0), [(0.1, 10)], BESSEL_FP32),
    "y1": (_bessel_reference("y", 1), [(0.1, 10)], BESSEL_FP32),
    "cyl_bessel_i0": (torch.special.i0, [(-40, 40)], None),
    "cyl_bessel_i1": (torch.special.i1, [(-40, 40)], None),
    "erfcx": (torch.special.erfcx, [(-3, 30)], None),
    "erfcinv": (lambda x: -torch.special.ndtri(x / 2) * math.sqrt(0.5), [(1e-6, 1.999)], None),
    "normcdf": (lambda x: 0.5 * torch.erfc(-x * math.sqrt(0.5)), [(-8, 8)], None),
    "normcdfinv": (torch.special.ndtri, [(1e-6, 0.999)], None),
    "sinpi": (lambda x: _pi_reduced(torch.sin, x), [(-4, 4)], None),
    "cospi": (lambda x: _pi_reduced(torch.cos, x), [(-4, 4)], None),
    "rcbrt": (lambda x: 1 / (torch.sign(x) * x.abs().pow(1 / 3)), [(-8, 8)], None),
    "rhypot": (lambda x, y: 1 / torch.hypot(x, y), [(-4, 4), (-4, 4)], None),
    "norm3d": (lambda x, y, z: (x * x + y * y + z * z).sqrt(), [(-4, 4), (-4, 4), (-4, 4)], None),
    "rnorm3d": (lambda x, y, z: (x * x + y * y + z * z).rsqrt(), [(-4, 4), (-4, 4), (-4, 4)], None),
    "logb": (lambda x: torch.floor(torch.log2(x.abs())), [(-1000, 1000)], None),
    "saturatef": (lambda x: torch.clamp(x, 0, 1), [(-2, 2)], None),
    "add_rn": (torch.add, [(-4, 4), (-4, 4)], None),
    "mul_rn": (torch.mul, [(-4, 4), (-4, 4)], None),
    "fma_rn": (lambda x, y, z: x * y + z, [(-4, 4), (-4, 4), (-4, 4)], None),
    "fast_expf": (torch.exp, [(-4, 4)], FAST),
    "fast_exp10f": (lambda x: torch.pow(10.0, x), [(-2, 2)], FAST),
    "fast_logf": (torch.log, [(0.1, 10)], FAST),
    "fast_log2f": (torch.log2, [(0.1, 10)], FAST),
    "fast_log10f": (torch.log10, [(0.1, 10)], FAST),
    "fast_sinf": (torch.sin, [(-3, 3)], FAST),
    "fast_cosf": (torch.cos, [(-3, 3)], FAST),
    "fast_tanf": (torch.tan, [(-1.2, 1.2)], FAST),
    "fast_powf": (torch.pow, [(0.1, 4), (-2, 2)], FAST),
    "fast_dividef": (torch.div, [(-4, 4), (-4, 4)], FAST),
}
LIBDEVICE_CASES = [(name, dt) for name in LIBDEVICE for dt in ("fp32", "fp64")
                   if any(types[0].name == dt for types in getattr(libdevice, name).accepted_types)]


@pytest.mark.parametrize("fn_name,dtype_name", LIBDEVICE_CASES)
def test_libdevice(arrays, fn_name, dtype_name):
    reference, domains, fp32_tolerance = LIBDEVICE[fn_name]
    dtype = TORCH_DTYPES[dtype_name]
    tolerance = fp32_tolerance if dtype_name == "fp32" and fp32_tolerance else None
    if dtype_name == "fp64" and fp32_tolerance is BESSEL_FP32:
        tolerance = BESSEL_FP64
    for n in SIZES:
        args = [random_inputs(arrays, n, dtype, low, high, seed=n + 10 * k + sum(map(ord, fn_name)))
                for k, (low, high) in enumerate(domains)]
        padded = args + [args[0]] * (3 - len(args))
        out = arrays.full(n, float("nan"), dtype)
        libdevice_kernel[(kiln.cdiv(n, BLOCK),)](*padded, out, n, FN=fn_name, ARITY=len(args), BLOCK=BLOCK)
        expected = reference(*(a.double().cpu() for a in args))
        check(out, expected.to(dtype), dtype_name, tolerance)


@kiln.jit
def libdevice_mixed_kernel(x_ptr, n_ptr, out_ptr, pow_ptr, flags_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=1)
    e = kl.load(n_ptr + offs, mask=mask, other=1)
    kl.store(out_ptr + offs, libdevice.ldexp(x, e), mask=mask)
    kl.store(pow_ptr + offs, libdevice.pow(x, e), mask=mask)
    flags = libdevice.isnan(x) + 2 * libdevice.isinf(x) + 4 * libdevice.signbit(x)
    kl.store(flags_ptr + offs, flags, mask=mask)


@pytest.mark.parametrize("dtype_name", ["fp32", "fp64"])
def test_libdevice_integer_arguments_and_tests(arrays, dtype_name):
    dtype = TORCH_DTYPES[dtype_name]
    n = 1000
    x = random_inputs(arrays, n, dtype, -4, 4, seed=5)
    x[::5] = float("nan")
    x[1::5] = float("inf")
    x[2::10] = float("-inf")
    e = arrays.randint(-3, 4, n, torch.int32, seed=6)
    out, powers = arrays.full(n, 0.0, dtype), arrays.full(n, 0.0, dtype)
    flags = arrays.full(n, -1, torch.int32)
    libdevice_mixed_kernel[(kiln.cdiv(n, BLOCK),)](x, e, out, powers, flags, n, BLOCK=BLOCK)
    xd, ed = x.double().cpu(), e.double().cpu()
    check(out, xd * torch.pow(2.0, ed), dtype_name)
    check(powers, torch.pow(xd, ed), dtype_name)
    expected_flags = (xd.isnan().int() + 2 * xd.isinf().int() + 4 * torch.signbit(xd).int())
    # The sign bit of a NaN is the hardware's choice; compare the others.
    finite_or_inf = ~xd.isnan()
    assert torch.equal(flags.cpu()[finite_or_inf], expected_flags[finite_or_inf])
    assert torch.equal(flags.cpu()[~finite_or_inf] & 3, expected_flags[~finite_or_inf] & 3)


@kiln.jit
def libdevice_integer_kernel(x_ptr, y_ptr, out_ptr, FN: kl.constexpr, ARITY: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    y = kl.load(y_ptr + offs)
    fn = getattr(libdevice, FN)
    if FN == "sad":
        r = fn(x, y, (y & 255).to(kl.uint32))
    elif FN == "byte_perm":
        r = fn(x, y, y & 0x7777)
    elif ARITY == 2:
        r = fn(x, y)
    else:
        r = fn(x)
    kl.store(out_ptr + offs, r.to(kl.int64))


def _u32(v):
    return v & 0xFFFFFFFF


def _s32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _s24(v):
    v &= 0xFFFFFF
    return v - (1 << 24) if v >= 1 << 23 else v


def _byte_perm(x, y, s):
    data = _u32(x) | (_u32(y) << 32)
    return _s32(sum(((data >> (8 * ((s >> (4 * i)) & 7))) & 255) << (8 * i) for i in range(4)))


# name: the int32 result of the CUDA intrinsic, on Python ints
LIBDEVICE_INTEGER = {
    "popc": lambda x, y: bin(_u32(x)).count("1"),
    "clz": lambda x, y: 32 - _u32(x).bit_length(),
    "ffs": lambda x, y: (_u32(x) & -_u32(x)).bit_length(),
    "brev": lambda x, y: _s32(int(format(_u32(x), "032b")[::-1], 2)),
    "mulhi": lambda x, y: (x * y) >> 32,
    "mul24": lambda x, y: _s32(_s24(x) * _s24(y)),
    "hadd": lambda x, y: (x + y) >> 1,
    "rhadd": lambda x, y: (x + y + 1) >> 1,
    "sad": lambda x, y: _u32(abs(x - y) + (y & 255)),
    "byte_perm": lambda x, y: _byte_perm(x, y, y & 0x7777),
}


@pytest.mark.parametrize("fn_name", sorted(LIBDEVICE_INTEGER))
def test_libdevice_integer(arrays, fn_name):
    gen = torch.Generator().manual_seed(sum(map(ord, fn_name)))
    x = torch.randint(-2**31, 2**31, (BLOCK,), dtype=torch.int64, generator=gen)
    y = torch.randint(-2**31, 2**31, (BLOCK,), dtype=torch.int64, generator=gen)
    x[:4] = torch.tensor([0, -1, 1, -2**31])  # edge cases of the bit counts
    out = arrays.full(BLOCK, -7, torch.int64)
    libdevice_integer_kernel[(1,)](arrays.to_backend(x.to(torch.int32)), arrays.to_backend(y.to(torch.int32)), out,
                                   FN=fn_name, ARITY=len(getattr(libdevice, fn_name).accepted_types[0]), BLOCK=BLOCK)
    expected = [LIBDEVICE_INTEGER[fn_name](a, b) for a, b in zip(x.tolist(), y.tolist())]
    assert out.cpu().tolist() == expected


@kiln.jit
def libdevice_order_kernel(x_ptr, n_ptr, jn_ptr, yn_ptr, scalbn_ptr, ilogb_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    n = kl.load(n_ptr + offs)
    kl.store(jn_ptr + offs, libdevice.jn(n, x))
    kl.store(yn_ptr + offs, libdevice.yn(n, x))
    kl.store(scalbn_ptr + offs, libdevice.scalbn(x, n))
    kl.store(ilogb_ptr + offs, libdevice.ilogb(x))


@pytest.mark.parametrize("dtype_name", ["fp32", "fp64"])
def test_libdevice_integer_order(arrays, dtype_name):
    """jn and yn of orders 0 and 1 against the series; scalbn and ilogb
    exactly."""
    dtype = TORCH_DTYPES[dtype_name]
    x = random_inputs(arrays, BLOCK, dtype, 0.1, 10, seed=11)
    n = torch.arange(BLOCK, dtype=torch.int32) % 2
    outs = [arrays.full(BLOCK, float("nan"), dtype) for _ in range(3)]
    exponents = arrays.full(BLOCK, -7, torch.int32)
    libdevice_order_kernel[(1,)](x, arrays.to_backend(n), *outs, exponents, BLOCK=BLOCK)
    xd = x.double().cpu()
    odd = n.bool()
    tolerance = BESSEL_FP32 if dtype_name == "fp32" else BESSEL_FP64
    for kind, out in (("j", outs[0]), ("y", outs[1])):
        expected = torch.where(odd, _bessel_reference(kind, 1)(xd), _bessel_reference(kind, 0)(xd))
        check(out, expected.to(dtype), dtype_name, tolerance)
    assert torch.equal(outs[2].cpu(), (xd * torch.pow(2.0, n.double())).to(dtype))
    assert exponents.cpu().tolist() == [math.frexp(v)[1] - 1 for v in xd.tolist()]


@kiln.jit
def libdevice_rounding_kernel(x_ptr, y_ptr, z_ptr, rz_ptr, rd_ptr, ru_ptr, OP: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    y = kl.load(y_ptr + offs)
    z = kl.load(z_ptr + offs)
    if OP == "add":
        kl.store(rz_ptr + offs, libdevice.add_rz(x, y))
        kl.store(rd_ptr + offs, libdevice.add_rd(x, y))
        kl.store(ru_ptr + offs, libdevice.add_ru(x, y))
    elif OP == "mul":
        kl.store(rz_ptr + offs, libdevice.mul_rz(x, y))
        kl.store(rd_ptr + offs, libdevice.mul_rd(x, y))
        kl.store(ru_ptr + offs, libdevice.mul_ru(x, y))
    elif OP == "div":
        kl.store(rz_ptr + offs, libdevice.div_rz(x, y))
        kl.store(rd_ptr + offs, libdevice.div_rd(x, y))
        kl.store(ru_ptr + offs, libdevice.div_ru(x, y))
    elif OP == "rcp":
        kl.store(rz_ptr + offs, libdevice.rcp_rz(x))
        kl.store(rd_ptr + offs, libdevice.rcp_rd(x))
        kl.store(ru_ptr + offs, libdevice.rcp_ru(x))
    elif OP == "sqrt":
        kl.store(rz_ptr + offs, libdevice.sqrt_rz(x))
        kl.store(rd_ptr + offs, libdevice.sqrt_rd(x))
        kl.store(ru_ptr + offs, libdevice.sqrt_ru(x))
    else:
        kl.store(rz_ptr + offs, libdevice.fma_rz(x, y, z))
        kl.store(rd_ptr + offs, libdevice.fma_rd(x, y, z))
        kl.store(ru_ptr + offs, libdevice.fma_ru(x, y, z))


@pytest.mark.parametrize("dtype_name", ["fp32", "fp64"])
@pytest.mark.parametrize("op", ["add", "mul", "div", "rcp", "sqrt", "fma"])
def test_libdevice_directed_rounding(arrays, op, dtype_name):
    """The rd and ru results bracket the exact value (exact rationals; for
    sqrt, their squares bracket x) and are equal or adjacent floats; rz is
    the one of them nearer zero."""
    from fractions import Fraction
    dtype = TORCH_DTYPES[dtype_name]
    # A width that is not a power of two gives inputs with full mantissas,
    # whose sums are seldom exact.
    x, y, z = (random_inputs(arrays, BLOCK, dtype, 0.1 if op == "sqrt" else -3, 2.9, seed=21 + k) for k in range(3))
    rz, rd, ru = (arrays.full(BLOCK, float("nan"), dtype) for _ in range(3))
    libdevice_rounding_kernel[(1,)](x, y, z, rz, rd, ru, OP=op, BLOCK=BLOCK)
    exact = {"add": lambda a, b, c: a + b, "mul": lambda a, b, c: a * b, "div": lambda a, b, c: a / b,
             "rcp": lambda a, b, c: 1 / a, "sqrt": lambda a, b, c: a, "fma": lambda a, b, c: a * b + c}[op]
    above = torch.nextafter(rd.cpu(), torch.tensor(math.inf, dtype=dtype)).tolist()
    inexact = 0
    for a, b, c, lo, hi, zero, step in zip(x.cpu().tolist(), y.cpu().tolist(), z.cpu().tolist(), rd.cpu().tolist(),
                                            ru.cpu().tolist(), rz.cpu().tolist(), above):
        value = exact(Fraction(a), Fraction(b), Fraction(c))
        low, high = (Fraction(lo) ** 2, Fraction(hi) ** 2) if op == "sqrt" else (Fraction(lo), Fraction(hi))
        assert low <= value <= high, (a, b, c, lo, hi)
        assert hi in (lo, step), (a, b, c, lo, hi)
        assert zero == (lo if lo >= 0 else hi), (a, b, c, lo, hi, zero)
        inexact += lo != hi
    assert inexact > BLOCK // 16  # the modes were exercised, not only exact results


@kiln.jit
def libdevice_norm4d_bits_kernel(x_ptr, norm_ptr, rnorm_ptr, bits_ptr, back_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    w = kl.load(x_ptr + (offs + 1) % BLOCK)
    kl.store(norm_ptr + offs, libdevice.norm4d(x, w, -x, 2 * w))
    kl.store(rnorm_ptr + offs, libdevice.rnorm4d(x, w, -x, 2 * w))
    if x.dtype == kl.float32:
        bits = libdevice.float_as_int(x)
        kl.store(bits_ptr + offs, bits.to(kl.int64))
        kl.store(back_ptr + offs, libdevice.int_as_float(bits))
    else:
        bits = libdevice.double_as_longlong(x)
        kl.store(bits_ptr + offs, bits)
        kl.store(back_ptr + offs, libdevice.longlong_as_double(bits))


@pytest.mark.parametrize("dtype_name", ["fp32", "fp64"])
def test_libdevice_norm4d_and_bits(arrays, dtype_name):
    dtype = TORCH_DTYPES[dtype_name]
    x = random_inputs(arrays, BLOCK, dtype, -4, 4, seed=31)
    norm, rnorm, back = (arrays.full(BLOCK, float("nan"), dtype) for _ in range(3))
    bits = arrays.full(BLOCK, 0, torch.int64)
    libdevice_norm4d_bits_kernel[(1,)](x, norm, rnorm, bits, back, BLOCK=BLOCK)
    xd = x.double().cpu()
    wd = torch.roll(xd, -1)
    expected = (2 * xd * xd + 5 * wd * wd).sqrt()
    check(norm, expected.to(dtype), dtype_name)
    check(rnorm, (1 / expected).to(dtype), dtype_name)
    integer = torch.int32 if dtype_name == "fp32" else torch.int64
    assert bits.cpu().tolist() == x.cpu().view(integer).tolist()
    assert torch.equal(back.cpu(), x.cpu())
