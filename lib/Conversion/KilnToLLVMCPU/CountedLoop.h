//===- CountedLoop.h - Loops emitted inside CPU lowering patterns -*- C++ -*-===//
//
// A counted loop built from LLVM branches, for lowerings whose work grows
// with the block (kiln.dot, gathers of narrow elements) and whose IR should
// not: the structured control flow is already gone when they run.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CONVERSION_KILNTOLLVMCPU_COUNTEDLOOP_H
#define KILN_LIB_CONVERSION_KILNTOLLVMCPU_COUNTEDLOOP_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::kiln {

/// An i64 LLVM constant.
Value createI64Constant(OpBuilder &builder, Location loc, int64_t value);

/// Emits `for (i = 0; i < count; ++i) carried = body(i, carried)`, with `i`
/// an i64 and `carried` starting as `inits`, at the rewriter's insertion
/// point, and leaves the insertion point after the loop. The body may emit
/// loops of its own. Returns the carried values after the last iteration.
SmallVector<Value>
emitCountedLoop(ConversionPatternRewriter &rewriter, Location loc, int64_t count,
                ValueRange inits,
                function_ref<SmallVector<Value>(Value, ValueRange)> body);

} // namespace mlir::kiln

#endif // KILN_LIB_CONVERSION_KILNTOLLVMCPU_COUNTEDLOOP_H
