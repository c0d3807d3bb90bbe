//===- Rematerializer.cpp - Recomputing blocks under another layout ------===//
//
// Implements Rematerializer and storeWithoutConversion (Rematerializer.h).
//
//===----------------------------------------------------------------------===//

#include "Rematerializer.h"

#include "kiln/Analysis/AxisInfo.h"
#include "kiln/Dialect/KilnGPU/Analysis/AccessWidth.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

bool Rematerializer::isLayoutFreeElementwise(Operation *op) {
  // Inline asm that packs several elements per call needs them adjacent in
  // one thread: its layout is not free.
  return op->hasTrait<OpTrait::Elementwise>() && !isa<ElementwiseInlineAsmOp>(op) &&
         op->getNumResults() == 1 && isa<RankedTensorType>(op->getResult(0).getType());
}

bool Rematerializer::isRecomputable(Operation *op, bool loads) {
  if (isa<MakeRangeOp, SplatOp, arith::ConstantOp, AddPtrOp, ExpandDimsOp, BroadcastOp,
          AxisHintOp>(op) ||
      isLayoutFreeElementwise(op))
    return true;
  auto load = dyn_cast<LoadOp>(op);
  return loads && load && !load.getIsVolatile();
}

FailureOr<Value> Rematerializer::get(Value value, Attribute encoding) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getEncoding() == encoding)
    return value;
  auto key = std::make_pair(value, encoding);
  if (auto it = memo.find(key); it != memo.end())
    return it->second;

  Operation *producer = value.getDefiningOp();
  if (auto convert = dyn_cast_if_present<ConvertLayoutOp>(producer))
    return get(convert.getSrc(), encoding);
  bool recomputable = producer && isRecomputable(producer, /*loads=*/true);
  // A shape change whose result would be in a slice layout (a 1-D block
  // expanded twice into 3-D) has no operand layout: it is converted too.
  std::optional<Attribute> needed =
      recomputable ? operandLayout(producer, encoding) : std::nullopt;
  if (!needed) {
    if (!convertWhenStuck)
      return failure();
    // A block carried by control flow, a reduction's result...: its
    // elements move between threads.
    OpBuilder builder(value.getContext());
    builder.setInsertionPointAfterValue(value);
    auto newType = RankedTensorType::get(type.getShape(),
                                         type.getElementType(), encoding);
    Value converted =
        ConvertLayoutOp::create(builder, value.getLoc(), newType, value);
    memo[key] = converted;
    return converted;
  }

  IRMapping mapping;
  for (Value operand : producer->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
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

std::optional<Attribute> Rematerializer::operandLayout(Operation *op,
                                                       Attribute encoding) {
  if (auto expand = dyn_cast<ExpandDimsOp>(op)) {
    auto blocked = dyn_cast<BlockedEncodingAttr>(encoding);
    if (!blocked)
      return std::nullopt;
    return Attribute(SliceEncodingAttr::get(op->getContext(),
                                            expand.getAxis(), blocked));
  }
  if (isa<BroadcastOp>(op) && !isa<BlockedEncodingAttr>(encoding))
    return std::nullopt;
  return encoding; // element-wise, and broadcast: the same layout
}

/// How many elements one access of a thread would move for `ptr` under
/// `encoding` (ignoring the mask): 1 for anything but a blocked layout.
static int64_t getAccessWidthUnder(AxisInfoAnalysis &axisInfo, Value ptr, Attribute encoding) {
  auto layout = dyn_cast_if_present<BlockedEncodingAttr>(encoding);
  if (!layout)
    return 1;
  unsigned fastest = layout.getOrder()[0];
  auto type = cast<RankedTensorType>(ptr.getType());
  return std::min<int64_t>({axisInfo.getPtrVectorWidth(ptr, fastest),
                            layout.getSizePerThread()[fastest], type.getDimSize(fastest)});
}

void mlir::kiln::gpu::storeWithoutConversion(
    ModuleOp module, llvm::function_ref<bool(StoreOp, ConvertLayoutOp)> keepConversion) {
  Rematerializer strict(/*convertWhenStuck=*/false);
  AxisInfoAnalysis axisInfo(module);
  module.walk([&](StoreOp store) {
    auto convert = store.getValue().getDefiningOp<ConvertLayoutOp>();
    if (!convert || (keepConversion && keepConversion(store, convert)))
      return;
    // A conversion to a layout that stores wider vectors (kiln-gpu-coalesce
    // gives a store running along another dimension its own) stays.
    if (getAccessWidth(axisInfo, store.getPtr(), store.getMask()) >
        getAccessWidthUnder(axisInfo, store.getPtr(), convert.getSrc().getType().getEncoding()))
      return;
    Attribute encoding = convert.getSrc().getType().getEncoding();
    FailureOr<Value> ptr = strict.get(store.getPtr(), encoding);
    if (failed(ptr))
      return;
    FailureOr<Value> mask = store.getMask() ? strict.get(store.getMask(), encoding)
                                            : FailureOr<Value>(Value());
    if (failed(mask))
      return;
    store.getPtrMutable().assign(*ptr);
    if (*mask)
      store.getMaskMutable().assign(*mask);
    store.getValueMutable().assign(convert.getSrc());
  });
}

bool mlir::kiln::gpu::isTensorCoreLayout(RankedTensorType type, int numWarps,
                                         int threadsPerWarp) {
  MLIRContext *context = type.getContext();
  Attribute encoding = type.getEncoding();
  return encoding &&
         (encoding == getMmaAccumulatorLayout(context, type.getShape(), numWarps,
                                              threadsPerWarp) ||
          encoding == getWgmmaAccumulatorLayout(context, type.getShape(), numWarps,
                                                threadsPerWarp));
}

void mlir::kiln::gpu::storeAccumulatorsWithoutConversion(ModuleOp module) {
  int numWarps = getNumWarps(module);
  int threadsPerWarp = getThreadsPerWarp(module);
  AxisInfoAnalysis axisInfo(module);
  storeWithoutConversion(module, [&](StoreOp store, ConvertLayoutOp convert) {
    RankedTensorType from = convert.getSrc().getType();
    if (!isTensorCoreLayout(from, numWarps, threadsPerWarp))
      return false;
    auto layout = cast<BlockedEncodingAttr>(from.getEncoding());
    int64_t pairs = layout.getSizePerThread().back();
    return getAccessWidth(axisInfo, store.getPtr(), store.getMask()) > pairs;
  });
}
