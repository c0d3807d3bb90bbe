//===- LoopUtils.cpp - Loop analyses shared by the pipelining passes -------===//

#include "LoopUtils.h"

#include "kiln/Target/NVIDIA/TensorCores.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;
using namespace mlir::kiln::nvidia;

bool mlir::kiln::gpu::writesMemory(scf::ForOp loop) {
  bool writes = false;
  loop.getBody()->walk([&](Operation *op) {
    if (isa<StoreOp, AtomicRMWOp, AtomicCASOp, PrintOp, AssertOp>(op) ||
        (!isMemoryEffectFree(op) && !isa<LoadOp>(op) &&
         !op->hasTrait<OpTrait::IsTerminator>()))
      writes = true;
  });
  return writes;
}

FailureOr<SmallVector<Operation *>> mlir::kiln::gpu::getBodySlice(scf::ForOp loop,
                                                                  ValueRange roots) {
  Block *body = loop.getBody();
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> worklist(roots.begin(), roots.end());
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    Operation *producer = value.getDefiningOp();
    if (!producer || producer->getBlock() != body || slice.contains(producer))
      continue;
    if (!isMemoryEffectFree(producer) || producer->getNumRegions() != 0)
      return failure();
    slice.insert(producer);
    llvm::append_range(worklist, producer->getOperands());
  }
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}

Value mlir::kiln::gpu::andMask(OpBuilder &builder, Location loc, Value mask,
                               Value condition, RankedTensorType ptrType) {
  auto maskType = RankedTensorType::get(ptrType.getShape(), builder.getI1Type(),
                                        ptrType.getEncoding());
  Value splat = SplatOp::create(builder, loc, maskType, condition);
  return mask ? Value(arith::AndIOp::create(builder, loc, mask, splat)) : splat;
}

DotOp mlir::kiln::gpu::getOnlyDot(scf::ForOp loop) {
  DotOp found;
  for (Operation &op : *loop.getBody()) {
    auto dot = dyn_cast<DotOp>(op);
    if (!dot)
      continue;
    if (found)
      return {};
    found = dot;
  }
  return found;
}

DotOp mlir::kiln::gpu::getAccumulatingDot(scf::ForOp loop, int numWarps,
                                          int threadsPerWarp) {
  DotOp found = getOnlyDot(loop);
  if (!found)
    return {};
  if (getDotTensorCores(found, numWarps, threadsPerWarp) != TensorCores::wgmma)
    return {};
  // f16 accumulators leave wgmma as packed pairs, which must be unpacked
  // once the group is done: they are not carried in flight.
  if (found.getType().getElementType().isF16())
    return {};
  auto acc = dyn_cast<BlockArgument>(found.getC());
  if (!acc || acc.getOwner() != loop.getBody() || acc.getArgNumber() == 0 ||
      !acc.hasOneUse())
    return {};
  unsigned index = acc.getArgNumber() - 1;
  Operation *yield = loop.getBody()->getTerminator();
  if (!found.getResult().hasOneUse() || yield->getOperand(index) != found.getResult())
    return {};
  return found;
}
