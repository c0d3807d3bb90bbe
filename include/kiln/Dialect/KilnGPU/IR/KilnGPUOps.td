//===- KilnGPUOps.td - Operations of the kiln_gpu dialect --*- tablegen -*-===//
//
// Operations that only exist once blocks have layouts.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GPU_OPS
#define KILN_GPU_OPS

include "kiln/Dialect/KilnGPU/IR/KilnGPUAttrs.td"
include "kiln/Dialect/Kiln/IR/KilnTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def KilnGPU_ConvertLayoutOp : Op<KilnGPU_Dialect, "convert_layout",
    [Pure, SameOperandsAndResultShape, SameOperandsAndResultElementType]> {
  let summary = "Move a block's elements to another layout";
  let description = [{
    Returns the same block under another layout encoding. Lowering may need
    to exchange elements between threads (through shared memory); a
    conversion between identical layouts folds away.

    Example:
    ```mlir
    %b = kiln_gpu.convert_layout %a : tensor<1024xf32, #blocked1> -> tensor<1024xf32, #blocked4>
    ```
  }];
  let arguments = (ins Kiln_Block:$src);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
}

def KilnGPU_AsyncDotWaitOp : Op<KilnGPU_Dialect, "async_dot_wait",
    [AllTypesMatch<["src", "result"]>, MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait for the asynchronous dots that write a block";
  let description = [{
    Returns `src` once every asynchronous tensor-core operation the thread
    has issued has completed: the accumulator of a loop of asynchronous
    dots (see kiln-gpu-async-dots) is only read through this op. Lowers to
    `wgmma.wait_group 0`, which takes and returns the block's registers.

    Example:
    ```mlir
    %done = kiln_gpu.async_dot_wait %acc : tensor<128x128xf32, #wgmma>
    ```
  }];
  let arguments = (ins Kiln_Block:$src);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$src attr-dict `:` type($src)";
}

#endif // KILN_GPU_OPS
