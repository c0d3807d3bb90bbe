//===- AtomicOpToLLVM.cpp - CPU lowering of atomics and hints --------------===//
//
// A program instance is one host thread, so an atomic on a block is a loop
// over its lanes: each lane whose mask is set performs one LLVM `atomicrmw`
// or `cmpxchg` and its old value is inserted into the result vector.
// Masked-off lanes never touch memory. Programs run on different threads,
// so these atomics race with each other exactly as GPU programs do. Axis
// hints only inform the analysis and debug barriers order nothing within
// one thread: both lower to nothing.
//
//===----------------------------------------------------------------------===//

#include "AtomicOpToLLVM.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"
#include "kiln/Conversion/LLVMCommon/VectorUtils.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

LLVM::AtomicOrdering getOrdering(MemSemantic sem) {
  switch (sem) {
  case MemSemantic::relaxed: return LLVM::AtomicOrdering::monotonic;
  case MemSemantic::acquire: return LLVM::AtomicOrdering::acquire;
  case MemSemantic::release: return LLVM::AtomicOrdering::release;
  case MemSemantic::acq_rel: return LLVM::AtomicOrdering::acq_rel;
  }
  return LLVM::AtomicOrdering::acq_rel;
}

/// The ordering of a failed cmpxchg, which only reads: no release part.
LLVM::AtomicOrdering getFailureOrdering(MemSemantic sem) {
  return sem == MemSemantic::acquire || sem == MemSemantic::acq_rel
             ? LLVM::AtomicOrdering::acquire
             : LLVM::AtomicOrdering::monotonic;
}

LLVM::AtomicBinOp getBinOp(RMWKind kind) {
  switch (kind) {
  case RMWKind::add: return LLVM::AtomicBinOp::add;
  case RMWKind::fadd: return LLVM::AtomicBinOp::fadd;
  case RMWKind::max: return LLVM::AtomicBinOp::max;
  case RMWKind::umax: return LLVM::AtomicBinOp::umax;
  case RMWKind::min: return LLVM::AtomicBinOp::min;
  case RMWKind::umin: return LLVM::AtomicBinOp::umin;
  case RMWKind::And: return LLVM::AtomicBinOp::_and;
  case RMWKind::Or: return LLVM::AtomicBinOp::_or;
  case RMWKind::Xor: return LLVM::AtomicBinOp::_xor;
  case RMWKind::xchg: return LLVM::AtomicBinOp::xchg;
  case RMWKind::fmax: return LLVM::AtomicBinOp::fmax;
  case RMWKind::fmin: return LLVM::AtomicBinOp::fmin;
  }
  return LLVM::AtomicBinOp::xchg;
}

Value asVector(OpBuilder &builder, Location loc, Value value) {
  if (isa<VectorType>(value.getType()))
    return value;
  return splatVector(builder, loc, VectorType::get({1}, value.getType()), value);
}

/// Emits a loop over the lanes of `ptrs` that calls `emitLane(ptr, lane)` for
/// each lane whose `mask` bit is set (every lane without a mask) and, in
/// `checked` mode, whose address is inside its buffer, and collects the
/// values it returns; inactive lanes hold zero. Returns the collected
/// vector, or its only element when `resultType` is a scalar.
Value emitLaneLoop(ConversionPatternRewriter &rewriter, Location loc, Operation *op,
                   bool checked, Type resultType, Value ptrs, Value mask,
                   function_ref<Value(OpBuilder &, Value, Value)> emitLane) {
  ptrs = asVector(rewriter, loc, ptrs);
  int64_t lanes = cast<VectorType>(ptrs.getType()).getNumElements();
  Type element = getElementTypeOrSelf(resultType);
  auto vectorType = VectorType::get({lanes}, element);
  Type i32 = rewriter.getI32Type();
  if (mask)
    mask = asVector(rewriter, loc, mask);
  if (checked) {
    // Lanes outside their buffer are reported and dropped from the mask.
    if (!mask) {
      auto maskType = VectorType::get({lanes}, rewriter.getI1Type());
      mask = LLVM::ConstantOp::create(rewriter, loc, maskType,
                                      SplatElementsAttr::get(maskType, true));
    }
    mask = checkAccessBounds(op, rewriter, ptrs, mask,
                             std::max(1u, element.getIntOrFloatBitWidth() / 8));
  }

  Block *before = rewriter.getInsertionBlock();
  Block *after = rewriter.splitBlock(before, rewriter.getInsertionPoint());
  Region *region = before->getParent();
  Block *header = rewriter.createBlock(region, after->getIterator(),
                                       {i32, vectorType}, {loc, loc});
  Block *body = rewriter.createBlock(region, after->getIterator());
  Block *apply = rewriter.createBlock(region, after->getIterator());
  Block *latch = rewriter.createBlock(region, after->getIterator(),
                                      {vectorType}, {loc});

  rewriter.setInsertionPointToEnd(before);
  Value zeros = LLVM::ZeroOp::create(rewriter, loc, vectorType);
  LLVM::BrOp::create(rewriter, loc,
                     ValueRange{createI32Constant(rewriter, loc, 0), zeros}, header);

  rewriter.setInsertionPointToEnd(header);
  Value lane = header->getArgument(0), acc = header->getArgument(1);
  Value more = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::slt, lane,
                                    createI32Constant(rewriter, loc, lanes));
  LLVM::CondBrOp::create(rewriter, loc, more, body, after);

  rewriter.setInsertionPointToEnd(body);
  if (mask) {
    Value active = LLVM::ExtractElementOp::create(rewriter, loc, mask, lane);
    LLVM::CondBrOp::create(rewriter, loc, active, apply, ValueRange{}, latch,
                           ValueRange{acc});
  } else {
    LLVM::BrOp::create(rewriter, loc, ValueRange{}, apply);
  }

  rewriter.setInsertionPointToEnd(apply);
  Value ptr = LLVM::ExtractElementOp::create(rewriter, loc, ptrs, lane);
  Value old = emitLane(rewriter, ptr, lane);
  Value updated = LLVM::InsertElementOp::create(rewriter, loc, acc, old, lane);
  LLVM::BrOp::create(rewriter, loc, ValueRange{updated}, latch);

  rewriter.setInsertionPointToEnd(latch);
  Value next = LLVM::AddOp::create(rewriter, loc, lane,
                                   createI32Constant(rewriter, loc, 1));
  LLVM::BrOp::create(rewriter, loc, ValueRange{next, latch->getArgument(0)},
                     header);

  rewriter.setInsertionPointToStart(after);
  if (isa<VectorType>(resultType))
    return acc;
  return LLVM::ExtractElementOp::create(rewriter, loc, acc,
                                        createI32Constant(rewriter, loc, 0));
}

