//===- BlockOpToLLVM.cpp - Lower grid queries and block creation -----------===//
//
// Lowers the kiln ops that create blocks or compute addresses to per-thread
// LLVM and NVVM: program_id/num_programs read special registers, make_range
// computes each element's index from the thread id and the layout, splat
// and splat constants fill a thread's vector (splat, addptr and the pointer
// casts are shared with the CPU lowering:
// kiln/Conversion/LLVMCommon/Patterns.h).
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <map>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

struct ProgramIdOpLowering : public ConvertOpToLLVMPattern<ProgramIdOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(ProgramIdOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type i32 = rewriter.getI32Type();
    Value id;
    switch (op.getAxis()) {
    case 0: id = NVVM::BlockIdXOp::create(rewriter, op.getLoc(), i32); break;
    case 1: id = NVVM::BlockIdYOp::create(rewriter, op.getLoc(), i32); break;
    default: id = NVVM::BlockIdZOp::create(rewriter, op.getLoc(), i32); break;
    }
    rewriter.replaceOp(op, id);
    return success();
  }
};

struct NumProgramsOpLowering : public ConvertOpToLLVMPattern<NumProgramsOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(NumProgramsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type i32 = rewriter.getI32Type();
    Value count;
    switch (op.getAxis()) {
    case 0: count = NVVM::GridDimXOp::create(rewriter, op.getLoc(), i32); break;
    case 1: count = NVVM::GridDimYOp::create(rewriter, op.getLoc(), i32); break;
    default: count = NVVM::GridDimZOp::create(rewriter, op.getLoc(), i32); break;
    }
    rewriter.replaceOp(op, count);
    return success();
  }
};

struct MakeRangeOpLowering : public ConvertOpToLLVMPattern<MakeRangeOp> {
  MakeRangeOpLowering(const LLVMTypeConverter &converter, LaunchShape launch)
      : ConvertOpToLLVMPattern(converter), launch(launch) {}
  LogicalResult
  matchAndRewrite(MakeRangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!getThreadLayout(op.getType()))
      return rewriter.notifyMatchFailure(op, "expected a thread layout");
    Location loc = op.getLoc();
    Value index = emitBlockCoordinates(rewriter, loc, op.getType(), launch)[0];
    if (op.getStart() != 0) {
      auto type = cast<VectorType>(index.getType());
      Value start = LLVM::ConstantOp::create(
          rewriter, loc, type,
          SplatElementsAttr::get(type, rewriter.getI32IntegerAttr(op.getStart())));
      index = LLVM::AddOp::create(rewriter, loc, index, start);
    }
    rewriter.replaceOp(op, index);
    return success();
  }
  LaunchShape launch;
};

/// A splat constant block becomes the same constant in each thread's vector.
struct SplatConstantLowering : public ConvertOpToLLVMPattern<arith::ConstantOp> {
  SplatConstantLowering(const LLVMTypeConverter &converter)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(arith::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto tensor = dyn_cast<RankedTensorType>(op.getType());
    if (!tensor || !getThreadLayout(tensor))
      return failure();
    auto splat = dyn_cast<SplatElementsAttr>(op.getValue());
    if (!splat) // refused before the conversion (KilnGPUToNVVM.cpp)
      return rewriter.notifyMatchFailure(op, "expected a splat constant block");
    auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    auto value = SplatElementsAttr::get(type, splat.getSplatValue<Attribute>());
    rewriter.replaceOpWithNewOp<LLVM::ConstantOp>(op, type, value);
    return success();
  }
};

/// expand_dims from the slice of a layout to the layout itself: each thread
/// holds the same elements in the same order (kiln-gpu-match-shape-layouts
/// arranges for it), so the values pass through.
struct ExpandDimsOpLowering : public ConvertOpToLLVMPattern<ExpandDimsOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(ExpandDimsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto slice = dyn_cast_if_present<SliceEncodingAttr>(op.getSrc().getType().getEncoding());
    if (!slice || slice.getDim() != op.getAxis() ||
        slice.getParent() != op.getType().getEncoding())
      return op.emitOpError() << "from " << op.getSrc().getType() << " to "
                              << op.getType()
                              << " needs its operand in the slice of the result's "
                                 "layout (kiln-gpu-match-shape-layouts)";
    rewriter.replaceOp(op, adaptor.getSrc());
    return success();
  }
};

/// broadcast within one blocked layout: a thread holds, for each element of
/// the result, the source element it repeats, so the result is a shuffle of
/// the thread's source elements with a static mask.
struct BroadcastOpLowering : public ConvertOpToLLVMPattern<BroadcastOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType srcType = op.getSrc().getType(), dstType = op.getType();
    auto layout = dyn_cast_if_present<BlockedEncodingAttr>(dstType.getEncoding());
    if (!layout || srcType.getEncoding() != layout)
      return op.emitOpError() << "from " << srcType << " to " << dstType
                              << " needs its operand in the result's layout "
                                 "(kiln-gpu-match-shape-layouts)";
    SmallVector<SmallVector<int32_t>> srcOffsets =
        getElementOffsets(layout, srcType.getShape());
    SmallVector<SmallVector<int32_t>> dstOffsets =
        getElementOffsets(layout, dstType.getShape());
    unsigned rank = dstType.getRank();
    // Source elements by their offsets along the dimensions not broadcast.
    std::map<SmallVector<int32_t>, int32_t> sourceOf;
    for (size_t e = 0; e < srcOffsets[0].size(); ++e) {
      SmallVector<int32_t> key;
      for (unsigned d = 0; d < rank; ++d)
        key.push_back(srcType.getDimSize(d) == 1 ? 0 : srcOffsets[d][e]);
      sourceOf.try_emplace(key, int32_t(e));
    }
    SmallVector<int32_t> mask;
    for (size_t e = 0; e < dstOffsets[0].size(); ++e) {
      SmallVector<int32_t> key;
      for (unsigned d = 0; d < rank; ++d)
        key.push_back(srcType.getDimSize(d) == 1 ? 0 : dstOffsets[d][e]);
      auto it = sourceOf.find(key);
      if (it == sourceOf.end())
        return op.emitOpError("cannot find a thread's source element");
      mask.push_back(it->second);
    }
    Value src = adaptor.getSrc();
    if (!isa<VectorType>(src.getType()))
      return rewriter.notifyMatchFailure(op, "expected a vector");
    rewriter.replaceOpWithNewOp<LLVM::ShuffleVectorOp>(op, src, src, mask);
    return success();
  }
};

} // namespace

void mlir::kiln::gpu::populateBlockOpToLLVMPatterns(
    KilnGPUToNVVMTypeConverter &converter, RewritePatternSet &patterns,
    const LaunchShape &launch) {
  populateSplatAndAddPtrToLLVMPatterns(converter, patterns);
  populatePointerCastToLLVMPatterns(converter, patterns);
  patterns.add<ProgramIdOpLowering, NumProgramsOpLowering,
               SplatConstantLowering, ExpandDimsOpLowering, BroadcastOpLowering>(
      converter);
  patterns.add<MakeRangeOpLowering>(converter, launch);
}
