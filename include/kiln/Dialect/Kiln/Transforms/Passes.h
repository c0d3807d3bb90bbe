//===- Passes.h - Transformations of the kiln dialect -----------*- C++ -*-===//
//
// Declares the hardware-neutral rewrites of kiln kernels.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_TRANSFORMS_PASSES_H
#define KILN_DIALECT_KILN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class ModuleOp;
namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"

} // namespace kiln
} // namespace mlir

#endif // KILN_DIALECT_KILN_TRANSFORMS_PASSES_H
