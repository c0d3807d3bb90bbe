//===- DebugOpToLLVM.cpp - CPU lowering of device prints and asserts -------===//
//
// kiln.print and kiln.assert become calls into the CPU runtime
// (lib/Target/CPU/JIT.cpp): one `__kiln_cpu_print` per element of each
// operand, one `__kiln_cpu_assert_fail` per false element of a condition,
// from a loop over the block's lanes. The runtime knows which program the
// calling thread runs; the lowering passes each element's coordinates.
//
//===----------------------------------------------------------------------===//

#include "AtomicOpToLLVM.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"
#include "kiln/Conversion/LLVMCommon/VectorUtils.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr StringLiteral kPrintFunction = "__kiln_cpu_print";
constexpr StringLiteral kAssertFunction = "__kiln_cpu_assert_fail";

/// Emits `body(lane)` for lanes 0 .. lanes-1, skipping a lane whose `skip`
/// bit (a vector<lanes x i1>, if given) is set.
void emitForEachLane(ConversionPatternRewriter &rewriter, Location loc, int64_t lanes,
                     Value skip, function_ref<void(OpBuilder &, Value)> body) {
  Type i32 = rewriter.getI32Type();
  Block *before = rewriter.getInsertionBlock();
  Block *after = rewriter.splitBlock(before, rewriter.getInsertionPoint());
  Region *region = before->getParent();
  Block *header = rewriter.createBlock(region, after->getIterator(), {i32}, {loc});
  Block *test = rewriter.createBlock(region, after->getIterator());
  Block *apply = rewriter.createBlock(region, after->getIterator());
  Block *latch = rewriter.createBlock(region, after->getIterator());

  rewriter.setInsertionPointToEnd(before);
  LLVM::BrOp::create(rewriter, loc, ValueRange{createI32Constant(rewriter, loc, 0)}, header);
  rewriter.setInsertionPointToEnd(header);
  Value lane = header->getArgument(0);
  Value more = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::slt, lane,
                                    createI32Constant(rewriter, loc, lanes));
  LLVM::CondBrOp::create(rewriter, loc, more, test, after);
  rewriter.setInsertionPointToEnd(test);
  if (skip) {
    Value skipped = LLVM::ExtractElementOp::create(rewriter, loc, skip, lane);
    LLVM::CondBrOp::create(rewriter, loc, skipped, latch, apply);
  } else {
    LLVM::BrOp::create(rewriter, loc, ValueRange{}, apply);
  }
  rewriter.setInsertionPointToEnd(apply);
  body(rewriter, lane);
  LLVM::BrOp::create(rewriter, loc, ValueRange{}, latch);
  rewriter.setInsertionPointToEnd(latch);
  Value next = LLVM::AddOp::create(rewriter, loc, lane, createI32Constant(rewriter, loc, 1));
  LLVM::BrOp::create(rewriter, loc, ValueRange{next}, header);
  rewriter.setInsertionPointToStart(after);
}

/// The block's rank and up to three coordinates of row-major `lane`.
SmallVector<Value> laneCoordinates(OpBuilder &builder, Location loc, Type type, Value lane) {
  SmallVector<Value> result;
  auto tensor = dyn_cast<RankedTensorType>(type);
  int64_t rank = tensor ? tensor.getRank() : 0;
  result.push_back(createI32Constant(builder, loc, std::min<int64_t>(rank, 3)));
  SmallVector<Value> coords(3, createI32Constant(builder, loc, 0));
  Value rest = lane;
  for (int64_t d = rank - 1; d >= 0; --d) {
    Value size = createI32Constant(builder, loc, tensor.getDimSize(d));
    if (d < 3)
      coords[d] = LLVM::URemOp::create(builder, loc, rest, size);
    rest = LLVM::UDivOp::create(builder, loc, rest, size);
  }
  result.append(coords);
  return result;
}

Value asVector(OpBuilder &builder, Location loc, Value value) {
  if (isa<VectorType>(value.getType()))
    return value;
  return splatVector(builder, loc, VectorType::get({1}, value.getType()), value);
}

