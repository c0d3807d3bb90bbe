//===- ForwardLayouts.cpp - Run a conversion's users in its source layout -===//
//
// Implements kiln-gpu-forward-layouts. A kiln_gpu.convert_layout moves every
// element of its block between threads through shared memory. Its users
// can often run in the source's layout instead: element-wise ops in any
// layout, a reduction in any blocked layout (its result in the slice),
// expand_dims of a slice and broadcast of a blocked layout, a loop-carried
// value in whatever layout its loop carries it, a value an scf.if yields
// in whatever layout both its regions yield it, the operands of a dot in
// any blocked layout. This pass moves the conversion forward through all
// such users at once (the conversion's "forward slice"), and places
// conversions only where the slice ends in an op that needs another
// layout. It does so when the bytes moved through shared memory, weighted
// by how deep in loops each conversion runs, go down.
//
// This is what keeps an attention kernel's softmax in the first dot's
// accumulator layout: the scores, their row maxima and sums, the loop's
// running maximum and the probabilities feeding the second dot, with no
// conversion of the score block at all.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"

#include "Rematerializer.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUFORWARDLAYOUTS
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// How often code at `op` runs relative to the function body: a loop is
/// taken to run ten iterations (only the comparison matters).
int64_t getLoopWeight(Operation *op) {
  int64_t weight = 1;
  for (Operation *parent = op->getParentOp(); parent; parent = parent->getParentOp())
    if (isa<scf::ForOp, scf::WhileOp>(parent))
      weight *= 10;
  return weight;
}

/// Bytes a conversion of `value` moves.
int64_t getBlockBytes(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  Type element = type.getElementType();
  int64_t bytes = element.isIntOrFloat() ? std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8)
                                         : 8; // pointers
  return type.getNumElements() * bytes;
}

/// Where a value is defined, for its loop weight.
Operation *getDefinitionPoint(Value value) {
  if (Operation *op = value.getDefiningOp())
    return op;
  // A block argument is converted at the start of its block.
  return &value.getParentBlock()->front();
}

/// The forward slice of one conversion: the values that take a new layout
/// and the uses at its edges.
class ForwardSlice {
public:
  /// Computes the slice of `convert`; fails when two paths give a value
  /// different layouts, or a user cannot take the layout it reaches with.
  LogicalResult build(ConvertLayoutOp convert) {
    root = convert;
    if (failed(assign(convert.getResult(), convert.getSrc().getType().getEncoding())))
      return failure();
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      for (OpOperand &use : value.getUses())
        if (failed(visit(use, layouts.lookup(value))))
          return failure();
    }
    return success();
  }

  /// Bytes moved through shared memory per function call (loop-weighted)
  /// by the conversions the rewrite removes, minus those it adds.
  int64_t getGain() {
    int64_t gain = getBlockBytes(root.getResult()) * getLoopWeight(root);
    for (ConvertLayoutOp convert : innerConversions)
      if (convert.getType().getEncoding() == layouts.lookup(convert.getSrc()))
        gain += getBlockBytes(convert.getResult()) * getLoopWeight(convert);
    for (OpOperand *use : edges)
      gain -= getBlockBytes(use->get()) * getLoopWeight(use->getOwner());
    for (auto [operand, layout] : rematerialized) {
      // A conversion that only this operand reads dies: the operand is
      // recomputed (or converted) from the conversion's source instead.
      // (One inside the slice is counted above already.)
      auto convert = operand->get().getDefiningOp<ConvertLayoutOp>();
      if (convert && convert->hasOneUse() && !innerConversions.contains(convert))
        gain += getBlockBytes(convert.getResult()) * getLoopWeight(convert);
      gain -= getRematerializationCost(operand->get(), layout, /*depth=*/0);
    }
    return gain;
  }

  /// Gives every value of the slice its new layout, recomputes (or
  /// converts) the operands that enter it, and converts back at its edges.
  void rewrite() {
    SmallVector<std::pair<OpOperand *, Type>> edgeTypes;
    for (OpOperand *use : edges)
      edgeTypes.push_back({use, use->get().getType()});
    for (auto [value, layout] : layouts) {
      auto type = cast<RankedTensorType>(value.getType());
      value.setType(RankedTensorType::get(type.getShape(), type.getElementType(), layout));
    }
    Rematerializer rematerializer(/*convertWhenStuck=*/true);
    for (auto [operand, layout] : rematerialized) {
      // Recomputed where the operand is, so that a loop's initial value is
      // converted before the loop.
      FailureOr<Value> value = rematerializer.get(operand->get(), layout);
      if (succeeded(value))
        operand->set(*value);
    }
    for (auto [use, type] : edgeTypes) {
      OpBuilder builder(use->getOwner());
      use->set(ConvertLayoutOp::create(builder, use->getOwner()->getLoc(), type, use->get()));
    }
    for (ConvertLayoutOp convert : innerConversions)
      if (convert.getType() == convert.getSrc().getType()) {
        convert.replaceAllUsesWith(convert.getSrc());
        convert.erase();
      }
    root.replaceAllUsesWith(root.getSrc());
    root.erase();
  }

