//===- WarpSpecialize.cpp - A producer warpgroup feeds the TMA slots -------===//
//
// Implements kiln-gpu-warp-specialize (see Passes.td). The loop that
// kiln-gpu-pipeline-loads left with TMA copies is split in two: the copies,
// and the scalar code their coordinates, slots and predicates are computed
// from, go to a kiln_gpu.producer region that extra warps run; the rest
// stays with the kernel's warps, which now only wait for a slot's copies
// and release the slot once their dots have read it. No CTA barrier is left
// in the loop: a slot's reuse is ordered by its "empty" mbarrier instead.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"
#include "kiln/Target/NVIDIA/TensorCores.h"

#include "LoopUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUWARPSPECIALIZE
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

constexpr StringLiteral kWarpSpecializeAttr = "kiln.warp_specialize";

/// One warpgroup of producer warps: setmaxnreg works on whole warpgroups.
constexpr int32_t kProducerWarps = 4;
/// Registers per thread after setmaxnreg, with two consumer warpgroups:
/// 4 x 40 + 8 x 232 warps' worth fits the 64K register file (as the 168
/// that a 384-thread kernel starts with does).
constexpr int32_t kProducerRegisters = 40;
constexpr int32_t kConsumerRegisters = 232;
/// How wide attention's output must be for a version's TMA side to get a
/// producer unasked (see wantsProducer).
constexpr int64_t kMinVersionOutputColumns = 128;

/// What the split needs of a kernel's TMA-pipelined loop.
struct TmaLoop {
  scf::ForOp loop;
  InitTmaBarriersOp init;
  InvalTmaBarriersOp inval;
  WaitTmaBarrierOp wait;
  /// The copies before the loop (the first iterations') and in it.
  SmallVector<AsyncTmaCopyOp> prologue, copies;
  /// The body's ops that the in-loop copies' operands are computed from,
  /// in body order, and the loop-carried values among them.
  SmallVector<Operation *> bodySlice;
  SmallVector<unsigned> carried;
  /// The ops before the loop that the producer needs, in order (in a
  /// version, the kernel's before the version's).
  SmallVector<Operation *> outerSlice;
  /// The version of kiln-tensor-map-pointer-loads that the loop is the TMA
  /// side of (its then-region), if any, and the kernel's ops before it that
  /// compute its condition, in order.
  scf::IfOp version;
  SmallVector<Operation *> conditionSlice;
  /// The last op of the body that reads a slot the loop fills.
  Operation *lastReader = nullptr;
  /// Whether the readers are asynchronous dots (kiln_gpu.wgmma_buffer),
  /// each waiting for the one before the previous one: a slot is then read
  /// until the next iteration's dot has been issued.
  bool asyncReaders = false;
};

/// The blocks that the TMA unit copies once, before the first loop, into
/// slots of their own, on mbarriers of their own (kiln-gpu-pipeline-loads:
/// attention's Q), which the producer issues too.
struct OnceCopies {
  SmallVector<InitTmaBarriersOp> inits;
  SmallVector<AsyncTmaCopyOp> copies;
  /// The ops before the loops that the copies' operands need, in order.
  SmallVector<Operation *> outerSlice;
};

/// Whether `op` may be cloned into the producer: pure scalar code.
bool isProducerCode(Operation *op) {
  auto isBlock = [](Type type) { return isa<RankedTensorType>(type); };
  return op->getNumRegions() == 0 && isMemoryEffectFree(op) &&
         !llvm::any_of(op->getOperandTypes(), isBlock) &&
         !llvm::any_of(op->getResultTypes(), isBlock);
}

/// The version whose TMA side `loop` is (directly in its then-region, the
/// version directly in the kernel's body); null where the loop is directly
/// in the kernel's body; failure anywhere else.
FailureOr<scf::IfOp> getVersion(scf::ForOp loop) {
  Operation *parent = loop->getParentOp();
  if (isa_and_present<FunctionOpInterface>(parent))
    return scf::IfOp();
  auto version = dyn_cast_or_null<scf::IfOp>(parent);
  if (!version || !version->hasAttr(kTensorMapVersionAttr) ||
      loop->getParentRegion() != &version.getThenRegion() ||
      !isa_and_present<FunctionOpInterface>(version->getParentOp()))
    return failure();
  return version;
}

