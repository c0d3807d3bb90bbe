//===- DebugOpToLLVM.cpp - Lower device prints and asserts to NVVM ---------===//
//
// kiln.print becomes one `vprintf` per element, called by the thread that
// owns the element (thread 0 for a scalar), so every element prints once;
// kiln.assert calls `__assertfail` with the assertion's message, file, line
// and function for each owned element that is false, which traps the
// kernel as CUDA's assert does.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// Per element of a value of `type` this thread holds: whether it prints or
/// asserts it (its owner; thread 0 for a scalar) and its coordinates.
struct Elements {
  SmallVector<Value> owner;                // i1 per element
  SmallVector<SmallVector<Value>> coords;  // i32 per dimension, per element
};

Elements getElements(OpBuilder &builder, Location loc, Type type, const LaunchShape &launch) {
  Elements result;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor) {
    Value tid = NVVM::ThreadIdXOp::create(builder, loc, builder.getI32Type());
    result.owner.push_back(LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::eq, tid,
                                                createI32Constant(builder, loc, 0)));
    result.coords.emplace_back();
    return result;
  }
  Value owner;
  SmallVector<Value> dims = emitBlockCoordinates(builder, loc, tensor, launch, &owner);
  SmallVector<SmallVector<Value>> perDim;
  for (Value d : dims)
    perDim.push_back(unpackElements(builder, loc, d));
  size_t count = perDim.front().size();
  SmallVector<Value> owners =
      owner ? unpackElements(builder, loc, owner)
            : SmallVector<Value>(count, LLVM::ConstantOp::create(builder, loc, builder.getI1Type(),
                                                                 builder.getBoolAttr(true)));
  for (size_t e = 0; e < count; ++e) {
    result.owner.push_back(owners[e]);
    SmallVector<Value> coords;
    for (auto &dim : perDim)
      coords.push_back(dim[e]);
    result.coords.push_back(coords);
  }
  return result;
}

struct PrintOpLowering : public ConvertOpToLLVMPattern<PrintOp> {
  PrintOpLowering(const LLVMTypeConverter &converter, LaunchShape launch)
      : ConvertOpToLLVMPattern(converter), launch(launch) {}

