//===- NameConsumerBarriers.cpp - Barriers of the consumer warps only -----===//
//
// Implements kiln-nvvm-name-consumer-barriers (see Passes.td). A
// warp-specialized kernel's producer warps leave the kernel's code at the
// branch that convert-kiln-gpu-to-nvvm put first in it; every CTA barrier
// after it is met by the consumer warps alone, and so must count them
// alone.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNNVVMNAMECONSUMERBARRIERS
#include "kiln/Conversion/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

struct KilnNVVMNameConsumerBarriers
    : public kiln::impl::KilnNVVMNameConsumerBarriersBase<KilnNVVMNameConsumerBarriers> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!module->hasAttr(KilnGPUDialect::getProducerWarpsAttrName()))
      return;
    int32_t consumerThreads = getNumWarps(module) * getThreadsPerWarp(module);
    SmallVector<NVVM::Barrier0Op> barriers;
    module.walk([&](NVVM::Barrier0Op barrier) { barriers.push_back(barrier); });
    for (NVVM::Barrier0Op barrier : barriers) {
      OpBuilder builder(barrier);
      Location loc = barrier.getLoc();
      NVVM::BarrierOp::create(builder, loc, Type(), createI32Constant(builder, loc, kConsumerBarrier),
                              createI32Constant(builder, loc, consumerThreads),
                              NVVM::BarrierReductionAttr(), Value());
      barrier.erase();
    }
  }
};

} // namespace
