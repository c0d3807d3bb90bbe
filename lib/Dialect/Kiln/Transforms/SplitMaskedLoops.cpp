//===- SplitMaskedLoops.cpp - Peel the iterations a select mask spares -----===//
//
// Implements kiln-split-masked-loops (see Passes.td). A select whose
// condition compares the loop's induction variable, plus a range of
// integers, with another range is true everywhere in the iterations on one
// side of a bound that the ranges give; the loop splits there, and in the
// part where the mask is all true the select is its true value. The causal
// mask of attention then costs nothing below the diagonal.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNSPLITMASKEDLOOPS
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

/// When the select's condition is `x pred y` (signed) with the induction
/// variable in exactly one of x and y: the iterations where it holds for
/// every element.
std::optional<AllTrue> getAllTrue(arith::SelectOp select, scf::ForOp loop) {
  auto compare = select.getCondition().getDefiningOp<arith::CmpIOp>();
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

/// `sum(plus) - sum(minus) + offset`, in `type`, before `loop`.
Value emitBound(OpBuilder &builder, Location loc, Type type, const AllTrue &allTrue) {
  Value bound = arith::ConstantOp::create(builder, loc, builder.getIntegerAttr(type, allTrue.offset));
  for (Value value : allTrue.plus)
    bound = arith::AddIOp::create(builder, loc, bound, value);
  for (Value value : allTrue.minus)
    bound = arith::SubIOp::create(builder, loc, bound, value);
  return bound;
}

/// Splits `loop` where the masks of `selects` (each all true in the same
/// direction) change, and in the part where they are all true replaces
/// each select by its true value.
void split(scf::ForOp loop, ArrayRef<std::pair<arith::SelectOp, AllTrue>> selects) {
  OpBuilder builder(loop);
  Location loc = loop.getLoc();
  Type type = loop.getInductionVar().getType();
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound(), step = loop.getStep();
  bool upper = selects.front().second.upper;
  auto constant = [&](int64_t v) {
    return arith::ConstantOp::create(builder, loc, builder.getIntegerAttr(type, v));
  };
  Value zero = constant(0), one = constant(1);
  // The first iteration on the far side of every bound: for upper bounds
  // the first past the smallest, for lower bounds the first at or past the
  // largest.
  Value bound;
  for (const AllTrue &allTrue : llvm::make_second_range(selects)) {
    Value next = emitBound(builder, loc, type, allTrue);
    bound = !bound ? next
            : upper ? Value(arith::MinSIOp::create(builder, loc, bound, next))
                    : Value(arith::MaxSIOp::create(builder, loc, bound, next));
  }
  // Iterations before the split: upper, those with iv <= bound, that is
  // (bound - lb) / step + 1 of them; lower, those with iv < bound, that is
  // ceil((bound - lb) / step); none when the bound is below lb.
  Value distance = arith::SubIOp::create(builder, loc, bound, lb);
  // (Plain signed divisions: not every lowering expands arith.ceildivsi.)
  Value count =
      upper ? Value(arith::AddIOp::create(builder, loc, arith::DivSIOp::create(builder, loc, distance, step),
                                          one))
            : arith::DivSIOp::create(builder, loc,
                                     arith::AddIOp::create(builder, loc, distance,
                                                           arith::SubIOp::create(builder, loc, step, one)),
                                     step);
  Value before = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, distance,
                                       upper ? zero : one);
  count = arith::SelectOp::create(builder, loc, before, zero, count);
  Value splitAt = arith::AddIOp::create(builder, loc, lb, arith::MulIOp::create(builder, loc, count, step));
  splitAt = arith::MinSIOp::create(builder, loc, splitAt, ub);

  // The first part is a copy of the loop up to the split; the loop itself
  // starts there, from the copy's results.
  IRMapping mapping;
  auto first = cast<scf::ForOp>(builder.clone(*loop, mapping));
  first.getUpperBoundMutable().assign(splitAt);
  loop.getLowerBoundMutable().assign(splitAt);
  loop.getInitArgsMutable().assign(first.getResults());
  for (arith::SelectOp select : llvm::make_first_range(selects)) {
    auto target = upper ? cast<arith::SelectOp>(mapping.lookup(select.getOperation())) : select;
    target.getResult().replaceAllUsesWith(target.getTrueValue());
    target.erase();
  }
}

struct KilnSplitMaskedLoops
    : public kiln::impl::KilnSplitMaskedLoopsBase<KilnSplitMaskedLoops> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) {
      if (llvm::any_of(*loop.getBody(), [](Operation &op) { return isa<DotOp>(op); }))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops) {
      // The selects of the body whose masks are all true on the side of a
      // bound, in the direction of the first.
      SmallVector<std::pair<arith::SelectOp, AllTrue>> selects;
      for (Operation &op : *loop.getBody()) {
        auto select = dyn_cast<arith::SelectOp>(op);
        if (!select || !isa<RankedTensorType>(select.getType()))
          continue;
        std::optional<AllTrue> allTrue = getAllTrue(select, loop);
        // All true up to a bound is worth a loop of its own when the loop
        // starts at a constant (attention's forward from the first key);
        // one that starts elsewhere is most likely the diagonal part
        // already split by hand, whose masks are all needed.
        if (allTrue && allTrue->upper && !matchPattern(loop.getLowerBound(), m_Constant()))
          continue;
        if (allTrue && (selects.empty() || selects.front().second.upper == allTrue->upper))
          selects.emplace_back(select, *allTrue);
      }
      if (!selects.empty())
        split(loop, selects);
    }
  }
};

} // namespace
