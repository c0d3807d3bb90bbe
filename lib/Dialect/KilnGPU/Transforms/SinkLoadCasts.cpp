//===- SinkLoadCasts.cpp - Casts of loaded blocks moved to their use -------===//
//
// Implements kiln-gpu-sink-load-casts (see Passes.td): the loads of a
// block issue back to back, their conversions follow where the converted
// values are first used.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"

#include "LoopUtils.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUSINKLOADCASTS
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// Whether `op` is a pure one-operand cast whose operand is a loaded
/// block, directly or through other such casts.
bool isCastOfLoad(Operation *op) {
  if (!isa<CastOpInterface>(op) || op->getNumOperands() != 1 || op->getNumResults() != 1 ||
      !isMemoryEffectFree(op))
    return false;
  Operation *source = op->getOperand(0).getDefiningOp();
  return source && (isa<LoadOp>(source) || isCastOfLoad(source));
}

void sinkCasts(Block &block) {
  // Last first: a cast of a cast then moves before the cast it feeds, once
  // that one has moved.
  SmallVector<Operation *> casts;
  for (Operation &op : block)
    if (isCastOfLoad(&op))
      casts.push_back(&op);
  for (Operation *cast : llvm::reverse(casts)) {
    Operation *user = getFirstUserInBlock(cast, block);
    if (user && user != cast->getNextNode())
      cast->moveBefore(user);
  }
}

struct SinkLoadCastsPass : public gpu::impl::KilnGPUSinkLoadCastsBase<SinkLoadCastsPass> {
  void runOnOperation() override {
    getOperation()->walk([](Block *block) { sinkCasts(*block); });
  }
};

} // namespace
