//===- DivisionToLLVM.h - Integer division that never traps -----*- C++ -*-===//
//
// Pattern population entry point for the CPU lowering of arith.divsi,
// divui, remsi and remui.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CONVERSION_KILNTOLLVMCPU_DIVISIONTOLLVM_H
#define KILN_LIB_CONVERSION_KILNTOLLVMCPU_DIVISIONTOLLVM_H

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {

/// Adds lowerings of integer division and remainder that divide by a safe
/// divisor and select the defined results (docs/design/cpu_backend.md):
/// x / 0 is all ones, x % 0 is x, INT_MIN / -1 wraps to INT_MIN and
/// INT_MIN % -1 is 0. They take precedence over the upstream patterns,
/// whose host division instructions trap on these operands.
void populateSafeDivisionToLLVMPatterns(const LLVMTypeConverter &converter,
                                        RewritePatternSet &patterns);

} // namespace mlir::kiln

#endif // KILN_LIB_CONVERSION_KILNTOLLVMCPU_DIVISIONTOLLVM_H
