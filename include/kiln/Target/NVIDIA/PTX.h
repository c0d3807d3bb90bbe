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

/// Translates `module` (LLVM + NVVM dialects), optimizes it at O3 and emits
/// PTX for `chip`. With `enableFpFusion` (Triton's enable_fp_fusion, on by
/// default) a multiply and an add may become one fma; without it they stay
/// two separately rounded instructions (mul.rn, add.rn), which ptxas does not
/// fuse either. Failures are reported as diagnostics on the module.
FailureOr<PTXOutput> translateToPTX(ModuleOp module, StringRef chip,
                                    bool enableFpFusion = true);

} // namespace mlir::kiln::nvidia

#endif // KILN_TARGET_NVIDIA_PTX_H
