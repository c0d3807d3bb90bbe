//===- MatchShapeLayouts.cpp - Layouts for expand_dims and broadcast ------===//
//
// Implements kiln-gpu-match-shape-layouts: operands of expand_dims get the
// slice of the result's layout and operands of broadcast the result's own
// layout, by recomputing their producers under that layout. Recomputing a
// range or a splat costs a few instructions per thread, far less than
// exchanging elements between threads through shared memory.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"

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

/// Recomputes values under another layout, once per (value, layout).
class Rematerializer {
public:
  /// `value` with encoding `encoding`: itself, or a clone of its producer
  /// (and, recursively, of the producers of its block operands).
  FailureOr<Value> get(Value value, Attribute encoding) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getEncoding() == encoding)
      return value;
    auto key = std::make_pair(value, encoding);
    if (auto it = memo.find(key); it != memo.end())
      return it->second;

    Operation *producer = value.getDefiningOp();
    if (!producer)
      return emitError(value.getLoc(), "a block carried by control flow")
             , failure();
    if (auto convert = dyn_cast<ConvertLayoutOp>(producer))
      return get(convert.getSrc(), encoding);
    auto load = dyn_cast<LoadOp>(producer);
    bool recomputable =
        isa<MakeRangeOp, SplatOp, arith::ConstantOp, AddPtrOp, ExpandDimsOp,
            BroadcastOp, arith::SelectOp, AxisHintOp>(producer) ||
        (load && !load.getIsVolatile()) ||
        (producer->hasTrait<OpTrait::Elementwise>() &&
         producer->getNumResults() == 1);
    if (!recomputable)
      return producer->emitOpError()
                 << "cannot be recomputed under another layout",
             failure();

    IRMapping mapping;
    for (Value operand : producer->getOperands()) {
      auto operandType = dyn_cast<RankedTensorType>(operand.getType());
      if (!operandType)
        continue;
      FailureOr<Attribute> needed = operandLayout(producer, encoding);
      if (failed(needed))
        return failure();
      FailureOr<Value> replacement = get(operand, *needed);
      if (failed(replacement))
        return failure();
      mapping.map(operand, *replacement);
    }
    OpBuilder builder(producer->getContext());
    builder.setInsertionPointAfter(producer);
    Operation *clone = builder.clone(*producer, mapping);
    auto newType = RankedTensorType::get(type.getShape(), type.getElementType(),
                                         encoding);
    clone->getResult(0).setType(newType);
    if (auto constant = dyn_cast<arith::ConstantOp>(clone))
      if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()))
        constant.setValueAttr(dense.reshape(newType));
    memo[key] = clone->getResult(0);
    return clone->getResult(0);
  }

  /// The layout `op`'s block operands need for its result to have `encoding`.
  static FailureOr<Attribute> operandLayout(Operation *op, Attribute encoding) {
    if (auto expand = dyn_cast<ExpandDimsOp>(op)) {
      auto blocked = dyn_cast<BlockedEncodingAttr>(encoding);
      if (!blocked)
        return op->emitOpError("with a result that is not in a blocked "
                               "layout is not supported by the GPU lowering yet"),
               failure();
      return Attribute(SliceEncodingAttr::get(op->getContext(),
                                              expand.getAxis(), blocked));
    }
    if (isa<BroadcastOp>(op) && !isa<BlockedEncodingAttr>(encoding))
      return op->emitOpError("with a result that is not in a blocked layout "
                             "is not supported by the GPU lowering yet"),
             failure();
    return encoding; // element-wise, and broadcast: the same layout
  }

private:
  DenseMap<std::pair<Value, Attribute>, Value> memo;
};

struct KilnGPUMatchShapeLayouts
    : public gpu::impl::KilnGPUMatchShapeLayoutsBase<KilnGPUMatchShapeLayouts> {
  void runOnOperation() override {
    SmallVector<Operation *> shapeChanges;
    getOperation().walk([&](Operation *op) {
      if (isa<ExpandDimsOp, BroadcastOp>(op))
        shapeChanges.push_back(op);
    });
    Rematerializer rematerializer;
    // Consumers first: a broadcast's requirement travels up through the
    // expand_dims that feeds it.
    for (Operation *op : llvm::reverse(shapeChanges)) {
      if (op->use_empty())
        continue;
      auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
      FailureOr<Attribute> needed =
          Rematerializer::operandLayout(op, resultType.getEncoding());
      if (failed(needed))
        return signalPassFailure();
      FailureOr<Value> operand = rematerializer.get(op->getOperand(0), *needed);
      if (failed(operand))
        return signalPassFailure();
      op->setOperand(0, *operand);
    }
  }
};

} // namespace
