//===- PipelineLoads.cpp - Multi-buffered cp.async dot operands ------------===//
//
// Implements kiln-gpu-pipeline-loads (see Passes.td). The loop body splits
// into two stages: the copies (the pipelined loads and the pure ops their
// pointers and masks come from, with the loop-carried values those read)
// run L iterations ahead of everything else. Only the copies cross the
// stages, through the shared-memory slots, so a stage-0 value that anything
// else reads keeps the loop from being pipelined. Which loads the slots
// take, and in which views their dots read them, is PipelinedOperands.cpp's
// part.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/AxisInfo.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"
#include "kiln/Target/NVIDIA/TensorCores.h"

#include "LoopUtils.h"
#include "PipelinedOperands.h"
#include "Rematerializer.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUPIPELINELOADS
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;
using namespace mlir::kiln::nvidia;

namespace {

/// A loop's own pipeline depth (`kl.range(..., num_stages=)`).
constexpr StringLiteral kLoopStagesAttr = "kiln.num_stages";

/// How wide a dot accumulator the loop carries must be for the loop's
/// copies to complete mbarriers (see pipeline()).
constexpr int64_t kMinAccumulatorColumnsForArrivals = 128;

/// The ops that run ahead: in body order, and the loop-carried values
/// (by iter-arg index) they read and advance.
struct CopyStage {
  SmallVector<Operation *> ops;
  llvm::SetVector<unsigned> carried;
  /// Carried values read after the loop, each advanced by a loop-invariant
  /// step (`x + c`, `addptr(x, c)`), by index with that step: the loop ends
  /// with them L steps ahead, and the code after it rewinds them
  /// (rewindAfterLoop).
  SmallVector<std::pair<unsigned, Value>> rewound;
};

/// A load whose block no dot reads, copied into a ring of block slots
/// alongside the operands and read back from its slot (attention's
/// backward reads its rows of M and Delta so): its latency then hides
/// behind earlier iterations instead of stalling the loop's softmax.
struct BlockSlot {
  LoadOp load;
  BlockBufferAttr buffer;
  /// The pointers and mask (null if none) the copy reads, under a layout
  /// of their own (getCopyLayout) where they can be recomputed there.
  Value copyPtr, copyMask;
};

/// Erases the ops of `loop`'s body that nothing reads. A recomputation
/// under another layout that is abandoned leaves such clones behind; one
/// that reads a carried value would keep the loop from being pipelined.
void eraseDeadOps(scf::ForOp loop) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*loop.getBody())))
    if (isOpTriviallyDead(&op))
      op.erase();
}

/// The layout a block slot's copy reads its pointers under: 16 bytes per
/// thread, the block spread over the threads. The reader's layout (a row
/// of an accumulator, say) may give every thread a few elements that many
/// other threads hold too; copied from there, each thread would issue a
/// cp.async per run of its own, most of them predicated off.
BlockedEncodingAttr getCopyLayout(RankedTensorType type, int numWarps, int threadsPerWarp) {
  unsigned perThread = std::max<unsigned>(1, 128 / type.getElementTypeBitWidth());
  return getDefaultBlockedEncoding(type.getContext(), type.getShape(), {0}, perThread, numWarps,
                                   threadsPerWarp);
}

/// The pointers and mask of each of `loads` recomputed under its copy
/// layout, or the load's own where they cannot be (a pointer the loop
/// carries, say).
SmallVector<BlockSlot> getBlockCopies(scf::ForOp loop, ArrayRef<LoadOp> loads, int numWarps,
                                      int threadsPerWarp) {
  Rematerializer strict(/*convertWhenStuck=*/false);
  SmallVector<BlockSlot> blocks;
  bool abandoned = false;
  for (LoadOp load : loads) {
    BlockSlot block{load, {}, load.getPtr(), load.getMask()};
    auto type = cast<RankedTensorType>(load.getType());
    BlockedEncodingAttr layout = getCopyLayout(type, numWarps, threadsPerWarp);
    FailureOr<Value> ptr = strict.get(load.getPtr(), layout);
    FailureOr<Value> mask =
        load.getMask() ? strict.get(load.getMask(), layout) : FailureOr<Value>(Value());
    if (succeeded(ptr) && succeeded(mask)) {
      block.copyPtr = *ptr;
      block.copyMask = *mask;
    } else {
      abandoned = true;
    }
    blocks.push_back(block);
  }
  if (abandoned)
    eraseDeadOps(loop);
  return blocks;
}

/// Whether `value`, computed in `loop`'s body, depends on a value the loop
/// carries (which the pipelined loop holds `lookahead` iterations ahead).
bool dependsOnCarried(scf::ForOp loop, Value value) {
  SmallVector<Value> worklist{value};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    if (!seen.insert(next).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(next)) {
      if (arg.getOwner() == loop.getBody() && arg != loop.getInductionVar())
        return true;
      continue;
    }
    Operation *op = next.getDefiningOp();
    if (!loop->isAncestor(op))
      continue;
    llvm::append_range(worklist, op->getOperands());
  }
  return false;
}

