//===- ShapeOpToLLVM.cpp - GPU lowering of the shape ops -------------------===//
//
// kiln.reshape, trans, join, split, cat, flip and gather move elements
// between threads: an element of the result is, in general, held by another
// thread than the operand element it takes. They go through the shared
// memory scratch (see Utility.h), like kiln_gpu.convert_layout: every thread
// writes the operand elements it holds at their row-major index (the second
// operand of join and cat after the first), a barrier, then every thread
// reads, for each result element it holds, the element that the op's element
// map (getElementSources) names, computed from the element's coordinates in
// the result layout (plus, for a gather, the index it holds). Any layouts of
// operands and results work, so the layout passes need no rule for them.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// The operands of `op` that are written to the scratch: all of them, but
/// for a gather only its source.
SmallVector<Value> getMovedOperands(Operation *op) {
  if (auto gather = dyn_cast<GatherOp>(op))
    return {gather.getSrc()};
  return SmallVector<Value>(op->getOperands());
}


/// offset + sum(coefficients[d] * coords[d]), one i32 per element.
Value emitAffineIndex(OpBuilder &builder, Location loc, ArrayRef<Value> coords,
                      const ElementSource &source) {
  auto type = cast<VectorType>(coords[0].getType());
  auto constant = [&](int64_t value) -> Value {
    return LLVM::ConstantOp::create(
        builder, loc, type,
        SplatElementsAttr::get(type, builder.getI32IntegerAttr(int32_t(value))));
  };
  Value index = constant(source.offset);
  for (auto [coord, coefficient] : llvm::zip(coords, source.coefficients)) {
    if (coefficient == 0)
      continue;
    Value term = coefficient == 1
                     ? coord
                     : LLVM::MulOp::create(builder, loc, coord, constant(coefficient));
    index = LLVM::AddOp::create(builder, loc, index, term);
  }
  return index;
}

template <typename OpTy>
struct ShapeOpLowering : public ConvertOpToLLVMPattern<OpTy> {
  ShapeOpLowering(const LLVMTypeConverter &converter, LaunchShape launch)
      : ConvertOpToLLVMPattern<OpTy>(converter), launch(launch) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Operation *operation = op;
    for (Type type : operation->getOperandTypes())
      if (!getThreadLayout(cast<RankedTensorType>(type)))
        return rewriter.notifyMatchFailure(op, "expected thread layouts");
    for (Type type : operation->getResultTypes())
      if (!getThreadLayout(cast<RankedTensorType>(type)))
        return rewriter.notifyMatchFailure(op, "expected thread layouts");
    std::optional<SmallVector<ElementSource>> sources = getElementSources(op);
    if (!sources)
      return failure();
    Location loc = op.getLoc();
    SmallVector<Value> moved = getMovedOperands(op);
    auto srcType = cast<RankedTensorType>(moved[0].getType());
    Type element = this->getTypeConverter()->convertType(srcType.getElementType());
    int64_t bytes = getSharedElementBytes(srcType.getElementType());
    Value base = getScratchBase(rewriter, loc);
    auto addressOf = [&](Value index) {
      Value offset = LLVM::MulOp::create(rewriter, loc, index,
                                         createI32Constant(rewriter, loc, bytes));
      return getSharedAddress(rewriter, loc, base, offset);
    };

    // Each use of the scratch starts with a barrier: earlier readers are done.
    emitBarrier(rewriter, loc);
    for (auto [k, operand] : llvm::enumerate(moved)) {
      Value converted = adaptor.getOperands()[k];
      auto type = cast<RankedTensorType>(operand.getType());
      SmallVector<Value> coords = emitBlockCoordinates(rewriter, loc, type, launch);
      ElementSource rowMajor{getRowMajorStrides(type.getShape()),
                             int64_t(k) * type.getNumElements()};
      Value indices = emitAffineIndex(rewriter, loc, coords, rowMajor);
      for (auto [value, index] :
           llvm::zip(unpackElements(rewriter, loc, converted),
                     unpackElements(rewriter, loc, indices)))
        storeShared(rewriter, loc, value, addressOf(index));
    }
    emitBarrier(rewriter, loc);

