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
#include "llvm/Support/FormatVariadic.h"

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

/// Pointers and addresses: LLVM's ptrtoint and inttoptr, element-wise on
/// the vectors blocks become. A pointer cast is no instruction: LLVM's
/// pointers are opaque, and the verifier keeps the address space.
template <typename KilnOp, typename LLVMOp>
struct AddressCastLowering : public ConvertOpToLLVMPattern<KilnOp> {
  using ConvertOpToLLVMPattern<KilnOp>::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(KilnOp op, typename KilnOp::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type resultType = this->getTypeConverter()->convertType(op.getType());
    if (!resultType)
      return rewriter.notifyMatchFailure(op, "unconvertible type");
    rewriter.replaceOpWithNewOp<LLVMOp>(op, resultType, adaptor.getSrc());
    return success();
  }
};

struct PtrBitcastOpLowering : public ConvertOpToLLVMPattern<PtrBitcastOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(PtrBitcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getSrc());
    return success();
  }
};

} // namespace

void mlir::kiln::populateSplatAndAddPtrToLLVMPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<SplatOpLowering, AddPtrOpLowering>(converter);
}

void mlir::kiln::populatePointerCastToLLVMPatterns(const LLVMTypeConverter &converter,
                                                   RewritePatternSet &patterns) {
  patterns.add<AddressCastLowering<PtrToIntOp, LLVM::PtrToIntOp>,
               AddressCastLowering<IntToPtrOp, LLVM::IntToPtrOp>,
               PtrBitcastOpLowering>(converter);
}

FailureOr<SmallVector<Value>> mlir::kiln::emitCombine(Operation *op,
                                                      OpBuilder &builder,
                                                      ValueRange accumulated,
                                                      ValueRange next,
                                                      Value active) {
  Region &region = op->getRegion(0);
  if (!region.hasOneBlock())
    return op->emitOpError("with control flow in its combine function is not "
                           "supported; use kl.where instead of if"),
           failure();
  Block &block = region.front();
  auto vectorType = dyn_cast<VectorType>(accumulated.front().getType());
  Location loc = op->getLoc();
  auto vectorize = [&](Value value) -> Value {
    if (!vectorType || isa<VectorType>(value.getType()))
      return value;
    return splatVector(builder, loc,
                       VectorType::get(vectorType.getShape(), value.getType()),
                       value);
  };

  IRMapping mapping;
  unsigned n = accumulated.size();
  for (unsigned i = 0; i < n; ++i) {
    mapping.map(block.getArgument(i), accumulated[i]);
    mapping.map(block.getArgument(n + i), next[i]);
  }
  for (Operation &inner : block.without_terminator()) {
    if (inner.getNumRegions() != 0)
      return inner.emitOpError("in a combine function is not supported"),
             failure();
    SmallVector<Value> operands;
    bool onVectors = false;
    for (Value operand : inner.getOperands()) {
      operands.push_back(mapping.lookupOrDefault(operand));
      onVectors |= isa<VectorType>(operands.back().getType());
    }
    // Splats go before the clone that uses them.
    if (onVectors)
      for (Value &operand : operands)
        operand = vectorize(operand);
    Operation *clone = builder.clone(inner, mapping);
    if (onVectors) {
      clone->setOperands(operands);
      for (Value result : clone->getResults())
        result.setType(VectorType::get(vectorType.getShape(), result.getType()));
    }
    if (auto check = dyn_cast<AssertOp>(clone)) {
      // The values a thread combines are its own, not copies of one value:
      // every thread checks them.
      check->setAttr(kPerThreadAssertAttr, builder.getUnitAttr());
      // A combine computed where its result is not used (a scan step
      // before the lane's first partner) must not report its inputs.
      if (active && !onVectors) {
        OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPoint(clone);
        Value inactive = LLVM::XOrOp::create(
            builder, loc, active,
            LLVM::ConstantOp::create(builder, loc, builder.getI1Type(),
                                     builder.getBoolAttr(true)));
        check.getCondMutable().assign(
            LLVM::OrOp::create(builder, loc, check.getCond(), inactive));
      }
    }
  }
  SmallVector<Value> results;
  for (Value returned : block.getTerminator()->getOperands())
    results.push_back(vectorize(mapping.lookupOrDefault(returned)));
  return results;
}

namespace {

struct AxisHintOpLowering : public ConvertOpToLLVMPattern<AxisHintOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(AxisHintOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getSrc());
    return success();
  }
};

struct AssumeOpLowering : public ConvertOpToLLVMPattern<AssumeOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(AssumeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::kiln::populateHintOpToLLVMPatterns(const LLVMTypeConverter &converter,
                                              RewritePatternSet &patterns) {
  patterns.add<AxisHintOpLowering, AssumeOpLowering>(converter);
}

Value mlir::kiln::createGlobalCString(OpBuilder &builder, Location loc,
                                      Operation *op, StringRef text) {
  auto module = op->getParentOfType<ModuleOp>();
  std::string value = text.str();
  value.push_back('\0');
  // One global per distinct text: an assert in a reduction's combine
  // function is lowered once per combining step, all with the same strings.
  LLVM::GlobalOp global;
  for (auto existing : module.getOps<LLVM::GlobalOp>()) {
    auto contents = dyn_cast_or_null<StringAttr>(existing.getValueOrNull());
    if (existing.getSymName().starts_with("kiln_debug_string_") && contents &&
        contents.getValue() == value) {
      global = existing;
      break;
    }
  }
  if (!global) {
    std::string name;
    for (unsigned n = 0;; ++n) {
      name = llvm::formatv("kiln_debug_string_{0}", n).str();
      if (!module.lookupSymbol(name))
        break;
    }
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    auto type = LLVM::LLVMArrayType::get(builder.getI8Type(), value.size());
    // The global takes the module's location, not the op's: the op's may be
    // a call site (an assert in an inlined jit function), and the
    // debug-info pass scopes call-site locations in their enclosing
    // function, which a module-level global does not have.
    global = LLVM::GlobalOp::create(builder, module.getLoc(), type,
                                    /*isConstant=*/true,
                                    LLVM::Linkage::Internal, name,
                                    builder.getStringAttr(value));
  }
  return LLVM::AddressOfOp::create(builder, loc, global);
}
