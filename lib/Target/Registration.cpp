//===- Registration.cpp - Dialects, passes and pipelines of Kiln -----------===//
//
// Registers every dialect a Kiln kernel may contain at any stage (with their
// LLVM IR translations and inliner interfaces), Kiln's passes, the upstream
// passes its pipelines use, and the named pipelines.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/Registration.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"
#include "kiln/Dialect/Kiln/Transforms/Pipeline.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"
#include "kiln/Target/CPU/Pipeline.h"
#include "kiln/Target/NVIDIA/Pipeline.h"

#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

void mlir::kiln::registerAllDialects(DialectRegistry &registry) {
  registry.insert<KilnDialect, gpu::KilnGPUDialect, arith::ArithDialect,
                  math::MathDialect, scf::SCFDialect, cf::ControlFlowDialect,
                  func::FuncDialect, LLVM::LLVMDialect, NVVM::NVVMDialect>();
  func::registerInlinerExtension(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

void mlir::kiln::registerAllPasses() {
  registerKilnConversionPasses();
  registerKilnPasses();
  gpu::registerKilnGPUPasses();
  registerTransformsPasses();
  // Registered from its factory: its generated registration lives in the
  // heavy all-conversions header.
  registerPass([] { return createReconcileUnrealizedCastsPass(); });
  registerTargetNeutralPipeline();
  nvidia::registerPipelines();
  cpu::registerPipelines();
}