/// The ops of `block` (scalar code) that `roots` are computed from, and
/// before them, where `block` is a version's then-block, the kernel's ops
/// that those and the other roots are computed from.
FailureOr<SmallVector<Operation *>> getScalarSlice(Block *block, scf::IfOp version,
                                                   ArrayRef<Value> roots) {
  FailureOr<SmallVector<Operation *>> inner = getBlockSlice(block, roots);
  if (failed(inner) || !version)
    return inner;
  SmallVector<Value> kernelRoots(roots);
  for (Operation *op : *inner)
    llvm::append_range(kernelRoots, op->getOperands());
  FailureOr<SmallVector<Operation *>> slice = getBlockSlice(version->getBlock(), kernelRoots);
  if (failed(slice) || !llvm::all_of(*slice, isProducerCode))
    return failure();
  llvm::append_range(*slice, *inner);
  return slice;
}

/// The loop's split, or failure when it is not one this pass handles: a
/// loop of the kernel's own body (or the TMA side of a version of
/// kiln-tensor-map-pointer-loads there), its slots filled by TMA copies only,
/// read by dots that are all synchronous or all asynchronous (not the
/// second dot run an iteration late, whose reads outlast the iteration in
/// another way), its copies computed from scalar code.
FailureOr<TmaLoop> matchTmaLoop(scf::ForOp loop) {
  TmaLoop split;
  split.loop = loop;
  Block *body = loop.getBody();
  Block *outer = loop->getBlock();
  FailureOr<scf::IfOp> version = getVersion(loop);
  if (failed(version) || loop->hasAttr(kOverlapDotsAttr))
    return failure();
  split.version = *version;
  split.wait = dyn_cast<WaitTmaBarrierOp>(&body->front());
  if (!split.wait || split.wait.getPerThread())
    return failure();
  uint64_t barriers = split.wait.getBarriers();
  bool other = false;
  loop.walk([&](Operation *op) {
    if (auto copy = dyn_cast<AsyncTmaCopyOp>(op)) {
      if (copy->getBlock() == body && copy.getBarriers() == barriers && !copy.getWarp())
        split.copies.push_back(copy);
      else
        other = true;
    } else if (isa<AsyncCopyOp, AsyncWaitOp, AsyncCommitGroupOp, WaitTmaBarrierOp,
                   ReleaseSlotOp>(op) && op != split.wait) {
      other = true;
    }
  });
  if (other || split.copies.empty())
    return failure();

  // The ops around the loop that kiln-gpu-pipeline-loads made for it.
  for (Operation &op : *outer) {
    if (&op == loop.getOperation())
      break;
    // (An earlier loop of the same mbarriers has its own initialization
    // and copies before it.)
    if (auto init = dyn_cast<InitTmaBarriersOp>(op); init && init.getOffset() == barriers) {
      split.init = init;
      split.prologue.clear();
    }
    if (auto copy = dyn_cast<AsyncTmaCopyOp>(op); copy && copy.getBarriers() == barriers)
      split.prologue.push_back(copy);
  }
  for (Operation *op = loop->getNextNode(); op && !split.inval; op = op->getNextNode())
    if (auto inval = dyn_cast<InvalTmaBarriersOp>(op); inval && inval.getOffset() == barriers)
      split.inval = inval;
  if (!split.init || !split.inval || split.init.getAllWarps() ||
      split.prologue.size() % split.copies.size() != 0 ||
      int64_t(split.prologue.size() / split.copies.size()) >= split.init.getCount())
    return failure();
  // The dots reading the loop's slots, the last of them.
  FailureOr<SlotReaders> readers = getSlotReaders(*body, split.wait.getSlot());
  if (failed(readers) || !readers->count ||
      (readers->asynchronous && readers->asynchronous != readers->count))
    return failure();
  split.lastReader = readers->last;
  split.asyncReaders = readers->asynchronous != 0;

  // What the in-loop copies are computed from: the body's scalar code, the
  // loop-carried values it reads (their next values too), and the values
  // from before the loop.
  llvm::SetVector<Operation *> slice;
  llvm::SetVector<unsigned> carried;
  SmallVector<Value> outerRoots{loop.getLowerBound(), loop.getUpperBound(), loop.getStep()};
  SmallVector<Value> worklist;
  for (AsyncTmaCopyOp copy : split.copies)
    llvm::append_range(worklist, copy->getOperands());
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (auto argument = dyn_cast<BlockArgument>(value); argument && argument.getOwner() == body) {
      if (argument == loop.getInductionVar())
        continue;
      unsigned index = argument.getArgNumber() - 1;
      if (carried.insert(index)) {
        worklist.push_back(body->getTerminator()->getOperand(index));
        outerRoots.push_back(loop.getInitArgs()[index]);
      }
      continue;
    }
    Operation *producer = value.getDefiningOp();
    if (!producer || !loop->isProperAncestor(producer)) {
      outerRoots.push_back(value);
      continue;
    }
    if (slice.contains(producer))
      continue;
    if (producer->getBlock() != body || !isProducerCode(producer))
      return failure();
    slice.insert(producer);
    llvm::append_range(worklist, producer->getOperands());
  }
  split.bodySlice.assign(slice.begin(), slice.end());
  llvm::sort(split.bodySlice, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  split.carried.assign(carried.begin(), carried.end());
  llvm::sort(split.carried);
  for (AsyncTmaCopyOp copy : split.prologue)
    llvm::append_range(outerRoots, copy->getOperands());
  // Before the loop: the kernel's scalar code (its parameters need none).
  FailureOr<SmallVector<Operation *>> outerSlice = getScalarSlice(outer, split.version, outerRoots);
  if (failed(outerSlice) || !llvm::all_of(*outerSlice, isProducerCode))
    return failure();
  split.outerSlice = std::move(*outerSlice);
  if (split.version) {
    FailureOr<SmallVector<Operation *>> conditionSlice =
        getBlockSlice(split.version->getBlock(), split.version.getCondition());
    if (failed(conditionSlice) || !llvm::all_of(*conditionSlice, isProducerCode))
      return failure();
    split.conditionSlice = std::move(*conditionSlice);
  }
  return split;
}

