//===- GuardLoopMasks.cpp - Apply a loop's masks where they are needed ----===//
//
// Implements kiln-guard-loop-masks (see Passes.td). A select whose
// condition compares the loop's induction variable, plus a range of
// integers, with another range is true everywhere in the iterations on one
// side of a bound that the ranges give; there its value is its true
// operand. The select, and the ops that compute its mask for it alone,
// move under an scf.if that runs them only in the other iterations. The
// causal mask of attention then costs a compare per iteration below the
// diagonal, and the loop stays one loop: one software pipeline over every
// key block, where a loop split at the diagonal restarted its pipeline
// there (docs/design/attention.md).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNGUARDLOOPMASKS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The elements of an integer block (or a scalar) as `iv * ivCoefficient +
/// sum(scalars) + [low, high]`: the induction variable, loop-invariant
/// scalars, and a range of constants.
struct IntegerRange {
  int64_t ivCoefficient = 0;
  SmallVector<Value> scalars;
  int64_t low = 0, high = 0;
};

/// The range of `value`'s elements in `loop`, or nullopt where it is not
/// of that form: splats, make_range, constants, additions, and the shape
/// ops that keep elements (expand_dims, broadcast) over the induction
/// variable and scalars computed outside the loop.
std::optional<IntegerRange> getRange(Value value, scf::ForOp loop, int depth = 0) {
  if (depth > 16)
    return std::nullopt;
  Type ivType = loop.getInductionVar().getType();
  if (getElementTypeOrSelf(value.getType()) != ivType)
    return std::nullopt;
  if (value == loop.getInductionVar())
    return IntegerRange{1, {}, 0, 0};
  APInt constant;
  if (matchPattern(value, m_ConstantInt(&constant)))
    return IntegerRange{0, {}, constant.getSExtValue(), constant.getSExtValue()};
  Operation *op = value.getDefiningOp();
  if (auto range = dyn_cast_if_present<MakeRangeOp>(op))
    return IntegerRange{0, {}, range.getStart(), int64_t(range.getEnd()) - 1};
  if (isa_and_present<SplatOp, ExpandDimsOp, BroadcastOp>(op))
    return getRange(op->getOperand(0), loop, depth + 1);
  if (auto add = dyn_cast_if_present<arith::AddIOp>(op)) {
    std::optional<IntegerRange> lhs = getRange(add.getLhs(), loop, depth + 1);
    std::optional<IntegerRange> rhs = getRange(add.getRhs(), loop, depth + 1);
    if (!lhs || !rhs || lhs->ivCoefficient + rhs->ivCoefficient > 1)
      return std::nullopt;
    lhs->ivCoefficient += rhs->ivCoefficient;
    lhs->scalars.append(rhs->scalars);
    lhs->low += rhs->low;
    lhs->high += rhs->high;
    return lhs;
  }
  // Otherwise only a scalar the loop does not change.
  bool invariant = !loop->isAncestor(value.getParentRegion()->getParentOp());
  if (invariant && value.getType().isIntOrIndex())
    return IntegerRange{0, {value}, 0, 0};
  return std::nullopt;
}

/// Where a select's mask is all true: every iteration whose induction
/// variable is at most `bound` (`upper`), or at least it.
struct AllTrue {
  bool upper;
  /// bound = sum(plus) - sum(minus) + offset.
  SmallVector<Value> plus, minus;
  int64_t offset;
};

/// When `condition` is `x pred y` (signed) with the induction variable in
/// exactly one of x and y: the iterations where it holds for every
/// element.
std::optional<AllTrue> getAllTrue(Value condition, scf::ForOp loop) {
  auto compare = condition.getDefiningOp<arith::CmpIOp>();
  if (!compare)
    return std::nullopt;
  std::optional<IntegerRange> lhs = getRange(compare.getLhs(), loop);
  std::optional<IntegerRange> rhs = getRange(compare.getRhs(), loop);
  if (!lhs || !rhs || lhs->ivCoefficient + rhs->ivCoefficient != 1)
    return std::nullopt;
  // All true exactly when min(x) - max(y) >= k, x the side the predicate
  // says is the greater.
  using Predicate = arith::CmpIPredicate;
  Predicate predicate = compare.getPredicate();
  if (!llvm::is_contained({Predicate::sge, Predicate::sgt, Predicate::sle, Predicate::slt}, predicate))
    return std::nullopt;
  bool lhsGreater = predicate == Predicate::sge || predicate == Predicate::sgt;
  int64_t k = predicate == Predicate::sgt || predicate == Predicate::slt ? 1 : 0;
  IntegerRange *x = lhsGreater ? &*lhs : &*rhs, *y = lhsGreater ? &*rhs : &*lhs;
  // iv in y: iv <= sum(x) - sum(y) + low(x) - high(y) - k; in x:
  // iv >= sum(y) - sum(x) + high(y) - low(x) + k.
  if (y->ivCoefficient)
    return AllTrue{true, x->scalars, y->scalars, x->low - y->high - k};
  return AllTrue{false, y->scalars, x->scalars, y->high - x->low + k};
}

