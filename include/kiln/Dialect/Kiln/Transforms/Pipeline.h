//===- Pipeline.h - The target-neutral start of every pipeline --*- C++ -*-===//
//
// The passes every target's lowering pipeline starts with, on the kiln
// dialect and in the same order: both backends then lower the same program.
// Registered for kiln-opt as kiln-target-neutral.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_TRANSFORMS_PIPELINE_H
#define KILN_DIALECT_KILN_TRANSFORMS_PIPELINE_H

#include "mlir/Pass/PassManager.h"

namespace mlir::kiln {

/// Inline calls, drop dead functions, canonicalize, CSE, and start a
/// branch's loads before it where that is harmless.
void buildTargetNeutralPipeline(OpPassManager &pm);

/// Registers buildTargetNeutralPipeline as kiln-target-neutral.
void registerTargetNeutralPipeline();

} // namespace mlir::kiln

#endif // KILN_DIALECT_KILN_TRANSFORMS_PIPELINE_H
