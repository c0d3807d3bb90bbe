//===- AsyncDots.cpp - Keep a loop's wgmma dots in flight ------------------===//
//
// Implements kiln-gpu-async-dots (see Passes.td). Unrolling by two gives
// each dot of the loop a fixed half of the scratch: consecutive dots then
// never share operand tiles, so a dot only has to wait for the group before
// the previous one to be done with its half. The accumulator registers of
// an in-flight group are only ever read by the next wgmma (which chains on
// them) or by the wait after the loop.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"
#include "kiln/Target/NVIDIA/TensorCores.h"

#include "LoopUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUASYNCDOTS
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;
using namespace mlir::kiln::nvidia;

namespace {

struct KilnGPUAsyncDots : public gpu::impl::KilnGPUAsyncDotsBase<KilnGPUAsyncDots> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (numStages < 3 || !hasWarpgroupMma(module))
      return;
    int numWarps = getNumWarps(module), threadsPerWarp = getThreadsPerWarp(module);
    SmallVector<scf::ForOp> loops;
    module.walk([&](scf::ForOp loop) {
      // A dot that reads a slot of kiln-gpu-pipeline-loads is left as that
      // pass made it: asynchronous where both operands are in slots, which
      // it sized for that; synchronous otherwise, since with two
      // warpgroups a slot is refilled while the other warpgroup's dot of
      // the previous iteration may still read it.
      DotOp dot = getAccumulatingDot(loop, numWarps, threadsPerWarp);
      bool readsSlot = dot && (dot.getA().getDefiningOp<SharedOperandOp>() ||
                               dot.getB().getDefiningOp<SharedOperandOp>());
      if (dot && !dot->hasAttr(kWgmmaBufferAttr) && !readsSlot)
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops) {
      FailureOr<UnrolledLoopInfo> unrolled = loopUnrollByFactor(
          loop, 2, [](unsigned iteration, Operation *op, OpBuilder builder) {
            if (isa<DotOp>(op))
              op->setAttr(kWgmmaBufferAttr, builder.getI32IntegerAttr(iteration % 2));
          });
      if (failed(unrolled))
        continue;
      // The loops left: the unrolled one and, when the trip count may be
      // odd, one more for the last iteration (after a buffer-1 dot: buffer 0).
      for (std::optional<scf::ForOp> part : {unrolled->mainLoopOp, unrolled->epilogueLoopOp}) {
        if (!part)
          continue;
        DotOp last;
        part->getBody()->walk([&](DotOp dot) {
          if (!dot->hasAttr(kWgmmaBufferAttr))
            dot->setAttr(kWgmmaBufferAttr, OpBuilder(dot).getI32IntegerAttr(0));
          last = dot;
        });
        // The accumulator is the one the last dot yields.
        unsigned index = 0;
        for (OpOperand &use : last.getResult().getUses())
          if (isa<scf::YieldOp>(use.getOwner()))
            index = use.getOperandNumber();
        OpBuilder builder(*part);
        builder.setInsertionPointAfter(*part);
        readThroughWait(builder, part->getLoc(), part->getResult(index));
      }
    }
  }
};

} // namespace
