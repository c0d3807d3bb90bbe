//===- VectorUtils.h - LLVM vector helpers for Kiln's lowerings -*- C++ -*-===//
//
// Small builders shared by the GPU and CPU lowerings, which both represent
// the elements of a block (per thread, or per program) as an LLVM vector.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_LLVMCOMMON_VECTORUTILS_H
#define KILN_CONVERSION_LLVMCOMMON_VECTORUTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::kiln {

/// An i32 LLVM constant.
Value createI32Constant(OpBuilder &builder, Location loc, int64_t value);

/// A vector of `type` with every lane equal to `scalar`.
Value splatVector(OpBuilder &builder, Location loc, VectorType type, Value scalar);

/// Splits a value into its scalar elements (one for a scalar).
SmallVector<Value> unpackElements(OpBuilder &builder, Location loc, Value value);

/// Builds a value of `type` (a vector, or a scalar for one element).
Value packElements(OpBuilder &builder, Location loc, Type type,
                   ArrayRef<Value> elements);

} // namespace mlir::kiln

#endif // KILN_CONVERSION_LLVMCOMMON_VECTORUTILS_H
