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

def KilnDecodeFloat8Dots : Pass<"kiln-decode-fp8-dots", "mlir::ModuleOp"> {
  let summary = "Decode the 8-bit float operands of dots to f16";
  let description = [{
    A dot of 8-bit floats (`aFloat8`, `bFloat8`) becomes a dot of f16
    operands decoded from the bytes, for targets without 8-bit float tensor
    cores. f16 holds every e4m3 and e5m2 value, so the result is the same;
    the products are then summed at f16 dots' precision.

    Before:
    ```mlir
    %d = kiln.dot %a, %b, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e5m2>} : tensor<32x32xi8> * tensor<32x32xi8> -> tensor<32x32xf32>
    ```
    After:
    ```mlir
    %a32 = ... integer decode of %a ... : tensor<32x32xf32>
    %a16 = arith.truncf %a32 : tensor<32x32xf32> to tensor<32x32xf16>
    %b16 = ...
    %d = kiln.dot %a16, %b16, %c : tensor<32x32xf16> * tensor<32x32xf16> -> tensor<32x32xf32>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

#endif // KILN_TRANSFORMS_PASSES
