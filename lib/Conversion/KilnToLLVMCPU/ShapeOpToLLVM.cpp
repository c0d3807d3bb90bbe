//===- ShapeOpToLLVM.cpp - CPU lowering of the shape ops -------------------===//
//
// A block is the vector of its elements in row-major order, so reshape,
// trans, join, split, cat and flip are each one shufflevector per result,
// its mask the op's element map (getElementSources) evaluated at every
// result element (nothing at all for a reshape). Large blocks, and
// kiln.gather with its run-time indices, store the operands in a stack slot
// and read the result with one masked gather: its compile time is linear
// in the block size, where LLVM's lowering of huge shuffles is not.
//
//===----------------------------------------------------------------------===//

#include "ShapeOpToLLVM.h"

#include "CountedLoop.h"
#include "StackSlot.h"

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

/// Stores `operands` (vectors of one type) one after the other in a stack
/// slot and reads the elements at `offsets` (a vector of i32) back with one
/// masked gather. The slot is released after the read, so that a use in a
/// loop does not grow the stack.
Value readThroughStackSlot(OpBuilder &builder, Location loc,
                           ArrayRef<Value> operands, Value offsets) {
  MLIRContext *context = builder.getContext();
  auto vectorType = cast<VectorType>(operands[0].getType());
  int64_t srcLanes = vectorType.getNumElements();
  int64_t lanes = cast<VectorType>(offsets.getType()).getNumElements();
  Type element = vectorType.getElementType();
  Type slotElement = slotElementType(builder, element);
  auto ptrType = LLVM::LLVMPointerType::get(context);
  Value stack = LLVM::StackSaveOp::create(builder, loc, ptrType);
  Value slot = allocateStackSlot(builder, loc, slotElement, srcLanes * operands.size(),
                                 /*alignment=*/16);
  for (auto [k, operand] : llvm::enumerate(operands)) {
    Value address = LLVM::GEPOp::create(builder, loc, ptrType, slotElement, slot,
                                        ArrayRef<LLVM::GEPArg>{int32_t(k * srcLanes)});
    // An explicit alignment: a vector's natural one can exceed the slot's.
    LLVM::StoreOp::create(builder, loc, toSlotForm(builder, loc, operand), address,
                          /*alignment=*/16);
  }
  auto ptrsType = VectorType::get({lanes}, ptrType);
  Value ptrs = LLVM::GEPOp::create(builder, loc, ptrsType, slotElement, slot,
                                   ValueRange{offsets});
  auto resultType = VectorType::get({lanes}, slotElement);
  auto maskType = VectorType::get({lanes}, builder.getI1Type());
  Value all = LLVM::ConstantOp::create(builder, loc, maskType,
                                       SplatElementsAttr::get(maskType, true));
  Value passthru = LLVM::PoisonOp::create(builder, loc, resultType);
  Value gathered = LLVM::masked_gather::create(builder, loc, resultType, ptrs, all,
                                               ValueRange{passthru},
                                               slotElementBytes(slotElement));
  LLVM::StackRestoreOp::create(builder, loc, stack);
  return fromSlotForm(builder, loc, gathered, element);
}

/// Above this many lanes, a permutation that is not the identity reads
/// through a stack slot instead of shuffling: LLVM's shuffle lowering takes
/// seconds on vectors of thousands of lanes, a gather compiles in linear
/// time.
constexpr int64_t kMaxShuffleLanes = 256;

/// reshape, trans, join, split, cat, flip: the operand itself where the map
/// is the identity (a reshape), a shuffle of
/// the operands (two operands of one type are the shuffle's two vectors)
/// for small blocks and for prefixes and concatenations (cheap at any
/// size), a read through a stack slot for other large ones.
template <typename OpTy>
struct PermutationLowering : public ConvertOpToLLVMPattern<OpTy> {
  using ConvertOpToLLVMPattern<OpTy>::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<SmallVector<ElementSource>> sources = getElementSources(op);
    if (!sources)
      return failure();
    Location loc = op.getLoc();
    SmallVector<Value> operands(adaptor.getOperands());
    Value first = operands[0];
    Value second = operands.size() > 1 ? operands[1] : operands[0];
    SmallVector<Value> results;
    for (auto [source, result] : llvm::zip(*sources, op->getResults())) {
      auto type = cast<RankedTensorType>(result.getType());
      SmallVector<int32_t> mask = evaluateSource(source, type.getShape());
      bool identity = llvm::all_of(llvm::enumerate(mask), [](auto pair) {
        return int64_t(pair.index()) == pair.value();
      });
      int64_t firstLanes = cast<VectorType>(first.getType()).getNumElements();
      if (identity && operands.size() == 1 && int64_t(mask.size()) == firstLanes) {
        results.push_back(first);
      } else if (identity || int64_t(mask.size()) <= kMaxShuffleLanes) {
        results.push_back(
            LLVM::ShuffleVectorOp::create(rewriter, loc, first, second, mask));
      } else {
        auto offsetType = VectorType::get({int64_t(mask.size())}, rewriter.getI32Type());
        Value offsets = LLVM::ConstantOp::create(
            rewriter, loc, offsetType,
            DenseElementsAttr::get(offsetType, ArrayRef<int32_t>(mask)));
        results.push_back(readThroughStackSlot(rewriter, loc, operands, offsets));
      }
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// The indices clamped to [0, n) and turned into element offsets, then a
/// read through a stack slot.
struct GatherLowering : public ConvertOpToLLVMPattern<GatherOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType srcType = op.getSrc().getType();
    int64_t lanes = op.getType().getNumElements();
    int64_t axis = op.getAxis();
    ElementSource source = (*getElementSources(op))[0];

    // Element offset = static part + clamp(index, 0, n - 1) * stride.
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
    rewriter.replaceOp(op, readThroughStackSlot(rewriter, loc, {adaptor.getSrc()}, offsets));
    return success();
  }
};

