//===- Passes.h - Transformations of kiln_gpu -------------------*- C++ -*-===//
//
// Declares the layout-choosing passes of the kiln_gpu dialect.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILNGPU_TRANSFORMS_PASSES_H
#define KILN_DIALECT_KILNGPU_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class ModuleOp;
namespace kiln::gpu {

#define GEN_PASS_DECL
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"

} // namespace kiln::gpu
} // namespace mlir

#endif // KILN_DIALECT_KILNGPU_TRANSFORMS_PASSES_H
