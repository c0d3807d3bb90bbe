//===- Float8ConversionToLLVM.cpp - f32 -> fp8 in one instruction per pair -===//
//
// Lowers kiln.f32_to_float8 on sm_90 and later: the elements a thread holds
// are rounded two at a time by NVVM's convert.f32x2.to.f8x2 (PTX's
// cvt.rn.satfinite.{e4m3,e5m2}x2.f32), whose results are the op's. Earlier
// chips never see the op: their pipeline expands it into integer ops
// (kiln-expand-float8-rounding).
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/LLVMCommon/VectorUtils.h"
#include "kiln/Target/NVIDIA/TensorCores.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

struct F32ToFloat8Lowering : public ConvertOpToLLVMPattern<F32ToFloat8Op> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(F32ToFloat8Op op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int capability = nvidia::getComputeCapability(op->getParentOfType<ModuleOp>());
    if (!nvidia::hasFloat8Conversions(capability))
      return op.emitOpError() << "has no instruction on sm_" << capability
                              << "; kiln-expand-float8-rounding expands it first";
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Type format = op.getFormat() == Float8Format::e4m3 ? Type(Float8E4M3FNType::get(context))
                                                       : Type(Float8E5M2Type::get(context));
    Type i8 = rewriter.getI8Type(), i16 = rewriter.getI16Type();
    // One conversion of a pair: `high` lands in the upper byte of the i16.
    auto convertPair = [&](Value high, Value low) -> Value {
      return NVVM::ConvertF32x2ToF8x2Op::create(rewriter, loc, i16, high, low,
                                                NVVM::FPRoundingMode::RN,
                                                NVVM::SaturationMode::SATFINITE,
                                                /*relu=*/false, format);
    };
    auto lowByte = [&](Value pair) { return LLVM::TruncOp::create(rewriter, loc, i8, pair); };
    auto highByte = [&](Value pair) {
      Value shifted = LLVM::LShrOp::create(rewriter, loc, pair,
                                           LLVM::ConstantOp::create(rewriter, loc, i16, 8));
      return LLVM::TruncOp::create(rewriter, loc, i8, shifted);
    };

    // A thread's elements (one for a scalar), two at a time; an odd count
    // converts its last element twice.
    SmallVector<Value> elements = unpackElements(rewriter, loc, adaptor.getSrc());
    SmallVector<Value> bytes;
    for (size_t i = 0; i < elements.size(); i += 2) {
      bool whole = i + 1 < elements.size();
      Value pair = convertPair(elements[whole ? i + 1 : i], elements[i]);
      bytes.push_back(lowByte(pair));
      if (whole)
        bytes.push_back(highByte(pair));
    }
    Value result = packElements(rewriter, loc, getTypeConverter()->convertType(op.getType()), bytes);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::kiln::gpu::populateFloat8ConversionToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                                        RewritePatternSet &patterns) {
  patterns.add<F32ToFloat8Lowering>(converter);
}
