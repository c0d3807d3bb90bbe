//===- MathToLibdevice.cpp - Math ops to libdevice and PTX approximations --===//
//
// LLVM's NVPTX backend selects few math intrinsics (sqrt, fma, floor, ceil,
// fabs, ..., which stay with the upstream lowering); llvm.exp, llvm.sin, llvm.log and the like have no PTX
// instruction and no library behind them. This table, whose patterns take
// precedence over the upstream math -> LLVM lowering, calls NVIDIA's
// libdevice (`__nv_expf`, `__nv_sin`, ...) instead, one call per element;
// the NVIDIA target links libdevice into the module before optimizing.
//
// As Triton does, f16 and bf16 compute in f32 (extended, computed, rounded
// back), and a few f32 functions use PTX's approximations, which matter for
// the speed of softmax-like kernels:
//   exp2(x)  -> __nv_exp2f x            (ex2.approx[.ftz].f32)
//   exp(x)   -> __nv_exp2f (x * log2(e))
//   rsqrt(x) -> __nv_rsqrtf x           (rsqrt.approx[.ftz].f32)
//   x / y    -> div.full.f32 x, y (within 2 ulp, as Triton's `/`; kl.div_rn
//               and fdiv(ieee_rounding=True) call __nv_fdiv_rn instead)
// The approximations go through libdevice, whose wrappers are one
// instruction each, rather than straight to the NVVM intrinsics: whether
// they flush denormals (`.ftz`) is then the kernel's enable_reflect_ftz
// option, answered in one place for every math function (Libdevice.cpp).
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/LLVMCommon/ElementwiseCall.h"

using namespace mlir;
using namespace mlir::kiln;

/// NVVM intrinsics are declared and called like any function; LLVM
/// recognizes their names.
static const ScalarFunction kLibdeviceFunctions[] = {
    // The fast paths.
    {"math.exp", "__nv_exp2f", "__nv_exp", /*scaleByLog2e=*/true},
    {"math.exp2", "__nv_exp2f", "__nv_exp2"},
    {"math.rsqrt", "__nv_rsqrtf", "__nv_rsqrt"},
    {"arith.divf", "llvm.nvvm.div.full", /*f64: IEEE division*/ ""},
    // libdevice.
    {"math.log", "__nv_logf", "__nv_log"},
    {"math.log2", "__nv_log2f", "__nv_log2"},
    {"math.log10", "__nv_log10f", "__nv_log10"},
    {"math.log1p", "__nv_log1pf", "__nv_log1p"},
    {"math.expm1", "__nv_expm1f", "__nv_expm1"},
    {"math.sin", "__nv_sinf", "__nv_sin"},
    {"math.cos", "__nv_cosf", "__nv_cos"},
    {"math.tan", "__nv_tanf", "__nv_tan"},
    {"math.asin", "__nv_asinf", "__nv_asin"},
    {"math.acos", "__nv_acosf", "__nv_acos"},
    {"math.atan", "__nv_atanf", "__nv_atan"},
    {"math.atan2", "__nv_atan2f", "__nv_atan2"},
    {"math.sinh", "__nv_sinhf", "__nv_sinh"},
    {"math.cosh", "__nv_coshf", "__nv_cosh"},
    {"math.tanh", "__nv_tanhf", "__nv_tanh"},
    {"math.asinh", "__nv_asinhf", "__nv_asinh"},
    {"math.acosh", "__nv_acoshf", "__nv_acosh"},
    {"math.atanh", "__nv_atanhf", "__nv_atanh"},
    {"math.erf", "__nv_erff", "__nv_erf"},
    {"math.erfc", "__nv_erfcf", "__nv_erfc"},
    {"math.cbrt", "__nv_cbrtf", "__nv_cbrt"},
    {"math.powf", "__nv_powf", "__nv_pow"},
};

void mlir::kiln::gpu::populateMathToLibdevicePatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns) {
  populateMathToCallPatterns(converter, patterns, kLibdeviceFunctions,
                             /*benefit=*/2);
}