/// The copies once before the first of `loops` (their mbarriers none of
/// the loops'), with their mbarriers' initializations; none where their
/// operands are not scalar code the producer can compute, or an
/// initialization is not before the loops at the kernel's level (the
/// producer's copy must not come first).
OnceCopies matchOnceCopies(MutableArrayRef<TmaLoop> loops) {
  OnceCopies once;
  Block *kernel = loops.front().loop->getBlock();
  llvm::DenseSet<uint64_t> ringBarriers;
  for (TmaLoop &split : loops)
    ringBarriers.insert(split.init.getOffset());
  SmallVector<Value> roots;
  for (Operation &op : *kernel) {
    if (&op == loops.front().loop.getOperation())
      break;
    auto copy = dyn_cast<AsyncTmaCopyOp>(op);
    if (!copy || copy.getWarp() || ringBarriers.contains(copy.getBarriers()))
      continue;
    once.copies.push_back(copy);
    llvm::append_range(roots, copy->getOperands());
  }
  llvm::DenseSet<uint64_t> initialized;
  for (Operation &op : *kernel) {
    if (&op == loops.front().loop.getOperation())
      break;
    auto init = dyn_cast<InitTmaBarriersOp>(op);
    if (init && !init.getAllWarps() && llvm::any_of(once.copies, [&](AsyncTmaCopyOp copy) {
          return copy.getBarriers() == init.getOffset();
        })) {
      once.inits.push_back(init);
      initialized.insert(init.getOffset());
    }
  }
  FailureOr<SmallVector<Operation *>> slice = getScalarSlice(kernel, loops.front().version, roots);
  if (failed(slice) || !llvm::all_of(*slice, isProducerCode) ||
      llvm::any_of(once.copies, [&](AsyncTmaCopyOp copy) {
        return !initialized.contains(copy.getBarriers());
      }))
    return {};
  once.outerSlice = std::move(*slice);
  return once;
}

/// A copy of `copy` issued by `warp`'s lanes, its operands mapped.
void cloneCopy(OpBuilder &builder, AsyncTmaCopyOp copy, IRMapping &mapping, int32_t warp) {
  Operation *clone = builder.clone(*copy, mapping);
  cast<AsyncTmaCopyOp>(clone).setWarpAttr(builder.getI32IntegerAttr(warp));
}