/// The loads of `loop`'s body that can go through block slots: 1-D blocks
/// of 32- or 64-bit elements (cp.async copies at least 4 bytes), read
/// through pointers and not already copied as a dot operand (one of
/// `operandLoads`; those loaded before the loop are not in its body). A
/// load whose masked-off elements read as something other than zero keeps
/// its mask and `other` to apply them after the slot's read: they must not
/// depend on the carried values, which the pipelined loop holds ahead.
SmallVector<LoadOp> getBlockSlotCandidates(scf::ForOp loop, ArrayRef<LoadOp> operandLoads) {
  SmallVector<LoadOp> candidates;
  for (Operation &op : *loop.getBody()) {
    auto load = dyn_cast<LoadOp>(op);
    if (!load || load.getTensorMap() || load.getIsVolatile() ||
        llvm::is_contained(operandLoads, load))
      continue;
    auto type = dyn_cast<RankedTensorType>(load.getType());
    if (!type || type.getRank() != 1 || !getThreadLayout(type))
      continue;
    Type element = type.getElementType();
    if (!element.isIntOrFloat() ||
        (element.getIntOrFloatBitWidth() != 32 && element.getIntOrFloatBitWidth() != 64))
      continue;
    if (load.getMask() && load.getOther() && !isZeroBlock(load.getOther()) &&
        (dependsOnCarried(loop, load.getMask()) || dependsOnCarried(loop, load.getOther())))
      continue;
    candidates.push_back(load);
  }
  return candidates;
}

/// The loop-invariant step by which the loop advances its carried value
/// `index` (`x + c` or `addptr(x, c)`, c defined outside the loop), or null.
Value getInvariantStep(scf::ForOp loop, unsigned index) {
  BlockArgument arg = loop.getRegionIterArgs()[index];
  Operation *next = loop.getBody()->getTerminator()->getOperand(index).getDefiningOp();
  if (!isa_and_present<arith::AddIOp, AddPtrOp>(next) || next->getOperand(0) != arg)
    return {};
  Value step = next->getOperand(1);
  return loop->isAncestor(step.getParentRegion()->getParentOp()) ? Value() : step;
}

/// After `loop`, whose copies ran `lookahead` iterations ahead: each
/// rewound carried value, read after the loop, stepped back by `lookahead`
/// steps to the value the loop would have ended with.
void rewindAfterLoop(OpBuilder &builder, scf::ForOp loop, const CopyStage &stage, int lookahead) {
  for (auto [index, step] : stage.rewound) {
    Value result = loop.getResult(index);
    Location loc = result.getLoc();
    Type stepType = step.getType();
    TypedAttr back = builder.getIntegerAttr(getElementTypeOrSelf(stepType), -lookahead);
    if (auto shaped = dyn_cast<ShapedType>(stepType))
      back = DenseElementsAttr::get(shaped, back);
    Value delta = arith::MulIOp::create(builder, loc, step,
                                        arith::ConstantOp::create(builder, loc, back));
    Operation *rewind = isa<PointerType>(getElementTypeOrSelf(result.getType()))
                            ? AddPtrOp::create(builder, loc, result.getType(), result, delta)
                            : arith::AddIOp::create(builder, loc, result, delta);
    result.replaceAllUsesExcept(rewind->getResult(0), rewind);
  }
}

