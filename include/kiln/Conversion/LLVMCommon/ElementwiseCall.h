//===- ElementwiseCall.h - Element-wise calls of scalar functions -*- C++ -*-===//
//
// Both Kiln lowerings hold a block as an LLVM vector; a scalar function
// (a libdevice or libm routine, or an NVVM intrinsic) applies to it one
// element at a time. These helpers declare such functions and emit the
// per-element calls, and lower kiln.extern_elementwise with them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_LLVMCOMMON_ELEMENTWISECALL_H
#define KILN_CONVERSION_LLVMCOMMON_ELEMENTWISECALL_H

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {

/// Calls the scalar function `symbol` on each element of `operands` (LLVM
/// values: scalars, or vectors of one length) and returns the results as a
/// value of `resultType`. Declares `symbol` in the enclosing module when it
/// is not declared yet; fails with a diagnostic on `op` if it is declared
/// with another type.
FailureOr<Value> createElementwiseCall(OpBuilder &builder, Operation *op,
                                       StringRef symbol, ValueRange operands,
                                       Type resultType);

/// `value` (a float scalar or vector) converted to `element`, by fpext or
/// fptrunc; unchanged when it already has that element type.
Value convertFloatElements(OpBuilder &builder, Location loc, Value value,
                           Type element);

/// How one element-wise op lowers to calls of a scalar function: `f32` for
/// f32 elements (and f16/bf16, computed in f32 and rounded back), `f64`
/// for f64 elements; an empty name leaves that type to other patterns.
/// `scaleByLog2e` multiplies the first f32 operand by log2(e) first (exp
/// through a base-2 exponential).
struct ScalarFunction {
  StringRef op; // operation name, e.g. "math.exp"
  StringRef f32;
  StringRef f64;
  bool scaleByLog2e = false;
};

/// Adds one pattern per entry of `functions`, with `benefit` (above the
/// upstream math -> LLVM patterns' to take precedence over them).
void populateMathToCallPatterns(const LLVMTypeConverter &converter,
                                RewritePatternSet &patterns,
                                ArrayRef<ScalarFunction> functions,
                                PatternBenefit benefit);

/// Adds the lowering of kiln.extern_elementwise: one call of its symbol per
/// element.
void populateExternElementwiseToLLVMPatterns(const LLVMTypeConverter &converter,
                                             RewritePatternSet &patterns);

} // namespace mlir::kiln

#endif // KILN_CONVERSION_LLVMCOMMON_ELEMENTWISECALL_H
