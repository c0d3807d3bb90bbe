//===- PrefetchLoads.cpp - Load dot operands one iteration ahead -----------===//
//
// Implements kiln-gpu-prefetch-loads (see Passes.td). The load of the next
// iteration is a clone of the load and of the pure ops its operands come
// from, with each loop-carried value replaced by the value the loop yields
// for it (itself recomputed by cloning), and the induction variable by its
// next value. Cloned pointer increments duplicate the originals at a point
// that dominates them; CSE merges the two.
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
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUPREFETCHLOADS
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// The loads in the loop body to issue an iteration early: those whose
/// result is an operand (a or b) of a dot in the body, directly or through
/// a layout conversion. (Small blocks read by other ops, such as the rows
/// of M and delta in the attention backward, stay where they are: moved
/// ahead they made tutorial 06's backward 12 % slower on an H100, its
/// registers already spilling.)
SmallVector<LoadOp> getPrefetchedLoads(scf::ForOp loop) {
  SmallVector<LoadOp> loads;
  for (Operation &op : *loop.getBody()) {
    auto load = dyn_cast<LoadOp>(op);
    if (!load || load.getIsVolatile() || !isa<RankedTensorType>(load.getType()))
      continue;
    bool feedsDot = llvm::any_of(load->getUsers(), [&](Operation *user) {
      if (auto convert = dyn_cast<ConvertLayoutOp>(user))
        return llvm::any_of(convert->getUsers(), [](Operation *u) { return isa<DotOp>(u); });
      auto dot = dyn_cast<DotOp>(user);
      return dot && dot.getC() != load.getResult();
    });
    if (feedsDot)
      loads.push_back(load);
  }
  return loads;
}

/// Clones `load` (and the ops of `slice`) under `mapping`, masked off
/// unless `condition`.
Value cloneLoad(OpBuilder &builder, LoadOp load, ArrayRef<Operation *> slice,
                IRMapping &mapping, Value condition) {
  for (Operation *op : slice)
    builder.clone(*op, mapping);
  Location loc = load.getLoc();
  Value ptr = mapping.lookupOrDefault(load.getPtr());
  Value mask = load.getMask() ? mapping.lookupOrDefault(load.getMask()) : Value();
  Value other = load.getOther() ? mapping.lookupOrDefault(load.getOther()) : Value();
  mask = andMask(builder, loc, mask, condition, cast<RankedTensorType>(ptr.getType()));
  auto clone = cast<LoadOp>(builder.clone(*load));
  clone.getPtrMutable().assign(ptr);
  clone.getMaskMutable().assign(mask);
  if (other)
    clone.getOtherMutable().assign(other);
  // The tensor map's coordinates are not recomputed: the clone loads
  // through its pointers only.
  clone.dropTensorMap();
  return clone.getResult();
}

LogicalResult prefetch(scf::ForOp loop) {
  if (writesMemory(loop))
    return failure();
  SmallVector<LoadOp> loads = getPrefetchedLoads(loop);
  if (loads.empty())
    return failure();
  Block *body = loop.getBody();
  Operation *yield = body->getTerminator();
  Value iv = loop.getInductionVar();
  Location loc = loop.getLoc();

  SmallVector<LoadOp> prefetched;
  SmallVector<Value> firstValues, nextValues;
  for (LoadOp load : loads) {
    SmallVector<Value> roots{load.getPtr()};
    if (load.getMask())
      roots.push_back(load.getMask());
    if (load.getOther())
      roots.push_back(load.getOther());
    FailureOr<SmallVector<Operation *>> slice = getBodySlice(loop, roots);
    if (failed(slice))
      continue;
    // The loop-carried values the slice reads, and how the loop computes
    // their next values.
    SmallVector<BlockArgument> carried;
    for (BlockArgument arg : loop.getRegionIterArgs())
      if (llvm::any_of(arg.getUsers(), [&](Operation *user) {
            return llvm::is_contained(*slice, user) || user == load.getOperation();
          }))
        carried.push_back(arg);
    SmallVector<Value> nextRoots;
    for (BlockArgument arg : carried)
      nextRoots.push_back(yield->getOperand(arg.getArgNumber() - 1));
    FailureOr<SmallVector<Operation *>> nextSlice = getBodySlice(loop, nextRoots);
    if (failed(nextSlice))
      continue;

    // Before the loop: the first iteration's load.
    OpBuilder builder(loop);
    IRMapping first;
    first.map(iv, loop.getLowerBound());
    for (auto [arg, init] : llvm::zip(loop.getRegionIterArgs(), loop.getInitArgs()))
      first.map(arg, init);
    Value runs = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt,
                                       loop.getLowerBound(), loop.getUpperBound());
    firstValues.push_back(cloneLoad(builder, load, *slice, first, runs));

    // At the top of the body: the next iteration's.
    builder.setInsertionPointToStart(body);
    IRMapping next;
    for (Operation *op : *nextSlice)
      builder.clone(*op, next);
    IRMapping nextIteration;
    Value nextIv = arith::AddIOp::create(builder, loc, iv, loop.getStep());
    nextIteration.map(iv, nextIv);
    for (BlockArgument arg : carried)
      nextIteration.map(arg, next.lookupOrDefault(yield->getOperand(arg.getArgNumber() - 1)));
    Value more = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, nextIv,
                                       loop.getUpperBound());
    nextValues.push_back(cloneLoad(builder, load, *slice, nextIteration, more));
    prefetched.push_back(load);
  }
  if (prefetched.empty())
    return failure();

  IRRewriter rewriter(loop.getContext());
  rewriter.setInsertionPoint(loop);
  FailureOr<LoopLikeOpInterface> replaced = loop.replaceWithAdditionalYields(
      rewriter, firstValues, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) { return nextValues; });
  if (failed(replaced))
    return failure();
  auto newLoop = cast<scf::ForOp>(replaced->getOperation());
  unsigned firstNew = newLoop.getNumRegionIterArgs() - prefetched.size();
  for (auto [i, load] : llvm::enumerate(prefetched)) {
    load.getResult().replaceAllUsesWith(newLoop.getRegionIterArgs()[firstNew + i]);
    load.erase();
  }
  return success();
}

struct KilnGPUPrefetchLoads
    : public gpu::impl::KilnGPUPrefetchLoadsBase<KilnGPUPrefetchLoads> {
  using Base::Base;

  void runOnOperation() override {
    if (numStages < 2)
      return;
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) {
      if (hasDot(loop))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops)
      (void)prefetch(loop);
  }
};

} // namespace
