//===- Passes.td - Transformations of the kiln dialect -----*- tablegen -*-===//
//
// Hardware-neutral rewrites of kiln kernels, used by the targets' pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRANSFORMS_PASSES
#define KILN_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def KilnStripMine : Pass<"kiln-strip-mine", "mlir::ModuleOp"> {
  let summary = "Split an element-wise kernel into a loop over chunks of its blocks";
  let description = [{
    When every block of a kernel is 1-D with the same length N, and every op
    that touches blocks works element by element (ranges, splats, constants,
    arith and math, addptr, load, store), the program's result does not
    depend on how its N elements are grouped. This pass then runs the
    kernel's body once per chunk of `chunk-size` elements in an `scf.for`,
    with blocks of the chunk's length: on a CPU, a chunk fits in registers
    where a whole block would spill. Kernels that do anything else (other
    shapes, reductions, block-carrying control flow, scalar stores) are left
    as they are.

    Before (`chunk-size=128`):
    ```mlir
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %v = kiln.load %p : tensor<1024x!kiln.ptr<f32>> -> tensor<1024xf32>
    ```
    After:
    ```mlir
    scf.for %c = %c0 to %c1024 step %c128 : i32 {
      %r0 = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
      %r = arith.addi %r0, (splat %c) : tensor<128xi32>
      %v = kiln.load %p : tensor<128x!kiln.ptr<f32>> -> tensor<128xf32>
    }
    ```
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"128",
           "elements per chunk (a power of two)">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

#endif // KILN_TRANSFORMS_PASSES
