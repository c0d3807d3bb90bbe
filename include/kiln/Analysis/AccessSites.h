//===- AccessSites.h - The kernel parameter behind each access --*- C++ -*-===//
//
// Checked mode bounds-checks every load, store and atomic against the memory
// of the kernel parameter its address derives from. Which parameter that is
// does not depend on the target, so both the CPU and the NVIDIA lowerings
// ask this analysis, on the kiln (or kiln_gpu) IR before their conversion.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ANALYSIS_ACCESSSITES_H
#define KILN_ANALYSIS_ACCESSSITES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::kiln {

/// One load, store or atomic whose address derives from a single pointer
/// parameter of its kernel.
struct AccessSite {
  Operation *op;
  /// The kernel argument (its index in the function's arguments).
  unsigned parameter;
  /// Whether the access writes (a store or an atomic).
  bool writes;
  /// Bytes of one element in memory (an i1 takes one byte).
  unsigned elementBytes;
  /// The kernel source position, `file:line:col`, or "<unknown>".
  std::string location;
};

/// The kernel source position of `loc` (its first file location),
/// `file:line:col`, or "<unknown>".
std::string describeLocation(Location loc);

/// The argument index of the kernel pointer parameter that `ptr` (a pointer
/// or a block of pointers) derives from, through pointer arithmetic, shape
/// and layout changes, selects, and values carried by `scf.for` loops and
/// yielded by `scf.if`s; -1 when it cannot be told (a pointer loaded from
/// memory, made from an integer, received by a helper function, or that
/// may come from two different parameters).
int64_t traceKernelParameter(Value ptr);

/// Every load, store and atomic of the module's kernels (functions with the
/// `kiln.kernel` attribute) whose parameter is known, in walk order: the
/// order checked mode numbers them in.
SmallVector<AccessSite> collectAccessSites(ModuleOp module);

} // namespace mlir::kiln

#endif // KILN_ANALYSIS_ACCESSSITES_H