/// Clones `ops` (scalar code before the loops) into the producer, each once
/// whatever the loops that need it.
void cloneOuterSlice(OpBuilder &builder, ArrayRef<Operation *> ops, IRMapping &mapping) {
  for (Operation *op : ops)
    if (!llvm::all_of(op->getResults(), [&](Value result) { return mapping.contains(result); }))
      builder.clone(*op, mapping);
}

/// The iterations of `loop` (bounds mapped into the producer): 0 if none.
Value getTripCount(OpBuilder &builder, Location loc, scf::ForOp loop, IRMapping &mapping) {
  Value lower = mapping.lookupOrDefault(loop.getLowerBound());
  Value upper = mapping.lookupOrDefault(loop.getUpperBound());
  Value step = mapping.lookupOrDefault(loop.getStep());
  Value zero = arith::ConstantOp::create(builder, loc, builder.getZeroAttr(lower.getType()));
  Value span = arith::MaxSIOp::create(builder, loc, arith::SubIOp::create(builder, loc, upper, lower), zero);
  // (span + step - 1) / step: the step is positive.
  Value one = arith::ConstantOp::create(builder, loc, builder.getOneAttr(lower.getType()));
  Value rounded = arith::SubIOp::create(builder, loc, arith::AddIOp::create(builder, loc, span, step), one);
  return arith::DivSIOp::create(builder, loc, rounded, step);
}

/// The parity that the fill of `slot` numbered `fill` among the loop's own
/// fills waits for on the slot's "empty" mbarrier, when earlier loops of
/// `earlierTrips` iterations filled the same ring (from slot 0 each): the
/// k-th fill of a slot over all loops waits for the release k - 1, parity
/// (k - 1) & 1 (1 for k = 0 passes at once on a fresh mbarrier). Earlier
/// loop l filled `slot` ceil((trips_l - slot) / slots) times.
Value getEmptyParity(OpBuilder &builder, Location loc, Value slot, Value fill, int32_t slots,
                     ArrayRef<Value> earlierTrips) {
  Value slotCount = createI32(builder, loc, slots);
  Value k = arith::DivSIOp::create(builder, loc, fill, slotCount);
  for (Value trips : earlierTrips) {
    // (trips - slot + slots - 1) / slots, never negative: slot < slots.
    Value numerator = arith::SubIOp::create(
        builder, loc, arith::AddIOp::create(builder, loc, trips, createI32(builder, loc, slots - 1)), slot);
    k = arith::AddIOp::create(builder, loc, k, arith::DivSIOp::create(builder, loc, numerator, slotCount));
  }
  Value one = createI32(builder, loc, 1);
  return arith::XOrIOp::create(builder, loc, arith::AndIOp::create(builder, loc, k, one), one);
}

/// Waits, if `runs`, for the phase of parity `parity` of `slot`'s "empty"
/// mbarrier.
void waitForRelease(OpBuilder &builder, Location loc, Value runs, Value slot, Value parity,
                    int64_t emptyBarriers) {
  auto waits = scf::IfOp::create(builder, loc, runs, /*withElseRegion=*/false);
  builder.setInsertionPointToStart(waits.thenBlock());
  WaitTmaBarrierOp::create(builder, loc, slot, parity, emptyBarriers, /*perThread=*/true,
                           /*warp=*/nullptr);
  builder.setInsertionPointAfter(waits);
}

