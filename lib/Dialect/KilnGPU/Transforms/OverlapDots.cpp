//===- OverlapDots.cpp - Run a loop's second dot an iteration late --------===//
//
// Implements kiln-gpu-overlap-dots (see Passes.td). In attention's loop the
// second dot (P V) needs the softmax of the first (Q K); run as written,
// the tensor cores idle during the softmax and the softmax waits for them.
// Rotated, iteration i issues the first dot of block i, then the second
// dot of block i - 1 (its operands, the probabilities and the rescaling
// factor, carried from the previous iteration), waits for the first dot
// only, and computes block i's softmax while the second dot runs.
//
// The rotated loop starts an iteration later: before it, the first part of
// iteration 0 (its first dot and softmax); after it, the second dot of the
// last block. Both sit, with the loop, in an scf.if on the loop running at
// all.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"

#include "LoopUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUOVERLAPDOTS
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// The ops that run an iteration late: the second dot, the chain from the
/// accumulator, and the shape changes and slot reads that only feed them
/// (recomputed from the carried values rather than carried themselves: a
/// broadcast row vector costs a register per element), and, in a
/// warp-specialized loop, the release of the slot (kiln_gpu.release_slot:
/// the second dot reads it).
llvm::SetVector<Operation *> getLateOps(scf::ForOp loop, ChainedDots &dots) {
  llvm::SetVector<Operation *> late;
  late.insert(dots.chain.begin(), dots.chain.end());
  late.insert(dots.second);
  Block *body = loop.getBody();
  for (Operation &op : *body)
    if (isa<ReleaseSlotOp>(op))
      late.insert(&op);
  for (size_t i = 0; i < late.size(); ++i)
    for (Value operand : late[i]->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (!producer || producer->getBlock() != body || late.contains(producer) ||
          !isa<ExpandDimsOp, BroadcastOp, SplatOp, SharedOperandOp>(producer))
        continue;
      if (llvm::all_of(producer->getUsers(), [&](Operation *user) { return late.contains(user); }))
        late.insert(producer);
    }
  // In body order, as they are cloned.
  SmallVector<Operation *> ordered = late.takeVector();
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return llvm::SetVector<Operation *>(ordered.begin(), ordered.end());
}

/// The values the late ops read from the rest of the iteration (including
/// the induction variable and carried values other than the accumulator):
/// the rotated loop carries them to the next iteration.
SmallVector<Value> getCrossingValues(scf::ForOp loop, const llvm::SetVector<Operation *> &late,
                                     BlockArgument acc) {
  llvm::SetVector<Value> crossing;
  Block *body = loop.getBody();
  for (Operation *op : late)
    for (Value operand : op->getOperands()) {
      if (operand == acc)
        continue;
      Operation *producer = operand.getDefiningOp();
      bool fromBody = producer ? producer->getBlock() == body
                               : cast<BlockArgument>(operand).getOwner() == body;
      if (fromBody && !(producer && late.contains(producer)))
        crossing.insert(operand);
    }
  return crossing.takeVector();
}

