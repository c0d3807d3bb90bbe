//===- AtomicOpToLLVM.h - CPU lowering of atomics and hints -----*- C++ -*-===//
//
// Pattern population entry points for the CPU lowering of kiln.atomic_rmw,
// kiln.atomic_cas, kiln.axis_hint, kiln.assume, kiln.debug_barrier,
// kiln.print and kiln.assert.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CONVERSION_KILNTOLLVMCPU_ATOMICOPTOLLVM_H
#define KILN_LIB_CONVERSION_KILNTOLLVMCPU_ATOMICOPTOLLVM_H

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {

/// Adds the CPU lowerings of the atomic ops (a loop over the active lanes,
/// one LLVM atomicrmw or cmpxchg each) and of the hint and debug ops that
/// lower to nothing on the host.
/// In `checked` mode atomics are bounds-checked like loads and stores.
void populateAtomicAndHintOpToLLVMCPUPatterns(const LLVMTypeConverter &converter,
                                              RewritePatternSet &patterns,
                                              bool checked);

/// Checked mode: compares each lane of `ptrs` (a vector of pointers to
/// `elementBytes`-byte elements) with the buffer of the kernel parameter the
/// access `op` derives from, reports the first active lane outside it, and
/// returns `mask` (a vector of i1) without such lanes. Returns `mask` as it
/// is when the access has no site (its buffer is unknown).
Value checkAccessBounds(Operation *op, OpBuilder &builder, Value ptrs, Value mask,
                        unsigned elementBytes);

/// Adds the CPU lowerings of kiln.print and kiln.assert (calls into the CPU
/// runtime, once per element).
void populateDebugOpToLLVMCPUPatterns(const LLVMTypeConverter &converter,
                                      RewritePatternSet &patterns);

} // namespace mlir::kiln

#endif // KILN_LIB_CONVERSION_KILNTOLLVMCPU_ATOMICOPTOLLVM_H
