//===- AllocateSharedMemory.cpp - Placing the scratch and pipeline slots --===//
//
// Implements kiln-gpu-allocate-shared-memory. A kernel's shared memory holds two kinds of buffers. The scratch serves
// the ops that need one (layout conversions, reductions across warps, dots
// with operands in registers...), one op at a time: each use starts with a
// barrier, so they all share offset 0. The pipeline slots of a loop
// (kiln-gpu-pipeline-loads) are live from the first copy before the loop
// to the kiln_gpu.async_wait that drains the copies after it, while ops in
// the loop use the scratch as well. Placement by liveness: the slots follow
// the largest scratch used while they are live, and scratch users outside
// every such span (an epilogue's layout conversion, a reduction before the
// loop) may reuse the slots' bytes; a span goes on past its copies' drain
// while a later op reads a slot it filled (a block copied once for two
// loops). The pass records the result as module
// attributes, which convert-kiln-gpu-to-nvvm reads: `kiln_gpu.shared` (bytes
// in all) and, when there are slots, `kiln_gpu.pipeline_offset` (where they
// start).
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGPUALLOCATESHAREDMEMORY
#include "kiln/Conversion/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// The first op of each span during which pipeline slots are live, and
/// every op (nested ones included) inside such a span.
struct SlotSpans {
  SmallVector<Operation *> starts;
  llvm::DenseSet<Operation *> inside;
};

/// Whether no copy is in flight after `op`, as far as cp.async goes: the
/// TMA unit's copies are drained only where their mbarriers are
/// invalidated (findSlotSpans counts those).
bool drainsCopies(Operation *op) {
  if (isa<InvalTmaBarriersOp>(op))
    return true;
  auto wait = dyn_cast<AsyncWaitOp>(op);
  return wait && wait.getPending() == 0;
}

/// The first op that writes a span's slots (or, for TMA copies, their
/// mbarriers).
bool startsCopies(Operation *op) {
  return isa<AsyncCopyOp, AsyncCopyBlockOp, InitTmaBarriersOp, AsyncTmaCopyOp>(op);
}

/// Whether an op after `drain` in its block reads, through a
/// kiln_gpu.shared_operand, bytes of `filled` (slots filled before `drain`
/// at the block's level) before a copy of the block fills them again: a
/// later loop that reads a block an earlier one copied (kiln-gpu-pipeline-
/// loads copies it once), so the span must go on.
bool isReadLater(Operation *drain, ArrayRef<SlotBytes> filled) {
  SmallVector<SlotBytes> live(filled);
  for (Operation *op = drain->getNextNode(); op && !live.empty(); op = op->getNextNode()) {
    bool reads = false;
    op->walk([&](SharedOperandOp read) {
      SlotBytes bytes = getSlotBytes(read.getBuffer());
      reads |= llvm::any_of(live, [&](const SlotBytes &slot) { return slot.overlaps(bytes); });
    });
    if (reads)
      return true;
    if (std::optional<SlotBytes> written = getWrittenSlotBytes(op))
      llvm::erase_if(live, [&](const SlotBytes &slot) { return slot.overlaps(*written); });
  }
  return false;
}

SlotSpans findSlotSpans(ModuleOp module) {
  SlotSpans spans;
  // Outer blocks first: the copies inside a span's loop belong to it and
  // start no span of their own.
  module.walk<WalkOrder::PreOrder>([&](Block *block) {
    if (spans.inside.contains(block->getParentOp()))
      return;
    bool open = false;
    // The sets of TMA mbarriers initialized and not yet invalidated: a
    // cp.async wait for every group (a block copied once before a TMA
    // loop, say) leaves their copies in flight.
    int tmaBarrierSets = 0;
    // The slots the open span's copies at this level filled.
    SmallVector<SlotBytes> filled;
    for (Operation &op : *block) {
      if (!open && startsCopies(&op)) {
        open = true;
        spans.starts.push_back(&op);
        filled.clear();
      }
      if (!open)
        continue;
      op.walk([&](Operation *nested) { spans.inside.insert(nested); });
      if (std::optional<SlotBytes> written = getWrittenSlotBytes(&op))
        filled.push_back(*written);
      if (isa<InitTmaBarriersOp>(op))
        ++tmaBarrierSets;
      else if (isa<InvalTmaBarriersOp>(op))
        tmaBarrierSets = std::max(tmaBarrierSets - 1, 0);
      if (drainsCopies(&op) && tmaBarrierSets == 0 && !isReadLater(&op, filled))
        open = false;
    }
  });
  return spans;
}

