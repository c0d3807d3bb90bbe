//===- Pipeline.h - The NVIDIA lowering pipelines ---------------*- C++ -*-===//
//
// The registered pass pipelines that take a kernel from the kiln dialect to
// kiln_gpu and from kiln_gpu to LLVM + NVVM. The JIT runs exactly these, and
// `kiln-opt` runs them by name:
//   kiln-opt --kiln-nvidia-to-kiln-gpu='num-warps=4 target=sm_90a'
//   kiln-opt --kiln-nvidia-to-llvm='target=sm_90a'
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_NVIDIA_PIPELINE_H
#define KILN_TARGET_NVIDIA_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::kiln::nvidia {

struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("target chip, e.g. sm_90a or sm_80"),
                             llvm::cl::init("sm_90a")};
  Option<int> numWarps{*this, "num-warps",
                       llvm::cl::desc("warps per program (CTA)"),
                       llvm::cl::init(4)};
  Option<int> numStages{*this, "num-stages",
                        llvm::cl::desc("software pipelining depth of loops"),
                        llvm::cl::init(3)};
  Option<int> maxnreg{*this, "maxnreg",
                      llvm::cl::desc("registers per thread that ptxas may use "
                                     "(Triton's maxnreg); 0: no limit"),
                      llvm::cl::init(0)};
  Option<bool> checked{*this, "checked",
                       llvm::cl::desc("bounds-check every load, store and atomic "
                                      "(checked mode)"),
                       llvm::cl::init(false)};
  Option<bool> tensorMapParameters{
      *this, "tensor-map-parameters",
      llvm::cl::desc("make the tensor maps of descriptors made in the kernel from its "
                     "arguments kernel parameters, which the launcher encodes "
                     "(false: ahead-of-time code, which has no such launcher)"),
      llvm::cl::init(true)};
  Option<bool> pointerTensorMaps{
      *this, "pointer-tensor-maps",
      llvm::cl::desc("give loops' loads through pointers to rows of a parameter TMA "
                     "tensor maps, the loop versioned on a check in the program "
                     "(kiln-tensor-map-pointer-loads; needs tensor-map-parameters)"),
      llvm::cl::init(true)};
};

/// kiln -> kiln_gpu: inline and simplify, assign layouts, coalesce.
void buildKilnToKilnGPUPipeline(OpPassManager &pm, const PipelineOptions &options);

/// kiln_gpu -> LLVM + NVVM dialects.
void buildKilnGPUToNVVMPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Registers both pipelines (and their composition, kiln-nvidia-to-llvm-all).
void registerPipelines();

} // namespace mlir::kiln::nvidia

#endif // KILN_TARGET_NVIDIA_PIPELINE_H
