//===- StripMine.cpp - Run kernels over 1-D blocks chunk by chunk ----------===//
//
// Implements kiln-strip-mine: a kernel over 1-D blocks of N elements whose
// block ops are element-wise or whole-block reductions becomes loops over
// chunks of W elements, with blocks of W elements. Reductions split the
// kernel into phases: a phase's loop computes what it needs of its blocks
// chunk by chunk (recomputing blocks of earlier phases rather than keeping
// them), and carries each of its reductions' partial results, which the
// next phases read as scalars. The rewrite only retypes blocks, offsets the
// index ranges and regroups the reductions' combines in increasing order,
// so it is valid when no op relates elements at different positions, which
// is what the legality check establishes.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNSTRIPMINE
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Whether an op that touches blocks treats each element on its own.
bool isElementwise(Operation *op) {
  if (isa<MakeRangeOp, SplatOp, AddPtrOp, LoadOp, arith::SelectOp>(op))
    return true;
  if (isa<StoreOp, AtomicRMWOp, AtomicCASOp, AxisHintOp, AssumeOp>(op))
    return true;
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return isa<SplatElementsAttr>(constant.getValue()) ||
           !isa<RankedTensorType>(constant.getType());
  return op->hasTrait<OpTrait::Elementwise>();
}

bool touchesBlocks(Operation *op) {
  return llvm::any_of(llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()),
                      [](Type type) { return isa<RankedTensorType>(type); });
}

/// A reduction of 1-D blocks to scalars, which chunks can compute in parts.
bool isWholeBlockReduction(Operation *op) {
  auto reduce = dyn_cast<ReduceOp>(op);
  return reduce && llvm::none_of(reduce.getResultTypes(),
                                 [](Type type) { return isa<RankedTensorType>(type); });
}

bool isMemoryWrite(Operation *op) { return isa<StoreOp, AtomicRMWOp, AtomicCASOp>(op); }

/// Whether `op` or an op nested in it satisfies `predicate`.
bool anyNested(Operation *op, bool (*predicate)(Operation *)) {
  return op->walk([&](Operation *nested) {
             return predicate(nested) ? WalkResult::interrupt() : WalkResult::advance();
           }).wasInterrupted();
}

/// Whether `op` or an op nested in it writes memory.
bool writesMemory(Operation *op) { return anyNested(op, isMemoryWrite); }

/// Whether `op` or an op nested in it (a loop over blocks) touches blocks.
bool containsBlocks(Operation *op) { return anyNested(op, touchesBlocks); }

/// What the pass learned of a kernel it can split.
struct StripMinePlan {
  int64_t length = 0;
  /// The block split into phases: the kernel's body, or the body of the
  /// loop over scalars that holds all its blocks (a persistent kernel's
  /// loop over rows).
  Block *body = nullptr;
  /// Per op of `body`: the phase it belongs to, which is the number of
  /// reductions it depends on in a chain (0: none).
  llvm::DenseMap<Operation *, unsigned> phase;
  unsigned lastPhase = 0;
};

/// The kernel's body or, while the only op there that holds blocks is an
/// `scf.for` over scalars, that loop's body. Block constants do not count:
/// canonicalization gathers them in the kernel's entry block.
Block &getBlocksBody(func::FuncOp function) {
  Block *body = &function.getBody().front();
  for (;;) {
    Operation *holder = nullptr;
    for (Operation &op : body->without_terminator()) {
      if (!containsBlocks(&op) || isa<arith::ConstantOp>(op))
        continue;
      if (holder)
        return *body;
      holder = &op;
    }
    auto loop = dyn_cast_if_present<scf::ForOp>(holder);
    if (!loop || touchesBlocks(loop))
      return *body;
    body = loop.getBody();
  }
}

