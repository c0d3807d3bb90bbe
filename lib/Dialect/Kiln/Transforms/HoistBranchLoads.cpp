//===- HoistBranchLoads.cpp - Start a branch's loads before the branch ----===//
//
// Implements kiln-hoist-branch-loads: a load inside one side of an `scf.if`
// moves to just before the `scf.if` when running it on every path is
// harmless and reads the same values. Then it need not wait for the
// branch's condition: in a read-modify-write under a lock (load a counter,
// branch on it, load the partial sums in one branch, store them after),
// the two loads' round trips to memory overlap instead of adding up.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNHOISTBRANCHLOADS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Whether `op`, run earlier than written, could see or cause a different
/// memory state: anything but pure ops and plain loads.
bool mayOrderMemory(Operation *op) {
  if (auto load = dyn_cast<LoadOp>(op))
    return load.getIsVolatile();
  return !isMemoryEffectFree(op);
}

/// Whether `a` and `b` are the same value, or are computed the same way by
/// pure ops from the same values (a pointer built again after a branch).
bool computedAlike(Value a, Value b, unsigned depth = 8) {
  if (a == b)
    return true;
  Operation *left = a.getDefiningOp();
  Operation *right = b.getDefiningOp();
  if (!left || !right || depth == 0 || !isPure(left) || !isPure(right) ||
      left->getNumRegions() != 0 || right->getNumRegions() != 0 ||
      cast<OpResult>(a).getResultNumber() != cast<OpResult>(b).getResultNumber())
    return false;
  return OperationEquivalence::isEquivalentTo(
      left, right,
      [&](Value l, Value r) { return success(computedAlike(l, r, depth - 1)); },
      /*markEquivalent=*/nullptr, OperationEquivalence::IgnoreLocations);
}

bool sameMask(Value a, Value b) { return (!a && !b) || (a && b && computedAlike(a, b)); }

/// Whether the program, once past `branch`, surely stores through the
/// pointers `load` reads under the same mask, in the same block: then every
/// address `load` reads is one the program writes anyway, and reading it
/// early cannot fault where the program would not. Only ops without
/// regions may come between, none of which ends the program early without
/// faulting (no call, no assertion).
bool storedAfter(scf::IfOp branch, LoadOp load) {
  for (Operation *op = branch->getNextNode(); op; op = op->getNextNode()) {
    if (auto store = dyn_cast<StoreOp>(op))
      if (computedAlike(store.getPtr(), load.getPtr()) && sameMask(store.getMask(), load.getMask()))
        return true;
    if (op->getNumRegions() != 0 || isa<CallOpInterface, AssertOp>(op))
      return false;
  }
  return false;
}

/// Adds to `slice` the ops of `block` that compute `value`, if they are all
/// pure and need only values from above `block`; false otherwise.
bool collectPureSlice(Value value, Block &block, llvm::SetVector<Operation *> &slice) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != &block) // defined above the branch
    return value.getParentRegion()->isAncestor(block.getParent()->getParentRegion());
  if (slice.contains(def))
    return true;
  if (!isPure(def) || def->getNumRegions() != 0)
    return false;
  for (Value operand : def->getOperands())
    if (!collectPureSlice(operand, block, slice))
      return false;
  slice.insert(def);
  return true;
}

/// Moves before `branch` the loads of one of its sides that may start
/// there, with the pure ops that compute their operands: nothing before
/// them in their side orders memory, and their addresses are stored after
/// the branch.
void hoistLoads(scf::IfOp branch, Region &side) {
  if (side.empty())
    return;
  Block &block = side.front();
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto load = dyn_cast<LoadOp>(&op);
    llvm::SetVector<Operation *> slice;
    if (load && !load.getIsVolatile() && !load.getTensorMap() &&
        llvm::all_of(load->getOperands(),
                     [&](Value operand) { return collectPureSlice(operand, block, slice); }) &&
        storedAfter(branch, load)) {
      // The slice was collected operands first: program order.
      for (Operation *def : slice)
        def->moveBefore(branch);
      load->moveBefore(branch);
      continue;
    }
    if (mayOrderMemory(&op))
      return;
  }
}

struct KilnHoistBranchLoads
    : public kiln::impl::KilnHoistBranchLoadsBase<KilnHoistBranchLoads> {
  void runOnOperation() override {
    getOperation().walk([](scf::IfOp branch) {
      for (Region *side : {&branch.getThenRegion(), &branch.getElseRegion()})
        hoistLoads(branch, *side);
    });
  }
};

} // namespace