/// A loop over the values that adds one to the count of each value's bin,
/// in a stack array with one more element than there are bins: values
/// outside [0, n) and masked-off ones add to that last element, so the
/// loop needs no branch. A one-hot block of values x bins, as a GPU
/// computes, would grow with the product (and i1 vectors of 2^16 lanes
/// abort LLVM's x86 code generator); the loop grows with neither.
struct HistogramLowering : public ConvertOpToLLVMPattern<HistogramOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(HistogramOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type();
    Type element = op.getSrc().getType().getElementType();
    int64_t values = op.getSrc().getType().getDimSize(0);
    int64_t bins = op.getType().getDimSize(0);
    auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
    Value stack = LLVM::StackSaveOp::create(rewriter, loc, ptrType);
    auto countsType = VectorType::get({bins}, i32);
    Value counts = allocateStackSlot(rewriter, loc, i32, bins + 1, /*alignment=*/16);
    LLVM::StoreOp::create(rewriter, loc,
                          LLVM::ConstantOp::create(rewriter, loc, countsType,
                                                   SplatElementsAttr::get(countsType, int32_t(0))),
                          counts, /*alignment=*/16);
    Value outside = createI64Constant(rewriter, loc, bins);
    LLVM::StoreOp::create(rewriter, loc, LLVM::ConstantOp::create(rewriter, loc, i32, 0),
                          laneAddress(rewriter, loc, i32, counts, outside));
    // The lanes of the values (and mask) in slots, read one by one.
    Type valueElement = slotElementType(rewriter, element);
    Type maskElement = slotElementType(rewriter, rewriter.getI1Type());
    Value valueSlot = storeInStackSlot(rewriter, loc, adaptor.getSrc(), /*alignment=*/16);
    Value maskSlot;
    if (adaptor.getMask())
      maskSlot = storeInStackSlot(rewriter, loc, adaptor.getMask(), /*alignment=*/16);
    auto lane = [&](Type slotElement, Value slot, Value index) -> Value {
      return LLVM::LoadOp::create(rewriter, loc, slotElement,
                                  laneAddress(rewriter, loc, slotElement, slot, index));
    };
    emitCountedLoop(rewriter, loc, values, {}, [&](Value index, ValueRange) {
      // Read as signed: a negative value is a large unsigned i64, past n.
      Value value = lane(valueElement, valueSlot, index);
      if (element.getIntOrFloatBitWidth() < 64)
        value = LLVM::SExtOp::create(rewriter, loc, i64,
                                     element.isInteger(1)
                                         ? LLVM::TruncOp::create(rewriter, loc, element, value)
                                         : value);
      Value counted = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::ult, value, outside);
      if (maskSlot) {
        Value set = LLVM::TruncOp::create(rewriter, loc, rewriter.getI1Type(),
                                          lane(maskElement, maskSlot, index));
        counted = LLVM::AndOp::create(rewriter, loc, counted, set);
      }
      Value bin = LLVM::SelectOp::create(rewriter, loc, counted, value, outside);
      Value address = laneAddress(rewriter, loc, i32, counts, bin);
      Value count = LLVM::LoadOp::create(rewriter, loc, i32, address);
      LLVM::StoreOp::create(rewriter, loc,
                            LLVM::AddOp::create(rewriter, loc, count,
                                                LLVM::ConstantOp::create(rewriter, loc, i32, 1)),
                            address);
      return SmallVector<Value>{};
    });
    Value result = LLVM::LoadOp::create(rewriter, loc, countsType, counts, /*alignment=*/16);
    LLVM::StackRestoreOp::create(rewriter, loc, stack);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::kiln::populateShapeOpToLLVMCPUPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<PermutationLowering<ReshapeOp>, PermutationLowering<TransOp>,
               PermutationLowering<JoinOp>, PermutationLowering<SplitOp>,
               PermutationLowering<CatOp>, PermutationLowering<FlipOp>,
               GatherLowering, HistogramLowering>(converter);
}
