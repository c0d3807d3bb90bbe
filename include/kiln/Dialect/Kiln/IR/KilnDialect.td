//===- KilnDialect.td - The kiln dialect -------------------*- tablegen -*-===//
//
// The kiln dialect is Kiln's block-level, hardware-neutral IR: values are
// ranked tensors ("blocks") of scalars or of !kiln.ptr, and each op describes
// what one program instance of the grid computes on whole blocks. Upstream
// arith, math, scf, cf and func supply everything that is not block-specific.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT
#define KILN_DIALECT

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::mlir::kiln";
  let summary = "Block-level operations of Kiln kernels";
  let description = [{
    A kiln kernel is a `func.func` that one program instance of a launch grid
    runs. Its values are scalars or ranked tensors (blocks) whose shapes are
    static powers of two; block elements are integers, floats or `!kiln.ptr`.
    The dialect holds the operations that have no upstream equivalent: grid
    queries, index ranges, shape changes, pointer arithmetic and masked
    memory access.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::func::FuncDialect",
  ];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
}

#endif // KILN_DIALECT