/// Builds the producer region at `builder`'s point: the copies made once,
/// first (they are waited for before the first loop starts); then for each
/// loop in order, the copies of its first iterations, then a loop over the
/// same iterations that waits for each slot's release before copying into
/// it again. The loops share one ring of slots and "empty" mbarriers; a
/// later loop waits before its first copies too, for the earlier loops'
/// last reads of the slots. The copies of a version's TMA side are issued
/// where the version's condition holds: else the kernel's warps run the
/// side that reads through pointers.
ProducerOp buildProducer(OpBuilder &builder, MutableArrayRef<TmaLoop> loops, const OnceCopies &once,
                         int32_t numWarps, int64_t emptyBarriers) {
  Location loc = loops.front().loop.getLoc();
  auto producer = ProducerOp::create(builder, loc, kProducerWarps,
                                     numWarps == 8 ? builder.getI32IntegerAttr(kProducerRegisters) : nullptr,
                                     numWarps == 8 ? builder.getI32IntegerAttr(kConsumerRegisters) : nullptr);
  builder.setInsertionPointToStart(&producer.getBody().emplaceBlock());
  IRMapping mapping;
  if (scf::IfOp version = loops.front().version) {
    cloneOuterSlice(builder, loops.front().conditionSlice, mapping);
    auto versioned =
        scf::IfOp::create(builder, loc, mapping.lookup(version.getCondition()), /*withElseRegion=*/false);
    builder.setInsertionPointToStart(versioned.thenBlock());
  }
  cloneOuterSlice(builder, once.outerSlice, mapping);
  for (AsyncTmaCopyOp copy : once.copies)
    cloneCopy(builder, copy, mapping, numWarps);
  SmallVector<Value> earlierTrips;
  int32_t slots = loops.front().init.getCount();
  for (TmaLoop &split : loops) {
    scf::ForOp loop = split.loop;
    loc = loop.getLoc();
    cloneOuterSlice(builder, split.outerSlice, mapping);
    int32_t lookahead = split.prologue.size() / split.copies.size();
    size_t perFill = split.copies.size();
    for (int32_t fill = 0; fill < lookahead; ++fill) {
      MutableArrayRef<AsyncTmaCopyOp> copies = MutableArrayRef(split.prologue).slice(fill * perFill, perFill);
      if (!earlierTrips.empty()) {
        SmallVector<Value> predicates;
        for (AsyncTmaCopyOp copy : copies)
          predicates.push_back(mapping.lookupOrDefault(copy.getPred()));
        Value slot = mapping.lookupOrDefault(copies.front().getSlot());
        Value parity = getEmptyParity(builder, loc, slot, createI32(builder, loc, fill), slots, earlierTrips);
        waitForRelease(builder, loc, anyOf(builder, loc, predicates), slot, parity, emptyBarriers);
      }
      for (AsyncTmaCopyOp copy : copies)
        cloneCopy(builder, copy, mapping, numWarps);
    }

    // The first loop's release that the k-th refill of a slot waits for is
    // the phase k - 1 of its "empty" mbarrier; parity 1 on a fresh mbarrier
    // passes at once, so the first fill of each slot waits for nothing. The
    // loop's first copy fills round `lookahead / slots` of its slot, and
    // the parity flips each time the slot it writes wraps round. A later
    // loop computes the parity from the fill's number instead.
    bool carriesParity = earlierTrips.empty();
    SmallVector<Value> inits;
    for (unsigned index : split.carried)
      inits.push_back(mapping.lookupOrDefault(loop.getInitArgs()[index]));
    if (carriesParity)
      inits.push_back(createI32(builder, loc, ((lookahead / slots) & 1) ^ 1));
    Value lower = mapping.lookupOrDefault(loop.getLowerBound());
    Value step = mapping.lookupOrDefault(loop.getStep());
    auto copyLoop = scf::ForOp::create(builder, loc, lower, mapping.lookupOrDefault(loop.getUpperBound()),
                                       step, inits);
    OpBuilder::InsertPoint after = builder.saveInsertionPoint();
    builder.setInsertionPointToStart(copyLoop.getBody());
    mapping.map(loop.getInductionVar(), copyLoop.getInductionVar());
    for (auto [position, index] : llvm::enumerate(split.carried))
      mapping.map(loop.getRegionIterArgs()[index], copyLoop.getRegionIterArgs()[position]);
    for (Operation *op : split.bodySlice)
      builder.clone(*op, mapping);
    Value writeSlot = mapping.lookupOrDefault(split.copies.front().getSlot());
    Value parity;
    if (carriesParity) {
      parity = copyLoop.getRegionIterArgs().back();
    } else {
      Value iteration = arith::DivSIOp::create(
          builder, loc, arith::SubIOp::create(builder, loc, copyLoop.getInductionVar(), lower), step);
      Value fill = arith::AddIOp::create(builder, loc, iteration, createI32(builder, loc, lookahead));
      parity = getEmptyParity(builder, loc, writeSlot, fill, slots, earlierTrips);
    }
    // Only before a copy that runs: the last iterations' copies (past the
    // loop's end) are masked off, and by the time the producer reached their
    // waits the consumers may have finished and invalidated the mbarriers.
    SmallVector<Value> predicates;
    for (AsyncTmaCopyOp copy : split.copies)
      predicates.push_back(mapping.lookupOrDefault(copy.getPred()));
    waitForRelease(builder, loc, anyOf(builder, loc, predicates), writeSlot, parity, emptyBarriers);
    for (AsyncTmaCopyOp copy : split.copies)
      cloneCopy(builder, copy, mapping, numWarps);
    SmallVector<Value> yielded;
    Operation *yield = loop.getBody()->getTerminator();
    for (unsigned index : split.carried)
      yielded.push_back(mapping.lookupOrDefault(yield->getOperand(index)));
    if (carriesParity) {
      Value wraps = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, writeSlot,
                                          createI32(builder, loc, slots - 1));
      Value flipped = arith::XOrIOp::create(builder, loc, parity, createI32(builder, loc, 1));
      yielded.push_back(arith::SelectOp::create(builder, loc, wraps, flipped, parity));
    }
    scf::YieldOp::create(builder, loc, yielded);
    builder.restoreInsertionPoint(after);
    if (&split != &loops.back())
      earlierTrips.push_back(getTripCount(builder, loc, loop, mapping));
  }
  return producer;
}

