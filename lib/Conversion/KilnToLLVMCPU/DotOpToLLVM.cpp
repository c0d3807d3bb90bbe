//===- DotOpToLLVM.cpp - CPU lowering of kiln.dot --------------------------===//
//
// A block is the vector of its elements in row-major order. kiln.dot
// stores its operands in stack slots, widened to the type it accumulates in
// (f32, or i32 for i8), and runs a loop over the rows of the result with an
// inner loop over K: each step splats one element of `a` and multiplies it
// into a whole row of `b`, adding to the result row held in a register.
// The IR is the same size whatever M, N and K are, so compile time does not
// grow with the block, and each row is one LLVM vector multiply-add that
// the backend splits into the host's SIMD registers.
//
// Precision: f16 and bf16 products are exact in f32, so multiplying and
// accumulating in f32 (fused or not) gives the same sums as a tensor core
// that accumulates in f32; an f16 accumulator is widened, accumulated in f32
// and rounded to f16 once at the end. tf32 operands are rounded to 10
// explicit mantissa bits, to nearest with ties away from zero (what PTX's
// cvt.rna.tf32.f32 does), so the CPU multiplies the same values the GPU
// does; their products are again exact in f32. tf32x3 and ieee multiply the
// f32 values as they are. i8 operands multiply and add in i32, wrapping.
//
//===----------------------------------------------------------------------===//

#include "DotOpToLLVM.h"
#include "CountedLoop.h"

#include "kiln/Conversion/LLVMCommon/VectorUtils.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The stack slots are aligned for the widest host vector, so the whole
/// operand stores are aligned ones.
constexpr unsigned kSlotAlignment = 64;

/// `type` (a vector or a scalar) with its element type replaced.
Type withElement(Type type, Type element) {
  if (auto vector = dyn_cast<VectorType>(type))
    return VectorType::get(vector.getShape(), element);
  return element;
}

/// A constant of i32 `type` (a vector or a scalar), every element `value`.
Value createI32Splat(OpBuilder &builder, Location loc, Type type, int32_t value) {
  if (auto vector = dyn_cast<VectorType>(type))
    return LLVM::ConstantOp::create(
        builder, loc, type,
        SplatElementsAttr::get(vector, builder.getI32IntegerAttr(value)));
  return createI32Constant(builder, loc, value);
}

unsigned elementBytes(Type element) {
  return std::max(1u, element.getIntOrFloatBitWidth() / 8);
}

/// Rounds f32 values to tf32 (10 explicit mantissa bits) to nearest, ties
/// away from zero, as cvt.rna.tf32.f32: adding half of the dropped part to
/// the magnitude bits carries into the kept ones exactly when the dropped
/// part is at least half. A carry out of the largest finite values gives
/// infinity, as it should; NaNs are kept as they are, since the carry could
/// turn their payload into an infinity or flip their sign.
Value roundToTF32(OpBuilder &builder, Location loc, Value x) {
  Type bitsType = withElement(x.getType(), builder.getI32Type());
  Value bits = LLVM::BitcastOp::create(builder, loc, bitsType, x);
  Value carried = LLVM::AddOp::create(builder, loc, bits,
                                      createI32Splat(builder, loc, bitsType, 0x1000));
  Value kept = LLVM::AndOp::create(builder, loc, carried,
                                   createI32Splat(builder, loc, bitsType,
                                                  int32_t(0xFFFFE000u)));
  Value rounded = LLVM::BitcastOp::create(builder, loc, x.getType(), kept);
  Value isNaN = LLVM::FCmpOp::create(builder, loc, LLVM::FCmpPredicate::uno, x, x);
  return LLVM::SelectOp::create(builder, loc, isNaN, x, rounded);
}

/// Widens `value` (operand or accumulator elements) to the `work` element
/// type the dot accumulates in, rounding to tf32 when asked.
Value toWork(OpBuilder &builder, Location loc, Value value, Type work, bool tf32) {
  Type element = getElementTypeOrSelf(value.getType());
  Type target = withElement(value.getType(), work);
  if (element != work)
    value = isa<IntegerType>(work)
                ? Value(LLVM::SExtOp::create(builder, loc, target, value))
                : Value(LLVM::FPExtOp::create(builder, loc, target, value));
  return tf32 ? roundToTF32(builder, loc, value) : value;
}

