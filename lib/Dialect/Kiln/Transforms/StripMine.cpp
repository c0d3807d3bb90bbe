//===- StripMine.cpp - Run element-wise kernels chunk by chunk -------------===//
//
// Implements kiln-strip-mine: an element-wise kernel over blocks of N
// elements becomes a loop over chunks of W elements whose body is the
// original kernel with blocks of W elements. The rewrite only retypes
// blocks and offsets the index ranges, so it is valid exactly when no op
// relates elements at different positions, which is what the legality check
// establishes.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallPtrSet.h"
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

/// Returns the common block length of `function` if it can be strip-mined.
std::optional<int64_t> getStripMinableLength(func::FuncOp function) {
  std::optional<int64_t> length;
  bool legal = true;
  auto visitType = [&](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return;
    if (tensor.getRank() != 1 || (length && *length != tensor.getDimSize(0)))
      legal = false;
    length = tensor.getDimSize(0);
  };
  function.getBody().walk([&](Operation *op) {
    bool touchesBlocks = false;
    for (Type type : llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
      if (isa<RankedTensorType>(type)) {
        touchesBlocks = true;
        visitType(type);
      }
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (isa<RankedTensorType>(arg.getType()))
            legal = false; // blocks carried by control flow
    // Storing a scalar would be repeated once per chunk.
    if (auto store = dyn_cast<StoreOp>(op))
      if (!isa<RankedTensorType>(store.getPtr().getType()))
        legal = false;
    if (auto load = dyn_cast<LoadOp>(op))
      if (load.getIsVolatile())
        legal = false;
    // So would any other side effect on scalars (an atomic, a barrier).
    if (!touchesBlocks && !isa<StoreOp, LoadOp, AssumeOp>(op) && !isMemoryEffectFree(op) &&
        op->getNumRegions() == 0 && !op->hasTrait<OpTrait::IsTerminator>() &&
        !isa<func::CallOp>(op))
      legal = false;
    if (touchesBlocks && (!isElementwise(op) || op->getNumRegions() != 0))
      legal = false;
  });
  if (!legal || !length)
    return std::nullopt;
  return length;
}

void stripMine(func::FuncOp function, int64_t length, int64_t chunk) {
  MLIRContext *context = function.getContext();
  Block &body = function.getBody().front();
  OpBuilder builder(context);
  builder.setInsertionPointToStart(&body);
  Location loc = function.getLoc();
  Value lower = arith::ConstantOp::create(builder, loc, builder.getI32IntegerAttr(0));
  Value upper = arith::ConstantOp::create(builder, loc, builder.getI32IntegerAttr(length));
  Value step = arith::ConstantOp::create(builder, loc, builder.getI32IntegerAttr(chunk));
  auto loop = scf::ForOp::create(builder, loc, lower, upper, step);
  Operation *yield = loop.getBody()->getTerminator();
  llvm::SmallPtrSet<Operation *, 4> keep = {loop, body.getTerminator(),
                                             lower.getDefiningOp(),
                                             upper.getDefiningOp(),
                                             step.getDefiningOp()};
  for (Operation &op : llvm::make_early_inc_range(body))
    if (!keep.contains(&op))
      op.moveBefore(yield);

  auto retype = [&](Type type) -> Type {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return type;
    return RankedTensorType::get({chunk}, tensor.getElementType(), tensor.getEncoding());
  };
  SmallVector<MakeRangeOp> ranges;
  loop.getBody()->walk([&](Operation *op) {
    for (OpResult result : op->getResults())
      result.setType(retype(result.getType()));
    if (auto constant = dyn_cast<arith::ConstantOp>(op))
      if (auto splat = dyn_cast<SplatElementsAttr>(constant.getValue()))
        constant.setValueAttr(SplatElementsAttr::get(
            cast<ShapedType>(constant.getType()), splat.getSplatValue<Attribute>()));
    if (auto range = dyn_cast<MakeRangeOp>(op))
      ranges.push_back(range);
  });
  // Each range now covers the chunk: offset it by the chunk's start.
  Value start = loop.getInductionVar();
  for (MakeRangeOp range : ranges) {
    range.setEnd(range.getStart() + chunk);
    builder.setInsertionPointAfter(range);
    Value offset = SplatOp::create(builder, range.getLoc(), range.getType(), start);
    Value shifted = arith::AddIOp::create(builder, range.getLoc(), range, offset);
    range.getResult().replaceAllUsesExcept(shifted, shifted.getDefiningOp());
  }
}

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
      std::optional<int64_t> length = getStripMinableLength(function);
      if (length && *length > chunkSize)
        stripMine(function, *length, chunkSize);
    }
  }
};

} // namespace
