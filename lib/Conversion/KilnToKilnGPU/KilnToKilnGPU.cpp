//===- KilnToKilnGPU.cpp - Give kiln blocks default GPU layouts ------------===//
//
// Implements convert-kiln-to-kiln-gpu: every block gets the default blocked
// layout for the module's warps, and the module records its launch shape and
// target. The kiln ops themselves are unchanged: kiln_gpu is kiln with
// layouts.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_CONVERTKILNTOKILNGPU
#include "kiln/Conversion/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

struct ConvertKilnToKilnGPU
    : public kiln::impl::ConvertKilnToKilnGPUBase<ConvertKilnToKilnGPU> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    if (numWarps <= 0 || !llvm::isPowerOf2_32(numWarps)) {
      module.emitError() << "expected num_warps to be a power of two, got "
                         << int(numWarps);
      return signalPassFailure();
    }
    if (threadsPerWarp <= 0 || !llvm::isPowerOf2_32(threadsPerWarp)) {
      module.emitError() << "expected threads_per_warp to be a power of two, got "
                         << int(threadsPerWarp);
      return signalPassFailure();
    }
    auto targetAttr = gpu::TargetAttr::getFromName(context, target);
    if (!targetAttr) {
      module.emitError() << "expected an NVIDIA chip such as sm_80 or sm_90a, got '" << target
                         << "'";
      return signalPassFailure();
    }
    bool alreadyLaidOut = false;
    gpu::setBlockEncodings(module, [&](RankedTensorType type) -> Attribute {
      if (type.getEncoding()) {
        alreadyLaidOut = true;
        return {};
      }
      // Row-major: the last dimension varies fastest.
      SmallVector<unsigned> order;
      for (int64_t d = type.getRank() - 1; d >= 0; --d)
        order.push_back(d);
      return gpu::getDefaultBlockedEncoding(context, type.getShape(), order,
                                            /*sizePerThread=*/1, numWarps,
                                            threadsPerWarp);
    });
    if (alreadyLaidOut) {
      module.emitError() << "expected blocks without layouts; the module "
                            "already went through convert-kiln-to-kiln-gpu";
      return signalPassFailure();
    }
    Builder builder(context);
    module->setAttr(gpu::KilnGPUDialect::getNumWarpsAttrName(),
                    builder.getI32IntegerAttr(numWarps));
    module->setAttr(gpu::KilnGPUDialect::getThreadsPerWarpAttrName(),
                    builder.getI32IntegerAttr(threadsPerWarp));
    module->setAttr(gpu::KilnGPUDialect::getTargetAttrName(), targetAttr);
  }
};

} // namespace
