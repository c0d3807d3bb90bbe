//===- Pipeline.cpp - The CPU lowering pipeline ----------------------------===//
//
// Lists, in order, the passes that take a kernel from the kiln dialect to
// host LLVM, and registers them as a named pipeline for kiln-opt.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/Pipeline.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"
#include "kiln/Dialect/Kiln/Transforms/Pipeline.h"

#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kiln;

void cpu::buildKilnToLLVMPipeline(OpPassManager &pm,
                                  const PipelineOptions &options) {
  // Inline, simplify and hoist branch loads, as the GPU does, so that both
  // backends run the same program.
  buildTargetNeutralPipeline(pm);
  // (Loops' pointer loads may get tensor maps as on the GPU, read as the
  // TMA unit reads them: the maps' coordinates and the program's check run
  // here too.)
  if (options.pointerTensorMaps) {
    pm.addPass(createKilnTensorMapPointerLoads());
    pm.addPass(createKilnExpandTensorMapLoads());
  }
  // The CPU has no TMA unit: descriptors made in the kernel read through
  // their pointers.
  KilnHoistTensorMapsOptions tensorMaps;
  tensorMaps.hoist = false;
  pm.addPass(createKilnHoistTensorMaps(tensorMaps));
  // No 8-bit float arithmetic: fp8 dots multiply f16 operands, and f32
  // rounds to fp8 with integer ops.
  pm.addPass(createKilnDecodeFloat8Dots());
  pm.addPass(createKilnExpandFloat8Rounding());
  // Element-wise kernels run chunk by chunk, so that a chunk's vectors fit
  // in registers; then a program is one host thread whose blocks (or
  // chunks) are LLVM vectors.
  KilnStripMineOptions stripMine;
  stripMine.chunkSize = options.chunkSize;
  pm.addPass(createKilnStripMine(stripMine));
  pm.addPass(createCanonicalizerPass());
  ConvertKilnToLLVMCPUOptions lowering;
  lowering.checked = options.checked;
  lowering.vectorGathers = options.vectorGathers;
  lowering.vectorScatters = options.vectorScatters;
  pm.addPass(createConvertKilnToLLVMCPU(lowering));
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void cpu::registerPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "kiln-cpu-to-llvm", "Lower a kiln kernel to host LLVM (CPU backend)",
      buildKilnToLLVMPipeline);
}