Value laneOf(OpBuilder &builder, Location loc, Value value, Value lane) {
  if (!isa<VectorType>(value.getType()))
    return value;
  return LLVM::ExtractElementOp::create(builder, loc, value, lane);
}

unsigned getAlignment(Type element) {
  return std::max(1u, element.getIntOrFloatBitWidth() / 8);
}

struct AtomicRMWLowering : public ConvertOpToLLVMPattern<AtomicRMWOp> {
  AtomicRMWLowering(const LLVMTypeConverter &converter, bool checked)
      : ConvertOpToLLVMPattern(converter), checked(checked) {}
  bool checked;
  LogicalResult
  matchAndRewrite(AtomicRMWOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type resultType = getTypeConverter()->convertType(op.getType());
    Value vals = adaptor.getVal();
    LLVM::AtomicBinOp binOp = getBinOp(op.getKind());
    LLVM::AtomicOrdering ordering = getOrdering(op.getSem());
    unsigned alignment = getAlignment(getElementTypeOrSelf(resultType));
    Value result = emitLaneLoop(
        rewriter, loc, op, checked, resultType, adaptor.getPtr(), adaptor.getMask(),
        [&](OpBuilder &builder, Value ptr, Value lane) -> Value {
          return LLVM::AtomicRMWOp::create(builder, loc, binOp, ptr,
                                           laneOf(builder, loc, vals, lane),
                                           ordering, StringRef(), alignment);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct AtomicCASLowering : public ConvertOpToLLVMPattern<AtomicCASOp> {
  AtomicCASLowering(const LLVMTypeConverter &converter, bool checked)
      : ConvertOpToLLVMPattern(converter), checked(checked) {}
  bool checked;
  LogicalResult
  matchAndRewrite(AtomicCASOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type resultType = getTypeConverter()->convertType(op.getType());
    Type element = getElementTypeOrSelf(resultType);
    // cmpxchg compares integers: floats travel as their bits.
    Type bitsType = rewriter.getIntegerType(element.getIntOrFloatBitWidth());
    Value cmps = adaptor.getCmp(), vals = adaptor.getVal();
    LLVM::AtomicOrdering successOrdering = getOrdering(op.getSem());
    LLVM::AtomicOrdering failure = getFailureOrdering(op.getSem());
    Value result = emitLaneLoop(
        rewriter, loc, op, checked, resultType, adaptor.getPtr(), /*mask=*/Value(),
        [&](OpBuilder &builder, Value ptr, Value lane) -> Value {
          auto asBits = [&](Value v) -> Value {
            v = laneOf(builder, loc, v, lane);
            return element == bitsType
                       ? v
                       : LLVM::BitcastOp::create(builder, loc, bitsType, v);
          };
          auto pair = LLVM::AtomicCmpXchgOp::create(
              builder, loc, ptr, asBits(cmps), asBits(vals), successOrdering, failure,
              StringRef(), getAlignment(element));
          Value old = LLVM::ExtractValueOp::create(builder, loc, pair, 0);
          return element == bitsType
                     ? old
                     : LLVM::BitcastOp::create(builder, loc, element, old);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A program is one thread: nothing to wait for.
struct DebugBarrierLowering : public ConvertOpToLLVMPattern<DebugBarrierOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(DebugBarrierOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::kiln::populateAtomicAndHintOpToLLVMCPUPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns,
    bool checked) {
  patterns.add<AtomicRMWLowering, AtomicCASLowering>(converter, checked);
  patterns.add<DebugBarrierLowering>(converter);
  populateHintOpToLLVMPatterns(converter, patterns);
}
