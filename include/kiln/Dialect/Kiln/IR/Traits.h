//===- Traits.h - Traits shared with later dialects -------------*- C++ -*-===//
//
// Op traits that the target-neutral analyses read, so that they understand
// ops of later dialects (kiln_gpu) without depending on them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_TRAITS_H
#define KILN_DIALECT_KILN_IR_TRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace mlir::OpTrait::kiln {

/// The result holds, at every index, the value the first operand holds
/// there; only the elements' placement (layout) may differ. Value analyses
/// look through such ops.
template <typename ConcreteType>
class SameElementValues : public TraitBase<ConcreteType, SameElementValues> {};

} // namespace mlir::OpTrait::kiln

#endif // KILN_DIALECT_KILN_IR_TRAITS_H