/// The copy stage of `loop` for the pipelined `loads` (the dot operands'
/// and the blocks copied into block slots, whose copies also read
/// `copyRoots`, their pointers and masks under the copy layout), or
/// failure when its values (which the pipelined loop computes L iterations
/// ahead) are read by anything but the stage itself.
FailureOr<CopyStage> getCopyStage(scf::ForOp loop, ArrayRef<LoadOp> loads,
                                  ArrayRef<Value> copyRoots, bool tma) {
  Block *body = loop.getBody();
  Operation *yield = body->getTerminator();
  llvm::SetVector<Operation *> ops;
  llvm::SetVector<unsigned> carried;
  auto addSlice = [&](ValueRange roots) {
    FailureOr<SmallVector<Operation *>> slice = getBodySlice(loop, roots);
    if (failed(slice))
      return failure();
    ops.insert(slice->begin(), slice->end());
    return success();
  };
  auto noteCarried = [&](Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    if (arg && arg.getOwner() == body && arg.getArgNumber() > 0)
      carried.insert(arg.getArgNumber() - 1);
  };
  SmallVector<Value> roots;
  for (LoadOp load : loads) {
    // The TMA unit reads the block from its coordinates; cp.async from
    // the pointers, under the mask. A load through a tensor map also has
    // pointers and a mask (what every other path reads), computed from
    // the same carried offsets: they run ahead too, so that nothing
    // outside the stage reads those offsets, and are dead once the TMA
    // copies replace the load.
    if (tma)
      llvm::append_range(roots, load.getTensorCoords());
    roots.push_back(load.getPtr());
    if (load.getMask())
      roots.push_back(load.getMask());
  }
  llvm::append_range(roots, copyRoots);
  if (failed(addSlice(roots)))
    return failure();
  for (Value root : roots)
    noteCarried(root);
  // Close over the loop-carried values: the stage reads them, so it also
  // computes their next values.
  for (size_t done = 0, known = 0; done < ops.size() || known < carried.size();) {
    for (; done < ops.size(); ++done)
      for (Value operand : ops[done]->getOperands())
        noteCarried(operand);
    for (; known < carried.size(); ++known) {
      Value next = yield->getOperand(carried[known]);
      noteCarried(next);
      if (failed(addSlice(next)))
        return failure();
    }
  }

  // What the stage computes from carried values is L iterations ahead:
  // only the stage, the pipelined loads and the carried values' own yields
  // may read it, and nothing after the loop.
  llvm::DenseSet<Operation *> inStage(ops.begin(), ops.end());
  for (LoadOp load : loads)
    inStage.insert(load);
  auto onlyStageReads = [&](Value value) {
    return llvm::all_of(value.getUses(), [&](OpOperand &use) {
      Operation *user = use.getOwner();
      return inStage.contains(user) ||
             (user == yield && carried.contains(use.getOperandNumber()));
    });
  };
  llvm::DenseSet<Value> ahead;
  SmallVector<std::pair<unsigned, Value>> rewound;
  for (unsigned index : carried) {
    BlockArgument arg = loop.getRegionIterArgs()[index];
    if (!onlyStageReads(arg))
      return failure();
    // Read after the loop (the next loop of a split one starts from it):
    // only a value advanced by a constant step can be rewound.
    if (!loop->getResult(index).use_empty()) {
      Value step = getInvariantStep(loop, index);
      if (!step)
        return failure();
      rewound.emplace_back(index, step);
    }
    ahead.insert(arg);
  }
  for (Operation &op : *body) {
    // The loads' blocks reach their readers through the slots.
    bool isLoad = llvm::is_contained(loads, dyn_cast<LoadOp>(op));
    if (isLoad ||
        !llvm::any_of(op.getOperands(), [&](Value v) { return ahead.contains(v); }))
      continue;
    for (Value result : op.getResults()) {
      if (!onlyStageReads(result))
        return failure();
      ahead.insert(result);
    }
  }
  CopyStage stage;
  stage.ops.assign(ops.begin(), ops.end());
  llvm::sort(stage.ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  stage.carried = std::move(carried);
  stage.rewound = std::move(rewound);
  return stage;
}

/// `iv + steps * step`, in the induction variable's type.
Value advance(OpBuilder &builder, Location loc, scf::ForOp loop, Value iv, int64_t steps) {
  if (steps == 0)
    return iv;
  Value count = arith::ConstantOp::create(builder, loc,
                                          builder.getIntegerAttr(iv.getType(), steps));
  return arith::AddIOp::create(
      builder, loc, iv, arith::MulIOp::create(builder, loc, loop.getStep(), count));
}

/// Clones the copy stage under `mapping` (its induction variable and
/// carried values already mapped), then copies each operand into `slot`,
/// masked off unless `iv` is an iteration of the loop, as one group. With
/// `barriers` (the offset of the slots' mbarriers), each thread then
/// arrives on the slot's mbarrier once its copies land, where `iv` is an
/// iteration of the loop; or, with `tma`, each operand is copied by the
/// TMA unit instead, under the same condition.
void emitCopies(OpBuilder &builder, Location loc, scf::ForOp loop, const CopyStage &stage,
                ArrayRef<PipelinedOperand> operands, ArrayRef<OperandBufferAttr> buffers,
                ArrayRef<BlockSlot> blocks, IRMapping &mapping, Value iv, Value slot,
                std::optional<int64_t> barriers, bool tma) {
  for (Operation *op : stage.ops)
    builder.clone(*op, mapping);
  Value runs = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, iv,
                                     loop.getUpperBound());
  if (tma) {
    for (auto [operand, buffer] : llvm::zip(operands, buffers)) {
      SmallVector<Value> coords;
      for (Value coord : operand.load.getTensorCoords())
        coords.push_back(mapping.lookupOrDefault(coord));
      auto tile = cast<RankedTensorType>(operand.load.getType());
      AsyncTmaCopyOp::create(builder, operand.load.getLoc(), operand.load.getTensorMap(),
                             coords, slot, runs, buffer, *barriers,
                             RankedTensorType::get(tile.getShape(), tile.getElementType()),
                             /*warp=*/IntegerAttr());
    }
    return;
  }
  for (auto [operand, buffer] : llvm::zip(operands, buffers)) {
    Value ptr = mapping.lookupOrDefault(operand.load.getPtr());
    Value mask = operand.load.getMask() ? mapping.lookupOrDefault(operand.load.getMask())
                                        : Value();
    mask = andMask(builder, loc, mask, runs, cast<RankedTensorType>(ptr.getType()));
    AsyncCopyOp::create(builder, operand.load.getLoc(), ptr, slot, mask, buffer,
                        operand.transposed);
  }
  for (const BlockSlot &block : blocks) {
    Value ptr = mapping.lookupOrDefault(block.copyPtr);
    Value mask = block.copyMask ? mapping.lookupOrDefault(block.copyMask) : Value();
    mask = andMask(builder, loc, mask, runs, cast<RankedTensorType>(ptr.getType()));
    AsyncCopyBlockOp::create(builder, block.load->getLoc(), ptr, slot, mask, block.buffer);
  }
  AsyncCommitGroupOp::create(builder, loc);
  if (barriers)
    AsyncCopyArriveOp::create(builder, loc, slot, runs, *barriers);
}

/// The loop-invariant scalar a block offset is a splat of (`splat(x)` or a
/// splat constant), materialized before `loop`; null if there is none.
Value getInvariantSplatScalar(scf::ForOp loop, Value offset) {
  OpBuilder builder(loop);
  DenseIntElementsAttr constant;
  if (matchPattern(offset, m_Constant(&constant)) && constant.isSplat())
    return arith::ConstantOp::create(builder, loop.getLoc(),
                                     constant.getSplatValue<IntegerAttr>());
  auto splat = offset.getDefiningOp<SplatOp>();
  if (!splat)
    return {};
  Value scalar = splat.getSrc();
  if (!loop->isAncestor(scalar.getParentRegion()->getParentOp()))
    return scalar;
  // Computed in the body from values defined outside it: clone it out.
  FailureOr<SmallVector<Operation *>> slice = getBodySlice(loop, scalar);
  if (failed(slice))
    return {};
  for (Operation *op : *slice)
    for (Value operand : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand); arg && arg.getOwner() == loop.getBody())
        return {};
  IRMapping mapping;
  for (Operation *op : *slice)
    builder.clone(*op, mapping);
  return mapping.lookupOrDefault(scalar);
}

