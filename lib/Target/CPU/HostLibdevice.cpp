//===- HostLibdevice.cpp - Host versions of libdevice functions ------------===//
//
// The C library provides most of libdevice's functions under other names;
// the rest (rsqrt, erfinv, the classification tests, the correctly rounded
// operations) are a line each. libdevice's fast approximations run the
// precise host functions: they are no slower on the host, and more accurate
// than the GPU's, which their documented error bounds allow.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/HostLibdevice.h"

#include <cfenv>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <math.h> // j0, j1, y0, y1, jn, yn: POSIX, not in <cmath>

using namespace mlir::kiln::cpu;

namespace {

/// erf^-1: a starting point from Giles' single-precision approximation
/// ("Approximating the erfinv function", 2010), then Newton steps on erf,
/// which converge to double precision in two or three steps.
double erfinv(double x) {
  if (std::isnan(x) || x < -1.0 || x > 1.0)
    return std::numeric_limits<double>::quiet_NaN();
  if (x == 1.0 || x == -1.0)
    return std::copysign(std::numeric_limits<double>::infinity(), x);
  double w = -std::log((1.0 - x) * (1.0 + x));
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double y = p * x;
  const double twoOverSqrtPi = 1.1283791670955126;
  for (int i = 0; i < 3; ++i) {
    double slope = twoOverSqrtPi * std::exp(-y * y);
    if (slope == 0.0)
      break;
    y -= (std::erf(y) - x) / slope;
  }
  return y;
}

/// erfc^-1: erf^-1(1 - x) as a start where 1 - x keeps x's precision, the
/// tail's leading term sqrt(-log x) elsewhere, then Newton steps on
/// log(erfc(y)) = log(x), which stay accurate where erfc underflows the
/// plain difference.
double erfcinv(double x) {
  if (std::isnan(x) || x < 0.0 || x > 2.0)
    return std::numeric_limits<double>::quiet_NaN();
  if (x == 0.0)
    return std::numeric_limits<double>::infinity();
  if (x == 2.0)
    return -std::numeric_limits<double>::infinity();
  if (x > 1.0)
    return -erfcinv(2.0 - x); // 2 - x is exact for x in [1, 2].
  double y = x > 1e-3 ? erfinv(1.0 - x) : std::sqrt(-std::log(x));
  const double twoOverSqrtPi = 1.1283791670955126;
  for (int i = 0; i < 50; ++i) {
    double tail = std::erfc(y);
    if (tail == 0.0)
      break;
    double step = (std::log(tail) - std::log(x)) * tail /
                  (twoOverSqrtPi * std::exp(-y * y));
    y += step;
    if (std::fabs(step) <= 1e-17 * std::fabs(y))
      break;
  }
  return y;
}

/// exp(x^2) * erfc(x): the continued fraction of erfc's tail above 2, where
/// the product would overflow or lose erfc's digits; elsewhere the product,
/// with x^2's rounding error carried into the exponential.
double erfcx(double x) {
  if (std::isnan(x))
    return x;
  const double oneOverSqrtPi = 0.5641895835477563;
  if (x > 2.0) {
    if (x > 1e8)
      return oneOverSqrtPi / x;
    // erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))),
    // evaluated from the back; 60 levels converge for x > 2.
    double fraction = x;
    for (int k = 60; k >= 1; --k)
      fraction = x + (0.5 * k) / fraction;
    return oneOverSqrtPi / fraction;
  }
  double square = x * x;
  double error = std::fma(x, x, -square);
  return std::exp(square) * (1.0 + error) * std::erfc(x);
}

/// Phi(x) = erfc(-x / sqrt 2) / 2, with the rounding error of -x / sqrt 2
/// corrected to first order: erfc's slope magnifies it in the lower tail.
double normcdf(double x) {
  if (std::isnan(x))
    return x;
  const double c = 0.70710678118654757;       // 1/sqrt(2), rounded
  const double cLow = -4.8336466567264567e-17; // 1/sqrt(2) - c
  double t = -x * c;
  double tLow = -(std::fma(x, c, -(x * c)) + x * cLow);
  const double twoOverSqrtPi = 1.1283791670955126;
  return 0.5 * (std::erfc(t) - twoOverSqrtPi * std::exp(-t * t) * tLow);
}

/// sin(pi x) and cos(pi x), with x reduced exactly to [-1/4, 1/4] around a
/// multiple of 1/2 first, so that large arguments and exact zeros stay
/// exact.
double piReduced(double x, bool cosine) {
  if (!std::isfinite(x))
    return std::numeric_limits<double>::quiet_NaN();
  double r = std::fmod(x, 2.0);   // exact, in (-2, 2)
  double n = std::nearbyint(2.0 * r); // r = n/2 + f
  double f = r - 0.5 * n;         // exact, in [-1/4, 1/4]
  int quadrant = (int(n) % 4 + 4 + (cosine ? 1 : 0)) % 4;
  const double pi = 3.14159265358979323846;
  double s = std::sin(pi * f), c = std::cos(pi * f);
  double result = quadrant == 0 ? s : quadrant == 1 ? c : quadrant == 2 ? -s : -c;
  if (result == 0.0 && !cosine)
    return std::copysign(0.0, x); // sin(pi n) keeps x's sign, as sin does.
  if (result == 0.0)
    return 0.0;
  return result;
}

/// The modified Bessel functions I0 and I1 (order `order` 0 or 1) for
/// x >= 0: their power series, whose terms are all positive, below 30; the
/// asymptotic expansion above, scaled by exp(x/2) twice so that it reaches
/// the largest finite values.
double besselI(int order, double x) {
  if (std::isnan(x))
    return x;
  if (x < 30.0) {
    double quarterSquare = 0.25 * x * x;
    double term = order == 0 ? 1.0 : 0.5 * x, sum = term;
    for (int k = 1; k < 500; ++k) {
      term *= quarterSquare / (double(k) * double(k + order));
      sum += term;
      if (term <= 1e-17 * sum)
        break;
    }
    return sum;
  }
  double mu = 4.0 * order * order;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 60; ++k) {
    double next = -term * (mu - (2.0 * k - 1.0) * (2.0 * k - 1.0)) / (k * 8.0 * x);
    if (std::fabs(next) >= std::fabs(term))
      break;
    term = next;
    sum += term;
    if (std::fabs(term) <= 1e-17 * std::fabs(sum))
      break;
  }
  const double twoPi = 6.283185307179586;
  double half = std::exp(0.5 * x);
  return half * (half * sum / std::sqrt(twoPi * x));
}