struct DotLowering : public ConvertOpToLLVMPattern<DotOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(DotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto aType = cast<RankedTensorType>(op.getA().getType());
    auto bType = cast<RankedTensorType>(op.getB().getType());
    auto dType = cast<RankedTensorType>(op.getD().getType());
    int64_t rank = aType.getRank();
    int64_t batch = rank == 3 ? aType.getDimSize(0) : 1;
    int64_t m = aType.getDimSize(rank - 2), k = aType.getDimSize(rank - 1);
    int64_t n = bType.getDimSize(rank - 1);
    Type operand = getTypeConverter()->convertType(aType.getElementType());
    Type acc = getTypeConverter()->convertType(dType.getElementType());
    if (!operand || !acc)
      return failure();
    bool integer = isa<IntegerType>(acc);
    // f64 dots accumulate in f64, every other float dot in f32.
    Type work = integer        ? Type(rewriter.getI32Type())
                : acc.isF64() ? Type(rewriter.getF64Type())
                              : Type(rewriter.getF32Type());
    bool tf32 = op.getInputPrecision() == InputPrecision::tf32;
    auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
    auto rowOf = [](Type element, int64_t lanes) {
      return VectorType::get({lanes}, element);
    };
    auto address = [&](Type element, Value slot, Value index) -> Value {
      return LLVM::GEPOp::create(rewriter, loc, ptrType, element, slot,
                                 ArrayRef<LLVM::GEPArg>{index});
    };
    auto mul = [&](Value x, int64_t factor) -> Value {
      return LLVM::MulOp::create(rewriter, loc, x,
                                 createI64Constant(rewriter, loc, factor));
    };

    // The slots are released after the dot, so that a dot in a loop does
    // not grow the stack.
    Value stack = LLVM::StackSaveOp::create(rewriter, loc, ptrType);

    // Stores `value`, `rows` rows of `length` elements, and returns a slot
    // of the same elements in the work type (the same slot when no
    // conversion is needed; else converted one row at a time, so that the
    // IR does not grow with the block).
    auto stage = [&](Value value, int64_t rows, int64_t length) -> Value {
      auto slot = [&](Type element) -> Value {
        return LLVM::AllocaOp::create(rewriter, loc, ptrType, element,
                                      createI64Constant(rewriter, loc, rows * length),
                                      kSlotAlignment);
      };
      Value raw = slot(operand);
      LLVM::StoreOp::create(rewriter, loc, value, raw, kSlotAlignment);
      if (operand == work && !tf32)
        return raw;
      Value wide = slot(work);
      emitCountedLoop(rewriter, loc, rows, {}, [&](Value row, ValueRange) {
        Value offset = mul(row, length);
        Value narrow = LLVM::LoadOp::create(rewriter, loc, rowOf(operand, length),
                                            address(operand, raw, offset),
                                            elementBytes(operand));
        LLVM::StoreOp::create(rewriter, loc, toWork(rewriter, loc, narrow, work, tf32),
                              address(work, wide, offset), elementBytes(work));
        return SmallVector<Value>{};
      });
      return wide;
    };
    Value aSlot = stage(adaptor.getA(), batch * m, k);
    Value bSlot = stage(adaptor.getB(), batch * k, n);
    // The accumulator is read and written back in place, one row at a time.
    Value cSlot = LLVM::AllocaOp::create(rewriter, loc, ptrType, acc,
                                         createI64Constant(rewriter, loc, batch * m * n),
                                         kSlotAlignment);
    LLVM::StoreOp::create(rewriter, loc, adaptor.getC(), cSlot, kSlotAlignment);

    // Row `row` of the flattened [batch * m, n] result: its batch's rows of
    // `b` start at row (row / m) * k of the flattened [batch * k, n] one.
    emitCountedLoop(rewriter, loc, batch * m, {}, [&](Value row, ValueRange) {
      Value bBase = createI64Constant(rewriter, loc, 0);
      if (batch > 1)
        bBase = mul(LLVM::UDivOp::create(rewriter, loc, row,
                                         createI64Constant(rewriter, loc, m)),
                    k);
      Value aBase = mul(row, k);
      Value cAddress = address(acc, cSlot, mul(row, n));
      Value sum = toWork(rewriter, loc,
                         LLVM::LoadOp::create(rewriter, loc, rowOf(acc, n), cAddress,
                                              elementBytes(acc)),
                         work, /*tf32=*/false);
      sum = emitCountedLoop(
          rewriter, loc, k, {sum}, [&](Value j, ValueRange carried) {
            Value aElement = LLVM::LoadOp::create(
                rewriter, loc, work,
                address(work, aSlot, LLVM::AddOp::create(rewriter, loc, aBase, j)),
                elementBytes(work));
            Value bRow = LLVM::LoadOp::create(
                rewriter, loc, rowOf(work, n),
                address(work, bSlot,
                        mul(LLVM::AddOp::create(rewriter, loc, bBase, j), n)),
                elementBytes(work));
            Value aSplat = splatVector(rewriter, loc, rowOf(work, n), aElement);
            // fmuladd lets the host fuse where it has an FMA unit: the f16,
            // bf16 and tf32 products are exact, so fused or not only
            // matters for ieee f32, where both are within rounding.
            Value next =
                integer ? Value(LLVM::AddOp::create(
                              rewriter, loc,
                              LLVM::MulOp::create(rewriter, loc, aSplat, bRow),
                              carried[0]))
                        : Value(LLVM::FMulAddOp::create(rewriter, loc, aSplat, bRow,
                                                        carried[0]));
            return SmallVector<Value>{next};
          })[0];
      if (acc != work)
        sum = LLVM::FPTruncOp::create(rewriter, loc, rowOf(acc, n), sum);
      LLVM::StoreOp::create(rewriter, loc, sum, cAddress, elementBytes(acc));
      return SmallVector<Value>{};
    });

    Value result = LLVM::LoadOp::create(
        rewriter, loc, getTypeConverter()->convertType(op.getType()), cSlot,
        kSlotAlignment);
    LLVM::StackRestoreOp::create(rewriter, loc, stack);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::kiln::populateDotOpToLLVMCPUPatterns(const LLVMTypeConverter &converter,
                                                RewritePatternSet &patterns) {
  patterns.add<DotLowering>(converter);
}
