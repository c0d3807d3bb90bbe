//===- ExpandHistograms.cpp - Histograms as compares and a sum -------------===//
//
// Implements kiln-expand-histograms: every kiln.histogram becomes the
// one-hot block of its values against its bins, summed along the values.
// The GPU pipeline runs it before layouts are assigned, so that the
// expansion's blocks get layouts as any other; the CPU lowering counts
// element by element instead.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNEXPANDHISTOGRAMS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// `block`, a 1-D block, as rows (`axis` 1) or a row (`axis` 0) broadcast
/// to `shape`.
Value broadcastAlong(OpBuilder &builder, Location loc, Value block, int32_t axis,
                     ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(block.getType());
  SmallVector<int64_t> expanded(type.getShape());
  expanded.insert(expanded.begin() + axis, 1);
  Value column = ExpandDimsOp::create(
      builder, loc, RankedTensorType::get(expanded, type.getElementType()), block, axis);
  return BroadcastOp::create(builder, loc, RankedTensorType::get(shape, type.getElementType()),
                             column);
}

void expand(HistogramOp histogram) {
  OpBuilder builder(histogram);
  Location loc = histogram.getLoc();
  Value src = histogram.getSrc();
  auto srcType = histogram.getSrc().getType();
  Type element = srcType.getElementType();
  int64_t values = srcType.getDimSize(0), bins = histogram.getType().getDimSize(0);
  SmallVector<int64_t> shape{values, bins};
  auto binType = RankedTensorType::get({bins}, builder.getI32Type());
  Value binIndices = MakeRangeOp::create(builder, loc, binType, 0, int32_t(bins));
  // Compared as signed integers: narrow values widened to i32, bins
  // widened to i64 values.
  unsigned width = element.getIntOrFloatBitWidth();
  if (width < 32)
    src = arith::ExtSIOp::create(builder, loc, RankedTensorType::get({values}, builder.getI32Type()),
                                 src);
  else if (width > 32)
    binIndices = arith::ExtSIOp::create(builder, loc, RankedTensorType::get({bins}, element),
                                        binIndices);
  Value hits = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                     broadcastAlong(builder, loc, src, 1, shape),
                                     broadcastAlong(builder, loc, binIndices, 0, shape));
  if (Value mask = histogram.getMask())
    hits = arith::AndIOp::create(builder, loc, hits, broadcastAlong(builder, loc, mask, 1, shape));
  auto countType = RankedTensorType::get(shape, builder.getI32Type());
  Value ones = arith::ExtUIOp::create(builder, loc, countType, hits);
  auto reduce = ReduceOp::create(builder, loc, TypeRange{histogram.getType()}, ValueRange{ones},
                                 /*axis=*/0);
  Block *combine = builder.createBlock(&reduce.getCombineOp());
  Type i32 = builder.getI32Type();
  Value lhs = combine->addArgument(i32, loc), rhs = combine->addArgument(i32, loc);
  Value sum = arith::AddIOp::create(builder, loc, lhs, rhs);
  ReduceReturnOp::create(builder, loc, ValueRange{sum});
  histogram.replaceAllUsesWith(reduce.getResult()[0]);
  histogram.erase();
}

struct KilnExpandHistograms
    : public kiln::impl::KilnExpandHistogramsBase<KilnExpandHistograms> {
  void runOnOperation() override {
    SmallVector<HistogramOp> histograms;
    getOperation().walk([&](HistogramOp op) { histograms.push_back(op); });
    for (HistogramOp histogram : histograms)
      expand(histogram);
  }
};

} // namespace