private:
  /// Gives `value` `layout`; fails if the slice already gave it another.
  LogicalResult assign(Value value, Attribute layout) {
    auto [it, inserted] = layouts.insert({value, layout});
    if (!inserted)
      return success(it->second == layout);
    worklist.push_back(value);
    return success();
  }

  /// `operand` needs `layout`: recomputed (or converted) into it unless
  /// the slice gives it a layout already, which must be that one.
  LogicalResult requireOperand(OpOperand &operand, Attribute layout) {
    auto it = layouts.find(operand.get());
    if (it != layouts.end())
      return success(it->second == layout);
    rematerialized.insert({&operand, layout});
    return success();
  }

  /// The operands of `op` other than those in the slice need `layout`.
  LogicalResult requireOperands(Operation *op, Attribute layout) {
    for (OpOperand &operand : op->getOpOperands())
      if (isa<RankedTensorType>(operand.get().getType()) &&
          failed(requireOperand(operand, layout)))
        return failure();
    return success();
  }

  /// Joins the `index`th value of `loop` (its initial value, block argument,
  /// yielded value and result) to the slice in `layout`.
  LogicalResult joinLoopValue(scf::ForOp loop, unsigned index, Attribute layout) {
    if (failed(assign(loop.getRegionIterArgs()[index], layout)) ||
        failed(assign(loop.getResult(index), layout)))
      return failure();
    for (OpOperand *operand : {&loop.getInitArgsMutable()[index],
                               &loop.getBody()->getTerminator()->getOpOperand(index)})
      if (failed(requireOperand(*operand, layout)))
        return failure();
    return success();
  }

  /// Joins the `index`th result of `branch` (and the values both regions
  /// yield for it) to the slice in `layout`.
  LogicalResult joinBranchValue(scf::IfOp branch, unsigned index, Attribute layout) {
    if (failed(assign(branch.getResult(index), layout)))
      return failure();
    for (Region *region : {&branch.getThenRegion(), &branch.getElseRegion()})
      if (failed(requireOperand(region->front().getTerminator()->getOpOperand(index), layout)))
        return failure();
    return success();
  }

  LogicalResult visit(OpOperand &use, Attribute layout) {
    Operation *user = use.getOwner();
    if (auto convert = dyn_cast<ConvertLayoutOp>(user)) {
      innerConversions.insert(convert);
      return success();
    }
    if (Rematerializer::isLayoutFreeElementwise(user)) {
      if (failed(requireOperands(user, layout)))
        return failure();
      return assign(user->getResult(0), layout);
    }
    auto blocked = dyn_cast<BlockedEncodingAttr>(layout);
    if (auto reduce = dyn_cast<ReduceOp>(user)) {
      if (!blocked)
        return failure();
      if (failed(requireOperands(user, layout)))
        return failure();
      for (Value result : reduce.getResults())
        if (isa<RankedTensorType>(result.getType()) &&
            failed(assign(result, SliceEncodingAttr::get(user->getContext(),
                                                         reduce.getAxis(), blocked))))
          return failure();
      return success();
    }
    if (auto expand = dyn_cast<ExpandDimsOp>(user)) {
      auto slice = dyn_cast<SliceEncodingAttr>(layout);
      if (!slice || slice.getDim() != expand.getAxis())
        return failure();
      return assign(expand.getResult(), slice.getParent());
    }
    if (auto broadcast = dyn_cast<BroadcastOp>(user)) {
      if (!blocked)
        return failure();
      return assign(broadcast.getResult(), layout);
    }
    if (auto loop = dyn_cast<scf::ForOp>(user); loop && loop.getTiedLoopRegionIterArg(&use))
      return joinLoopValue(loop, use.getOperandNumber() - loop.getNumControlOperands(), layout);
    if (isa<scf::YieldOp>(user)) {
      if (auto loop = dyn_cast<scf::ForOp>(user->getParentOp()))
        return joinLoopValue(loop, use.getOperandNumber(), layout);
      if (auto branch = dyn_cast<scf::IfOp>(user->getParentOp()))
        return joinBranchValue(branch, use.getOperandNumber(), layout);
    }
    // The dot's lowering stores A and B from any blocked layout (wgmma
    // reads A from the registers of its accumulator layout).
    if (auto dot = dyn_cast<DotOp>(user); dot && blocked && use.getOperandNumber() < 2)
      return success();
    // Anything else gets the block back in the layout it had.
    edges.insert(&use);
    return success();
  }

  /// Bytes (loop-weighted) moved to give `value` `layout`: nothing where
  /// its producers can be recomputed under it, a conversion where not.
  int64_t getRematerializationCost(Value value, Attribute layout, int depth) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getEncoding() == layout || layouts.lookup(value) == layout)
      return 0;
    Operation *producer = value.getDefiningOp();
    if (auto convert = dyn_cast_if_present<ConvertLayoutOp>(producer))
      return getRematerializationCost(convert.getSrc(), layout, depth + 1);
    int64_t conversion = getBlockBytes(value) * getLoopWeight(getDefinitionPoint(value));
    bool cheap = producer && depth < 16 && Rematerializer::isRecomputable(producer, /*loads=*/false);
    std::optional<Attribute> needed =
        cheap ? Rematerializer::operandLayout(producer, layout) : std::nullopt;
    if (!needed)
      return conversion;
    int64_t cost = 0;
    for (Value operand : producer->getOperands())
      if (isa<RankedTensorType>(operand.getType()))
        cost += getRematerializationCost(operand, *needed, depth + 1);
    return std::min(cost, conversion);
  }

  ConvertLayoutOp root;
  llvm::MapVector<Value, Attribute> layouts;
  SmallVector<Value> worklist;
  llvm::SetVector<ConvertLayoutOp> innerConversions;
  llvm::SetVector<OpOperand *> edges;
  llvm::MapVector<OpOperand *, Attribute> rematerialized;
};

struct KilnGPUForwardLayouts
    : public gpu::impl::KilnGPUForwardLayoutsBase<KilnGPUForwardLayouts> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Each rewrite lowers the total cost, so this ends; the bound only
    // keeps a pathological module from taking long.
    for (int round = 0; round < 256; ++round) {
      SmallVector<ConvertLayoutOp> conversions;
      module.walk([&](ConvertLayoutOp convert) { conversions.push_back(convert); });
      bool changed = false;
      for (ConvertLayoutOp convert : conversions) {
        ForwardSlice slice;
        if (failed(slice.build(convert)) || slice.getGain() <= 0)
          continue;
        slice.rewrite();
        changed = true;
        break;
      }
      if (!changed)
        break;
    }
    storeAccumulatorsWithoutConversion(module);
  }
};

} // namespace
