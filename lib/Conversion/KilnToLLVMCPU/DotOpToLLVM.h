//===- DotOpToLLVM.h - CPU lowering of kiln.dot -----------------*- C++ -*-===//
//
// Pattern population entry point for the CPU lowering of kiln.dot.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CONVERSION_KILNTOLLVMCPU_DOTOPTOLLVM_H
#define KILN_LIB_CONVERSION_KILNTOLLVMCPU_DOTOPTOLLVM_H

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {

/// Adds the CPU lowering of kiln.dot: the operands go to stack slots and a
/// loop over the rows of the result and the inner dimension accumulates
/// one row at a time with vector multiply-adds.
void populateDotOpToLLVMCPUPatterns(const LLVMTypeConverter &converter,
                                    RewritePatternSet &patterns);

} // namespace mlir::kiln

#endif // KILN_LIB_CONVERSION_KILNTOLLVMCPU_DOTOPTOLLVM_H