/// The same in T, computed in double (more than float's precision).
template <typename T> T besselI0Of(T x) { return T(besselI(0, std::fabs(double(x)))); }
template <typename T> T besselI1Of(T x) {
  return T(std::copysign(besselI(1, std::fabs(double(x))), double(x)));
}
template <typename T> T erfcinvOf(T x) { return T(erfcinv(double(x))); }
template <typename T> T erfcxOf(T x) { return T(erfcx(double(x))); }
template <typename T> T normcdfOf(T x) { return T(normcdf(double(x))); }
/// Phi^-1(p) = -sqrt(2) erfc^-1(2p); 2p is exact.
template <typename T> T normcdfinvOf(T x) {
  return T(-1.4142135623730951 * erfcinv(2.0 * double(x)));
}
template <typename T> T sinpiOf(T x) { return T(piReduced(double(x), false)); }
template <typename T> T cospiOf(T x) { return T(piReduced(double(x), true)); }
/// glibc's Bessel functions of the first and second kind, in double for
/// the f32 variants too.
template <typename T> T j0Of(T x) { return T(::j0(double(x))); }
template <typename T> T j1Of(T x) { return T(::j1(double(x))); }
template <typename T> T y0Of(T x) { return T(::y0(double(x))); }
template <typename T> T y1Of(T x) { return T(::y1(double(x))); }
template <typename T> T reciprocalCbrt(T x) { return T(1.0 / std::cbrt(double(x))); }
template <typename T> T reciprocalHypot(T x, T y) {
  return T(1.0 / std::hypot(double(x), double(y)));
}
template <typename T> T saturate(T x) {
  // NaN becomes 0, as the PTX .sat modifier does.
  return x > T(1) ? T(1) : x > T(0) ? x : T(0);
}

/// The bits of `x` read as a `To`: libdevice's __nv_*_as_* functions.
template <typename To, typename From> To reinterpretBits(From x) {
  static_assert(sizeof(To) == sizeof(From), "a reinterpretation keeps the size");
  To result;
  std::memcpy(&result, &x, sizeof result);
  return result;
}

