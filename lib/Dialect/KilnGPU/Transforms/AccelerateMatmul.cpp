//===- AccelerateMatmul.cpp - Tensor-core layouts for dots -----------------===//
//
// Implements kiln-gpu-accelerate-matmul: dots that tensor cores can compute
// get the accumulator layout of wgmma or mma.sync (8-bit float operands that
// wgmma does not take are decoded to f16 first), the
// accumulator of a loop is carried in that layout instead of being converted
// twice per iteration, and the conversions of the result back to the
// original layout are sunk below element-wise ops into the stores, which
// then store from the dot's layout with recomputed pointers, unless the
// original layout stores wider vectors.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"
#include "kiln/Target/NVIDIA/TensorCores.h"

#include "Rematerializer.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUACCELERATEMATMUL
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;
using namespace mlir::kiln::nvidia;

namespace {

RankedTensorType withEncoding(RankedTensorType type, Attribute encoding) {
  return RankedTensorType::get(type.getShape(), type.getElementType(), encoding);
}

/// Carries the `index`th value of `loop` in the layout it is converted to
/// on entry, when the body yields a conversion from that layout: the two
/// conversions per iteration become one before and one after the loop.
bool carryInConvertedLayout(scf::ForOp loop, unsigned index) {
  BlockArgument arg = loop.getRegionIterArgs()[index];
  auto oldType = dyn_cast<RankedTensorType>(arg.getType());
  if (!oldType)
    return false;
  Operation *yield = loop.getBody()->getTerminator();
  auto yielded = yield->getOperand(index).getDefiningOp<ConvertLayoutOp>();
  if (!yielded)
    return false;
  RankedTensorType newType = yielded.getSrc().getType();
  if (newType == oldType)
    return false;
  bool convertedOnEntry = llvm::any_of(arg.getUsers(), [&](Operation *user) {
    auto convert = dyn_cast<ConvertLayoutOp>(user);
    return convert && convert.getType() == newType;
  });
  if (!convertedOnEntry)
    return false;

  OpBuilder builder(loop);
  Rematerializer rematerializer(/*convertWhenStuck=*/true);
  OpOperand &init = loop.getInitArgsMutable()[index];
  FailureOr<Value> newInit = rematerializer.get(init.get(), newType.getEncoding());
  if (failed(newInit))
    return false;
  init.set(*newInit);

  arg.setType(newType);
  Value oldArg;
  for (Operation *user : llvm::make_early_inc_range(arg.getUsers())) {
    auto convert = dyn_cast<ConvertLayoutOp>(user);
    if (convert && convert.getType() == newType) {
      convert.replaceAllUsesWith(arg);
      convert.erase();
      continue;
    }
    if (!oldArg) {
      builder.setInsertionPointToStart(loop.getBody());
      oldArg = ConvertLayoutOp::create(builder, loop.getLoc(), oldType, arg);
    }
    user->replaceUsesOfWith(arg, oldArg);
  }
  yield->setOperand(index, yielded.getSrc());
  if (yielded->use_empty())
    yielded.erase();

  Value result = loop.getResult(index);
  result.setType(newType);
  builder.setInsertionPointAfter(loop);
  auto back = ConvertLayoutOp::create(builder, loop.getLoc(), oldType, result);
  result.replaceAllUsesExcept(back, back);
  return true;
}

/// Moves `convert` below each element-wise user whose other block operands
/// can be recomputed in the conversion's source layout, so that the
/// conversion reaches the stores (which drop it). Returns the conversions
/// created below the users.
SmallVector<ConvertLayoutOp> sinkBelowElementwiseUsers(ConvertLayoutOp convert) {
  SmallVector<ConvertLayoutOp> sunk;
  Attribute encoding = convert.getSrc().getType().getEncoding();
  for (Operation *user : llvm::make_early_inc_range(convert->getUsers())) {
    if (!user->hasTrait<OpTrait::Elementwise>() || user->getNumResults() != 1 ||
        !isa<RankedTensorType>(user->getResult(0).getType()))
      continue;
    Rematerializer strict(/*convertWhenStuck=*/false);
    IRMapping mapping;
    bool recomputable = true;
    for (Value operand : user->getOperands()) {
      if (!isa<RankedTensorType>(operand.getType()))
        continue;
      FailureOr<Value> mapped = operand == convert.getResult()
                                    ? FailureOr<Value>(convert.getSrc())
                                    : strict.get(operand, encoding);
      if (failed(mapped)) {
        recomputable = false;
        break;
      }
      mapping.map(operand, *mapped);
    }
    if (!recomputable)
      continue;
    OpBuilder builder(user);
    Operation *clone = builder.clone(*user, mapping);
    auto oldType = cast<RankedTensorType>(user->getResult(0).getType());
    clone->getResult(0).setType(withEncoding(oldType, encoding));
    auto back = ConvertLayoutOp::create(builder, user->getLoc(), oldType,
                                        clone->getResult(0));
    user->replaceAllUsesWith(back);
    user->erase();
    sunk.push_back(back);
  }
  if (convert->use_empty())
    convert.erase();
  return sunk;
}

struct KilnGPUAccelerateMatmul
    : public gpu::impl::KilnGPUAccelerateMatmulBase<KilnGPUAccelerateMatmul> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    int numWarps = getNumWarps(module);
    int threadsPerWarp = getThreadsPerWarp(module);
    int capability = getComputeCapability(module);
    bool hasWgmma = hasWarpgroupMma(module);

