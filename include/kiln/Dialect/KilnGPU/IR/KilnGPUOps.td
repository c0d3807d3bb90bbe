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

#endif // KILN_GPU_OPS