/// __byte_perm: byte i of the result is the byte of the eight in y:x that
/// the low three bits of selector's nibble i pick.
int32_t bytePermute(int32_t x, int32_t y, int32_t selector) {
  uint64_t bytes = uint64_t(uint32_t(x)) | (uint64_t(uint32_t(y)) << 32);
  uint32_t result = 0;
  for (int i = 0; i < 4; ++i) {
    unsigned pick = (uint32_t(selector) >> (4 * i)) & 7u;
    result |= uint32_t((bytes >> (8 * pick)) & 0xffu) << (8 * i);
  }
  return int32_t(result);
}

/// libdevice's operations in a directed rounding mode: the host's own
/// operation under fesetround, which the pragma keeps the compiler from
/// moving or folding across the mode change. The caller's mode is restored.
template <typename T, typename Op> T inRoundingMode(int mode, Op op) {
#pragma STDC FENV_ACCESS ON
  int saved = std::fegetround();
  std::fesetround(mode);
  T result = op();
  std::fesetround(saved);
  return result;
}

#define KILN_ROUNDED_OPS(suffix, mode)                                         \
  {"__nv_fadd_" suffix, reinterpret_cast<void *>(+[](float x, float y) -> float { \
     return inRoundingMode<float>(mode, [&] { return x + y; });                \
   })},                                                                        \
  {"__nv_dadd_" suffix, reinterpret_cast<void *>(+[](double x, double y) -> double { \
     return inRoundingMode<double>(mode, [&] { return x + y; });               \
   })},                                                                        \
  {"__nv_fmul_" suffix, reinterpret_cast<void *>(+[](float x, float y) -> float { \
     return inRoundingMode<float>(mode, [&] { return x * y; });                \
   })},                                                                        \
  {"__nv_dmul_" suffix, reinterpret_cast<void *>(+[](double x, double y) -> double { \
     return inRoundingMode<double>(mode, [&] { return x * y; });               \
   })},                                                                        \
  {"__nv_fdiv_" suffix, reinterpret_cast<void *>(+[](float x, float y) -> float { \
     return inRoundingMode<float>(mode, [&] { return x / y; });                \
   })},                                                                        \
  {"__nv_ddiv_" suffix, reinterpret_cast<void *>(+[](double x, double y) -> double { \
     return inRoundingMode<double>(mode, [&] { return x / y; });               \
   })},                                                                        \
  {"__nv_frcp_" suffix, reinterpret_cast<void *>(+[](float x) -> float {       \
     return inRoundingMode<float>(mode, [&] { return 1.0f / x; });             \
   })},                                                                        \
  {"__nv_drcp_" suffix, reinterpret_cast<void *>(+[](double x) -> double {     \
     return inRoundingMode<double>(mode, [&] { return 1.0 / x; });             \
   })},                                                                        \
  {"__nv_fsqrt_" suffix, reinterpret_cast<void *>(+[](float x) -> float {      \
     return inRoundingMode<float>(mode, [&] { return std::sqrt(x); });         \
   })},                                                                        \
  {"__nv_dsqrt_" suffix, reinterpret_cast<void *>(+[](double x) -> double {    \
     return inRoundingMode<double>(mode, [&] { return std::sqrt(x); });        \
   })},                                                                        \
  {"__nv_fmaf_" suffix,                                                        \
   reinterpret_cast<void *>(+[](float x, float y, float z) -> float {          \
     return inRoundingMode<float>(mode, [&] { return std::fma(x, y, z); });    \
   })},                                                                        \
  {"__nv_fma_" suffix,                                                         \
   reinterpret_cast<void *>(+[](double x, double y, double z) -> double {      \
     return inRoundingMode<double>(mode, [&] { return std::fma(x, y, z); });   \
   })}

template <typename T> T reciprocalSqrt(T x) { return T(1) / std::sqrt(x); }
template <typename T> T powerOf10(T x) { return std::pow(T(10), x); }
template <typename T> T erfinvOf(T x) { return T(erfinv(double(x))); }

} // namespace

// One entry for each of a function's f32 ("__nv_<name>f") and f64
// ("__nv_<name>") variants, given an expression in `x` (and `y`, `z`) that
// is valid for both float and double.
#define KILN_UNARY(name, expression)                                           \
  {"__nv_" name "f", reinterpret_cast<void *>(+[](float x) -> float {          \
     return expression;                                                        \
   })},                                                                        \
  {                                                                            \
    "__nv_" name, reinterpret_cast<void *>(+[](double x) -> double {           \
      return expression;                                                       \
    })                                                                         \
  }
