//===- Patterns.cpp - Lowerings shared by Kiln's LLVM conversions ----------===//
//
// Implements the target-independent parts of lowering kiln to LLVM.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "kiln/Conversion/LLVMCommon/VectorUtils.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;

Type mlir::kiln::getMemoryElementType(Type element) {
  if (element.isInteger(1))
    return IntegerType::get(element.getContext(), 8);
  return element;
}

LogicalResult mlir::kiln::convertStructuredControlFlow(ModuleOp module) {
  MLIRContext *context = module.getContext();
  RewritePatternSet patterns(context);
  populateSCFToControlFlowConversionPatterns(patterns);
  ConversionTarget target(*context);
  target.addIllegalDialect<scf::SCFDialect>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  return applyPartialConversion(module, target, std::move(patterns));
}

namespace {

struct SplatOpLowering : public ConvertOpToLLVMPattern<SplatOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(SplatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast_if_present<VectorType>(
        getTypeConverter()->convertType(op.getType()));
    if (!type)
      return rewriter.notifyMatchFailure(op, "block type has no vector form");
    rewriter.replaceOp(op, splatVector(rewriter, op.getLoc(), type, adaptor.getSrc()));
    return success();
  }
};

struct AddPtrOpLowering : public ConvertOpToLLVMPattern<AddPtrOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(AddPtrOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type resultType = getTypeConverter()->convertType(op.getType());
    Type pointee = getTypeConverter()->convertType(getPointeeType(op.getType()));
    if (!resultType || !pointee)
      return rewriter.notifyMatchFailure(op, "unconvertible type");
    rewriter.replaceOpWithNewOp<LLVM::GEPOp>(op, resultType,
                                             getMemoryElementType(pointee),
                                             adaptor.getPtr(),
                                             ValueRange{adaptor.getOffset()});
    return success();
  }
};

} // namespace

void mlir::kiln::populateSplatAndAddPtrToLLVMPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<SplatOpLowering, AddPtrOpLowering>(converter);
}
