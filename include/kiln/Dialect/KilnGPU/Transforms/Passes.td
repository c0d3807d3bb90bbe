//===- Passes.td - Transformations of kiln_gpu -------------*- tablegen -*-===//
//
// Passes that choose and refine the layouts of kiln_gpu blocks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GPU_TRANSFORMS_PASSES
#define KILN_GPU_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def KilnGPUCoalesce : Pass<"kiln-gpu-coalesce", "mlir::ModuleOp"> {
  let summary = "Choose layouts so that global memory accesses are coalesced and vectorized";
  let description = [{
    Uses the axis-info analysis (contiguity, divisibility, constancy) of each
    load's and store's pointers to find how many consecutive elements one
    thread can access in a single instruction (at most 16 bytes, and no more
    than the pointer alignment proves). Every block of that shape is given a
    blocked layout holding that many contiguous elements per thread, so that
    consecutive threads access consecutive 16-byte chunks.

    Before (f32 pointers known contiguous and 16-byte aligned):
    ```mlir
    #blocked = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
    %x = kiln.load %p : tensor<1024x!kiln.ptr<f32>, #blocked> -> tensor<1024xf32, #blocked>
    ```
    After:
    ```mlir
    #blocked4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
    %x = kiln.load %p : tensor<1024x!kiln.ptr<f32>, #blocked4> -> tensor<1024xf32, #blocked4>
    ```
  }];
}

#endif // KILN_GPU_TRANSFORMS_PASSES
