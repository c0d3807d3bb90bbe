//===- PTX.h - LLVM IR and PTX generation for NVIDIA GPUs -------*- C++ -*-===//
//
// Translates a kernel module in the LLVM + NVVM dialects to LLVM IR,
// optimizes it, and emits PTX for a chip through LLVM's NVPTX backend.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_NVIDIA_PTX_H
#define KILN_TARGET_NVIDIA_PTX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::kiln::nvidia {

/// Text of the two last compilation stages.
struct PTXOutput {
  std::string llvmIR; // optimized LLVM IR
  std::string ptx;
};

/// Returns true if `chip` names an NVPTX processor LLVM can target (sm_NN or
/// sm_NNa); LLVM itself only warns on an unknown name.
bool isValidChip(StringRef chip);

/// The floating-point choices a kernel makes at translation, with Triton's
/// option names and defaults.
struct TranslationOptions {
  /// enable_fp_fusion: a multiply and an add may become one fma; without it
  /// they stay two separately rounded instructions (mul.rn, add.rn), which
  /// ptxas does not fuse either.
  bool enableFpFusion = true;
  /// enable_reflect_ftz: libdevice's single-precision functions (and with
  /// them exp, exp2 and rsqrt's approximations) flush denormal inputs and
  /// results to zero.
  bool flushDenormals = true;
};

/// Translates `module` (LLVM + NVVM dialects), links the libdevice
/// functions it calls, optimizes it at O3 and emits PTX for `chip`.
/// Failures are reported as diagnostics on the module.
FailureOr<PTXOutput> translateToPTX(ModuleOp module, StringRef chip,
                                    const TranslationOptions &options = {});

} // namespace mlir::kiln::nvidia

#endif // KILN_TARGET_NVIDIA_PTX_H
