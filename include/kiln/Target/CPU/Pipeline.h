//===- Pipeline.h - The CPU lowering pipeline -------------------*- C++ -*-===//
//
// The registered pass pipeline that takes a kernel from the kiln dialect to
// host LLVM for the CPU backend. The JIT runs exactly this, and kiln-opt
// runs it by name: kiln-opt --kiln-cpu-to-llvm='checked=true'.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CPU_PIPELINE_H
#define KILN_TARGET_CPU_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::kiln::cpu {

struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<bool> checked{*this, "checked",
                       llvm::cl::desc("bounds-check every memory access"),
                       llvm::cl::init(false)};
  Option<int64_t> chunkSize{*this, "chunk-size",
                            llvm::cl::desc("elements per chunk of element-wise kernels"),
                            llvm::cl::init(128)};
  Option<bool> vectorGathers{
      *this, "vector-gathers",
      llvm::cl::desc("the target has 32/64-bit gather instructions (AVX2)"),
      llvm::cl::init(true)};
  Option<bool> pointerTensorMaps{
      *this, "pointer-tensor-maps",
      llvm::cl::desc("give loops' loads through pointers to rows of a parameter tensor "
                     "maps, as the NVIDIA pipeline's option does, and read them as the "
                     "TMA unit would (kiln-expand-tensor-map-loads)"),
      llvm::cl::init(false)};
  Option<bool> vectorScatters{
      *this, "vector-scatters",
      llvm::cl::desc("the target has 32/64-bit scatter instructions (AVX-512)"),
      llvm::cl::init(true)};
};

/// kiln -> LLVM dialect for the host: inline and simplify, then lower.
void buildKilnToLLVMPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Registers the pipeline as kiln-cpu-to-llvm.
void registerPipelines();

} // namespace mlir::kiln::cpu

#endif // KILN_TARGET_CPU_PIPELINE_H
