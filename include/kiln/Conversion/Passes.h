//===- Passes.h - Conversion passes of Kiln ---------------------*- C++ -*-===//
//
// Declares the passes that lower kiln -> kiln_gpu -> LLVM/NVVM.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_PASSES_H
#define KILN_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class ModuleOp;
namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Conversion/Passes.h.inc"

} // namespace kiln
} // namespace mlir

#endif // KILN_CONVERSION_PASSES_H
