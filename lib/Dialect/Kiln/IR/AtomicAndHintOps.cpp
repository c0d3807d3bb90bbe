//===- AtomicAndHintOps.cpp - Verifiers of atomic and hint ops -------------===//
//
// Implements the verifiers of kiln.atomic_rmw, kiln.atomic_cas and
// kiln.axis_hint: which element types each atomic kind accepts, and that
// hints claim powers of two for every dimension of their value.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kiln;

/// The element types `kind` accepts, in words, or empty if `element` is one.
static std::string checkRMWElement(RMWKind kind, Type element) {
  bool isFloat = element.isF16() || element.isBF16() || element.isF32() ||
                 element.isF64();
  bool isWideInt = element.isInteger(32) || element.isInteger(64);
  switch (kind) {
  case RMWKind::fadd:
    return isFloat ? "" : "f16, bf16, f32 or f64";
  case RMWKind::fmax:
  case RMWKind::fmin:
    return element.isF32() || element.isF64() ? "" : "f32 or f64";
  case RMWKind::xchg:
    return isWideInt || element.isF32() || element.isF64()
               ? ""
               : "a 32- or 64-bit integer or float";
  default:
    return isWideInt ? "" : "i32 or i64";
  }
}

static LogicalResult checkPointee(Operation *op, Value ptr, Type valueType) {
  Type expected = getTypeWithElement(ptr.getType(), getPointeeType(ptr.getType()));
  if (valueType != expected)
    return op->emitOpError() << "expected value of type " << expected
                             << ", got " << valueType;
  return success();
}

LogicalResult AtomicRMWOp::verify() {
  if (failed(checkPointee(*this, getPtr(), getVal().getType())))
    return failure();
  Type element = getElementTypeOrSelf(getVal().getType());
  std::string expected = checkRMWElement(getKind(), element);
  if (!expected.empty())
    return emitOpError() << "expected " << expected << " elements for '"
                         << stringifyRMWKind(getKind()) << "', got " << element;
  return success();
}

LogicalResult AtomicCASOp::verify() {
  if (failed(checkPointee(*this, getPtr(), getVal().getType())))
    return failure();
  unsigned bits = getElementTypeOrSelf(getVal().getType()).getIntOrFloatBitWidth();
  if (bits != 16 && bits != 32 && bits != 64)
    return emitOpError() << "expected 16-, 32- or 64-bit elements, got "
                         << bits << "-bit ones";
  return success();
}

LogicalResult AxisHintOp::verify() {
  int64_t rank = 1;
  if (auto tensor = dyn_cast<RankedTensorType>(getSrc().getType()))
    rank = tensor.getRank();
  for (auto [name, values] :
       {std::pair{"divisibility", getDivisibility()},
        std::pair{"contiguity", getContiguity()},
        std::pair{"constancy", getConstancy()}}) {
    if (!values)
      continue;
    if (int64_t(values->size()) != rank)
      return emitOpError() << "expected " << rank << " " << name
                           << " values, one per dimension, got "
                           << values->size();
    for (int64_t v : *values)
      if (v <= 0 || !llvm::isPowerOf2_64(uint64_t(v)))
        return emitOpError() << "expected " << name
                             << " values that are powers of two, got " << v;
  }
  return success();
}

LogicalResult PrintOp::verify() {
  if (getIsSigned().size() != getArgs().size())
    return emitOpError() << "expected one isSigned flag per operand, got "
                         << getIsSigned().size() << " for "
                         << getArgs().size() << " operands";
  return success();
}