    SmallVector<Value> results;
    for (auto [source, result] : llvm::zip(*sources, operation->getResults())) {
      auto type = cast<RankedTensorType>(result.getType());
      SmallVector<Value> coords = emitBlockCoordinates(rewriter, loc, type, launch);
      Value indices = emitAffineIndex(rewriter, loc, coords, source);
      if constexpr (std::is_same_v<OpTy, GatherOp>) {
        FailureOr<Value> runtime = emitGatherOffsets(op, adaptor, rewriter);
        if (failed(runtime))
          return failure();
        indices = LLVM::AddOp::create(rewriter, loc, indices, *runtime);
      }
      SmallVector<Value> values;
      for (Value index : unpackElements(rewriter, loc, indices))
        values.push_back(loadShared(rewriter, loc, element, addressOf(index)));
      results.push_back(packElements(
          rewriter, loc, this->getTypeConverter()->convertType(type), values));
    }
    rewriter.replaceOp(op, results);
    return success();
  }

  /// clamp(index, 0, n - 1) * stride along the gather axis, per element the
  /// thread holds; the index must be laid out as the result.
  FailureOr<Value> emitGatherOffsets(GatherOp op, GatherOp::Adaptor adaptor,
                                     ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    if (op.getIndex().getType().getEncoding() != op.getType().getEncoding())
      return op.emitOpError() << "expected the index in the result's layout, got "
                              << op.getIndex().getType() << " for "
                              << op.getType();
    int64_t count = getThreadLayout(op.getType())->getElementsPerThread();
    auto laneType = VectorType::get({count}, rewriter.getI32Type());
    Value index = adaptor.getIndex();
    if (!isa<VectorType>(index.getType()))
      index = packElements(rewriter, loc,
                           VectorType::get({1}, index.getType()), {index});
    unsigned width = cast<IntegerType>(op.getIndex().getType().getElementType()).getWidth();
    if (width > 32)
      index = LLVM::TruncOp::create(rewriter, loc, laneType, index);
    else if (width < 32)
      index = LLVM::SExtOp::create(rewriter, loc, laneType, index);
    auto constant = [&](int64_t value) -> Value {
      return LLVM::ConstantOp::create(
          rewriter, loc, laneType,
          SplatElementsAttr::get(laneType, rewriter.getI32IntegerAttr(int32_t(value))));
    };
    int64_t axis = op.getAxis();
    RankedTensorType srcType = op.getSrc().getType();
    index = LLVM::SMaxOp::create(rewriter, loc, index, constant(0));
    index = LLVM::SMinOp::create(rewriter, loc, index,
                                 constant(srcType.getDimSize(axis) - 1));
    int64_t stride = getRowMajorStrides(srcType.getShape())[axis];
    return Value(LLVM::MulOp::create(rewriter, loc, index, constant(stride)));
  }

  LaunchShape launch;
};

} // namespace

int64_t mlir::kiln::gpu::getShapeOpScratchBytes(Operation *op) {
  if (!getElementSources(op))
    return 0;
  int64_t bytes = 0;
  for (Value operand : getMovedOperands(op)) {
    auto type = cast<RankedTensorType>(operand.getType());
    bytes += type.getNumElements() * getSharedElementBytes(type.getElementType());
  }
  return (bytes + 7) / 8 * 8;
}

void mlir::kiln::gpu::populateShapeOpToLLVMPatterns(
    KilnGPUToNVVMTypeConverter &converter, RewritePatternSet &patterns,
    const LaunchShape &launch) {
  patterns.add<ShapeOpLowering<ReshapeOp>, ShapeOpLowering<TransOp>,
               ShapeOpLowering<JoinOp>, ShapeOpLowering<SplitOp>,
               ShapeOpLowering<CatOp>, ShapeOpLowering<FlipOp>,
               ShapeOpLowering<GatherOp>>(converter, launch);
}