void overlap(scf::ForOp loop, ChainedDots &dots) {
  Block *body = loop.getBody();
  Operation *yield = body->getTerminator();
  BlockArgument acc = loop.getRegionIterArgs()[dots.accIndex];
  llvm::SetVector<Operation *> late = getLateOps(loop, dots);
  SmallVector<Value> crossing = getCrossingValues(loop, late, acc);
  Location loc = loop.getLoc();
  OpBuilder builder(loop);
  unsigned numCarried = loop.getNumRegionIterArgs();

  // Everything happens only when the loop runs at all.
  Value runs = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt,
                                     loop.getLowerBound(), loop.getUpperBound());
  auto ifOp = scf::IfOp::create(builder, loc, loop.getResultTypes(), runs, /*withElse=*/true);
  builder.setInsertionPointToStart(&ifOp.getElseRegion().front());
  scf::YieldOp::create(builder, loc, loop.getInitArgs());
  builder.setInsertionPointToStart(&ifOp.getThenRegion().front());

  // Iteration 0 without its late ops.
  IRMapping first;
  first.map(loop.getInductionVar(), loop.getLowerBound());
  for (auto [arg, init] : llvm::zip(loop.getRegionIterArgs(), loop.getInitArgs()))
    first.map(arg, init);
  for (Operation &op : body->without_terminator())
    if (!late.contains(&op))
      builder.clone(op, first);

  // The rotated loop, from iteration 1, carrying the crossing values too.
  SmallVector<Value> inits;
  for (unsigned i = 0; i < numCarried; ++i)
    inits.push_back(i == dots.accIndex ? loop.getInitArgs()[i]
                                       : first.lookupOrDefault(yield->getOperand(i)));
  for (Value value : crossing)
    inits.push_back(first.lookupOrDefault(value));
  Value start = arith::AddIOp::create(builder, loc, loop.getLowerBound(), loop.getStep());
  auto rotated = scf::ForOp::create(builder, loc, start, loop.getUpperBound(), loop.getStep(),
                                    inits);
  for (NamedAttribute attr : loop->getDiscardableAttrs())
    if (attr.getName() != kOverlapDotsAttr)
      rotated->setAttr(attr.getName(), attr.getValue());
  Block *newBody = rotated.getBody();
  OpBuilder inner = OpBuilder::atBlockBegin(newBody);
  IRMapping current, previous;
  current.map(loop.getInductionVar(), rotated.getInductionVar());
  for (unsigned i = 0; i < numCarried; ++i)
    current.map(loop.getRegionIterArgs()[i], rotated.getRegionIterArgs()[i]);
  previous.map(acc, rotated.getRegionIterArgs()[dots.accIndex]);
  for (auto [i, value] : llvm::enumerate(crossing))
    previous.map(value, rotated.getRegionIterArgs()[numCarried + i]);
  Operation *firstDot = nullptr, *secondDot = nullptr;
  for (Operation &op : body->without_terminator()) {
    if (late.contains(&op))
      continue;
    Operation *clone = inner.clone(op, current);
    if (&op != dots.first.getOperation())
      continue;
    // The previous block's late ops right after this block's first dot:
    // both dots are in flight during the softmax.
    firstDot = clone;
    for (Operation *lateOp : late) {
      if (isa<ReleaseSlotOp>(lateOp))
        continue;  // once the second dot is done (below)
      Operation *lateClone = inner.clone(*lateOp, previous);
      if (lateOp == dots.second.getOperation())
        secondDot = lateClone;
    }
    // The softmax reads the first dot's result once its group is done;
    // the second dot's group may still run.
    Value scores = firstDot->getResult(0);
    auto wait = AsyncDotWaitOp::create(inner, loc, scores.getType(), scores, /*pending=*/1);
    current.map(dots.first.getResult(), wait.getResult());
  }
  firstDot->setAttr(kWgmmaBufferAttr, inner.getI32IntegerAttr(0));
  secondDot->setAttr(kWgmmaBufferAttr, inner.getI32IntegerAttr(0));
  // The accumulator leaves the iteration complete.
  Value accumulated = AsyncDotWaitOp::create(inner, loc, secondDot->getResult(0).getType(),
                                             secondDot->getResult(0), /*pending=*/0);
  // The previous block's slot is read: the producer may refill it.
  for (Operation *lateOp : late)
    if (isa<ReleaseSlotOp>(lateOp))
      inner.clone(*lateOp, previous);
  SmallVector<Value> yielded;
  for (unsigned i = 0; i < numCarried; ++i)
    yielded.push_back(i == dots.accIndex ? accumulated
                                         : current.lookupOrDefault(yield->getOperand(i)));
  for (Value value : crossing)
    yielded.push_back(current.lookupOrDefault(value));
  scf::YieldOp::create(inner, loc, yielded);

  // The last block's late ops.
  IRMapping last;
  last.map(acc, rotated.getResult(dots.accIndex));
  for (auto [i, value] : llvm::enumerate(crossing))
    last.map(value, rotated.getResult(numCarried + i));
  for (Operation *lateOp : late)
    builder.clone(*lateOp, last);
  SmallVector<Value> results(rotated.getResults().take_front(numCarried));
  results[dots.accIndex] = last.lookup(dots.second.getResult());
  scf::YieldOp::create(builder, loc, results);

  loop.replaceAllUsesWith(ifOp.getResults());
  loop.erase();
}

struct KilnGPUOverlapDots : public gpu::impl::KilnGPUOverlapDotsBase<KilnGPUOverlapDots> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int numWarps = getNumWarps(module), threadsPerWarp = getThreadsPerWarp(module);
    SmallVector<scf::ForOp> loops;
    module.walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kOverlapDotsAttr))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops) {
      loop->removeAttr(kOverlapDotsAttr);
      if (std::optional<ChainedDots> dots = getChainedDots(loop, numWarps, threadsPerWarp))
        overlap(loop, *dots);
    }
  }
};

} // namespace
