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

#include <cmath>
#include <cstdint>
#include <limits>

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
