//===- DotOp.cpp - Verifier of kiln.dot ------------------------------------===//
//
// Checks the shapes and element types a dot relates, so that a frontend
// mistake is reported at the kernel line that wrote the dot.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::kiln;

/// Whether a dot may multiply `operand` elements into `acc` elements.
static bool isSupportedDotPair(Type operand, Type acc) {
  if (operand.isInteger(8))
    return acc.isInteger(32);
  if (operand.isF16())
    return acc.isF32() || acc.isF16();
  if (operand.isBF16() || operand.isF32())
    return acc.isF32();
  if (operand.isF64())
    return acc.isF64();
  return false;
}

LogicalResult DotOp::verify() {
  auto aType = cast<RankedTensorType>(getA().getType());
  auto bType = cast<RankedTensorType>(getB().getType());
  auto cType = cast<RankedTensorType>(getC().getType());
  int64_t rank = aType.getRank();
  if (rank != 2 && rank != 3)
    return emitOpError() << "expected 2-D or 3-D operands, got rank " << rank;
  if (bType.getRank() != rank || cType.getRank() != rank)
    return emitOpError() << "expected operands and accumulator of one rank, got "
                         << aType << ", " << bType << " and " << cType;
  ArrayRef<int64_t> a = aType.getShape(), b = bType.getShape(), c = cType.getShape();
  int64_t m = rank - 2, n = rank - 1;
  if (a[n] != b[m])
    return emitOpError() << "expected the inner dimensions to agree, got "
                         << aType << " * " << bType;
  if (c[m] != a[m] || c[n] != b[n] || (rank == 3 && (a[0] != b[0] || c[0] != a[0])))
    return emitOpError() << "expected an accumulator of shape matching " << aType
                         << " * " << bType << ", got " << cType;
  if (aType.getElementType() != bType.getElementType())
    return emitOpError() << "expected operands of one element type, got "
                         << aType.getElementType() << " and " << bType.getElementType();
  if (getAFloat8().has_value() != getBFloat8().has_value())
    return emitOpError() << "expected an 8-bit float format for both operands or neither";
  if (hasFloat8Operands()) {
    if (!aType.getElementType().isInteger(8))
      return emitOpError() << "expected i8 bytes for 8-bit float operands, got "
                           << aType.getElementType();
    if (!cType.getElementType().isF32() && !cType.getElementType().isF16())
      return emitOpError() << "cannot multiply 8-bit float operands into a "
                           << cType.getElementType() << " accumulator";
  } else if (!isSupportedDotPair(aType.getElementType(), cType.getElementType()))
    return emitOpError() << "cannot multiply " << aType.getElementType()
                         << " operands into a " << cType.getElementType()
                         << " accumulator";
  if (getInputPrecision() != InputPrecision::ieee && !aType.getElementType().isF32())
    return emitOpError() << "input precision "
                         << stringifyInputPrecision(getInputPrecision())
                         << " only applies to f32 operands";
  return success();
}

bool mlir::kiln::isZeroBlock(Value value) {
  if (auto splat = value.getDefiningOp<SplatOp>())
    value = splat.getSrc();
  return matchPattern(value, m_AnyZeroFloat()) || matchPattern(value, m_Zero());
}

namespace {

/// `x + dot(a, b, 0)` becomes `dot(a, b, x)`: the tensor cores then add
/// into the accumulator (what `acc += kl.dot(a, b)` means), and a loop
/// carries it in the dot's layout.
template <typename AddOp>
struct AddIntoDot : public OpRewritePattern<AddOp> {
  using OpRewritePattern<AddOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      auto dot = add->getOperand(i).template getDefiningOp<DotOp>();
      Value other = add->getOperand(1 - i);
      if (!dot || !dot->hasOneUse() || other.getType() != dot.getType() ||
          !isZeroBlock(dot.getC()))
        continue;
      rewriter.replaceOpWithNewOp<DotOp>(add, dot.getType(), dot.getA(), dot.getB(),
                                         other, dot.getInputPrecision(),
                                         dot.getMaxNumImpreciseAcc(), dot.getAFloat8Attr(),
                                         dot.getBFloat8Attr());
      return success();
    }
    return failure();
  }
};

} // namespace

void DotOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<AddIntoDot<arith::AddFOp>, AddIntoDot<arith::AddIOp>>(context);
}
