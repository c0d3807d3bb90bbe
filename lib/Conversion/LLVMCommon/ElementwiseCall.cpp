//===- ElementwiseCall.cpp - Element-wise calls of scalar functions --------===//
//
// Implements per-element calls on the vectors that hold a block's elements,
// and the lowering of kiln.extern_elementwise built on them. LLVM's
// optimizer inlines the callee where its body is available (libdevice on
// the GPU); otherwise the calls stay and the JIT or linker resolves them.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/LLVMCommon/ElementwiseCall.h"

#include "kiln/Conversion/LLVMCommon/VectorUtils.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;

static Type scalarType(Type type) {
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.getElementType();
  return type;
}

FailureOr<Value> mlir::kiln::createElementwiseCall(OpBuilder &builder,
                                                   Operation *op,
                                                   StringRef symbol,
                                                   ValueRange operands,
                                                   Type resultType) {
  Location loc = op->getLoc();
  SmallVector<Type> argTypes;
  for (Value operand : operands)
    argTypes.push_back(scalarType(operand.getType()));
  auto functionType =
      LLVM::LLVMFunctionType::get(scalarType(resultType), argTypes);

  // One declaration per symbol, at the top of the module.
  auto module = op->getParentOfType<ModuleOp>();
  auto function = module.lookupSymbol<LLVM::LLVMFuncOp>(symbol);
  if (!function) {
    if (module.lookupSymbol(symbol))
      return op->emitOpError() << "cannot call '" << symbol
                               << "': the name is taken by another symbol";
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    function = LLVM::LLVMFuncOp::create(builder, loc, symbol, functionType);
  } else if (function.getFunctionType() != functionType) {
    return op->emitOpError()
           << "expected '" << symbol << "' to have type "
           << function.getFunctionType() << ", got " << functionType;
  }

  // Scalars call once; vectors call once per lane.
  SmallVector<SmallVector<Value>> lanes;
  for (Value operand : operands)
    lanes.push_back(unpackElements(builder, loc, operand));
  int64_t count = 1;
  if (auto vector = dyn_cast<VectorType>(resultType))
    count = vector.getNumElements();
  SmallVector<Value> results;
  for (int64_t i = 0; i < count; ++i) {
    SmallVector<Value> args;
    for (auto &elements : lanes)
      args.push_back(elements.size() == 1 ? elements[0] : elements[i]);
    results.push_back(
        LLVM::CallOp::create(builder, loc, function, args).getResult());
  }
  return packElements(builder, loc, resultType, results);
}

Value mlir::kiln::convertFloatElements(OpBuilder &builder, Location loc,
                                       Value value, Type element) {
  Type type = value.getType();
  Type from = scalarType(type);
  if (from == element)
    return value;
  Type target = element;
  if (auto vector = dyn_cast<VectorType>(type))
    target = VectorType::get(vector.getShape(), element);
  if (cast<FloatType>(element).getWidth() > cast<FloatType>(from).getWidth())
    return LLVM::FPExtOp::create(builder, loc, target, value);
  return LLVM::FPTruncOp::create(builder, loc, target, value);
}

namespace {

struct ExternElementwiseLowering
    : public ConvertOpToLLVMPattern<ExternElementwiseOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(ExternElementwiseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type resultType = getTypeConverter()->convertType(op.getType());
    if (!resultType)
      return rewriter.notifyMatchFailure(op, "result type does not convert");
    FailureOr<Value> result = createElementwiseCall(
        rewriter, op, op.getSymbol(), adaptor.getSrcs(), resultType);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, *result);
    return success();
  }
};

Type withElement(Type type, Type element) {
  if (auto vector = dyn_cast<VectorType>(type))
    return VectorType::get(vector.getShape(), element);
  return element;
}

/// One ScalarFunction: matches its op by name, so that one table serves
/// every op.
struct MathToCall : public ConversionPattern {
  MathToCall(const LLVMTypeConverter &converter, ScalarFunction function,
             PatternBenefit benefit)
      : ConversionPattern(converter, function.op, benefit,
                          &converter.getContext()),
        function(function) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op->getLoc();
    if (op->getNumResults() != 1)
      return rewriter.notifyMatchFailure(op, "expected one result");
    Type element = getElementTypeOrSelf(op->getResult(0).getType());
    Type resultType = getTypeConverter()->convertType(op->getResult(0).getType());
    if (!resultType)
      return rewriter.notifyMatchFailure(op, "result type does not convert");
    bool half = isa<Float16Type, BFloat16Type>(element);
    StringRef symbol = element.isF64()                ? function.f64
                       : element.isF32() || half ? function.f32
                                                      : StringRef();
    if (symbol.empty())
      return rewriter.notifyMatchFailure(op, "no function for this type");

    Type computeElement = half ? rewriter.getF32Type() : element;
    SmallVector<Value> args;
    for (Value operand : operands)
      args.push_back(convertFloatElements(rewriter, loc, operand, computeElement));
    if (function.scaleByLog2e && computeElement.isF32()) {
      Value log2e = LLVM::ConstantOp::create(
          rewriter, loc, computeElement,
          rewriter.getF32FloatAttr(1.4426950408889634f));
      if (auto vector = dyn_cast<VectorType>(args[0].getType()))
        log2e = splatVector(rewriter, loc, vector, log2e);
      args[0] = LLVM::FMulOp::create(rewriter, loc, args[0], log2e);
    }
    FailureOr<Value> result = createElementwiseCall(
        rewriter, op, symbol, args, withElement(resultType, computeElement));
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, convertFloatElements(rewriter, loc, *result,
                                                getElementTypeOrSelf(resultType)));
    return success();
  }

  ScalarFunction function;
};

} // namespace

void mlir::kiln::populateMathToCallPatterns(const LLVMTypeConverter &converter,
                                            RewritePatternSet &patterns,
                                            ArrayRef<ScalarFunction> functions,
                                            PatternBenefit benefit) {
  for (const ScalarFunction &function : functions)
    patterns.add<MathToCall>(converter, function, benefit);
}

void mlir::kiln::populateExternElementwiseToLLVMPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ExternElementwiseLowering>(converter);
}
