//===- ShapeOpToLLVM.cpp - CPU lowering of the shape ops -------------------===//
//
// A block is the vector of its elements in row-major order, so reshape,
// trans, join, split, cat and flip are each one shufflevector per result,
// its mask the op's element map (getElementSources) evaluated at every
// result element. kiln.gather reads at run-time indices: the source goes to
// a stack slot and the result is one masked gather from it.
//
//===----------------------------------------------------------------------===//

#include "ShapeOpToLLVM.h"

#include "kiln/Conversion/LLVMCommon/VectorUtils.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The row-major index, into the op's operands, of the element each result
/// element of `shape` takes.
SmallVector<int32_t> evaluateSource(const ElementSource &source,
                                    ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides = getRowMajorStrides(shape);
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  SmallVector<int32_t> indices;
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = source.offset;
    for (size_t d = 0; d < shape.size(); ++d)
      index += source.coefficients[d] * ((i / strides[d]) % shape[d]);
    indices.push_back(int32_t(index));
  }
  return indices;
}

/// reshape, trans, join, split, cat, flip: a shuffle of the operands (two
/// operands of one type are the shuffle's two vectors).
template <typename OpTy>
struct PermutationLowering : public ConvertOpToLLVMPattern<OpTy> {
  using ConvertOpToLLVMPattern<OpTy>::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<SmallVector<ElementSource>> sources = getElementSources(op);
    if (!sources)
      return failure();
    ValueRange operands = adaptor.getOperands();
    Value first = operands[0];
    Value second = operands.size() > 1 ? operands[1] : operands[0];
    SmallVector<Value> results;
    for (auto [source, result] : llvm::zip(*sources, op->getResults())) {
      auto type = cast<RankedTensorType>(result.getType());
      results.push_back(LLVM::ShuffleVectorOp::create(
          rewriter, op.getLoc(), first, second,
          evaluateSource(source, type.getShape())));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// The source in a stack slot (released after the read, so that a gather in
/// a loop does not grow the stack), then one masked gather at the clamped
/// indices.
struct GatherLowering : public ConvertOpToLLVMPattern<GatherOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    RankedTensorType srcType = op.getSrc().getType();
    int64_t lanes = op.getType().getNumElements();
    int64_t axis = op.getAxis();
    ElementSource source = (*getElementSources(op))[0];

    // Element index = static part + clamp(index, 0, n - 1) * stride.
    auto laneType = VectorType::get({lanes}, rewriter.getI32Type());
    Value index = adaptor.getIndex();
    unsigned width = cast<IntegerType>(op.getIndex().getType().getElementType()).getWidth();
    if (width > 32)
      index = LLVM::TruncOp::create(rewriter, loc, laneType, index);
    else if (width < 32)
      index = LLVM::SExtOp::create(rewriter, loc, laneType, index);
    auto splat = [&](int64_t value) -> Value {
      return LLVM::ConstantOp::create(
          rewriter, loc, laneType,
          SplatElementsAttr::get(laneType, rewriter.getI32IntegerAttr(value)));
    };
    index = LLVM::SMaxOp::create(rewriter, loc, index, splat(0));
    index = LLVM::SMinOp::create(rewriter, loc, index,
                                 splat(srcType.getDimSize(axis) - 1));
    int64_t stride = getRowMajorStrides(srcType.getShape())[axis];
    Value staticPart = LLVM::ConstantOp::create(
        rewriter, loc, laneType,
        DenseElementsAttr::get(
            laneType, ArrayRef<int32_t>(evaluateSource(source, op.getType().getShape()))));
    Value offsets = LLVM::AddOp::create(
        rewriter, loc, staticPart,
        LLVM::MulOp::create(rewriter, loc, index, splat(stride)));

    // i1 vectors are bit-packed in memory: go through bytes.
    Value src = adaptor.getSrc();
    Type element = cast<VectorType>(src.getType()).getElementType();
    bool isBool = element.isInteger(1);
    Type slotElement = isBool ? rewriter.getI8Type() : element;
    int64_t srcLanes = srcType.getNumElements();
    if (isBool)
      src = LLVM::ZExtOp::create(rewriter, loc,
                                 VectorType::get({srcLanes}, slotElement), src);

    auto ptrType = LLVM::LLVMPointerType::get(context);
    Value stack = LLVM::StackSaveOp::create(rewriter, loc, ptrType);
    Value slot = LLVM::AllocaOp::create(
        rewriter, loc, ptrType, slotElement,
        LLVM::ConstantOp::create(rewriter, loc, rewriter.getI64Type(),
                                 rewriter.getI64IntegerAttr(srcLanes)),
        /*alignment=*/16);
    // An explicit alignment: a vector's natural one can exceed the slot's.
    LLVM::StoreOp::create(rewriter, loc, src, slot, /*alignment=*/16);
    auto ptrsType = VectorType::get({lanes}, ptrType);
    Value ptrs = LLVM::GEPOp::create(rewriter, loc, ptrsType, slotElement, slot,
                                     ValueRange{offsets});
    auto resultType = VectorType::get({lanes}, slotElement);
    auto maskType = VectorType::get({lanes}, rewriter.getI1Type());
    Value all = LLVM::ConstantOp::create(rewriter, loc, maskType,
                                         SplatElementsAttr::get(maskType, true));
    Value passthru = LLVM::PoisonOp::create(rewriter, loc, resultType);
    unsigned alignment = isa<LLVM::LLVMPointerType>(slotElement)
                             ? 8
                             : std::max(1u, slotElement.getIntOrFloatBitWidth() / 8);
    Value gathered = LLVM::masked_gather::create(rewriter, loc, resultType, ptrs,
                                                 all, ValueRange{passthru},
                                                 alignment);
    LLVM::StackRestoreOp::create(rewriter, loc, stack);
    if (isBool)
      gathered = LLVM::TruncOp::create(
          rewriter, loc, VectorType::get({lanes}, element), gathered);
    rewriter.replaceOp(op, gathered);
    return success();
  }
};

} // namespace

void mlir::kiln::populateShapeOpToLLVMCPUPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<PermutationLowering<ReshapeOp>, PermutationLowering<TransOp>,
               PermutationLowering<JoinOp>, PermutationLowering<SplitOp>,
               PermutationLowering<CatOp>, PermutationLowering<FlipOp>,
               GatherLowering>(converter);
}
