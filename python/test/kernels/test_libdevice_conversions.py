"""libdevice's conversions with a rounding mode (double2float_rz,
float2int_rd, ll2float_ru, ...), sub_rn/rz/rd/ru, llrint/llround and the bit
manipulations (hiloint2double, double2hiint, uint_as_float, ...), on every
backend present: compared with exact references (Python integers and
fractions) on random inputs that include ties, limits, infinities and NaN.
The CPU backend computes them from kernel operations; the GPU calls
libdevice."""

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl
from kiln.errors import CompilationError
from kiln.language.extra import libdevice

N = 512
MODES = ("rn", "rz", "rd", "ru")


@kiln.jit
def unary_kernel(x_ptr, out_ptr, FN: kl.constexpr, N: kl.constexpr):
    offs = kl.arange(0, N)
    kl.store(out_ptr + offs, getattr(libdevice, FN)(kl.load(x_ptr + offs)))


@kiln.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, FN: kl.constexpr, N: kl.constexpr):
    offs = kl.arange(0, N)
    kl.store(out_ptr + offs, getattr(libdevice, FN)(kl.load(x_ptr + offs), kl.load(y_ptr + offs)))


def _floats(np_dtype, seed):
    """Random floats of every magnitude, with ties (k + 0.5), values near the
    integer limits, infinities and NaN."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(N) * 10.0 ** rng.integers(-3, 22, N)
    values[:40] = rng.integers(-20, 20, 40) + 0.5
    values[40:60] = [2.0 ** 31, -2.0 ** 31, 2.0 ** 31 - 1, 2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, -1.0, -0.5, 0.5,
                     1.5, 2.5, -2.5, 4294967295.0, 1e30, -1e30, math.inf, -math.inf, math.nan, 0.0]
    return values.astype(np_dtype)


def _as_torch(arrays, values):
    return arrays.to_backend(torch.from_numpy(np.ascontiguousarray(values)))


def _run(arrays, fn, inputs, out_dtype, **options):
    out = arrays.to_backend(torch.zeros(N, dtype=out_dtype))
    kernel = unary_kernel if len(inputs) == 1 else binary_kernel
    kernel[(1,)](*[_as_torch(arrays, v) for v in inputs], out, FN=fn, N=N, **options)
    return out.cpu().numpy()


def _directed(nearest, exact, mode):
    """The `mode` rounding of the rational `exact`, from its correct
    round-to-nearest `nearest` (a numpy float)."""
    if mode == "rn" or exact is None or math.isnan(nearest):
        return nearest
    toward = {"rd": -math.inf, "ru": math.inf, "rz": 0.0}[mode]
    value = Fraction(float(nearest)) if math.isfinite(nearest) else None
    greater = value > exact if value is not None else nearest > 0
    less = value < exact if value is not None else nearest < 0
    step = {"rd": greater, "ru": less, "rz": greater if exact >= 0 else less}[mode]
    return np.nextafter(nearest, type(nearest)(toward)) if step else nearest


def _assert_same_floats(out, expected):
    """Equal bit for bit (so -0.0 is not 0.0), except that any NaN matches any NaN."""
    ints = np.int32 if expected.dtype == np.float32 else np.int64
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(out), nan)
    np.testing.assert_array_equal(out[~nan].view(ints), expected[~nan].view(ints))


def _exact(value):
    return Fraction(float(value)) if math.isfinite(value) else None


@pytest.mark.parametrize("ftz", [None, False], ids=["default", "no-ftz"])
@pytest.mark.parametrize("mode", MODES)
def test_double2float(arrays, mode, ftz):
    """On the GPU, with `enable_reflect_ftz` on (the default, as in Triton),
    libdevice flushes an f32 result below 2**-126 to a zero of its sign;
    without it, and on the CPU, the result is the exact rounding."""
    x = _floats(np.float64, seed=1)
    x[60:80] = np.float64(np.float32(3.4e38)) * (1 + np.arange(20) * 1e-9)  # around FLT_MAX
    x[80:100] = 1e-42 * np.arange(1, 21) / 3.0  # fp32 subnormals
    x[100:110] = -x[80:90]
    out = _run(arrays, f"double2float_{mode}", [x], torch.float32, enable_reflect_ftz=ftz)
    expected = np.array([_directed(np.float32(v), _exact(v), mode) for v in x], dtype=np.float32)
    if arrays.backend == "cuda" and ftz is None:
        subnormal = (expected != 0) & (np.abs(expected) < np.finfo(np.float32).tiny)
        expected[subnormal] = np.copysign(np.float32(0), expected[subnormal])
    _assert_same_floats(out, expected)


def _saturated(value, bits, signed):
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return hi if value > 0 else lo
    return min(max(int(value), lo), hi)


_ROUND = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}
_INTS = {"int": (32, True), "uint": (32, False), "ll": (64, True), "ull": (64, False)}


@pytest.mark.parametrize("source", ["float", "double"])
@pytest.mark.parametrize("target", list(_INTS))
@pytest.mark.parametrize("mode", MODES)
def test_float_to_int(arrays, source, target, mode):
    bits, signed = _INTS[target]
    x = _floats(np.float32 if source == "float" else np.float64, seed=2 + bits)
    out_dtype = torch.int32 if bits == 32 else torch.int64
    out = _run(arrays, f"{source}2{target}_{mode}", [x], out_dtype)
    # Unsigned results come back as the signed type of the same bits, as Triton declares them.
    expected = [_saturated(float(_ROUND[mode](np.float64(v))), bits, signed) for v in x]
    expected = np.array([v - 2 ** bits if v >= 2 ** (bits - 1) else v for v in expected],
                        dtype=np.int32 if bits == 32 else np.int64)
    np.testing.assert_array_equal(out, expected)


def _ints(bits, signed, seed):
    rng = np.random.default_rng(seed)
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
    values = [int(v) for v in rng.integers(lo, hi, N, dtype=np.int64 if signed or bits == 32 else np.uint64,
                                           endpoint=True)]
    values[:8] = [lo, hi, 0, 1, 2 ** 24 + 1, 2 ** 53 + 1 if bits == 64 else 2 ** 25 + 3, hi - 1, lo + 1]
    for i in range(8, 40):  # small magnitudes, some exact
        values[i] = int(rng.integers(-(2 ** 26) if signed else 0, 2 ** 26))
    return values


@pytest.mark.parametrize("source", list(_INTS))
@pytest.mark.parametrize("target", ["float", "double"])
@pytest.mark.parametrize("mode", MODES)
def test_int_to_float(arrays, source, target, mode):
    bits, signed = _INTS[source]
    if target == "double" and bits == 32 and mode != "rn":
        pytest.skip("libdevice has only int2double_rn and uint2double_rn (the conversion is exact)")
    values = _ints(bits, signed, seed=3 + bits)
    np_float = np.float32 if target == "float" else np.float64
    # Passed as the signed type of the same bits; the kernel reinterprets them.
    storage = np.array([v - 2 ** bits if v >= 2 ** (bits - 1) else v for v in values],
                       dtype=np.int32 if bits == 32 else np.int64)
    tensor = _as_torch(arrays, storage)
    if not signed:
        tensor = kiln.reinterpret(tensor, kl.uint32 if bits == 32 else kl.uint64)
    out = arrays.to_backend(torch.zeros(N, dtype=torch.float32 if target == "float" else torch.float64))
    unary_kernel[(1,)](tensor, out, FN=f"{source}2{target}_{mode}", N=N)
    # numpy converts an integer with one correct rounding.
    nearest = [np.array([v], dtype=np.uint64 if not signed else np.int64).astype(np_float)[0] for v in values]
    expected = np.array([_directed(n, Fraction(v), mode) for n, v in zip(nearest, values)], dtype=np_float)
    _assert_same_floats(out.cpu().numpy(), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", MODES)
def test_sub(arrays, dtype, mode):
    x, y = _floats(dtype, seed=4), _floats(dtype, seed=5)[::-1].copy()
    y[100:110] = x[100:110]  # exact zeros: -0.0 when rounding down, as IEEE says
    x[110], y[110], x[111], y[111] = -0.0, 0.0, 0.0, 0.0
    out = _run(arrays, f"sub_{mode}", [x, y], torch.float32 if dtype == np.float32 else torch.float64)
    with np.errstate(all="ignore"):
        nearest = x - y
    expected = np.array([_directed(n, _exact(a) - _exact(b) if math.isfinite(a) and math.isfinite(b) else None,
                                   mode) for n, a, b in zip(nearest, x, y)], dtype=dtype)
    exact_zero = (x == y) & np.isfinite(x) & ~((x == 0) & np.signbit(x) & ~np.signbit(y))
    expected[exact_zero] = -0.0 if mode == "rd" else 0.0
    _assert_same_floats(out, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", ["llrint", "llround"])
def test_llrint_llround(arrays, dtype, fn):
    x = _floats(dtype, seed=6)
    out = _run(arrays, fn, [x], torch.int64)

    def half_away(v):
        if not math.isfinite(v):
            return v
        q = Fraction(float(v))
        return float(math.floor(abs(q) + Fraction(1, 2)) * (1 if q >= 0 else -1))

    rounded = [float(np.rint(np.float64(v))) if fn == "llrint" else half_away(float(v)) for v in x]
    np.testing.assert_array_equal(out, np.array([_saturated(v, 64, True) for v in rounded], dtype=np.int64))


def test_bit_manipulations(arrays):
    rng = np.random.default_rng(7)
    hi = rng.integers(-2 ** 31, 2 ** 31, N, dtype=np.int64).astype(np.int32)
    lo = rng.integers(-2 ** 31, 2 ** 31, N, dtype=np.int64).astype(np.int32)
    bits = (hi.astype(np.int64) << 32) | (lo.astype(np.int64) & 0xFFFFFFFF)
    doubles = _run(arrays, "hiloint2double", [hi, lo], torch.float64)
    np.testing.assert_array_equal(doubles.view(np.int64), bits)
    as_double = bits.view(np.float64)
    np.testing.assert_array_equal(_run(arrays, "double2hiint", [as_double], torch.int32), hi)
    np.testing.assert_array_equal(_run(arrays, "double2loint", [as_double], torch.int32), lo)
    floats = _floats(np.float32, seed=8)
    np.testing.assert_array_equal(_run(arrays, "float_as_uint", [floats], torch.int32), floats.view(np.int32))
    out = arrays.to_backend(torch.zeros(N, dtype=torch.float32))
    unary_kernel[(1,)](kiln.reinterpret(_as_torch(arrays, lo), kl.uint32), out, FN="uint_as_float", N=N)
    np.testing.assert_array_equal(out.cpu().numpy().view(np.int32), lo)


@pytest.mark.parametrize("fn", ["rsqrt_rn", "rcp64h"])
def test_gpu_only_functions_are_a_clear_error_on_the_cpu(fn):
    dtype = "fp32" if fn == "rsqrt_rn" else "fp64"
    with pytest.raises(CompilationError, match=f"libdevice.{fn} runs on NVIDIA GPUs only"):
        kiln.compile(unary_kernel, {"x_ptr": "*" + dtype, "out_ptr": "*" + dtype}, {"FN": fn, "N": 16},
                     target="cpu")
    # The GPU links libdevice's version.
    ptx = kiln.compile(unary_kernel, {"x_ptr": "*" + dtype, "out_ptr": "*" + dtype}, {"FN": fn, "N": 16},
                       target="sm_90a").asm["ptx"]
    assert "__nv_" not in ptx or ".func" in ptx