#define KILN_BINARY(name, expression)                                          \
  {"__nv_" name "f", reinterpret_cast<void *>(+[](float x, float y) -> float { \
     return expression;                                                        \
   })},                                                                        \
  {                                                                            \
    "__nv_" name,                                                              \
        reinterpret_cast<void *>(+[](double x, double y) -> double {           \
          return expression;                                                   \
        })                                                                     \
  }
#define KILN_SINGLE(symbol, expression)                                        \
  {                                                                            \
    symbol, reinterpret_cast<void *>(+[](float x) -> float {                   \
      return expression;                                                       \
    })                                                                         \
  }
#define KILN_SINGLE_BINARY(symbol, expression)                                 \
  {                                                                            \
    symbol, reinterpret_cast<void *>(+[](float x, float y) -> float {          \
      return expression;                                                       \
    })                                                                         \
  }
#define KILN_TEST(f32Symbol, f64Symbol, expression)                            \
  {f32Symbol, reinterpret_cast<void *>(+[](float x) -> int32_t {               \
     return (expression) ? 1 : 0;                                              \
   })},                                                                        \
  {                                                                            \
    f64Symbol, reinterpret_cast<void *>(+[](double x) -> int32_t {             \
      return (expression) ? 1 : 0;                                             \
    })                                                                         \
  }

