//===- Pipeline.cpp - The target-neutral start of every pipeline -----------===//
//
// The passes that the NVIDIA and CPU pipelines both start with, in one
// place, so that the two backends run the same program.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/Transforms/Pipeline.h"

#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kiln;

void mlir::kiln::buildTargetNeutralPipeline(OpPassManager &pm) {
  // Calls to other jit functions are inlined: kernels are small, and GPU
  // layouts are assigned over the whole kernel.
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Matrix products written as broadcast products summed over K are dots.
  pm.addPass(createKilnMulSumToDot());
  // A branch's loads start before it where that is harmless, so that
  // their latency overlaps the condition's.
  pm.addPass(createKilnHoistBranchLoads());
  // Masks that are all true in most iterations of a loop (attention's
  // causal mask) are applied only in the others.
  pm.addPass(createKilnGuardLoopMasks());
  pm.addPass(createCanonicalizerPass());
}

void mlir::kiln::registerTargetNeutralPipeline() {
  PassPipelineRegistration<>(
      "kiln-target-neutral",
      "Inline, simplify, make broadcast products summed over K dots, hoist "
      "branch loads and guard loop masks: the "
      "start of every target's pipeline",
      buildTargetNeutralPipeline);
}