/// Where a pipelined load's pointers are a block the loop advances by the
/// same offset each iteration (`p = p + splat(x)`, x invariant), carries
/// the scalar sum of the offsets instead and rebuilds the block from its
/// initial value in the body. The lowering then only computes the
/// pointers the copies use (a thread copies a run of elements through its
/// first pointer) instead of advancing every element a loop-carried block
/// holds.
void carryPointerOffsets(scf::ForOp &loop, ArrayRef<PipelinedOperand> operands) {
  for (const PipelinedOperand &operand : operands) {
    Block *body = loop.getBody();
    auto arg = dyn_cast<BlockArgument>(operand.load.getPtr());
    if (!arg || arg.getOwner() != body || arg.getArgNumber() == 0)
      continue;
    unsigned index = arg.getArgNumber() - 1;
    Operation *yield = body->getTerminator();
    auto advance = yield->getOperand(index).getDefiningOp<AddPtrOp>();
    if (!advance || advance.getPtr() != arg || !advance->hasOneUse() ||
        !llvm::all_of(arg.getUsers(), [&](Operation *user) {
          return user == operand.load.getOperation() || user == advance.getOperation();
        }))
      continue;
    Value step = getInvariantSplatScalar(loop, advance.getOffset());
    if (!step)
      continue;
    Location loc = loop.getLoc();
    OpBuilder builder(loop);
    // 64-bit sums: the pointers they replace advanced in 64 bits.
    Type i64 = builder.getI64Type();
    if (step.getType() != i64)
      step = arith::ExtSIOp::create(builder, loc, i64, step);
    Value zero = arith::ConstantOp::create(builder, loc, builder.getI64IntegerAttr(0));
    Value initial = loop.getInitArgs()[index];
    IRRewriter rewriter(loop.getContext());
    rewriter.setInsertionPoint(loop);
    FailureOr<LoopLikeOpInterface> replaced = loop.replaceWithAdditionalYields(
        rewriter, zero, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &b, Location l, ArrayRef<BlockArgument> args) {
          return SmallVector<Value>{arith::AddIOp::create(b, l, args[0], step)};
        });
    if (failed(replaced))
      continue;
    loop = cast<scf::ForOp>(replaced->getOperation());
    body = loop.getBody();
    Value sum = loop.getRegionIterArgs().back();
    auto ptrType = cast<RankedTensorType>(initial.getType());
    auto offsetType = RankedTensorType::get(ptrType.getShape(), i64, ptrType.getEncoding());
    builder.setInsertionPointToStart(body);
    Value pointers = AddPtrOp::create(builder, loc, ptrType, initial,
                                      SplatOp::create(builder, loc, offsetType, sum));
    operand.load.getPtrMutable().assign(pointers);
    // The old block is now carried unchanged (folded away), and, after the
    // loop, rebuilt from the final sum.
    BlockArgument oldArg = loop.getRegionIterArgs()[index];
    body->getTerminator()->setOperand(index, oldArg);
    advance.erase();
    Value result = loop.getResult(index);
    if (!result.use_empty()) {
      builder.setInsertionPointAfter(loop);
      Value final = AddPtrOp::create(
          builder, loc, ptrType, initial,
          SplatOp::create(builder, loc, offsetType, loop.getResults().back()));
      result.replaceAllUsesWith(final);
    }
  }
}

/// The widest (in columns) of `dots`' results that the loop carries
/// (yields): an accumulator.
int64_t getWidestCarriedAccumulator(scf::ForOp loop, ArrayRef<DotOp> dots) {
  Operation *yield = loop.getBody()->getTerminator();
  int64_t widest = 0;
  for (DotOp dot : dots)
    if (llvm::is_contained(yield->getOperands(), dot.getResult()))
      widest = std::max(widest, cast<RankedTensorType>(dot.getType()).getDimSize(1));
  return widest;
}

/// Whether `a` and `b` are the two versions of one loop
/// (kiln-tensor-map-pointer-loads): a program runs one or the other.
bool areVersionsOfOneLoop(scf::ForOp a, scf::ForOp b) {
  TensorMapVersionSide sideA = getTensorMapVersionSide(a), sideB = getTensorMapVersionSide(b);
  return sideA.version && sideA.version == sideB.version && sideA.throughMaps != sideB.throughMaps;
}