/// Copies into `body` the block constants from outside it that it uses, so
/// that the chunks retype their own copies.
void sinkBlockConstants(Block &body) {
  llvm::DenseMap<Operation *, Value> copies;
  OpBuilder builder = OpBuilder::atBlockBegin(&body);
  body.walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands()) {
      auto constant = use.get().getDefiningOp<arith::ConstantOp>();
      if (!constant || !isa<RankedTensorType>(constant.getType()) ||
          body.getParentOp()->isAncestor(constant))
        continue;
      Value &copy = copies[constant];
      if (!copy)
        copy = builder.clone(*constant)->getResult(0);
      use.set(copy);
    }
  });
}

/// The plan for splitting `body`, a block of `function`, or nothing if it
/// cannot be split.
std::optional<StripMinePlan> getStripMinePlan(func::FuncOp function, Block &body) {
  std::optional<int64_t> length;
  bool legal = true;
  SmallVector<Operation *> scalarStores;
  bool wroteMemory = false;
  auto visitType = [&](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return;
    if (tensor.getRank() != 1 || (length && *length != tensor.getDimSize(0)))
      legal = false;
    length = tensor.getDimSize(0);
  };
  function.getBody().walk([&](Operation *op) {
    bool blocks = touchesBlocks(op);
    for (Type type : llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
      visitType(type);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (isa<RankedTensorType>(arg.getType()))
            legal = false; // blocks carried by control flow
    // Ops on scalars run outside the chunk loops, ahead of the block
    // accesses of their phase: a scalar store would overtake them, unless
    // it comes after them all (checked below, once phases are known).
    if (auto store = dyn_cast<StoreOp>(op))
      if (!isa<RankedTensorType>(store.getPtr().getType())) {
        if (op->getBlock() == &body)
          scalarStores.push_back(op);
        else
          legal = false;
      }
    if (auto load = dyn_cast<LoadOp>(op)) {
      if (load.getIsVolatile())
        legal = false;
      // Scalar loads run before the chunks' stores: none may follow one.
      if (!blocks && wroteMemory)
        legal = false;
    }
    // So would any other side effect on scalars (an atomic, a barrier).
    if (!blocks && !isa<StoreOp, LoadOp, AssumeOp>(op) && !isMemoryEffectFree(op) &&
        op->getNumRegions() == 0 && !op->hasTrait<OpTrait::IsTerminator>() &&
        !isa<func::CallOp>(op))
      legal = false;
    if (blocks && !isWholeBlockReduction(op) &&
        (!isElementwise(op) || op->getNumRegions() != 0))
      legal = false;
    // Reductions end phases, which only the kernel's own body has.
    if (isa<ReduceOp>(op) && op->getBlock() != &body)
      legal = false;
    wroteMemory |= isMemoryWrite(op);
  });
  if (!legal || !length)
    return std::nullopt;

  StripMinePlan plan;
  plan.length = *length;
  plan.body = &body;
  for (Operation &op : body.without_terminator()) {
    unsigned phase = 0;
    op.walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || def->getBlock() != &body)
          continue;
        phase = std::max(phase, plan.phase.lookup(def) + (isa<ReduceOp>(def) ? 1 : 0));
      }
    });
    plan.phase[&op] = phase;
    if (!containsBlocks(&op))
      continue;
    plan.lastPhase = std::max(plan.lastPhase, phase);
    // What the chunk loops compute stays in them, but for reductions.
    if (!isa<ReduceOp>(op) && llvm::any_of(op.getResultTypes(), [](Type type) {
          return !isa<RankedTensorType>(type);
        }))
      return std::nullopt;
  }
  // Blocks of earlier phases are computed again, from loads: memory this
  // program writes must not change under them, so it writes in the last
  // (or after it: scalar stores of the last reductions' results).
  for (Operation &op : body.without_terminator())
    if (writesMemory(&op) && plan.phase.lookup(&op) < plan.lastPhase)
      return std::nullopt;
  // A scalar store runs after the last phase's loop only if it reads the
  // last reductions (a phase of its own), and keeps its place only if no
  // block access follows it.
  Operation *lastBlockAccess = nullptr;
  for (Operation &op : body.without_terminator())
    if (containsBlocks(&op) && !isMemoryEffectFree(&op))
      lastBlockAccess = &op;
  for (Operation *store : scalarStores)
    if (plan.phase.lookup(store) != plan.lastPhase + 1 ||
        (lastBlockAccess && store->isBeforeInBlock(lastBlockAccess)))
      return std::nullopt;
  return plan;
}

