//===- KilnGPUDialect.td - The kiln_gpu dialect ------------*- tablegen -*-===//
//
// kiln_gpu is the kiln dialect with layouts: the same ops and values, but
// every block carries an encoding that says which thread of which warp holds
// which element. Lowering to LLVM reads these layouts to emit per-thread
// code.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GPU_DIALECT
#define KILN_GPU_DIALECT

include "mlir/IR/OpBase.td"

def KilnGPU_Dialect : Dialect {
  let name = "kiln_gpu";
  let cppNamespace = "::mlir::kiln::gpu";
  let summary = "Layouts of kiln blocks over the threads of a GPU program";
  let description = [{
    A kernel in kiln_gpu form runs as one cooperative thread array (CTA) of
    `kiln_gpu.num_warps` warps of `kiln_gpu.threads_per_warp` threads (module
    attributes), on the chip `kiln_gpu.target` names (a `#kiln_gpu.target`). Each block-typed value carries a layout encoding that maps
    its elements onto those threads.
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Module attribute names.
    static constexpr ::llvm::StringLiteral getNumWarpsAttrName() { return "kiln_gpu.num_warps"; }
    static constexpr ::llvm::StringLiteral getThreadsPerWarpAttrName() { return "kiln_gpu.threads_per_warp"; }
    static constexpr ::llvm::StringLiteral getTargetAttrName() { return "kiln_gpu.target"; }
    /// Bytes of dynamic shared memory the lowered kernel needs (scratch and
    /// pipeline slots), set by kiln-gpu-allocate-shared-memory.
    static constexpr ::llvm::StringLiteral getSharedAttrName() { return "kiln_gpu.shared"; }
    /// Where the pipeline slots start in shared memory (bytes), set by
    /// kiln-gpu-allocate-shared-memory when the kernel has slots.
    static constexpr ::llvm::StringLiteral getPipelineOffsetAttrName() { return "kiln_gpu.pipeline_offset"; }
    /// The discardable attribute of an asynchronous wgmma dot: the half of
    /// the scratch its operand tiles use (set by the loop passes, read by
    /// the lowering).
    static constexpr ::llvm::StringLiteral getWgmmaBufferAttrName() { return "kiln_gpu.wgmma_buffer"; }
    /// Warps a warp-specialized kernel launches beyond `kiln_gpu.num_warps`
    /// (its kiln_gpu.producer's), set by convert-kiln-gpu-to-nvvm.
    static constexpr ::llvm::StringLiteral getProducerWarpsAttrName() { return "kiln_gpu.producer_warps"; }
  }];
}

#endif // KILN_GPU_DIALECT
