//===- WrittenArguments.h - Kernel arguments a kernel may write -*- C++ -*-===//
//
// Which pointer arguments of a kernel the kernel may write memory through
// (with a store or an atomic), found by following each written pointer back
// to the arguments it may derive from. The runtime uses it to refuse a
// read-only array (a read-only numpy view, a memory-mapped file) for an
// argument the kernel writes, before launching, while still accepting one
// for an argument that is only read.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ANALYSIS_WRITTENARGUMENTS_H
#define KILN_ANALYSIS_WRITTENARGUMENTS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::kiln {

/// The indices, in increasing order, of the arguments of `kernel` (a
/// function of `module`, whose private functions it may call) that the
/// kernel may write through. Conservative: a written pointer whose origin
/// cannot be followed (loaded from memory, made from an integer, carried by
/// a region the analysis does not know) counts as every pointer argument.
llvm::SmallVector<unsigned> writtenKernelArguments(ModuleOp module, Operation *kernel);

} // namespace mlir::kiln

#endif // KILN_ANALYSIS_WRITTENARGUMENTS_H