/// Moves `split`'s "full" mbarriers to `offset`: each loop after the first
/// gets its own, initialized with the first loop's before the producer
/// branches off, so that the producer never copies into a loop whose
/// mbarriers the consumers have yet to initialize.
void moveFullBarriers(TmaLoop &split, int64_t offset) {
  Builder builder(split.loop.getContext());
  IntegerAttr attr = builder.getI64IntegerAttr(offset);
  split.init.setOffsetAttr(attr);
  split.inval.setOffsetAttr(attr);
  split.wait.setBarriersAttr(attr);
  for (AsyncTmaCopyOp copy : llvm::concat<AsyncTmaCopyOp>(split.prologue, split.copies))
    copy.setBarriersAttr(attr);
}

/// Where the split loop is a version's TMA side, whose mbarriers the
/// kernel's warps now initialize before the version (`initialized`), on
/// either side: the mbarriers are invalidated after the version, not at the
/// end of its TMA side, so that the slots' bytes are free again at the
/// kernel's level for the code after it (kiln-gpu-allocate-shared-memory
/// sees one span of slots, from the initialization to the invalidation);
/// and the other side, whose copies use the same bytes for mbarriers of
/// its own, invalidates them before and initializes them again after.
void invalidateAfterVersion(scf::IfOp version, ArrayRef<InitTmaBarriersOp> initialized) {
  auto isInitialized = [&](InvalTmaBarriersOp inval) {
    return llvm::any_of(initialized, [&](InitTmaBarriersOp init) { return init.getOffset() == inval.getOffset(); });
  };
  SmallVector<InvalTmaBarriersOp> invals;
  for (auto inval : version.thenBlock()->getOps<InvalTmaBarriersOp>())
    if (isInitialized(inval))
      invals.push_back(inval);
  Operation *after = version;
  for (InvalTmaBarriersOp inval : invals) {
    inval->moveAfter(after);
    after = inval;
  }
  Location loc = version.getLoc();
  OpBuilder builder(version.elseBlock(), version.elseBlock()->begin());
  for (InitTmaBarriersOp init : initialized)
    InvalTmaBarriersOp::create(builder, loc, init.getOffset(), init.getCount());
  builder.setInsertionPoint(version.elseBlock()->getTerminator());
  for (InitTmaBarriersOp init : initialized)
    InitTmaBarriersOp::create(builder, loc, init.getOffset(), init.getCount(), init.getArrivals(),
                              /*allWarps=*/false);
}