/// Rewrites `plan.body` into loops over chunks.
class StripMiner {
public:
  StripMiner(const StripMinePlan &plan, int64_t chunk, Location loc)
      : body(*plan.body), plan(plan), chunk(chunk), builder(body.getTerminator()), loc(loc) {}

  void run() {
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (auto [index, op] : llvm::enumerate(ops))
      order[op] = index;
    for (unsigned phase = 0; phase <= plan.lastPhase + 1; ++phase) {
      for (Operation *op : ops)
        if (!containsBlocks(op) && plan.phase.lookup(op) == phase)
          builder.clone(*op, outside);
      if (phase <= plan.lastPhase)
        emitPhase(ops, phase);
    }
    // A loop body's terminator yields scalars, now computed again.
    Operation *terminator = body.getTerminator();
    for (OpOperand &operand : terminator->getOpOperands())
      operand.set(outside.lookupOrDefault(operand.get()));
    for (Operation *op : llvm::reverse(ops))
      op->erase();
  }

private:
  Value constant(int64_t value) {
    return arith::ConstantOp::create(builder, loc, builder.getI32IntegerAttr(value));
  }

  Type retype(Type type) const {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return type;
    return RankedTensorType::get({chunk}, tensor.getElementType(), tensor.getEncoding());
  }

