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

/// Whether `dot` stores no operand into the scratch, whose CTA barriers
/// inside a turn the other warpgroup, waiting for its turn, would never
/// meet: a deadlock.
bool storesNoOperand(DotOp dot, int numWarps, int threadsPerWarp) {
  return !nvidia::storesAInScratch(dot, numWarps, threadsPerWarp) && !nvidia::storesBInScratch(dot);
}

/// The dots a warpgroup issues in its turn, in a warp-specialized
/// consumer loop (one that releases the slots the producer fills) of
/// attention: the first dot, synchronous (it becomes asynchronous); or,
/// in a loop that kiln-gpu-overlap-dots rotated, both asynchronous dots,
/// the first one's wait (one group pending) right after the second.
struct Turn {
  DotOp first, last;
  bool rotated;
};

std::optional<Turn> getTurn(scf::ForOp loop, int numWarps, int threadsPerWarp) {
  Block *body = loop.getBody();
  bool releases = llvm::any_of(*body, [](Operation &op) { return isa<ReleaseSlotOp>(op); });
  SmallVector<DotOp> dots(body->getOps<DotOp>());
  if (!releases || dots.size() != 2 ||
      !llvm::all_of(dots, [&](DotOp dot) { return storesNoOperand(dot, numWarps, threadsPerWarp); }))
    return std::nullopt;
  DotOp first = dots[0], second = dots[1];
  bool firstAsync = first->hasAttr(kWgmmaBufferAttr), secondAsync = second->hasAttr(kWgmmaBufferAttr);
  if (!firstAsync && !secondAsync) {
    std::optional<ChainedDots> chained = getChainedDots(loop, numWarps, threadsPerWarp);
    if (!chained || chained->first != first)
      return std::nullopt;
    return Turn{first, first, /*rotated=*/false};
  }
  auto wait = dyn_cast_or_null<AsyncDotWaitOp>(second->getNextNode());
  if (firstAsync && secondAsync && wait && wait.getSrc() == first.getResult() && wait.getPending() == 1)
    return Turn{first, second, /*rotated=*/true};
  return std::nullopt;
}

/// The warpgroup waits for its turn, issues its dots, passes the turn on,
/// and only then waits for the first one.
void takeTurns(Turn turn) {
  OpBuilder builder(turn.first);
  Location loc = turn.first.getLoc();
  AwaitTurnOp::create(builder, loc);
  builder.setInsertionPointAfter(turn.last);
  PassTurnOp::create(builder, loc);
  if (turn.rotated)
    return;  // its wait follows
  turn.first->setAttr(kWgmmaBufferAttr, builder.getI32IntegerAttr(0));
  readThroughWait(builder, loc, turn.first.getResult());
}

struct KilnGPUPingPong : public gpu::impl::KilnGPUPingPongBase<KilnGPUPingPong> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int numWarps = getNumWarps(module), threadsPerWarp = getThreadsPerWarp(module);
    if (!nvidia::hasWarpgroupMma(module) || !hasSeveralWarpgroups(numWarps))
      return;
    module.walk([&](FunctionOpInterface function) {
      Block &kernel = function.getFunctionBody().front();
      auto producer = llvm::find_if(kernel, [](Operation &op) { return isa<ProducerOp>(op); });
      if (producer == kernel.end())
        return;
      SmallVector<Turn> turns;
      function.walk([&](scf::ForOp loop) {
        if (std::optional<Turn> turn = getTurn(loop, numWarps, threadsPerWarp))
          turns.push_back(*turn);
      });
      if (turns.empty())
        return;
      // One ring of turns for the kernel, begun as the consumers' code
      // starts: every loop goes on with it.
      OpBuilder builder(&kernel, std::next(producer));
      BeginTurnsOp::create(builder, producer->getLoc());
      for (Turn turn : turns)
        takeTurns(turn);
    });
  }
};

} // namespace
