//===- InlineAsmToLLVM.cpp - Lower kiln.elementwise_inline_asm to PTX -----===//
//
// Implements the lowering of kiln.elementwise_inline_asm: each thread runs
// the text once per group of `packed_element` consecutive elements it holds,
// as one llvm.inline_asm. Elements narrower than 32 bits travel packed into
// registers of up to 32 bits (four i8 or two f16 in one `r` register);
// pointers travel as 64-bit integers. When a thread holds a number of
// elements that is not a multiple of the group size, its last group repeats
// its last element, and the repeated results are dropped.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// How the elements of one operand or result fill the registers of a run:
/// `perRegister` elements of `element` in each register of `registerType`.
struct RegisterPacking {
  Type element;
  Type registerType;
  int64_t perRegister;
};

/// Packing of `element` (an LLVM scalar type) for runs of `pack` elements.
RegisterPacking getRegisterPacking(OpBuilder &builder, Type element,
                                   int64_t pack) {
  if (isa<LLVM::LLVMPointerType>(element))
    return {builder.getI64Type(), builder.getI64Type(), 1};
  unsigned width = element.getIntOrFloatBitWidth();
  if (width >= 32 || pack == 1)
    return {element, element, 1};
  int64_t perRegister = std::min<int64_t>(32 / width, pack);
  return {element, builder.getIntegerType(width * perRegister), perRegister};
}

struct ElementwiseInlineAsmLowering
    : public ConvertOpToLLVMPattern<ElementwiseInlineAsmOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(ElementwiseInlineAsmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t pack = op.getPackedElement();

    // Operands and results share one layout, so element i of each thread's
    // vector is the same element of the block in every one of them.
    Attribute encoding;
    SmallVector<Type> types(op.getArgs().getTypes());
    llvm::append_range(types, op.getResultTypes());
    for (Type type : types) {
      auto block = dyn_cast<RankedTensorType>(type);
      if (!block)
        continue;
      if (encoding && block.getEncoding() != encoding)
        return op.emitOpError() << "expected operands and results of one "
                                   "layout, got "
                                << block.getEncoding() << " and " << encoding;
      encoding = block.getEncoding();
    }

    SmallVector<Type> resultTypes;
    for (Type type : op.getResultTypes()) {
      Type converted = getTypeConverter()->convertType(type);
      if (!converted)
        return rewriter.notifyMatchFailure(op, "result type does not convert");
      resultTypes.push_back(converted);
    }
    int64_t count = 1;
    if (auto vector = dyn_cast<VectorType>(resultTypes.front()))
      count = vector.getNumElements();

    SmallVector<SmallVector<Value>> operandElements;
    SmallVector<RegisterPacking> operandPacking;
    for (Value operand : adaptor.getArgs()) {
      SmallVector<Value> elements = unpackElements(rewriter, loc, operand);
      RegisterPacking packing =
          getRegisterPacking(rewriter, elements.front().getType(), pack);
      if (isa<LLVM::LLVMPointerType>(elements.front().getType()))
        for (Value &element : elements)
          element = LLVM::PtrToIntOp::create(rewriter, loc,
                                             rewriter.getI64Type(), element);
      operandElements.push_back(std::move(elements));
      operandPacking.push_back(packing);
    }
    SmallVector<RegisterPacking> resultPacking;
    SmallVector<Type> registerTypes;
    for (Type type : resultTypes) {
      RegisterPacking packing =
          getRegisterPacking(rewriter, getElementTypeOrSelf(type), pack);
      resultPacking.push_back(packing);
      registerTypes.append(pack / packing.perRegister, packing.registerType);
    }
    Type asmResultType =
        registerTypes.size() == 1
            ? registerTypes.front()
            : LLVM::LLVMStructType::getLiteral(getContext(), registerTypes);

    // One run per group of `pack` elements; a short last group repeats the
    // thread's last element.
    SmallVector<SmallVector<Value>> resultElements(resultTypes.size());
    for (int64_t start = 0; start < count; start += pack) {
      auto elementAt = [&](ArrayRef<Value> elements, int64_t offset) {
        return elements[std::min(start + offset, count - 1)];
      };
      SmallVector<Value> registers;
      for (auto [elements, packing] :
           llvm::zip(operandElements, operandPacking)) {
        for (int64_t offset = 0; offset < pack; offset += packing.perRegister) {
          if (packing.perRegister == 1) {
            registers.push_back(elementAt(elements, offset));
            continue;
          }
          SmallVector<Value> lanes;
          for (int64_t lane = 0; lane < packing.perRegister; ++lane)
            lanes.push_back(elementAt(elements, offset + lane));
          auto laneType = VectorType::get(packing.perRegister, packing.element);
          Value vector = packElements(rewriter, loc, laneType, lanes);
          registers.push_back(LLVM::BitcastOp::create(
              rewriter, loc, packing.registerType, vector));
        }
      }
      Value asmResult =
          createInlineAsm(rewriter, loc, /*hasSideEffects=*/!op.getPure(),
                          asmResultType, registers, op.getAsmString(),
                          op.getConstraints());
      int64_t index = 0;
      for (auto [results, packing] : llvm::zip(resultElements, resultPacking)) {
        for (int64_t offset = 0; offset < pack; offset += packing.perRegister) {
          Value reg = registerTypes.size() == 1
                          ? asmResult
                          : LLVM::ExtractValueOp::create(rewriter, loc,
                                                         asmResult, index);
          ++index;
          SmallVector<Value> lanes{reg};
          if (packing.perRegister > 1) {
            auto laneType =
                VectorType::get(packing.perRegister, packing.element);
            lanes = unpackElements(
                rewriter, loc,
                LLVM::BitcastOp::create(rewriter, loc, laneType, reg));
          }
          for (Value lane : lanes)
            if (int64_t(results.size()) < count)
              results.push_back(lane);
        }
      }
    }

    SmallVector<Value> replacements;
    for (auto [type, results] : llvm::zip(resultTypes, resultElements))
      replacements.push_back(packElements(rewriter, loc, type, results));
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

} // namespace

void mlir::kiln::gpu::populateInlineAsmToLLVMPatterns(
    KilnGPUToNVVMTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ElementwiseInlineAsmLowering>(converter);
}
