//===- MulSumToDot.cpp - Broadcast products summed over K as dots ----------===//
//
// Implements kiln-mul-sum-to-dot: `sum(a[:, :, None] * b[None, :, :], 1)`,
// a matrix product written with broadcasts, becomes `dot(a, b)`. As
// written it builds an M x K x N block; the dot computes the same sums from
// the two operands (in another order, as a reduction may), on tensor cores
// or FMAs on a GPU and in loops on the CPU, where the M x K x N vector took
// LLVM minutes to compile.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNMULSUMTODOT
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The 2-D block that `value` broadcasts after a unit dimension was
/// inserted at `axis` (kiln.broadcast of kiln.expand_dims), or null.
Value expandedSource(Value value, int32_t axis) {
  auto broadcast = value.getDefiningOp<BroadcastOp>();
  auto expand = broadcast ? broadcast.getSrc().getDefiningOp<ExpandDimsOp>() : nullptr;
  if (!expand || int32_t(expand.getAxis()) != axis ||
      cast<RankedTensorType>(expand.getSrc().getType()).getRank() != 2)
    return {};
  return expand.getSrc();
}

/// Whether the reduction's combine function is one floating-point add.
bool sumsFloats(ReduceOp reduce) {
  Block &body = reduce.getCombineOp().front();
  if (body.getNumArguments() != 2 || !llvm::hasSingleElement(body.without_terminator()))
    return false;
  auto add = dyn_cast<arith::AddFOp>(body.front());
  auto yield = cast<ReduceReturnOp>(body.getTerminator());
  return add && yield.getResult().size() == 1 && yield.getResult()[0] == add.getResult() &&
         ((add.getLhs() == body.getArgument(0) && add.getRhs() == body.getArgument(1)) ||
          (add.getLhs() == body.getArgument(1) && add.getRhs() == body.getArgument(0)));
}

/// Rewrites `reduce` into a dot if it sums products of an [M, K] block
/// broadcast along N and a [K, N] block broadcast along M over K.
void rewrite(ReduceOp reduce) {
  if (reduce.getSrcs().size() != 1 || reduce.getAxis() != 1 || !sumsFloats(reduce))
    return;
  auto type = cast<RankedTensorType>(reduce.getSrcs()[0].getType());
  Type element = type.getElementType();
  if (type.getRank() != 3 || !(element.isF32() || element.isF64()))
    return;
  auto mul = reduce.getSrcs()[0].getDefiningOp<arith::MulFOp>();
  if (!mul)
    return;
  Value a = expandedSource(mul.getLhs(), 2), b = expandedSource(mul.getRhs(), 0);
  if (!a || !b) {
    a = expandedSource(mul.getRhs(), 2);
    b = expandedSource(mul.getLhs(), 0);
  }
  if (!a || !b)
    return;
  OpBuilder builder(reduce);
  Location loc = reduce.getLoc();
  auto resultType = cast<RankedTensorType>(reduce.getResult()[0].getType());
  Value zeros = arith::ConstantOp::create(
      builder, loc, DenseElementsAttr::get(resultType, builder.getFloatAttr(element, 0.0)));
  auto dot = DotOp::create(builder, loc, resultType, a, b, zeros, InputPrecision::ieee,
                           /*maxNumImpreciseAcc=*/0, /*aFloat8=*/nullptr, /*bFloat8=*/nullptr);
  reduce.getResult()[0].replaceAllUsesWith(dot.getResult());
  reduce.erase();
}

struct KilnMulSumToDot : public kiln::impl::KilnMulSumToDotBase<KilnMulSumToDot> {
  void runOnOperation() override {
    SmallVector<ReduceOp> reductions;
    getOperation().walk([&](ReduceOp op) { reductions.push_back(op); });
    for (ReduceOp reduce : reductions)
      rewrite(reduce);
  }
};

} // namespace