/// The iterations where a select's mask is all true: those where every
/// compare it is the conjunction of (`and` of compares, expanded or
/// broadcast: a causal mask and a bound on the keys, say) is, or nullopt
/// when one of them is of no such form.
std::optional<SmallVector<AllTrue>> getAllTrueParts(Value condition, scf::ForOp loop) {
  // A mask expanded or broadcast is all true where its source is.
  Operation *producer = condition.getDefiningOp();
  if (isa_and_present<ExpandDimsOp, BroadcastOp>(producer))
    return getAllTrueParts(producer->getOperand(0), loop);
  if (auto both = dyn_cast_if_present<arith::AndIOp>(producer)) {
    std::optional<SmallVector<AllTrue>> lhs = getAllTrueParts(both.getLhs(), loop);
    std::optional<SmallVector<AllTrue>> rhs = getAllTrueParts(both.getRhs(), loop);
    if (!lhs || !rhs)
      return std::nullopt;
    lhs->append(rhs->begin(), rhs->end());
    return lhs;
  }
  std::optional<AllTrue> allTrue = getAllTrue(condition, loop);
  if (!allTrue)
    return std::nullopt;
  return SmallVector<AllTrue>{*allTrue};
}

/// `sum(plus) - sum(minus) + offset`, in `type`, before `loop`.
Value emitBound(OpBuilder &builder, Location loc, Type type, const AllTrue &allTrue) {
  Value bound = arith::ConstantOp::create(builder, loc, builder.getIntegerAttr(type, allTrue.offset));
  for (Value value : allTrue.plus)
    bound = arith::AddIOp::create(builder, loc, bound, value);
  for (Value value : allTrue.minus)
    bound = arith::SubIOp::create(builder, loc, bound, value);
  return bound;
}

/// Applies `select`'s mask only in the iterations of `loop` where it is
/// not all true (`parts`, one for each compare of its conjunction): the
/// select moves into an scf.if on the induction variable and the bounds,
/// whose other region yields the select's true value, with the ops that
/// compute the mask for it alone.
void guard(scf::ForOp loop, arith::SelectOp select, ArrayRef<AllTrue> parts) {
  OpBuilder builder(loop);
  Location loc = select.getLoc();
  Value iv = loop.getInductionVar();
  SmallVector<Value> bounds;
  for (const AllTrue &part : parts)
    bounds.push_back(emitBound(builder, loc, iv.getType(), part));
  builder.setInsertionPoint(select);
  // Each part is all true up to its bound (from above) or from it: needed
  // past it, or before it.
  Value needed;
  for (auto [part, bound] : llvm::zip(parts, bounds)) {
    Value partNeeded = arith::CmpIOp::create(
        builder, loc, part.upper ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt, iv,
        bound);
    needed = needed ? arith::OrIOp::create(builder, loc, needed, partNeeded) : partNeeded;
  }
  auto branch = scf::IfOp::create(builder, loc, select.getType(), needed, /*withElseRegion=*/true);
  select.getResult().replaceAllUsesWith(branch.getResult(0));
  Block *thenBlock = &branch.getThenRegion().front();
  builder.setInsertionPointToEnd(thenBlock);
  scf::YieldOp::create(builder, loc, select.getResult());
  select->moveBefore(thenBlock, thenBlock->begin());
  builder.setInsertionPointToEnd(&branch.getElseRegion().front());
  scf::YieldOp::create(builder, loc, select.getTrueValue());
  // The mask's ops that only the select reads move in with it: walking
  // back from the branch, each to the front of its region.
  for (Operation *op = branch->getPrevNode(); op;) {
    Operation *previous = op->getPrevNode();
    bool onlyInBranch =
        mlir::isPure(op) && !op->getNumRegions() && !op->use_empty() &&
        llvm::all_of(op->getUsers(), [&](Operation *user) {
          return branch.getThenRegion().isAncestor(user->getParentRegion());
        });
    if (onlyInBranch)
      op->moveBefore(thenBlock, thenBlock->begin());
    op = previous;
  }
}

struct KilnGuardLoopMasks : public kiln::impl::KilnGuardLoopMasksBase<KilnGuardLoopMasks> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) {
      if (llvm::any_of(*loop.getBody(), [](Operation &op) { return isa<DotOp>(op); }))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops) {
      // All true up to a bound is worth a guard where the loop starts at a
      // constant (attention's forward from the first key); one that starts
      // elsewhere is most likely the diagonal part of a loop split by
      // hand, whose masks are all needed.
      bool fromConstant = matchPattern(loop.getLowerBound(), m_Constant());
      SmallVector<std::pair<arith::SelectOp, SmallVector<AllTrue>>> selects;
      for (Operation &op : *loop.getBody()) {
        auto select = dyn_cast<arith::SelectOp>(op);
        if (!select || !isa<RankedTensorType>(select.getType()))
          continue;
        std::optional<SmallVector<AllTrue>> parts = getAllTrueParts(select.getCondition(), loop);
        if (parts && (fromConstant ||
                      llvm::none_of(*parts, [](const AllTrue &part) { return part.upper; })))
          selects.emplace_back(select, std::move(*parts));
      }
      for (auto &[select, parts] : selects)
        guard(loop, select, parts);
    }
  }
};

} // namespace
