//===- KilnTraits.td - Traits shared with later dialects ---*- tablegen -*-===//
//
// Op traits that the target-neutral analyses read, so that they understand
// ops of later dialects (kiln_gpu) without depending on them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRAITS
#define KILN_TRAITS

include "mlir/IR/OpBase.td"

// The result holds, at every index, the value its first operand holds there:
// only how the elements are placed (their layout) may differ. Value analyses
// (axis info) look through such ops.
def Kiln_SameElementValues : NativeOpTrait<"SameElementValues"> {
  let cppNamespace = "::mlir::OpTrait::kiln";
}

#endif // KILN_TRAITS
