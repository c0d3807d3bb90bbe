//===- BlockOpToLLVM.cpp - Lower grid queries and block creation -----------===//
//
// Lowers the kiln ops that create blocks or compute addresses to per-thread
// LLVM and NVVM: program_id/num_programs read special registers, make_range
// computes each element's index from the thread id and the layout, splat
// and splat constants fill a thread's vector (splat and addptr are shared
// with the CPU lowering: kiln/Conversion/LLVMCommon/Patterns.h).
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

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

/// Returns the blocked layout of `type`, or null.
static BlockedEncodingAttr getBlockedLayout(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return {};
  return dyn_cast_if_present<BlockedEncodingAttr>(tensor.getEncoding());
}

struct MakeRangeOpLowering : public ConvertOpToLLVMPattern<MakeRangeOp> {
  MakeRangeOpLowering(const LLVMTypeConverter &converter, LaunchShape launch)
      : ConvertOpToLLVMPattern(converter), launch(launch) {}
  LogicalResult
  matchAndRewrite(MakeRangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto layout = getBlockedLayout(op.getType());
    if (!layout)
      return rewriter.notifyMatchFailure(op, "expected a blocked layout");
    Location loc = op.getLoc();
    Value index = emitElementCoordinates(rewriter, loc, layout,
                                         op.getType().getShape(), launch)[0];
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
    if (!getBlockedLayout(op.getType()))
      return failure();
    auto splat = dyn_cast<SplatElementsAttr>(op.getValue());
    if (!splat)
      return op.emitError("expected a splat constant block; other constant "
                          "blocks are not supported by this lowering");
    auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    auto value = SplatElementsAttr::get(type, splat.getSplatValue<Attribute>());
    rewriter.replaceOpWithNewOp<LLVM::ConstantOp>(op, type, value);
    return success();
  }
};

/// Ops whose lowering needs to move elements between threads. A conversion
/// between layouts that give each thread the same elements in the same
/// order is a no-op; anything else is reported, not miscompiled.
template <typename OpTy>
struct LayoutChangeLowering : public ConvertOpToLLVMPattern<OpTy> {
  using ConvertOpToLLVMPattern<OpTy>::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto srcType = cast<RankedTensorType>(op.getSrc().getType());
    auto dstType = cast<RankedTensorType>(op.getType());
    if (srcType.getShape() == dstType.getShape() &&
        srcType.getEncoding() == dstType.getEncoding()) {
      rewriter.replaceOp(op, adaptor.getSrc());
      return success();
    }
    return op.emitOpError()
           << "between layouts " << srcType << " and " << dstType
           << " is not supported by the GPU lowering yet";
  }
};

} // namespace

void mlir::kiln::gpu::populateBlockOpToLLVMPatterns(
    KilnGPUToLLVMTypeConverter &converter, RewritePatternSet &patterns,
    const LaunchShape &launch) {
  populateSplatAndAddPtrToLLVMPatterns(converter, patterns);
  patterns.add<ProgramIdOpLowering, NumProgramsOpLowering,
               SplatConstantLowering,
               LayoutChangeLowering<ConvertLayoutOp>,
               LayoutChangeLowering<BroadcastOp>,
               LayoutChangeLowering<ExpandDimsOp>>(converter);
  patterns.add<MakeRangeOpLowering>(converter, launch);
}
