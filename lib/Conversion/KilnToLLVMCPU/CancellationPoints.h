//===- CancellationPoints.h - Interruptible kernel loops --------*- C++ -*-===//
//
// Makes the loops of CPU kernels poll the launcher's cancellation flag, so
// that an interrupted launch (Ctrl-C) stops even a program that never
// leaves its loop.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CONVERSION_KILNTOLLVMCPU_CANCELLATIONPOINTS_H
#define KILN_LIB_CONVERSION_KILNTOLLVMCPU_CANCELLATIONPOINTS_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::kiln {

/// The i32 the launcher sets to ask running programs to stop.
constexpr StringLiteral kCancelFlagSymbol = "__kiln_cpu_cancel";

/// Before structured control flow is lowered: starts the body of every
/// scf.while, and of every scf.for whose trip count is not a small
/// constant, with a volatile load of @__kiln_cpu_cancel (declared here when
/// used).
void insertCancellationLoads(ModuleOp module);

/// After it is lowered to branches: ends the block after each such load
/// with a branch to a return (of zeros) when the flag is set. A function
/// returning a type without a zero constant keeps its loads unused.
void branchOnCancellation(ModuleOp module);

} // namespace mlir::kiln

#endif // KILN_LIB_CONVERSION_KILNTOLLVMCPU_CANCELLATIONPOINTS_H