  LogicalResult
  matchAndRewrite(PrintOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = getContext();
    Type i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type();
    auto ptrType = LLVM::LLVMPointerType::get(context);
    auto module = op->getParentOfType<ModuleOp>();
    auto vprintf = LLVM::lookupOrCreateFn(rewriter, module, "vprintf", {ptrType, ptrType}, i32);
    if (failed(vprintf))
      return failure();
    Value pids[3] = {NVVM::BlockIdXOp::create(rewriter, loc, i32),
                     NVVM::BlockIdYOp::create(rewriter, loc, i32),
                     NVVM::BlockIdZOp::create(rewriter, loc, i32)};
    int64_t numOperands = op.getArgs().size();
    for (auto [k, pair] : llvm::enumerate(llvm::zip(op.getArgs(), adaptor.getArgs()))) {
      auto [original, converted] = pair;
      Type element = getElementTypeOrSelf(original.getType());
      bool isPointer = isa<PointerType>(element), isFloat = isa<FloatType>(element);
      bool isSigned = op.getIsSigned()[k] != 0 && !element.isInteger(1);
      bool wide = isPointer || isFloat || element.getIntOrFloatBitWidth() == 64;
      unsigned bits = isPointer ? 64 : element.getIntOrFloatBitWidth();
      std::string valueFormat;
      if (isFloat && !op.getHex())
        valueFormat = "%f";
      else if (op.getHex() || isPointer)
        valueFormat = llvm::formatv("0x%0{0}{1}x", bits / 4, wide ? "ll" : "").str();
      else
        valueFormat = std::string(wide ? "%ll" : "%") + (isSigned ? "d" : "u");
      Elements elements = getElements(rewriter, loc, original.getType(), launch);
      size_t rank = elements.coords.front().size();
      std::string index;
      for (size_t d = 0; d < rank; ++d)
        index += d ? ", %d" : "%d";
      std::string format = "pid (%d, %d, %d) idx (" + index + ") " + op.getPrefix().str() +
                           (numOperands > 1 ? llvm::formatv("(operand {0}) ", k).str() : "") +
                           valueFormat + "\n";
      Value formatString = createGlobalCString(rewriter, loc, op, format);
      Type valueType = isFloat && !op.getHex() ? Type(rewriter.getF64Type()) : wide ? i64 : i32;
      SmallVector<Type> fields(3 + rank, i32);
      fields.push_back(valueType);
      auto structType = LLVM::LLVMStructType::getLiteral(context, fields);
      SmallVector<Value> values = unpackElements(rewriter, loc, converted);
      for (size_t e = 0; e < values.size(); ++e) {
        emitIf(rewriter, loc, elements.owner[e], [&](OpBuilder &b) {
          Value v = values[e];
          if (isPointer)
            v = LLVM::PtrToIntOp::create(b, loc, i64, v);
          else if (isFloat && !op.getHex())
            v = v.getType().isF64() ? v : LLVM::FPExtOp::create(b, loc, b.getF64Type(), v);
          else if (isFloat)
            v = LLVM::BitcastOp::create(b, loc, b.getIntegerType(bits), v);
          if (isa<IntegerType>(v.getType()) && v.getType() != valueType)
            v = isSigned ? Value(LLVM::SExtOp::create(b, loc, valueType, v))
                         : Value(LLVM::ZExtOp::create(b, loc, valueType, v));
          Value one = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
          Value buffer = LLVM::AllocaOp::create(b, loc, ptrType, structType, one, 8);
          SmallVector<Value> args(pids, pids + 3);
          args.append(elements.coords[e]);
          args.push_back(v);
          for (auto [i, arg] : llvm::enumerate(args)) {
            Value field = LLVM::GEPOp::create(b, loc, ptrType, structType, buffer,
                                              ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
            LLVM::StoreOp::create(b, loc, arg, field);
          }
          LLVM::CallOp::create(b, loc, *vprintf, ValueRange{formatString, buffer});
        });
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
  LaunchShape launch;
};

struct AssertOpLowering : public ConvertOpToLLVMPattern<AssertOp> {
  AssertOpLowering(const LLVMTypeConverter &converter, LaunchShape launch)
      : ConvertOpToLLVMPattern(converter), launch(launch) {}

  LogicalResult
  matchAndRewrite(AssertOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = getContext();
    Type i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type();
    auto ptrType = LLVM::LLVMPointerType::get(context);
    auto module = op->getParentOfType<ModuleOp>();
    auto assertFail = LLVM::lookupOrCreateFn(rewriter, module, "__assertfail",
                                             {ptrType, ptrType, i32, ptrType, i64},
                                             LLVM::LLVMVoidType::get(context));
    if (failed(assertFail))
      return failure();
    Value message = createGlobalCString(rewriter, loc, op, op.getMessage());
    Value file = createGlobalCString(rewriter, loc, op, op.getFile());
    Value function = createGlobalCString(rewriter, loc, op, op.getFunction());
    Elements elements = getElements(rewriter, loc, op.getCond().getType(), launch);
    SmallVector<Value> conds = unpackElements(rewriter, loc, adaptor.getCond());
    Value trueValue = LLVM::ConstantOp::create(rewriter, loc, rewriter.getI1Type(),
                                               rewriter.getBoolAttr(true));
    for (size_t e = 0; e < conds.size(); ++e) {
      Value failed = LLVM::XOrOp::create(rewriter, loc, conds[e], trueValue);
      // An assert from a combine function checks on every thread (see
      // kPerThreadAssertAttr); otherwise the element's owner reports it.
      Value report = op->hasAttr(kPerThreadAssertAttr)
                         ? failed
                         : LLVM::AndOp::create(rewriter, loc, failed, elements.owner[e]);
      emitIf(rewriter, loc, report, [&](OpBuilder &b) {
        Value line = createI32Constant(b, loc, op.getLine());
        Value charSize = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
        LLVM::CallOp::create(b, loc, *assertFail,
                             ValueRange{message, file, line, function, charSize});
      });
    }
    rewriter.eraseOp(op);
    return success();
  }
  LaunchShape launch;
};

} // namespace

void mlir::kiln::gpu::populateDebugOpToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                                    RewritePatternSet &patterns,
                                                    const LaunchShape &launch) {
  patterns.add<PrintOpLowering, AssertOpLowering>(converter, launch);
}