struct PrintLowering : public ConvertOpToLLVMPattern<PrintOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(PrintOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = getContext();
    Type i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type();
    auto ptrType = LLVM::LLVMPointerType::get(context);
    auto module = op->getParentOfType<ModuleOp>();
    auto printFn = LLVM::lookupOrCreateFn(
        rewriter, module, kPrintFunction,
        {ptrType, i32, i32, i32, i32, i32, i32, i32, i64, i32, i32},
        LLVM::LLVMVoidType::get(context));
    if (failed(printFn))
      return failure();
    Value prefix = createGlobalCString(rewriter, loc, op, op.getPrefix());
    int64_t numOperands = op.getArgs().size();
    for (auto indexed : llvm::enumerate(llvm::zip(op.getArgs(), adaptor.getArgs()))) {
      // (A plain variable: the lane callback below captures it.)
      int64_t k = indexed.index();
      auto [original, converted] = indexed.value();
      Value values = asVector(rewriter, loc, converted);
      int64_t lanes = cast<VectorType>(values.getType()).getNumElements();
      Type element = getElementTypeOrSelf(original.getType());
      bool isSigned = op.getIsSigned()[k] != 0;
      int32_t kind = isa<PointerType>(element) ? 3
                     : isa<FloatType>(element) ? 2
                     : isSigned && !element.isInteger(1) ? 0
                                                         : 1;
      int32_t bytes = isa<PointerType>(element)
                          ? 8
                          : std::max(1u, element.getIntOrFloatBitWidth() / 8);
      Type originalType = original.getType();
      emitForEachLane(rewriter, loc, lanes, Value(), [&](OpBuilder &b, Value lane) {
        Value v = LLVM::ExtractElementOp::create(b, loc, values, lane);
        Value bits;
        if (kind == 3)
          bits = LLVM::PtrToIntOp::create(b, loc, i64, v);
        else if (kind == 2 && op.getHex()) {
          // hex shows the value's own bits (an fp16 as 4 digits), not
          // those of its double widening.
          Type raw = b.getIntegerType(element.getIntOrFloatBitWidth());
          bits = LLVM::BitcastOp::create(b, loc, raw, v);
          if (raw != i64)
            bits = LLVM::ZExtOp::create(b, loc, i64, bits);
        } else if (kind == 2) {
          Value wide = v.getType().isF64() ? v : LLVM::FPExtOp::create(b, loc, b.getF64Type(), v);
          bits = LLVM::BitcastOp::create(b, loc, i64, wide);
        } else if (v.getType() == i64)
          bits = v;
        else if (kind == 0)
          bits = LLVM::SExtOp::create(b, loc, i64, v);
        else
          bits = LLVM::ZExtOp::create(b, loc, i64, v);
        SmallVector<Value> args{prefix};
        args.append(laneCoordinates(b, loc, originalType, lane));
        args.push_back(createI32Constant(b, loc, k));
        args.push_back(createI32Constant(b, loc, numOperands));
        args.push_back(createI32Constant(b, loc, kind));
        args.push_back(bits);
        args.push_back(createI32Constant(b, loc, bytes));
        args.push_back(createI32Constant(b, loc, op.getHex() ? 1 : 0));
        LLVM::CallOp::create(b, loc, *printFn, args);
      });
    }
    rewriter.eraseOp(op);
    return success();
  }
};

struct AssertLowering : public ConvertOpToLLVMPattern<AssertOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(AssertOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = getContext();
    Type i32 = rewriter.getI32Type();
    auto ptrType = LLVM::LLVMPointerType::get(context);
    auto module = op->getParentOfType<ModuleOp>();
    auto failFn = LLVM::lookupOrCreateFn(
        rewriter, module, kAssertFunction,
        {ptrType, ptrType, i32, ptrType, i32, i32, i32, i32},
        LLVM::LLVMVoidType::get(context));
    if (failed(failFn))
      return failure();
    Value message = createGlobalCString(rewriter, loc, op, op.getMessage());
    Value file = createGlobalCString(rewriter, loc, op, op.getFile());
    Value function = createGlobalCString(rewriter, loc, op, op.getFunction());
    Value conds = asVector(rewriter, loc, adaptor.getCond());
    int64_t lanes = cast<VectorType>(conds.getType()).getNumElements();
    Type condType = op.getCond().getType();
    int32_t line = op.getLine();
    // Lanes whose condition holds are skipped.
    emitForEachLane(rewriter, loc, lanes, conds, [&](OpBuilder &b, Value lane) {
      SmallVector<Value> args{message, file, createI32Constant(b, loc, line), function};
      args.append(laneCoordinates(b, loc, condType, lane));
      LLVM::CallOp::create(b, loc, *failFn, args);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::kiln::populateDebugOpToLLVMCPUPatterns(const LLVMTypeConverter &converter,
                                                  RewritePatternSet &patterns) {
  patterns.add<PrintLowering, AssertLowering>(converter);
}