/// Splits the loops (one, or several in a row sharing their slots) between
/// a producer and the kernel's warps.
void warpSpecialize(MutableArrayRef<TmaLoop> loops, int32_t numWarps, int32_t threadsPerWarp) {
  TmaLoop &first = loops.front();
  int32_t slots = first.init.getCount();
  int64_t emptyBarriers = first.init.getOffset() + 8 * int64_t(slots);
  for (auto [index, split] : llvm::enumerate(loops.drop_front()))
    moveFullBarriers(split, emptyBarriers + 8 * int64_t(slots) * int64_t(index + 1));
  OnceCopies once = matchOnceCopies(loops);

  // The producer comes first in the kernel. Every set of mbarriers is
  // initialized before the producer warps branch off, with every warp
  // waiting for that. (The kernel's warps still wait for the copies made
  // once, before their first loop.)
  Location loc = first.loop.getLoc();
  Block *kernel = &first.loop->getParentOfType<FunctionOpInterface>().getFunctionBody().front();
  OpBuilder builder(kernel, kernel->begin());
  ProducerOp producer = buildProducer(builder, loops, once, numWarps, emptyBarriers);
  builder.setInsertionPoint(producer);
  SmallVector<InitTmaBarriersOp> initialized;
  auto initializeFirst = [&](InitTmaBarriersOp init) {
    init->moveBefore(producer);
    init.setAllWarps(true);
    initialized.push_back(init);
  };
  for (InitTmaBarriersOp init : once.inits)
    initializeFirst(init);
  for (TmaLoop &split : loops)
    initializeFirst(split.init);
  for (AsyncTmaCopyOp copy : once.copies)
    copy.erase();
  initialized.push_back(
      InitTmaBarriersOp::create(builder, loc, emptyBarriers, slots, numWarps, /*allWarps=*/true));

  // The kernel's warps: no copies; wait for a slot's copies without
  // synchronizing with the others; release the slot after its last reader.
  for (TmaLoop &split : loops) {
    for (AsyncTmaCopyOp copy : llvm::concat<AsyncTmaCopyOp>(split.prologue, split.copies))
      copy.erase();
    split.wait.setPerThread(true);
    builder.setInsertionPointAfter(split.lastReader);
    Value readSlot = split.wait.getSlot();
    if (!split.asyncReaders) {
      ReleaseSlotOp::create(builder, loc, readSlot, emptyBarriers);
    } else {
      // This iteration's dots have waited for the previous iteration's: its
      // slot, the one before this one round the ring, is free (from the
      // second iteration on).
      scf::ForOp loop = split.loop;
      Value later = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ne,
                                          loop.getInductionVar(), loop.getLowerBound());
      Value firstSlot = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, readSlot,
                                              createI32(builder, loc, 0));
      Value previous = arith::SelectOp::create(
          builder, loc, firstSlot, createI32(builder, loc, slots - 1),
          arith::SubIOp::create(builder, loc, readSlot, createI32(builder, loc, 1)));
      auto release = scf::IfOp::create(builder, loc, later, /*withElseRegion=*/false);
      builder.setInsertionPointToStart(release.thenBlock());
      ReleaseSlotOp::create(builder, loc, previous, emptyBarriers);
    }
    split.loop->removeAttr(kWarpSpecializeAttr);
    // Attention's loop on two or more consumer warpgroups, with a slot to
    // spare for the copies ahead: its second dot runs an iteration late
    // (kiln-gpu-overlap-dots, next), each warpgroup computing one block's
    // softmax while its dots of the next and the previous blocks run.
    if (hasSeveralWarpgroups(numWarps) && slots >= 3 && !split.asyncReaders &&
        getChainedDots(split.loop, numWarps, threadsPerWarp))
      split.loop->setAttr(kOverlapDotsAttr, builder.getUnitAttr());
  }
  builder.setInsertionPointAfter(loops.back().inval);
  InvalTmaBarriersOp::create(builder, loc, emptyBarriers, slots);
  if (first.version)
    invalidateAfterVersion(first.version, initialized);
}

