//===- MatchShapeLayouts.cpp - Layouts for expand_dims and broadcast ------===//
//
// Implements kiln-gpu-match-shape-layouts: reductions produce the slice of
// their operand's layout, operands of expand_dims get the slice of the
// result's layout and operands of broadcast the result's own layout, by
// recomputing their producers under that layout. Recomputing a range or a
// splat costs a few instructions per thread, far less than exchanging
// elements between threads through shared memory, which is what a
// kiln_gpu.convert_layout inserted where nothing can be recomputed does.
// The index of a kiln.gather gets its result's layout the same way.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"

#include "Rematerializer.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUMATCHSHAPELAYOUTS
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// Gives each reduction over a block of two or more dimensions the slice of
/// its operand's layout as result layout (what its lowering produces, with
/// no data movement), and converts the result back where it is used.
void setReductionLayouts(ModuleOp module) {
  int numWarps = getNumWarps(module);
  int threadsPerWarp = getThreadsPerWarp(module);
  module.walk([&](ReduceOp op) {
    auto srcType = cast<RankedTensorType>(op.getSrcs().front().getType());
    if (srcType.getRank() < 2) {
      // The results are scalars, reduced from operands in any layout: a
      // conversion of the operands (e.g. after the first reduction of an
      // axis=None reduction) is not needed.
      // All operands must keep one layout.
      SmallVector<Value> sources;
      for (Value src : op.getSrcs())
        if (auto convert = src.getDefiningOp<ConvertLayoutOp>())
          sources.push_back(convert.getSrc());
      bool oneLayout = sources.size() == op.getSrcs().size() &&
                       llvm::all_of(sources, [&](Value v) {
                         return v.getType() == sources.front().getType() ||
                                cast<RankedTensorType>(v.getType()).getEncoding() ==
                                    cast<RankedTensorType>(sources.front().getType())
                                        .getEncoding();
                       });
      if (oneLayout)
        for (auto [operand, source] : llvm::zip(op->getOpOperands(), sources))
          operand.set(source);
      return;
    }
    OpBuilder builder(op);
    // Operands in a slice layout (a reduction of a reduction) first get a
    // blocked one: the result's layout is a slice of a blocked layout.
    auto blocked = dyn_cast_if_present<BlockedEncodingAttr>(srcType.getEncoding());
    if (!blocked) {
      SmallVector<unsigned> order;
      for (int64_t d = srcType.getRank() - 1; d >= 0; --d)
        order.push_back(d);
      blocked = getDefaultBlockedEncoding(op.getContext(), srcType.getShape(),
                                          order, 1, numWarps, threadsPerWarp);
    }
    for (OpOperand &operand : op->getOpOperands()) {
      auto type = cast<RankedTensorType>(operand.get().getType());
      if (type.getEncoding() != blocked)
        operand.set(ConvertLayoutOp::create(
            builder, op.getLoc(),
            RankedTensorType::get(type.getShape(), type.getElementType(), blocked),
            operand.get()));
    }
    auto slice = SliceEncodingAttr::get(op.getContext(), op.getAxis(), blocked);
    builder.setInsertionPointAfter(op);
    for (Value result : op.getResult()) {
      auto type = cast<RankedTensorType>(result.getType());
      if (type.getEncoding() == slice)
        continue;
      result.setType(RankedTensorType::get(type.getShape(), type.getElementType(), slice));
      auto back = ConvertLayoutOp::create(builder, op.getLoc(), type, result);
      result.replaceAllUsesExcept(back, back);
    }
  });
}

struct KilnGPUMatchShapeLayouts
    : public gpu::impl::KilnGPUMatchShapeLayoutsBase<KilnGPUMatchShapeLayouts> {
  void runOnOperation() override {
    setReductionLayouts(getOperation());
    SmallVector<Operation *> shapeChanges;
    getOperation().walk([&](Operation *op) {
      if (isa<ExpandDimsOp, BroadcastOp>(op))
        shapeChanges.push_back(op);
    });
    Rematerializer rematerializer(/*convertWhenStuck=*/true);
    // Consumers first: a broadcast's requirement travels up through the
    // expand_dims that feeds it.
    for (Operation *op : llvm::reverse(shapeChanges)) {
      if (op->use_empty())
        continue;
      auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
      std::optional<Attribute> needed =
          Rematerializer::operandLayout(op, resultType.getEncoding());
      if (!needed) {
        op->emitOpError("with a result that is not in a blocked layout is "
                        "not supported by the GPU lowering yet");
        return signalPassFailure();
      }
      FailureOr<Value> operand = rematerializer.get(op->getOperand(0), *needed);
      if (failed(operand))
        return signalPassFailure();
      op->setOperand(0, *operand);
    }
    // A gather reads the index element for each result element a thread
    // holds: the index must be laid out as the result.
    SmallVector<GatherOp> gathers;
    getOperation().walk([&](GatherOp op) { gathers.push_back(op); });
    for (GatherOp op : gathers) {
      FailureOr<Value> index =
          rematerializer.get(op.getIndex(), op.getType().getEncoding());
      if (failed(index))
        return signalPassFailure();
      op.getIndexMutable().assign(*index);
    }
    storeWithoutConversion(getOperation());
  }
};

} // namespace