/// Where the pipeline slots start in shared memory, and how many bytes the
/// kernel needs in all.
struct SharedMemoryPlan {
  bool hasSlots = false;
  int64_t pipelineStart = 0;
  int64_t total = 0;
};

/// Places the scratch and the pipeline slots of `module` (structured
/// control flow still in place) by liveness, inserting the barriers that
/// reusing the slots' bytes needs.
SharedMemoryPlan planSharedMemory(ModuleOp module, const LaunchShape &launch) {
  SlotSpans spans = findSlotSpans(module);
  // An op reading a slot is inside a span, whatever the IR around it says.
  auto readsSlot = [](Operation *op) {
    return llvm::any_of(op->getOperands(), [](Value operand) {
      return isa_and_present<SharedOperandOp>(operand.getDefiningOp());
    });
  };
  int64_t scratchWithSlots = 0, scratchAlone = 0;
  module.walk([&](Operation *op) {
    int64_t bytes = getScratchBytes(op, launch);
    bool withSlots = spans.inside.contains(op) || readsSlot(op);
    int64_t &scratch = withSlots ? scratchWithSlots : scratchAlone;
    scratch = std::max(scratch, bytes);
  });
  SharedMemoryPlan plan;
  int64_t pipelineBytes = getPipelineBytes(module);
  if (!pipelineBytes) {
    plan.total = std::max(scratchWithSlots, scratchAlone);
    return plan;
  }
  plan.hasSlots = true;
  // 1024-byte aligned: wgmma's swizzle phase comes from the address.
  plan.pipelineStart = (scratchWithSlots + 1023) / 1024 * 1024;
  plan.total = std::max(plan.pipelineStart + pipelineBytes, scratchAlone);
  // A scratch user before a span may still be reading bytes that the
  // span's first copies overwrite: every thread waits for the others
  // first. (After a span, kiln_gpu.async_wait's barrier orders them.) A
  // span that opens its kernel, after scalar code only, has no scratch user
  // before it: a warp-specialized kernel's, whose producer warps branch off
  // after its first ops, must have no barrier there that only the consumer
  // warps would pass.
  auto opensKernel = [&](Operation *start) {
    if (!isa_and_present<FunctionOpInterface>(start->getParentOp()))
      return false;
    for (Operation *op = start->getPrevNode(); op; op = op->getPrevNode())
      if (op->getNumRegions() || getScratchBytes(op, launch) || !isMemoryEffectFree(op))
        return false;
    return true;
  };
  if (scratchAlone > plan.pipelineStart)
    for (Operation *start : spans.starts) {
      if (opensKernel(start))
        continue;
      OpBuilder builder(start);
      DebugBarrierOp::create(builder, start->getLoc());
    }
  return plan;
}

struct KilnGPUAllocateSharedMemory
    : public kiln::impl::KilnGPUAllocateSharedMemoryBase<KilnGPUAllocateSharedMemory> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    LaunchShape launch{getNumWarps(module), getThreadsPerWarp(module)};
    SharedMemoryPlan plan = planSharedMemory(module, launch);
    Builder builder(&getContext());
    module->setAttr(KilnGPUDialect::getSharedAttrName(),
                    builder.getI32IntegerAttr(int32_t(plan.total)));
    if (plan.hasSlots)
      module->setAttr(KilnGPUDialect::getPipelineOffsetAttrName(),
                      builder.getI32IntegerAttr(int32_t(plan.pipelineStart)));
  }
};

} // namespace