/// Whether the loops, in kernel order, may share one producer: the same
/// ring of slots (the same mbarriers and slot buffers), and (but for the
/// last) every slot released in its own iteration, so that a later loop's
/// copies find each slot released. One loop always may.
bool shareRing(MutableArrayRef<TmaLoop> loops) {
  auto buffers = [](TmaLoop &split) {
    llvm::SetVector<Attribute> set;
    for (AsyncTmaCopyOp copy : split.copies)
      set.insert(copy.getBuffer());
    return set;
  };
  TmaLoop &first = loops.front();
  for (TmaLoop &split : loops.drop_front())
    if (split.init.getOffset() != first.init.getOffset() || split.init.getCount() != first.init.getCount() ||
        split.init.getArrivals() != first.init.getArrivals() || buffers(split) != buffers(first))
      return false;
  return llvm::none_of(loops.drop_back(), [](TmaLoop &split) { return split.asyncReaders; });
}

/// Whether `loop` is to be split: as its `kiln.warp_specialize` says, or
/// without one, when it is attention's loop (two chained wgmma dots) on two
/// consumer warpgroups, where a producer measured 1.17x to 1.27x faster on
/// the H200 (docs/design/warp_specialization.md); on a version's TMA side
/// (pointer tensor maps), only where the output is 128 columns wide or
/// more. On an H100, at head dimension 128 the producer made the plain
/// kernel 1.10x to 1.21x as fast as through pointers alone (5 to 11 %
/// faster than the maps without it, in an earlier run); at head dimension
/// 64, 2 to 5 % slower than through pointers alone.
bool wantsProducer(scf::ForOp loop, int32_t numWarps, int32_t threadsPerWarp) {
  if (auto request = loop->getAttrOfType<BoolAttr>(kWarpSpecializeAttr))
    return request.getValue();
  if (numWarps != 8)
    return false;
  std::optional<ChainedDots> chained = getChainedDots(loop, numWarps, threadsPerWarp);
  if (!chained)
    return false;
  FailureOr<scf::IfOp> version = getVersion(loop);
  return failed(version) || !*version ||
         chained->second.getType().getDimSize(1) >= kMinVersionOutputColumns;
}

struct KilnGPUWarpSpecialize
    : public gpu::impl::KilnGPUWarpSpecializeBase<KilnGPUWarpSpecialize> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!nvidia::hasWarpgroupMma(module))
      return;
    int32_t numWarps = getNumWarps(module);
    int32_t threadsPerWarp = getThreadsPerWarp(module);
    // One producer per kernel, for its TMA loops, all of which must
    // qualify and want one.
    module.walk([&](FunctionOpInterface function) {
      Block &body = function.getFunctionBody().front();
      // (A loop of TMA copies waits for its slot at the top of its body;
      // the blocks the TMA unit copies once before a loop are waited for
      // before it. The other side of a version, which reads through
      // pointers, runs without the producer.)
      int tmaLoops = 0;
      function.walk([&](scf::ForOp loop) {
        TensorMapVersionSide side = getTensorMapVersionSide(loop);
        tmaLoops += isa<WaitTmaBarrierOp>(loop.getBody()->front()) && (!side.version || side.throughMaps);
      });
      SmallVector<Operation *> candidates;
      for (Operation &op : body) {
        auto version = dyn_cast<scf::IfOp>(op);
        if (!version || !version->hasAttr(kTensorMapVersionAttr)) {
          candidates.push_back(&op);
          continue;
        }
        for (Operation &nested : *version.thenBlock())
          candidates.push_back(&nested);
      }
      SmallVector<TmaLoop, 2> loops;
      for (Operation *op : candidates) {
        auto loop = dyn_cast<scf::ForOp>(op);
        if (!loop || !loop.walk([](WaitTmaBarrierOp) { return WalkResult::interrupt(); }).wasInterrupted())
          continue;
        if (!wantsProducer(loop, numWarps, threadsPerWarp))
          return;
        FailureOr<TmaLoop> split = matchTmaLoop(loop);
        // (Loops that share a producer are in one block.)
        if (failed(split) || (!loops.empty() && loops.front().loop->getBlock() != loop->getBlock()))
          return;
        loops.push_back(std::move(*split));
      }
      // (A version's TMA side: its one loop.)
      if (loops.empty() || int(loops.size()) != tmaLoops || !shareRing(loops) ||
          (loops.front().version && loops.size() != 1))
        return;
      warpSpecialize(loops, numWarps, threadsPerWarp);
    });
  }
};

} // namespace
