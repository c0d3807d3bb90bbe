//===- DivisionToLLVM.cpp - Integer division that never traps -------------===//
//
// The host's division instructions trap (SIGFPE on x86) on a zero divisor
// and on INT_MIN / -1, which would kill the whole Python process; a GPU
// gives a value instead. Kiln, like Triton, leaves these results undefined
// but guarantees that they do not trap, so the CPU lowering divides by 1
// where the divisor is 0 (or -1, for signed operands) and selects a fixed
// result there. Blocks and scalars alike, at every integer width.
//
//===----------------------------------------------------------------------===//

#include "DivisionToLLVM.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// `value` in every lane of `type` (an integer or a vector of integers).
Value createIntegerConstant(OpBuilder &builder, Location loc, Type type,
                            const APInt &value) {
  if (auto vector = dyn_cast<VectorType>(type))
    return LLVM::ConstantOp::create(builder, loc, type,
                                    DenseElementsAttr::get(vector, value));
  return LLVM::ConstantOp::create(builder, loc, type,
                                  builder.getIntegerAttr(type, value));
}

template <typename SourceOp, typename DivisionOp, bool isSigned, bool isRemainder>
struct SafeDivisionLowering : public ConvertOpToLLVMPattern<SourceOp> {
  using ConvertOpToLLVMPattern<SourceOp>::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(SourceOp op, typename SourceOp::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = this->getTypeConverter()->convertType(op.getType());
    if (!type || !isa<IntegerType>(getElementTypeOrSelf(type)))
      return failure();
    Location loc = op.getLoc();
    unsigned width = getElementTypeOrSelf(type).getIntOrFloatBitWidth();
    // Frozen, so that poison operands (a float converted to an integer type
    // that cannot hold it gives poison) become plain values: from poison,
    // LLVM may assume range facts that do not hold, e.g. that the zero-
    // extended result of a float-to-uint8 conversion is below 256, and then
    // divide with a 32-bit x86 idiv whose quotient overflows and traps.
    Value lhs = LLVM::FreezeOp::create(rewriter, loc, adaptor.getLhs());
    Value rhs = LLVM::FreezeOp::create(rewriter, loc, adaptor.getRhs());
    Value zero = createIntegerConstant(rewriter, loc, type, APInt(width, 0));
    Value one = createIntegerConstant(rewriter, loc, type, APInt(width, 1));
    Value allOnes = createIntegerConstant(rewriter, loc, type, APInt::getAllOnes(width));
    Value byZero = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, rhs, zero);
    // For signed operands -1 is replaced too: INT_MIN / -1 overflows, and
    // x / -1 is -x, x % -1 is 0 (what x % 1 gives) for every x.
    Value byMinusOne;
    Value unsafe = byZero;
    if (isSigned) {
      byMinusOne = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, rhs, allOnes);
      unsafe = LLVM::OrOp::create(rewriter, loc, byZero, byMinusOne);
    }
    Value divisor = LLVM::SelectOp::create(rewriter, loc, unsafe, one, rhs);
    Value result = DivisionOp::create(rewriter, loc, type, lhs, divisor);
    if (isRemainder) {
      result = LLVM::SelectOp::create(rewriter, loc, byZero, lhs, result);
    } else {
      if (isSigned) {
        Value negated = LLVM::SubOp::create(rewriter, loc, zero, lhs); // wraps
        result = LLVM::SelectOp::create(rewriter, loc, byMinusOne, negated, result);
      }
      result = LLVM::SelectOp::create(rewriter, loc, byZero, allOnes, result);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::kiln::populateSafeDivisionToLLVMPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns) {
  // Above the upstream arith lowering's benefit of 1.
  constexpr unsigned benefit = 2;
  patterns.add<SafeDivisionLowering<arith::DivSIOp, LLVM::SDivOp, true, false>,
               SafeDivisionLowering<arith::DivUIOp, LLVM::UDivOp, false, false>,
               SafeDivisionLowering<arith::RemSIOp, LLVM::SRemOp, true, true>,
               SafeDivisionLowering<arith::RemUIOp, LLVM::URemOp, false, true>>(
      converter, benefit);
}