  /// One phase: a loop over chunks computing its reductions and stores.
  void emitPhase(ArrayRef<Operation *> ops, unsigned phase) {
    SmallVector<Operation *> roots;
    for (Operation *op : ops)
      if (containsBlocks(op) && plan.phase.lookup(op) == phase &&
          (isa<ReduceOp>(op) || writesMemory(op)))
        roots.push_back(op);
    if (roots.empty())
      return;
    // The block ops the roots need, of any phase so far, in program order.
    llvm::SetVector<Operation *> needed;
    SmallVector<Operation *> worklist(roots);
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!needed.insert(op))
        continue;
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (Operation *def = operand.getDefiningOp();
              def && def->getBlock() == &body && containsBlocks(def) && !isa<ReduceOp>(def))
            worklist.push_back(def);
      });
    }
    SmallVector<Operation *> chunkOps = needed.takeVector();
    llvm::sort(chunkOps, [&](Operation *a, Operation *b) { return order[a] < order[b]; });
    SmallVector<ReduceOp> reductions;
    for (Operation *op : chunkOps)
      if (auto reduce = dyn_cast<ReduceOp>(op))
        reductions.push_back(reduce);

    if (reductions.empty()) {
      auto loop = scf::ForOp::create(builder, loc, constant(0), constant(plan.length),
                                     constant(chunk));
      OpBuilder inside = OpBuilder::atBlockTerminator(loop.getBody());
      IRMapping mapping = outside;
      emitChunk(inside, chunkOps, loop.getInductionVar(), mapping);
      return;
    }
    // The first chunk's partial results start the accumulators: a
    // combine function need not have an identity.
    IRMapping first = outside;
    SmallVector<Value> initial =
        partialResults(reductions, emitChunk(builder, chunkOps, constant(0), first));
    auto loop = scf::ForOp::create(builder, loc, constant(chunk), constant(plan.length),
                                   constant(chunk), initial);
    // A loop with results gets no terminator from its builder.
    OpBuilder inside = OpBuilder::atBlockEnd(loop.getBody());
    IRMapping mapping = outside;
    SmallVector<Value> partial = partialResults(
        reductions, emitChunk(inside, chunkOps, loop.getInductionVar(), mapping));
    scf::YieldOp::create(inside, loc,
                         combine(inside, reductions, loop.getRegionIterArgs(), partial));
    unsigned position = 0;
    for (ReduceOp reduce : reductions)
      for (Value result : reduce.getResults())
        outside.map(result, loop.getResult(position++));
  }

  /// Clones `chunkOps` for the chunk at `start`, retyped to chunk blocks.
  IRMapping &emitChunk(OpBuilder &b, ArrayRef<Operation *> chunkOps, Value start,
                       IRMapping &mapping) {
    for (Operation *op : chunkOps) {
      Operation *copy = b.clone(*op, mapping);
      SmallVector<MakeRangeOp> ranges;
      copy->walk([&](Operation *nested) {
        for (OpResult result : nested->getResults())
          result.setType(retype(result.getType()));
        if (auto constantOp = dyn_cast<arith::ConstantOp>(nested))
          if (auto splat = dyn_cast<SplatElementsAttr>(constantOp.getValue()))
            constantOp.setValueAttr(SplatElementsAttr::get(
                cast<ShapedType>(constantOp.getType()), splat.getSplatValue<Attribute>()));
        if (auto range = dyn_cast<MakeRangeOp>(nested))
          ranges.push_back(range);
      });
      // Each range now covers the chunk: offset it by the chunk's start.
      for (MakeRangeOp range : ranges) {
        range.setEnd(range.getStart() + chunk);
        OpBuilder after(range->getContext());
        after.setInsertionPointAfter(range);
        Value offset = SplatOp::create(after, range.getLoc(), range.getType(), start);
        Value shifted = arith::AddIOp::create(after, range.getLoc(), range, offset);
        range.getResult().replaceAllUsesExcept(shifted, shifted.getDefiningOp());
        if (range == copy)
          mapping.map(op->getResult(0), shifted);
      }
    }
    return mapping;
  }

  static SmallVector<Value> partialResults(ArrayRef<ReduceOp> reductions,
                                           const IRMapping &mapping) {
    SmallVector<Value> values;
    for (ReduceOp reduce : reductions)
      for (Value result : reduce.getResults())
        values.push_back(mapping.lookup(result));
    return values;
  }

  /// Each reduction's combine function applied to (accumulated, chunk's).
  SmallVector<Value> combine(OpBuilder &b, ArrayRef<ReduceOp> reductions,
                             ValueRange accumulated, ValueRange partial) {
    SmallVector<Value> combined;
    unsigned position = 0;
    for (ReduceOp reduce : reductions) {
      Block &region = reduce.getCombineOp().front();
      unsigned count = reduce.getNumResults();
      IRMapping mapping = outside;
      for (unsigned i = 0; i < count; ++i) {
        mapping.map(region.getArgument(i), accumulated[position + i]);
        mapping.map(region.getArgument(count + i), partial[position + i]);
      }
      for (Operation &op : region.without_terminator())
        b.clone(op, mapping);
      for (Value value : cast<ReduceReturnOp>(region.getTerminator()).getResult())
        combined.push_back(mapping.lookupOrDefault(value));
      position += count;
    }
    return combined;
  }

  Block &body;
  const StripMinePlan &plan;
  int64_t chunk;
  OpBuilder builder;
  Location loc;
  /// Old scalar values, and reductions' results, to their new values
  /// outside the loops.
  IRMapping outside;
  llvm::DenseMap<Operation *, unsigned> order;
};

struct KilnStripMine : public kiln::impl::KilnStripMineBase<KilnStripMine> {
  using Base::Base;
  void runOnOperation() override {
    if (chunkSize <= 0 || !llvm::isPowerOf2_64(chunkSize)) {
      getOperation().emitError() << "expected chunk-size to be a power of two, got "
                                 << int64_t(chunkSize);
      return signalPassFailure();
    }
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (!function->hasAttr("kiln.kernel") || function.getBody().getBlocks().size() != 1)
        continue;
      Block &body = getBlocksBody(function);
      sinkBlockConstants(body);
      std::optional<StripMinePlan> plan = getStripMinePlan(function, body);
      if (plan && plan->length > chunkSize && plan->length % chunkSize == 0)
        StripMiner(*plan, chunkSize, function.getLoc()).run();
    }
  }
};

} // namespace