    SmallVector<DotOp> dots;
    module.walk([&](DotOp dot) { dots.push_back(dot); });
    SmallVector<ConvertLayoutOp> results;
    for (DotOp dot : dots) {
      RankedTensorType type = dot.getType();
      BlockedEncodingAttr layout;
      // sm_90a: the warpgroup MMA where the block tiles by it and it takes
      // the operands, else mma.sync. 8-bit floats go to wgmma as they are;
      // elsewhere they are decoded to f16 first.
      if (hasWgmma && canUseWarpgroupMma(dot))
        layout = getWgmmaAccumulatorLayout(context, type.getShape(), numWarps,
                                           threadsPerWarp);
      if (!layout)
        decodeFloat8Operands(dot);
      bool tensorCores = capability >= 80 && getTensorCoreOperands(dot);
      if (!layout && tensorCores)
        layout = getMmaAccumulatorLayout(context, type.getShape(), numWarps,
                                         threadsPerWarp);
      // The FMA lowering computes each element a thread holds of a blocked
      // result; a result in a slice layout gets the default blocked one.
      if (!layout && !isa_and_present<BlockedEncodingAttr>(type.getEncoding())) {
        SmallVector<unsigned> order;
        for (int64_t d = type.getRank() - 1; d >= 0; --d)
          order.push_back(d);
        layout = getDefaultBlockedEncoding(context, type.getShape(), order, 1,
                                           numWarps, threadsPerWarp);
      }
      if (!layout || layout == type.getEncoding())
        continue;
      Rematerializer rematerializer(/*convertWhenStuck=*/true);
      FailureOr<Value> acc = rematerializer.get(dot.getC(), layout);
      if (failed(acc))
        continue;
      dot.getCMutable().assign(*acc);
      dot.getResult().setType(withEncoding(type, layout));
      OpBuilder builder(context);
      builder.setInsertionPointAfter(dot);
      auto back = ConvertLayoutOp::create(builder, dot.getLoc(), type, dot.getResult());
      dot.getResult().replaceAllUsesExcept(back, back);
      results.push_back(back);
    }
    if (results.empty())
      return;

    // Inner loops first: an outer loop then sees the inner loop's entry and
    // exit conversions.
    SmallVector<scf::ForOp> loops;
    module.walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i)
        carryInConvertedLayout(loop, i);

    // The conversions now left after each loop or dot move towards the
    // stores. Only those of dot results: elsewhere the layout passes have
    // already chosen.
    SmallVector<ConvertLayoutOp> worklist;
    module.walk([&](ConvertLayoutOp convert) {
      Operation *producer = convert.getSrc().getDefiningOp();
      if (isa_and_present<DotOp>(producer) ||
          (isa_and_present<scf::ForOp>(producer) &&
           isTensorCoreLayout(convert.getSrc().getType(), numWarps,
                              threadsPerWarp)))
        worklist.push_back(convert);
    });
    while (!worklist.empty()) {
      ConvertLayoutOp convert = worklist.pop_back_val();
      llvm::append_range(worklist, sinkBelowElementwiseUsers(convert));
    }
    // A store then takes the dot's layout, unless the converted layout
    // writes wider vectors.
    storeAccumulatorsWithoutConversion(module);
  }
};

} // namespace
