//===- PingPong.cpp - Consumer warpgroups take turns at the tensor cores ---===//
//
// Implements kiln-gpu-ping-pong (see Passes.td). In a warp-specialized
// attention loop each consumer warpgroup computes the scores of its own
// rows (the first dot), their softmax, then the second dot. Left to
// themselves the warpgroups drift into step and reach the tensor cores
// together, leaving them idle during the softmax; taking turns, one
// warpgroup's softmax runs while the other's dots do
// (FlashAttention-3's ping-pong scheduling).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"
#include "kiln/Target/NVIDIA/TensorCores.h"

#include "LoopUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUPINGPONG
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// Whether `loop` is a warp-specialized consumer loop (it releases the
/// slots the producer fills) with attention's chained dots, both
/// synchronous, the first reading both operands from slots. (A dot that
/// stored an operand into the scratch would meet the other warpgroup at a
/// CTA barrier between its turn and the next warpgroup's: a deadlock.)
std::optional<ChainedDots> getTurnDots(scf::ForOp loop, int numWarps, int threadsPerWarp) {
  bool releases = llvm::any_of(loop.getBody()->getOperations(),
                               [](Operation &op) { return isa<ReleaseSlotOp>(op); });
  if (!releases)
    return std::nullopt;
  std::optional<ChainedDots> dots = getChainedDots(loop, numWarps, threadsPerWarp);
  if (!dots || dots->first->hasAttr(kWgmmaBufferAttr) || dots->second->hasAttr(kWgmmaBufferAttr) ||
      !dots->first.getA().getDefiningOp<SharedOperandOp>() ||
      !dots->first.getB().getDefiningOp<SharedOperandOp>())
    return std::nullopt;
  return dots;
}

/// The first dot in turn: wait for the turn, issue the dot asynchronously,
/// pass the turn on, then wait for the dot.
void takeTurns(DotOp dot) {
  OpBuilder builder(dot);
  Location loc = dot.getLoc();
  AwaitTurnOp::create(builder, loc);
  dot->setAttr(kWgmmaBufferAttr, builder.getI32IntegerAttr(0));
  builder.setInsertionPointAfter(dot);
  PassTurnOp::create(builder, loc);
  Value result = dot.getResult();
  auto wait = AsyncDotWaitOp::create(builder, loc, result.getType(), result, /*pending=*/0);
  result.replaceAllUsesExcept(wait.getResult(), wait);
}

struct KilnGPUPingPong : public gpu::impl::KilnGPUPingPongBase<KilnGPUPingPong> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int numWarps = getNumWarps(module), threadsPerWarp = getThreadsPerWarp(module);
    if (!nvidia::hasWarpgroupMma(module) || numWarps < 8 || numWarps % 4)
      return;
    module.walk([&](FunctionOpInterface function) {
      Block &kernel = function.getFunctionBody().front();
      if (!llvm::any_of(kernel, [](Operation &op) { return isa<ProducerOp>(op); }))
        return;
      bool begun = false;
      for (Operation &op : kernel) {
        auto loop = dyn_cast<scf::ForOp>(op);
        if (!loop)
          continue;
        std::optional<ChainedDots> dots = getTurnDots(loop, numWarps, threadsPerWarp);
        if (!dots)
          continue;
        // One ring of turns for the kernel: a later loop goes on with it.
        if (!begun) {
          OpBuilder builder(loop);
          BeginTurnsOp::create(builder, loop.getLoc());
          begun = true;
        }
        takeTurns(dots->first);
      }
    });
  }
};

} // namespace