/// Whether a loop of `loop`'s function other than `loop` (or than its
/// other version) computes a dot in its own body.
bool hasOtherDotLoop(scf::ForOp loop) {
  auto function = loop->getParentOfType<FunctionOpInterface>();
  WalkResult found = function->walk([&](scf::ForOp other) {
    if (other != loop && hasDot(other) && !areVersionsOfOneLoop(loop, other))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return found.wasInterrupted();
}

/// Whether the block `operand` loads before `loop` is in `buffer`'s slot
/// already: an earlier loop of the same block (the causal forward's loop
/// below the diagonal, before the one on it) copied it there, and no copy
/// since wrote those bytes. (kiln-gpu-allocate-shared-memory then keeps the
/// slot's bytes from the scratch until `loop` has read them.)
bool isInSlotAlready(scf::ForOp loop, const PipelinedOperand &operand, OperandBufferAttr buffer) {
  SlotBytes bytes = getSlotBytes(buffer);
  for (Operation *op = loop->getPrevNode(); op; op = op->getPrevNode()) {
    auto copy = dyn_cast<AsyncCopyOp>(op);
    if (copy && copy.getBuffer() == buffer)
      return !operand.tmaBox && copy.getPtr() == operand.load.getPtr() &&
             copy.getMask() == operand.load.getMask() && copy.getTransposed() == operand.transposed;
    auto tmaCopy = dyn_cast<AsyncTmaCopyOp>(op);
    if (tmaCopy && tmaCopy.getBuffer() == buffer)
      return operand.tmaBox && tmaCopy.getTensorMap() == operand.load.getTensorMap() &&
             llvm::equal(tmaCopy.getCoords(), operand.load.getTensorCoords());
    bool overwrites = false;
    op->walk([&](Operation *nested) {
      std::optional<SlotBytes> written = getWrittenSlotBytes(nested);
      overwrites |= written && written->overlaps(bytes);
    });
    if (overwrites)
      return false;
  }
  return false;
}

LogicalResult pipeline(scf::ForOp loop, int numStages, AxisInfoAnalysis &axisInfo) {
  ModuleOp module = loop->getParentOfType<ModuleOp>();
  int numWarps = getNumWarps(module), threadsPerWarp = getThreadsPerWarp(module);
  if (writesMemory(loop))
    return failure();
  // The operands of every tensor-core dot of the body (an attention loop
  // has two): loaded in the body, or once before the loop.
  SmallVector<DotOp> dots;
  for (Operation &op : *loop.getBody())
    if (auto dot = dyn_cast<DotOp>(op); dot && getDotTensorCores(dot, numWarps, threadsPerWarp))
      dots.push_back(dot);
  if (dots.empty())
    return failure();
  SmallVector<PipelinedOperand> looped, invariants;
  for (PipelinedOperand &operand :
       getPipelinedOperands(loop, dots, numWarps, threadsPerWarp, axisInfo))
    (operand.invariant ? invariants : looped).push_back(operand);
  // Chained dots (attention) whose second dot kiln-gpu-overlap-dots will
  // run an iteration late read a slot an iteration longer: the copies run
  // one iteration less ahead. Measured on the H200 (docs/design/
  // attention.md), that pays on one warpgroup computing one 64-row tile;
  // two warpgroups already overlap each other's softmax and dots, and lose
  // more to the shorter lookahead than they gain. Nor does it pay where
  // another loop of the kernel computes dots (a causal attention split at
  // its diagonal by hand, as tutorial 06 does): the values carried into
  // and out of the rotated loops then spill (measured on the H100,
  // docs/design/attention.md). (A loop's versions for tensor maps are not
  // two loops: a program runs one.)
  std::optional<ChainedDots> chained = getChainedDots(loop, numWarps, threadsPerWarp);
  bool overlapDots = numStages >= 3 && chained && numWarps == 4 &&
                     chained->first.getType().getDimSize(0) == 64 &&
                     !hasOtherDotLoop(loop);
  // The version of such a loop that reads through tensor maps is copied by
  // threads, as the loop as it was, and so goes again
  // (kiln-gpu-drop-unread-tensor-maps): rotated, the loop through pointers
  // ran 430 TFLOP/s at head dimension 64 on an H100, where the version
  // copied by the TMA unit, not rotated, ran 363 (bench/RESULTS.md,
  // 2026-12-07 and 2026-12-08, later). TMA copies in a rotated version
  // are not measured yet.
  bool tma = !looped.empty() && canUseTma(looped) && !(overlapDots && getTensorMapVersionSide(loop).throughMaps);
  // In a loop of TMA copies, a block loaded once through a tensor map is
  // copied by the TMA unit too: one warp's copy, waited for on an mbarrier,
  // instead of every thread's addresses and copies (attention's Q, once a
  // program). The others go by cp.async.
  SmallVector<PipelinedOperand> tmaCopied;
  if (tma)
    tmaCopied = looped;
  for (PipelinedOperand &operand : invariants) {
    if (tma && operand.tmaBox) {
      tmaCopied.push_back(operand);
      if (canUseTma(tmaCopied))
        continue;
      tmaCopied.pop_back();
    }
    operand.tmaBox.reset();
  }
  if (!tma)
    llvm::erase_if(looped, [](const PipelinedOperand &operand) { return !operand.copyable; });
  llvm::erase_if(invariants, [](const PipelinedOperand &operand) {
    return !operand.copyable && !operand.tmaBox;
  });
  // The TMA unit writes the block as it lies.
  for (PipelinedOperand &operand : llvm::concat<PipelinedOperand>(looped, invariants)) {
    if (!tma || !operand.tmaBox)
      continue;
    operand.kMajor = operand.transposed;
    for (SlotReader &reader : operand.readers)
      reader.kMajor = reader.transposed;
  }
  // A block loaded before the loop is copied only along with the loop's.
  if (looped.empty())
    return failure();
  if (!tma)
    carryPointerOffsets(loop, looped);
  // The loop's other loads go through block slots where the stage can run
  // their pointers ahead too (else the operands are pipelined alone). Not
  // in a loop of TMA copies, whose waits are on mbarriers, nor in one that
  // kiln-gpu-overlap-dots rotates.
  SmallVector<LoadOp> operandLoads;
  for (const PipelinedOperand &operand : looped)
    operandLoads.push_back(operand.load);
  SmallVector<BlockSlot> blocks;
  if (!tma && !overlapDots)
    blocks = getBlockCopies(loop, getBlockSlotCandidates(loop, operandLoads), numWarps,
                            threadsPerWarp);
  FailureOr<CopyStage> stage = failure();
  if (!blocks.empty()) {
    SmallVector<LoadOp> loads = operandLoads;
    SmallVector<Value> copyRoots;
    for (const BlockSlot &block : blocks) {
      loads.push_back(block.load);
      copyRoots.push_back(block.copyPtr);
      if (block.copyMask)
        copyRoots.push_back(block.copyMask);
    }
    stage = getCopyStage(loop, loads, copyRoots, tma);
  }
  if (failed(stage)) {
    if (!blocks.empty())
      eraseDeadOps(loop);
    blocks.clear();
    stage = getCopyStage(loop, operandLoads, {}, tma);
  }
  if (failed(stage))
    return failure();

  // A wgmma dot that only accumulates, both operands in slots, also runs
  // asynchronously. (An operand in registers goes through the one
  // scratch, which the next iteration overwrites.)
  DotOp firstDot = dots.front();
  bool asyncDot = numStages >= 3 && dots.size() == 1 && invariants.empty() &&
                  looped.front().tensorCores == TensorCores::wgmma && looped.size() == 2 &&
                  getAccumulatingDot(loop, numWarps, threadsPerWarp) == firstDot;
  // Chained dots (attention) with an accumulator narrower than 128 columns
  // (head dimension 64) leave the second dot running into the next
  // iteration: its accumulator is read first by the rescale after the next
  // softmax, so its wait comes with the next first dot's, and the tensor
  // cores run it while the warps meet at the next CTA barrier and issue the
  // next first dot. It reads its slot past that barrier: on more than one
  // warpgroup, one more slot (below). (Wider accumulators have their
  // copies arrive on mbarriers instead, below, and a 4-warp loop of 128
  // columns spills.)
  int64_t widestAccumulator = getWidestCarriedAccumulator(loop, dots);
  bool asyncSecond = chained && !overlapDots && !tma &&
                     widestAccumulator < kMinAccumulatorColumnsForArrivals;
  // Copies run num_stages - 1 iterations ahead. An asynchronous dot only
  // waits for the group before it, so when a warpgroup copies, another
  // may still read the previous iteration's slot: one more slot keeps it.
  int lookahead = numStages - 1;
  int slots = (asyncDot || asyncSecond) && numWarps > 4 ? numStages + 1 : numStages;
  if (overlapDots)
    lookahead = numStages - 2;
  // On wgmma, in a loop of several dots (attention's forward and
  // backward) that each wait for themselves, the threads' copies also
  // complete an mbarrier per slot, which the loop waits on instead of
  // every thread's copy groups and a CTA barrier: kiln-gpu-release-tma-
  // slots then drops the barrier, as in a loop of TMA copies, and the
  // warpgroups drift apart, one's softmax running during another's dots.
  // (A dot left in flight, or run an iteration late, reads a slot past
  // the barrier; a loop of one dot has little else to overlap.) Only
  // where the loop carries an accumulator 128 columns wide or more
  // (attention at head dimension 128) and the kernel has two warpgroups
  // or more: at head dimension 64 an iteration is short, and its threads'
  // mbarrier waits, arrivals and releases cost more than the barrier
  // saves; one warpgroup has no other to drift apart from, and pays the
  // same for nothing (measured on an H100, docs/design/attention.md).
  bool threadCopiesArrive =
      !tma && !asyncDot && !overlapDots && dots.size() > 1 &&
      hasSeveralWarpgroups(numWarps) && widestAccumulator >= kMinAccumulatorColumnsForArrivals &&
      llvm::all_of(looped, [](const PipelinedOperand &operand) {
        return operand.tensorCores == TensorCores::wgmma;
      });

  MLIRContext *context = loop.getContext();
  Location loc = loop.getLoc();
  int64_t offset = 0;
  auto getBuffer = [&](const PipelinedOperand &operand, int bufferSlots) {
    int64_t tileBytes = cast<RankedTensorType>(operand.load.getType()).getNumElements() *
                        operand.tensorCore.elementBytes;
    int64_t slotBytes = (tileBytes + 1023) / 1024 * 1024;
    auto buffer = OperandBufferAttr::get(
        context, operand.index, TensorCoresAttr::get(context, operand.tensorCores), offset,
        slotBytes, bufferSlots, operand.kMajor);
    offset += slotBytes * bufferSlots;
    return buffer;
  };
  SmallVector<OperandBufferAttr> buffers, invariantBuffers;
  for (const PipelinedOperand &operand : looped)
    buffers.push_back(getBuffer(operand, slots));
  for (const PipelinedOperand &operand : invariants)
    invariantBuffers.push_back(getBuffer(operand, 1));
  // Block slots after the operands' (whose offsets are multiples of 1024),
  // 16-byte aligned.
  for (BlockSlot &block : blocks) {
    auto type = cast<RankedTensorType>(block.load.getType());
    int64_t slotBytes = (type.getNumElements() * type.getElementTypeBitWidth() / 8 + 15) / 16 * 16;
    block.buffer = BlockBufferAttr::get(context, offset, slotBytes, slots);
    offset += slotBytes * slots;
  }
  // The TMA copies (or the threads' copies, where they arrive) complete
  // an mbarrier per slot, after the slots (block slots are 16-byte
  // aligned). The blocks that the TMA unit copies once complete one of
  // their own, before those: the mbarriers after a ring's are the ones
  // kiln-gpu-release-tma-slots and kiln-gpu-warp-specialize add. (It is
  // there even where an earlier loop left the blocks in their slots, so
  // that both loops' rings are at the same place.)
  std::optional<int64_t> barriers, invariantBarrier;
  if (llvm::any_of(invariants, [](const PipelinedOperand &operand) { return operand.tmaBox; })) {
    invariantBarrier = offset;
    offset += 8;
  }
  if (tma || threadCopiesArrive)
    barriers = offset;
  if (tma)
    recordTmaBoxes(tmaCopied);

  // Before the loop: the blocks loaded there, copied once into their own
  // slots, as the first group (the loop's first wait covers it), unless an
  // earlier loop left them there.
  OpBuilder builder(loop);
  Value firstSlot = createI32(builder, loc, 0);
  SmallVector<std::pair<PipelinedOperand *, OperandBufferAttr>> invariantCopies, invariantTmaCopies;
  for (auto [operand, buffer] : llvm::zip(invariants, invariantBuffers))
    if (!isInSlotAlready(loop, operand, buffer))
      (operand.tmaBox ? invariantTmaCopies : invariantCopies).emplace_back(&operand, buffer);
  if (!invariantTmaCopies.empty()) {
    InitTmaBarriersOp::create(builder, loc, *invariantBarrier, 1, int32_t(invariantTmaCopies.size()));
    Value always = arith::ConstantOp::create(builder, loc, builder.getBoolAttr(true));
    for (auto [operand, buffer] : invariantTmaCopies) {
      LoadOp load = operand->load;
      auto tile = cast<RankedTensorType>(load.getType());
      AsyncTmaCopyOp::create(builder, load.getLoc(), load.getTensorMap(), load.getTensorCoords(),
                             firstSlot, always, buffer, *invariantBarrier,
                             RankedTensorType::get(tile.getShape(), tile.getElementType()),
                             /*warp=*/IntegerAttr());
    }
  }
  for (auto [operand, buffer] : invariantCopies)
    AsyncCopyOp::create(builder, operand->load.getLoc(), operand->load.getPtr(), firstSlot,
                        operand->load.getMask(), buffer, operand->transposed);
  if (!invariantCopies.empty())
    AsyncCommitGroupOp::create(builder, loc);
  // Before the loop: the copies of the first `lookahead` iterations, each
  // advancing the carried values it reads.
  Operation *yield = loop.getBody()->getTerminator();
  // (One arrival per TMA copy into a slot, or per thread.)
  if (barriers)
    InitTmaBarriersOp::create(builder, loc, *barriers, slots,
                              tma ? int32_t(looped.size()) : numWarps * threadsPerWarp);
  IRMapping mapping;
  for (unsigned index : stage->carried)
    mapping.map(loop.getRegionIterArgs()[index], loop.getInitArgs()[index]);
  for (int i = 0; i < lookahead; ++i) {
    Value iv = advance(builder, loc, loop, loop.getLowerBound(), i);
    mapping.map(loop.getInductionVar(), iv);
    emitCopies(builder, loc, loop, *stage, looped, buffers, blocks, mapping, iv,
               createI32(builder, loc, i), barriers, tma);
    SmallVector<Value> next;
    for (unsigned index : stage->carried)
      next.push_back(mapping.lookupOrDefault(yield->getOperand(index)));
    for (auto [index, value] : llvm::zip(stage->carried, next))
      mapping.map(loop.getRegionIterArgs()[index], value);
  }
  for (unsigned index : stage->carried)
    loop.getInitArgsMutable()[index].set(mapping.lookup(loop.getRegionIterArgs()[index]));
  // (The TMA unit's waits are on mbarriers: the blocks copied once are
  // waited for here.)
  if (tma && !invariantCopies.empty())
    AsyncWaitOp::create(builder, loc, 0);
  if (!invariantTmaCopies.empty())
    WaitTmaBarrierOp::create(builder, loc, firstSlot, createI32(builder, loc, 0), *invariantBarrier,
                             /*perThread=*/true, /*warp=*/nullptr);

  // The loop carries the slot it reads, round the ring, and with
  // mbarriers the parity of the slot's mbarrier phase, which flips with
  // each round.
  IRRewriter rewriter(context);
  rewriter.setInsertionPoint(loop);
  SmallVector<Value> initial{createI32(rewriter, loc, 0)};
  if (barriers)
    initial.push_back(createI32(rewriter, loc, 0));
  FailureOr<LoopLikeOpInterface> replaced = loop.replaceWithAdditionalYields(
      rewriter, initial, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &b, Location l, ArrayRef<BlockArgument> args) {
        Value next = arith::AddIOp::create(b, l, args[0], createI32(b, l, 1));
        Value wraps = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, next,
                                            createI32(b, l, slots));
        SmallVector<Value> yielded{
            arith::SelectOp::create(b, l, wraps, createI32(b, l, 0), next)};
        if (args.size() > 1)
          yielded.push_back(arith::SelectOp::create(
              b, l, wraps, arith::XOrIOp::create(b, l, args[1], createI32(b, l, 1)), args[1]));
        return yielded;
      });
  if (failed(replaced))
    return failure();
  auto newLoop = cast<scf::ForOp>(replaced->getOperation());
  Value readSlot = newLoop.getRegionIterArgs()[newLoop.getNumRegionIterArgs() - initial.size()];

  // At the top of the body: this iteration's copies are complete.
  builder.setInsertionPointToStart(newLoop.getBody());
  // (The first fill's arrivals also cover the blocks copied once before
  // the loop: each thread's arrival waits for all its earlier copies.)
  if (barriers)
    WaitTmaBarrierOp::create(builder, loc, readSlot, newLoop.getRegionIterArgs().back(),
                             *barriers, /*perThread=*/false, /*warp=*/nullptr,
                             /*threadCopies=*/!tma);
  else
    AsyncWaitOp::create(builder, loc, lookahead - 1);

  // The dots read their operands from the slots.
  auto readFromSlot = [&](const PipelinedOperand &operand, OperandBufferAttr buffer, Value slot) {
    for (const SlotReader &reader : operand.readers) {
      DotOp dot = reader.dot;
      builder.setInsertionPoint(dot);
      Type type = dot->getOperand(reader.index).getType();
      // The reader's own view of the slot's bytes.
      auto view = OperandBufferAttr::get(context, reader.index, buffer.getTensorCores(),
                                         buffer.getOffset(), buffer.getSlotBytes(),
                                         buffer.getSlots(), reader.kMajor);
      Value shared = SharedOperandOp::create(builder, operand.load.getLoc(), type, slot, view);
      dot->setOperand(reader.index, shared);
      // Nearest the dot first: each is then unused, but for a conversion
      // that other readers still read through (the last of them erases it).
      for (Operation *op : reader.between) {
        if (!op->use_empty())
          break;
        op->erase();
      }
    }
  };
  for (auto [operand, buffer] : llvm::zip(looped, buffers))
    readFromSlot(operand, buffer, readSlot);
  for (auto [operand, buffer] : llvm::zip(invariants, invariantBuffers))
    readFromSlot(operand, buffer, firstSlot);
  // The other loads read their blocks from their slots, `other` where
  // masked off (the copies zero-fill those elements), just before their
  // first reader: a read from shared memory is short, and the block then
  // holds no registers during the dots before it.
  for (BlockSlot &block : blocks) {
    LoadOp load = block.load;
    Operation *firstReader = getFirstUserInBlock(load, *newLoop.getBody());
    builder.setInsertionPoint(firstReader ? firstReader : load.getOperation());
    Value value =
        LoadBlockOp::create(builder, load.getLoc(), load.getType(), readSlot, block.buffer);
    if (load.getMask() && load.getOther() && !isZeroBlock(load.getOther()))
      value = arith::SelectOp::create(builder, load.getLoc(), load.getMask(), value,
                                      load.getOther());
    load.getResult().replaceAllUsesWith(value);
  }

  // After the first dot (its instructions are issued first): the copies
  // of the iteration `lookahead` ahead, into the slot as far ahead.
  builder.setInsertionPointAfter(firstDot);
  IRMapping ahead;
  Value aheadIv = advance(builder, loc, newLoop, newLoop.getInductionVar(), lookahead);
  ahead.map(newLoop.getInductionVar(), aheadIv);
  Value writeSlot = arith::AddIOp::create(builder, loc, readSlot, createI32(builder, loc, lookahead));
  Value wraps = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, writeSlot,
                                      createI32(builder, loc, slots));
  writeSlot = arith::SelectOp::create(
      builder, loc, wraps,
      arith::SubIOp::create(builder, loc, writeSlot, createI32(builder, loc, slots)),
      writeSlot);
  emitCopies(builder, loc, newLoop, *stage, looped, buffers, blocks, ahead, aheadIv, writeSlot,
             barriers, tma);
  llvm::SetVector<Operation *> copiedLoads;
  for (const PipelinedOperand &operand : llvm::concat<PipelinedOperand>(looped, invariants))
    copiedLoads.insert(operand.load);
  for (const BlockSlot &block : blocks)
    copiedLoads.insert(block.load);
  for (Operation *load : copiedLoads)
    if (load->use_empty())
      load->erase();

  builder.setInsertionPointAfter(newLoop);
  rewindAfterLoop(builder, newLoop, *stage, lookahead);

  // After the loop: an asynchronous dot's accumulator is read after its
  // wait, then no copy is left in flight and every thread is past both
  // (the barrier of kiln_gpu.async_wait): a later loop, or the next
  // iteration of an enclosing one, reuses the slots.
  builder.setInsertionPointAfter(newLoop);
  auto leaveInFlight = [&](DotOp dot, unsigned accIndex) {
    dot->setAttr(kWgmmaBufferAttr, builder.getI32IntegerAttr(0));
    readThroughWait(builder, loc, newLoop.getResult(accIndex));
  };
  if (asyncDot)
    leaveInFlight(firstDot, cast<BlockArgument>(firstDot.getC()).getArgNumber() - 1);
  // The second dot's accumulator is also read in the loop, by the rescale,
  // once its group is done. (A lone asynchronous dot's is read in the loop
  // only by the next wgmma, which needs no wait.)
  if (asyncSecond) {
    BlockArgument acc = newLoop.getRegionIterArgs()[chained->accIndex];
    OpBuilder inner(*acc.getUsers().begin());
    readThroughWait(inner, loc, acc);
    leaveInFlight(chained->second, chained->accIndex);
  }
  if (overlapDots)
    newLoop->setAttr(kOverlapDotsAttr, builder.getUnitAttr());
  // (Copies past the loop's last iteration, masked off, are in flight
  // still; they arrive on no mbarrier.)
  if (!tma)
    AsyncWaitOp::create(builder, loc, 0);
  if (barriers)
    InvalTmaBarriersOp::create(builder, loc, *barriers, slots);
  if (!invariantTmaCopies.empty()) {
    InvalTmaBarriersOp::create(builder, loc, *invariantBarrier, 1);
  } else if (invariantBarrier) {
    // The blocks an earlier loop left in their slots came on its mbarrier,
    // which it invalidated after itself: that now waits for this loop, the
    // later reader, so that the warps do not meet between the loops.
    for (Operation *op = newLoop->getPrevNode(); op; op = op->getPrevNode()) {
      auto inval = dyn_cast<InvalTmaBarriersOp>(op);
      if (inval && inval.getOffset() == uint64_t(*invariantBarrier)) {
        inval->moveBefore(builder.getInsertionBlock(), builder.getInsertionPoint());
        break;
      }
    }
  }
  return success();
}

struct KilnGPUPipelineLoads
    : public gpu::impl::KilnGPUPipelineLoadsBase<KilnGPUPipelineLoads> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!hasAsyncCopy(module))
      return;
    SmallVector<scf::ForOp> loops;
    module.walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops) {
      // Afresh per loop: pipelining the previous one changed the IR.
      AxisInfoAnalysis axisInfo(module);
      int stages = numStages;
      if (auto own = loop->getAttrOfType<IntegerAttr>(kLoopStagesAttr))
        stages = own.getInt();
      if (stages >= 2)
        (void)pipeline(loop, stages, axisInfo);
    }
  }
};

} // namespace
