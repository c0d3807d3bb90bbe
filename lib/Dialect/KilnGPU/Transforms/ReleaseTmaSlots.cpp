//===- ReleaseTmaSlots.cpp - A loop's slots released on mbarriers ---------===//
//
// Implements kiln-gpu-release-tma-slots (see Passes.td). A loop that
// kiln-gpu-pipeline-loads left with TMA copies, and that no producer
// warpgroup took over, waits at the top of each iteration for the slot's
// copies and then for every warp of the CTA: the barrier is what keeps the
// first warp, which issues the copies, from refilling a slot another warp
// still reads. Here each warp instead tells an "empty" mbarrier per slot
// when it is done with the slot, and only the first warp waits on it
// before copying into the slot again; the other warps never wait for each
// other in the loop. A loop whose threads copy with `cp.async` and arrive
// on the slots' mbarriers gets the same releases; there every thread
// copies, so every thread waits for the release before its copies.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"

#include "LoopUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPURELEASETMASLOTS
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// The warp whose lanes issue a TMA copy that names no warp.
constexpr int32_t kCopyingWarp = 0;

/// What the pass changes in a pipelined loop whose slots' copies complete
/// mbarriers.
struct SlotRing {
  scf::ForOp loop;
  InitTmaBarriersOp init;
  InvalTmaBarriersOp inval;
  /// The wait for the slot's copies at the top of the body.
  WaitTmaBarrierOp wait;
  /// The first of the body's copies, all into the same slot.
  Operation *firstCopy = nullptr;
  Value writeSlot;
  /// The predicates of the body's TMA copies (the first warp issues them
  /// where one holds); none where every thread copies (`cp.async`).
  SmallVector<Value> copyPredicates;
  /// The last op of the body that reads the slot the iteration waited for.
  Operation *lastReader = nullptr;
};

/// The slot `op` fills as one of the copies of a ring whose mbarriers are
/// at `barriers`, or null where it is none: a TMA copy (from the first
/// warp) in a ring of TMA copies; a `cp.async` copy of the threads' own, or
/// their arrival on the mbarrier, in a ring of thread copies.
Value getRingCopySlot(Operation *op, bool threadCopies, uint64_t barriers) {
  if (auto copy = dyn_cast<AsyncTmaCopyOp>(op))
    return !threadCopies && copy.getBarriers() == barriers && !copy.getWarp() ? copy.getSlot()
                                                                             : Value();
  if (!threadCopies)
    return {};
  if (auto copy = dyn_cast<AsyncCopyOp>(op))
    return copy.getSlot();
  if (auto copy = dyn_cast<AsyncCopyBlockOp>(op))
    return copy.getSlot();
  if (auto arrive = dyn_cast<AsyncCopyArriveOp>(op))
    return arrive.getBarriers() == barriers ? arrive.getSlot() : Value();
  return {};
}

/// The loop's ring, or failure when the loop is not one this pass handles:
/// its slots filled by TMA copies only (from the first warp), or by the
/// threads' `cp.async` copies arriving on the slots' mbarriers, waited for
/// with a CTA barrier, and read by synchronous dots (and block reads) only
/// (an asynchronous dot, or one run an iteration late, reads a slot past
/// its iteration).
FailureOr<SlotRing> matchSlotRing(scf::ForOp loop, DominanceInfo &dominance) {
  SlotRing ring;
  ring.loop = loop;
  Block *body = loop.getBody();
  ring.wait = dyn_cast<WaitTmaBarrierOp>(&body->front());
  if (!ring.wait || ring.wait.getPerThread() || loop->hasAttr(kOverlapDotsAttr))
    return failure();
  uint64_t barriers = ring.wait.getBarriers();
  bool threadCopies = ring.wait.getThreadCopies();
  bool other = false, arrives = false;
  loop.walk([&](Operation *op) {
    if (op == ring.wait)
      return;
    // (The thread copies' commit groups only matter to the wait after the
    // loop.)
    if (threadCopies && isa<AsyncCommitGroupOp>(op) && op->getBlock() == body)
      return;
    if (isa<AsyncTmaCopyOp, AsyncCopyOp, AsyncCopyBlockOp, AsyncCommitGroupOp, AsyncCopyArriveOp,
            AsyncWaitOp, WaitTmaBarrierOp, ReleaseSlotOp, AsyncDotWaitOp>(op)) {
      Value slot = getRingCopySlot(op, threadCopies, barriers);
      if (op->getBlock() != body || !slot || (ring.writeSlot && slot != ring.writeSlot)) {
        other = true;
        return;
      }
      ring.writeSlot = slot;
      arrives |= isa<AsyncCopyArriveOp>(op);
      if (!ring.firstCopy && !isa<AsyncCopyArriveOp>(op))
        ring.firstCopy = op;
      if (auto copy = dyn_cast<AsyncTmaCopyOp>(op))
        ring.copyPredicates.push_back(copy.getPred());
    } else if (isa<DotOp>(op) && op->hasAttr(kWgmmaBufferAttr)) {
      other = true;
    }
  });
  if (other || !ring.firstCopy || threadCopies != arrives)
    return failure();
  FailureOr<SlotReaders> readers = getSlotReaders(*body, ring.wait.getSlot());
  if (failed(readers) || !readers->count)
    return failure();
  ring.lastReader = readers->last;
  // The wait for the slot's release goes before the first copy: what it
  // needs must be there.
  if (!dominance.properlyDominates(ring.writeSlot, ring.firstCopy))
    return failure();
  for (Value predicate : ring.copyPredicates)
    if (!dominance.properlyDominates(predicate, ring.firstCopy))
      return failure();

  // The ring's mbarriers: initialized before the loop, invalidated after.
  for (Operation *op = loop->getPrevNode(); op && !ring.init; op = op->getPrevNode())
    if (auto init = dyn_cast<InitTmaBarriersOp>(op); init && init.getOffset() == barriers)
      ring.init = init;
  for (Operation *op = loop->getNextNode(); op && !ring.inval; op = op->getNextNode())
    if (auto inval = dyn_cast<InvalTmaBarriersOp>(op); inval && inval.getOffset() == barriers)
      ring.inval = inval;
  if (!ring.init || !ring.inval || ring.init.getAllWarps())
    return failure();
  return ring;
}