static const HostFunction kHostFunctions[] = {
    KILN_UNARY("exp", std::exp(x)),
    KILN_UNARY("exp2", std::exp2(x)),
    KILN_UNARY("exp10", powerOf10(x)),
    KILN_UNARY("expm1", std::expm1(x)),
    KILN_UNARY("log", std::log(x)),
    KILN_UNARY("log2", std::log2(x)),
    KILN_UNARY("log10", std::log10(x)),
    KILN_UNARY("log1p", std::log1p(x)),
    KILN_BINARY("pow", std::pow(x, y)),
    {"__nv_powif", reinterpret_cast<void *>(+[](float x, int32_t n) -> float {
       return float(std::pow(double(x), n));
     })},
    {"__nv_powi", reinterpret_cast<void *>(+[](double x, int32_t n) -> double {
       return std::pow(x, n);
     })},
    KILN_UNARY("sin", std::sin(x)),
    KILN_UNARY("cos", std::cos(x)),
    KILN_UNARY("tan", std::tan(x)),
    KILN_UNARY("asin", std::asin(x)),
    KILN_UNARY("acos", std::acos(x)),
    KILN_UNARY("atan", std::atan(x)),
    KILN_BINARY("atan2", std::atan2(x, y)),
    KILN_UNARY("sinh", std::sinh(x)),
    KILN_UNARY("cosh", std::cosh(x)),
    KILN_UNARY("tanh", std::tanh(x)),
    KILN_UNARY("asinh", std::asinh(x)),
    KILN_UNARY("acosh", std::acosh(x)),
    KILN_UNARY("atanh", std::atanh(x)),
    KILN_BINARY("hypot", std::hypot(x, y)),
    KILN_UNARY("erf", std::erf(x)),
    KILN_UNARY("erfc", std::erfc(x)),
    KILN_UNARY("erfinv", erfinvOf(x)),
    KILN_UNARY("lgamma", std::lgamma(x)),
    KILN_UNARY("tgamma", std::tgamma(x)),
    KILN_UNARY("sqrt", std::sqrt(x)),
    KILN_UNARY("rsqrt", reciprocalSqrt(x)),
    KILN_UNARY("cbrt", std::cbrt(x)),
    KILN_UNARY("floor", std::floor(x)),
    KILN_UNARY("ceil", std::ceil(x)),
    KILN_UNARY("trunc", std::trunc(x)),
    KILN_UNARY("round", std::round(x)),
    KILN_UNARY("rint", std::rint(x)),
    KILN_UNARY("nearbyint", std::nearbyint(x)),
    KILN_BINARY("fmod", std::fmod(x, y)),
    KILN_BINARY("remainder", std::remainder(x, y)),
    KILN_BINARY("fmin", std::fmin(x, y)),
    KILN_BINARY("fmax", std::fmax(x, y)),
    KILN_BINARY("fdim", std::fdim(x, y)),
    KILN_BINARY("copysign", std::copysign(x, y)),
    KILN_BINARY("nextafter", std::nextafter(x, y)),
    {"__nv_fmaf", reinterpret_cast<void *>(+[](float x, float y, float z) -> float {
       return std::fma(x, y, z);
     })},
    {"__nv_fma",
     reinterpret_cast<void *>(+[](double x, double y, double z) -> double {
       return std::fma(x, y, z);
     })},
    // The host rounds to nearest: these are the plain operations.
    KILN_SINGLE("__nv_fsqrt_rn", std::sqrt(x)),
    {"__nv_dsqrt_rn", reinterpret_cast<void *>(+[](double x) -> double {
       return std::sqrt(x);
     })},
    KILN_SINGLE_BINARY("__nv_fdiv_rn", x / y),
    {"__nv_ddiv_rn", reinterpret_cast<void *>(+[](double x, double y) -> double {
       return x / y;
     })},
    KILN_SINGLE("__nv_frcp_rn", 1.0f / x),
    {"__nv_drcp_rn", reinterpret_cast<void *>(+[](double x) -> double {
       return 1.0 / x;
     })},
    {"__nv_ldexpf", reinterpret_cast<void *>(+[](float x, int32_t n) -> float {
       return std::ldexp(x, n);
     })},
    {"__nv_ldexp", reinterpret_cast<void *>(+[](double x, int32_t n) -> double {
       return std::ldexp(x, n);
     })},
    {"__nv_abs", reinterpret_cast<void *>(+[](int32_t x) -> int32_t {
       // libdevice's abs wraps at INT32_MIN, as the PTX instruction does.
       return x < 0 ? int32_t(0u - uint32_t(x)) : x;
     })},
    {"__nv_llabs", reinterpret_cast<void *>(+[](int64_t x) -> int64_t {
       return x < 0 ? int64_t(0ull - uint64_t(x)) : x;
     })},
    KILN_SINGLE("__nv_fabsf", std::fabs(x)),
    {"__nv_fabs", reinterpret_cast<void *>(+[](double x) -> double {
       return std::fabs(x);
     })},
    KILN_TEST("__nv_isnanf", "__nv_isnand", std::isnan(x)),
    KILN_TEST("__nv_isinff", "__nv_isinfd", std::isinf(x)),
    KILN_TEST("__nv_signbitf", "__nv_signbitd", std::signbit(x)),
    KILN_TEST("__nv_finitef", "__nv_isfinited", std::isfinite(x)),
    KILN_UNARY("j0", j0Of(x)),
    KILN_UNARY("j1", j1Of(x)),
    KILN_UNARY("y0", y0Of(x)),
    KILN_UNARY("y1", y1Of(x)),
    {"__nv_jnf", reinterpret_cast<void *>(+[](int32_t n, float x) -> float {
       return float(::jn(n, double(x)));
     })},
    {"__nv_jn", reinterpret_cast<void *>(+[](int32_t n, double x) -> double {
       return ::jn(n, x);
     })},
    {"__nv_ynf", reinterpret_cast<void *>(+[](int32_t n, float x) -> float {
       return float(::yn(n, double(x)));
     })},
    {"__nv_yn", reinterpret_cast<void *>(+[](int32_t n, double x) -> double {
       return ::yn(n, x);
     })},
    KILN_UNARY("cyl_bessel_i0", besselI0Of(x)),
    KILN_UNARY("cyl_bessel_i1", besselI1Of(x)),
    KILN_UNARY("erfcinv", erfcinvOf(x)),
    KILN_UNARY("erfcx", erfcxOf(x)),
    KILN_UNARY("normcdf", normcdfOf(x)),
    KILN_UNARY("normcdfinv", normcdfinvOf(x)),
    KILN_UNARY("sinpi", sinpiOf(x)),
    KILN_UNARY("cospi", cospiOf(x)),
    KILN_UNARY("rcbrt", reciprocalCbrt(x)),
    KILN_BINARY("rhypot", reciprocalHypot(x, y)),
    KILN_UNARY("logb", std::logb(x)),
    {"__nv_ilogbf", reinterpret_cast<void *>(+[](float x) -> int32_t {
       return std::ilogb(x);
     })},
    {"__nv_ilogb", reinterpret_cast<void *>(+[](double x) -> int32_t {
       return std::ilogb(x);
     })},
    {"__nv_scalbnf", reinterpret_cast<void *>(+[](float x, int32_t n) -> float {
       return std::scalbn(x, n);
     })},
    {"__nv_scalbn", reinterpret_cast<void *>(+[](double x, int32_t n) -> double {
       return std::scalbn(x, n);
     })},
    {"__nv_norm3df",
     reinterpret_cast<void *>(+[](float x, float y, float z) -> float {
       return float(std::hypot(double(x), double(y), double(z)));
     })},
    {"__nv_norm3d",
     reinterpret_cast<void *>(+[](double x, double y, double z) -> double {
       return std::hypot(x, y, z);
     })},
    {"__nv_rnorm3df",
     reinterpret_cast<void *>(+[](float x, float y, float z) -> float {
       return float(1.0 / std::hypot(double(x), double(y), double(z)));
     })},
    {"__nv_rnorm3d",
     reinterpret_cast<void *>(+[](double x, double y, double z) -> double {
       return 1.0 / std::hypot(x, y, z);
     })},
    {"__nv_norm4df",
     reinterpret_cast<void *>(+[](float x, float y, float z, float w) -> float {
       return float(std::sqrt(double(x) * x + double(y) * y + double(z) * z + double(w) * w));
     })},
    {"__nv_norm4d",
     reinterpret_cast<void *>(+[](double x, double y, double z, double w) -> double {
       return std::hypot(std::hypot(x, y), std::hypot(z, w));
     })},
    {"__nv_rnorm4df",
     reinterpret_cast<void *>(+[](float x, float y, float z, float w) -> float {
       return float(1.0 / std::sqrt(double(x) * x + double(y) * y + double(z) * z + double(w) * w));
     })},
    {"__nv_rnorm4d",
     reinterpret_cast<void *>(+[](double x, double y, double z, double w) -> double {
       return 1.0 / std::hypot(std::hypot(x, y), std::hypot(z, w));
     })},
    // Reinterpretations of the bits.
    {"__nv_float_as_int", reinterpret_cast<void *>(&reinterpretBits<int32_t, float>)},
    {"__nv_int_as_float", reinterpret_cast<void *>(&reinterpretBits<float, int32_t>)},
    {"__nv_double_as_longlong", reinterpret_cast<void *>(&reinterpretBits<int64_t, double>)},
    {"__nv_longlong_as_double", reinterpret_cast<void *>(&reinterpretBits<double, int64_t>)},
    KILN_SINGLE("__nv_saturatef", saturate(x)),
    // The host rounds to nearest: these are the plain operations.
    KILN_SINGLE_BINARY("__nv_fadd_rn", x + y),
    {"__nv_dadd_rn", reinterpret_cast<void *>(+[](double x, double y) -> double {
       return x + y;
     })},
    KILN_SINGLE_BINARY("__nv_fmul_rn", x * y),
    {"__nv_dmul_rn", reinterpret_cast<void *>(+[](double x, double y) -> double {
       return x * y;
     })},
    {"__nv_fmaf_rn",
     reinterpret_cast<void *>(+[](float x, float y, float z) -> float {
       return std::fma(x, y, z);
     })},
    {"__nv_fma_rn",
     reinterpret_cast<void *>(+[](double x, double y, double z) -> double {
       return std::fma(x, y, z);
     })},
    KILN_ROUNDED_OPS("rz", FE_TOWARDZERO),
    KILN_ROUNDED_OPS("rd", FE_DOWNWARD),
    KILN_ROUNDED_OPS("ru", FE_UPWARD),
    // Integer intrinsics.
    {"__nv_popc", reinterpret_cast<void *>(+[](int32_t x) -> int32_t {
       return __builtin_popcount(uint32_t(x));
     })},
    {"__nv_popcll", reinterpret_cast<void *>(+[](int64_t x) -> int32_t {
       return __builtin_popcountll(uint64_t(x));
     })},
    {"__nv_clz", reinterpret_cast<void *>(+[](int32_t x) -> int32_t {
       return x == 0 ? 32 : __builtin_clz(uint32_t(x));
     })},
    {"__nv_clzll", reinterpret_cast<void *>(+[](int64_t x) -> int32_t {
       return x == 0 ? 64 : __builtin_clzll(uint64_t(x));
     })},
    {"__nv_ffs", reinterpret_cast<void *>(+[](int32_t x) -> int32_t {
       return __builtin_ffs(x);
     })},
    {"__nv_ffsll", reinterpret_cast<void *>(+[](int64_t x) -> int32_t {
       return __builtin_ffsll(x);
     })},
    {"__nv_brev", reinterpret_cast<void *>(+[](int32_t x) -> int32_t {
       uint32_t v = uint32_t(x), r = 0;
       for (int i = 0; i < 32; ++i, v >>= 1)
         r = (r << 1) | (v & 1u);
       return int32_t(r);
     })},
    {"__nv_brevll", reinterpret_cast<void *>(+[](int64_t x) -> int64_t {
       uint64_t v = uint64_t(x), r = 0;
       for (int i = 0; i < 64; ++i, v >>= 1)
         r = (r << 1) | (v & 1u);
       return int64_t(r);
     })},
    {"__nv_mulhi", reinterpret_cast<void *>(+[](int32_t x, int32_t y) -> int32_t {
       return int32_t((int64_t(x) * int64_t(y)) >> 32);
     })},
    {"__nv_umulhi",
     reinterpret_cast<void *>(+[](uint32_t x, uint32_t y) -> uint32_t {
       return uint32_t((uint64_t(x) * uint64_t(y)) >> 32);
     })},
    {"__nv_mul64hi", reinterpret_cast<void *>(+[](int64_t x, int64_t y) -> int64_t {
       return int64_t((__int128(x) * __int128(y)) >> 64);
     })},
    {"__nv_umul64hi",
     reinterpret_cast<void *>(+[](uint64_t x, uint64_t y) -> uint64_t {
       return uint64_t((static_cast<unsigned __int128>(x) * y) >> 64);
     })},
    {"__nv_mul24", reinterpret_cast<void *>(+[](int32_t x, int32_t y) -> int32_t {
       // The low 24 bits of each, sign-extended, then the low 32 bits of
       // the product.
       int64_t a = int32_t(uint32_t(x) << 8) >> 8, b = int32_t(uint32_t(y) << 8) >> 8;
       return int32_t(uint32_t(uint64_t(a * b)));
     })},
    {"__nv_umul24",
     reinterpret_cast<void *>(+[](uint32_t x, uint32_t y) -> uint32_t {
       return uint32_t(uint64_t(x & 0xffffffu) * uint64_t(y & 0xffffffu));
     })},
    {"__nv_hadd", reinterpret_cast<void *>(+[](int32_t x, int32_t y) -> int32_t {
       return int32_t((int64_t(x) + int64_t(y)) >> 1);
     })},
    {"__nv_uhadd",
     reinterpret_cast<void *>(+[](uint32_t x, uint32_t y) -> uint32_t {
       return uint32_t((uint64_t(x) + uint64_t(y)) >> 1);
     })},
    {"__nv_rhadd", reinterpret_cast<void *>(+[](int32_t x, int32_t y) -> int32_t {
       return int32_t((int64_t(x) + int64_t(y) + 1) >> 1);
     })},
    {"__nv_urhadd",
     reinterpret_cast<void *>(+[](uint32_t x, uint32_t y) -> uint32_t {
       return uint32_t((uint64_t(x) + uint64_t(y) + 1) >> 1);
     })},
    {"__nv_sad",
     reinterpret_cast<void *>(+[](int32_t x, int32_t y, uint32_t z) -> uint32_t {
       int64_t d = int64_t(x) - int64_t(y);
       return uint32_t(uint64_t(d < 0 ? -d : d) + z);
     })},
    {"__nv_usad",
     reinterpret_cast<void *>(+[](uint32_t x, uint32_t y, uint32_t z) -> uint32_t {
       return (x > y ? x - y : y - x) + z;
     })},
    {"__nv_byte_perm", reinterpret_cast<void *>(&bytePermute)},
    KILN_SINGLE("__nv_fast_expf", std::exp(x)),
    KILN_SINGLE("__nv_fast_exp10f", powerOf10(x)),
    KILN_SINGLE("__nv_fast_logf", std::log(x)),
    KILN_SINGLE("__nv_fast_log2f", std::log2(x)),
    KILN_SINGLE("__nv_fast_log10f", std::log10(x)),
    KILN_SINGLE("__nv_fast_sinf", std::sin(x)),
    KILN_SINGLE("__nv_fast_cosf", std::cos(x)),
    KILN_SINGLE("__nv_fast_tanf", std::tan(x)),
    KILN_SINGLE_BINARY("__nv_fast_powf", std::pow(x, y)),
    KILN_SINGLE_BINARY("__nv_fast_fdividef", x / y),
};

llvm::ArrayRef<HostFunction> mlir::kiln::cpu::getHostLibdeviceFunctions() {
  return kHostFunctions;
}
