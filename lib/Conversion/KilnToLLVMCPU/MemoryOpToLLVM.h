//===- MemoryOpToLLVM.h - CPU lowering of loads and stores ------*- C++ -*-===//
//
// Pattern population entry point for the CPU lowering of kiln.load and
// kiln.store, and the access plans the pass decides before converting.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CONVERSION_KILNTOLLVMCPU_MEMORYOPTOLLVM_H
#define KILN_LIB_CONVERSION_KILNTOLLVMCPU_MEMORYOPTOLLVM_H

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::kiln {

/// The attribute that numbers an access site (parameter << 16 | site) for
/// checked mode, set before conversion and removed after.
inline constexpr llvm::StringLiteral kAccessSiteAttr = "kiln_cpu.site";

/// How one load or store accesses memory, decided before conversion.
struct AccessPlan {
  /// Elements (in row-major order) in each run of consecutive addresses
  /// that one masked vector access moves from the run's first address: the
  /// whole block, each row, or 1 (a gather or scatter).
  int64_t runLength = 1;
  unsigned alignment = 1;
};

using AccessPlans = llvm::DenseMap<Operation *, AccessPlan>;

/// Adds the CPU lowerings of kiln.load and kiln.store: masked vector
/// accesses along the runs `plans` gives, masked gathers and scatters
/// otherwise (loops over the lanes where the host has no such instruction
/// for the element: see `vectorGathers` and `vectorScatters`), and in
/// `checked` mode a bounds check of every active lane.
void populateMemoryOpToLLVMCPUPatterns(const LLVMTypeConverter &converter,
                                       RewritePatternSet &patterns, const AccessPlans &plans,
                                       bool checked, bool vectorGathers, bool vectorScatters);

} // namespace mlir::kiln

#endif // KILN_LIB_CONVERSION_KILNTOLLVMCPU_MEMORYOPTOLLVM_H