void releaseSlots(SlotRing &ring, int32_t numWarps) {
  scf::ForOp loop = ring.loop;
  Location loc = loop.getLoc();
  int32_t slots = ring.init.getCount();
  // After the slots' own ("full") mbarriers: one "empty" mbarrier a slot,
  // which every warp arrives on once it is done with the slot.
  int64_t emptyBarriers = ring.init.getOffset() + 8 * int64_t(slots);
  OpBuilder builder(ring.init->getContext());
  builder.setInsertionPointAfter(ring.init);
  InitTmaBarriersOp::create(builder, loc, emptyBarriers, slots, numWarps);
  builder.setInsertionPointAfter(ring.inval);
  InvalTmaBarriersOp::create(builder, loc, emptyBarriers, slots);

  // No CTA barrier after the wait for the slot's copies; the slot is
  // released after its last reader (a synchronous dot: its wgmma group
  // has read the slot when it returns; or a block read).
  ring.wait.setPerThread(true);
  Value readSlot = ring.wait.getSlot();
  builder.setInsertionPointAfter(ring.lastReader);
  ReleaseSlotOp::create(builder, loc, readSlot, emptyBarriers);

  // Before the copies into a slot, the warps that copy wait for the
  // release of the slot's previous fill. The fill the copies make is in
  // the read slot's round of the ring, or the next one when the write slot
  // is behind it (wrapped round); the k-th fill of a slot waits for the
  // phase of parity (k - 1) & 1, which for the first fill (parity 1) a
  // fresh mbarrier has already passed.
  builder.setInsertionPoint(ring.firstCopy);
  Value sameRound =
      arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ugt, ring.writeSlot, readSlot);
  Value parity = arith::XOrIOp::create(
      builder, loc, ring.wait.getPhase(),
      arith::ExtUIOp::create(builder, loc, builder.getI32Type(), sameRound));
  if (ring.copyPredicates.empty()) {
    // Every thread copies, also where the copies are masked off past the
    // loop's end (they still write zeros): every thread waits, always.
    WaitTmaBarrierOp::create(builder, loc, ring.writeSlot, parity, emptyBarriers,
                             /*perThread=*/true, /*warp=*/nullptr);
    return;
  }
  auto waits = scf::IfOp::create(builder, loc, anyOf(builder, loc, ring.copyPredicates),
                                 /*withElseRegion=*/false);
  builder.setInsertionPointToStart(waits.thenBlock());
  WaitTmaBarrierOp::create(builder, loc, ring.writeSlot, parity, emptyBarriers, /*perThread=*/true,
                           builder.getI32IntegerAttr(kCopyingWarp));
}

struct KilnGPUReleaseTmaSlots
    : public gpu::impl::KilnGPUReleaseTmaSlotsBase<KilnGPUReleaseTmaSlots> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int32_t numWarps = getNumWarps(module);
    DominanceInfo &dominance = getAnalysis<DominanceInfo>();
    SmallVector<SlotRing> rings;
    module.walk([&](scf::ForOp loop) {
      if (FailureOr<SlotRing> ring = matchSlotRing(loop, dominance); succeeded(ring))
        rings.push_back(*ring);
    });
    for (SlotRing &ring : rings)
      releaseSlots(ring, numWarps);
  }
};

} // namespace
