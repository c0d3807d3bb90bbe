//===- Pipeline.cpp - The NVIDIA lowering pipelines ------------------------===//
//
// Lists, in order, the passes that take a kernel from the kiln dialect to
// the LLVM + NVVM dialects, and registers them as named pipelines so that
// kiln-opt reproduces exactly what the JIT runs.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVIDIA/Pipeline.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"
#include "kiln/Dialect/Kiln/Transforms/Pipeline.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"
#include "kiln/Target/NVIDIA/TensorCores.h"

#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kiln;

void nvidia::buildKilnToKilnGPUPipeline(OpPassManager &pm,
                                        const PipelineOptions &options) {
  // Inline, simplify and hoist branch loads, as every target does.
  buildTargetNeutralPipeline(pm);
  // Descriptors made in the kernel from its arguments get tensor maps that
  // the launcher encodes, where the TMA unit may copy their loads...
  KilnHoistTensorMapsOptions tensorMaps;
  // (The TMA unit's copies go into wgmma's slots: sm_90a, as hasWarpgroupMma.)
  tensorMaps.hoist = options.target == "sm_90a" && !options.checked && options.tensorMapParameters;
  // (Loops' loads through pointers to rows of a parameter may get maps too,
  // the loop versioned on whether the program's rows fit them.)
  if (tensorMaps.hoist && options.pointerTensorMaps)
    pm.addPass(createKilnTensorMapPointerLoads());
  pm.addPass(createKilnHoistTensorMaps(tensorMaps));
  // ...histograms become one-hot blocks and a sum, which get layouts as any
  // other block...
  pm.addPass(createKilnExpandHistograms());
  // ...and before sm_90, which rounds f32 to fp8 in one instruction, so
  // does f32 -> fp8 rounding...
  if (!nvidia::hasFloat8Conversions(nvidia::getComputeCapability(options.target)))
    pm.addPass(createKilnExpandFloat8Rounding());
  // ...then every block gets a layout over the CTA's threads...
  ConvertKilnToKilnGPUOptions layoutOptions;
  layoutOptions.numWarps = options.numWarps;
  layoutOptions.target = options.target;
  pm.addPass(createConvertKilnToKilnGPU(layoutOptions));
  // ...then the layouts of accessed blocks are chosen for wide, coalesced
  // memory instructions.
  pm.addPass(gpu::createKilnGPUCoalesce());
  // ...and blocks that change shape get the layouts that make expand_dims
  // and broadcast free (the originals they replace die in canonicalize).
  pm.addPass(gpu::createKilnGPUMatchShapeLayouts());
  // ...and dots the tensor cores can compute get their accumulator layout.
  pm.addPass(gpu::createKilnGPUAccelerateMatmul());
  // ...and what is computed from a dot stays in its layout.
  pm.addPass(gpu::createKilnGPUForwardLayouts());
  // (Its recomputed blocks repeat ones that are left: the loop passes
  // below match the ops of one value.)
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Checked mode checks each thread's loads: they stay loads, neither
  // copied by cp.async or the TMA unit nor moved an iteration ahead
  // (whatever num_stages a loop asks for).
  if (!options.checked) {
    // ...and loops copy their dot operands into shared memory several
    // iterations ahead (sm_80 and later)...
    gpu::KilnGPUPipelineLoadsOptions pipelineOptions;
    pipelineOptions.numStages = options.numStages;
    pm.addPass(gpu::createKilnGPUPipelineLoads(pipelineOptions));
  }
  // (A loop versioned for tensor maps keeps the version that reads through
  // them only where the TMA unit copies its blocks, and the maps of
  // descriptors made in the kernel that no TMA copy reads are no
  // parameters, which the launcher would compute every launch.)
  pm.addPass(gpu::createKilnGPUDropUnreadTensorMaps());
  if (!options.checked) {
    // ...or, where they cannot, load them an iteration ahead.
    gpu::KilnGPUPrefetchLoadsOptions prefetchOptions;
    prefetchOptions.numStages = options.numStages;
    pm.addPass(gpu::createKilnGPUPrefetchLoads(prefetchOptions));
    // ...and, on sm_90a, run the second of two chained dots an iteration
    // late, during the next softmax...
    pm.addPass(gpu::createKilnGPUOverlapDots());
    // ...and, on sm_90a, keep one wgmma group in flight across iterations.
    gpu::KilnGPUAsyncDotsOptions asyncOptions;
    asyncOptions.numStages = options.numStages;
    pm.addPass(gpu::createKilnGPUAsyncDots(asyncOptions));
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // ...and, last (a later canonicalization could rebuild a dot after the
  // release of the slot it reads), a loop that asks for it gets a producer
  // warpgroup for its TMA copies, and two or more consumer warpgroups of
  // attention take turns at its first dot.
  if (!options.checked) {
    pm.addPass(gpu::createKilnGPUWarpSpecialize());
    // (The consumers' loop of attention, rotated as above.)
    pm.addPass(gpu::createKilnGPUOverlapDots());
    pm.addPass(gpu::createKilnGPUPingPong());
    // A TMA loop that no producer feeds: its warps release the slots on
    // mbarriers instead of meeting at a CTA barrier every iteration.
    pm.addPass(gpu::createKilnGPUReleaseTmaSlots());
  }
  // Finally a block's loads issue back to back, each conversion of what
  // they loaded moved down to where it is used.
  pm.addPass(gpu::createKilnGPUSinkLoadCasts());
}

void nvidia::buildKilnGPUToNVVMPipeline(OpPassManager &pm,
                                        const PipelineOptions &options) {
  // Shared memory by liveness, while loops still delimit where the
  // pipeline slots are live...
  pm.addPass(createKilnGPUAllocateSharedMemory());
  // ...then every op per thread...
  ConvertKilnGPUToNVVMOptions llvmOptions;
  llvmOptions.target = options.target;
  llvmOptions.maxnreg = options.maxnreg;
  llvmOptions.checked = options.checked;
  pm.addPass(createConvertKilnGPUToNVVM(llvmOptions));
  // ...and the barriers that the code around them makes needless go.
  pm.addPass(createKilnNVVMEraseNeedlessBarriers());
  // ...and in a warp-specialized kernel the rest are the consumer warps'.
  pm.addPass(createKilnNVVMNameConsumerBarriers());
  // NVVM ops without an LLVM intrinsic (bar.arrive) become their PTX.
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Kernel source lines become `.loc` directives in the PTX (as nvcc's
  // -lineinfo does): profilers show source lines, and ptxas errors can be
  // traced back to the kernel's file:line:col.
  LLVM::DIScopeForLLVMFuncOpPassOptions debugInfo;
  debugInfo.emissionKind = LLVM::DIEmissionKind::DebugDirectivesOnly;
  pm.addPass(LLVM::createDIScopeForLLVMFuncOpPass(debugInfo));
}

void nvidia::registerPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "kiln-nvidia-to-kiln-gpu",
      "Lower a kiln kernel to kiln_gpu with coalesced layouts (NVIDIA)",
      buildKilnToKilnGPUPipeline);
  PassPipelineRegistration<PipelineOptions>(
      "kiln-nvidia-to-llvm",
      "Lower a kiln_gpu kernel to the LLVM and NVVM dialects (NVIDIA)",
      buildKilnGPUToNVVMPipeline);
  PassPipelineRegistration<PipelineOptions>(
      "kiln-nvidia-to-llvm-all",
      "Lower a kiln kernel all the way to the LLVM and NVVM dialects (NVIDIA)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        buildKilnToKilnGPUPipeline(pm, options);
        buildKilnGPUToNVVMPipeline(pm, options);
      });
}
