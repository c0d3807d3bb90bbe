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
    // (A pipelined loop's copies, waits and slot reads only write its own
    // shared-memory slots, which no load reads.)
    bool pipelining = isa<AsyncCopyOp, AsyncCommitGroupOp, AsyncCopyArriveOp, AsyncWaitOp,
                          SharedOperandOp, AsyncTmaCopyOp, WaitTmaBarrierOp, AsyncDotWaitOp>(op);
    if (isa<StoreOp, AtomicRMWOp, AtomicCASOp, PrintOp, AssertOp>(op) ||
        (!isMemoryEffectFree(op) && !isa<LoadOp>(op) && !pipelining &&
         !op->hasTrait<OpTrait::IsTerminator>()))
      writes = true;
  });
  return writes;
}

FailureOr<SmallVector<Operation *>> mlir::kiln::gpu::getBodySlice(scf::ForOp loop,
                                                                  ValueRange roots) {
  return getBlockSlice(loop.getBody(), roots);
}

FailureOr<SmallVector<Operation *>> mlir::kiln::gpu::getBlockSlice(Block *body, ValueRange roots) {
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

Value mlir::kiln::gpu::createI32(OpBuilder &builder, Location loc, int64_t value) {
  return arith::ConstantOp::create(builder, loc, builder.getI32IntegerAttr(int32_t(value)));
}

Value mlir::kiln::gpu::anyOf(OpBuilder &builder, Location loc, ArrayRef<Value> predicates) {
  llvm::SetVector<Value> unique(predicates.begin(), predicates.end());
  Value any = unique.front();
  for (Value predicate : unique.getArrayRef().drop_front())
    any = arith::OrIOp::create(builder, loc, any, predicate);
  return any;
}

Value mlir::kiln::gpu::andMask(OpBuilder &builder, Location loc, Value mask,
                               Value condition, RankedTensorType ptrType) {
  auto maskType = RankedTensorType::get(ptrType.getShape(), builder.getI1Type(),
                                        ptrType.getEncoding());
  Value splat = SplatOp::create(builder, loc, maskType, condition);
  return mask ? Value(arith::AndIOp::create(builder, loc, mask, splat)) : splat;
}

Value mlir::kiln::gpu::readThroughWait(OpBuilder &builder, Location loc, Value value) {
  auto wait = AsyncDotWaitOp::create(builder, loc, value.getType(), value);
  value.replaceAllUsesExcept(wait, wait);
  return wait;
}

Operation *mlir::kiln::gpu::getFirstUserInBlock(Operation *op, Block &block) {
  Operation *first = nullptr;
  for (Operation *user : op->getUsers()) {
    Operation *ancestor = block.findAncestorOpInBlock(*user);
    if (!ancestor)
      return nullptr;
    if (!first || ancestor->isBeforeInBlock(first))
      first = ancestor;
  }
  return first;
}

FailureOr<SlotReaders> mlir::kiln::gpu::getSlotReaders(Block &block, Value slot) {
  SlotReaders readers;
  auto addReader = [&](Operation *reader) {
    ++readers.count;
    if (!readers.last || readers.last->isBeforeInBlock(reader))
      readers.last = reader;
  };
  WalkResult result = block.walk([&](Operation *op) {
    // A block slot's reads are synchronous: the op itself is the reader.
    if (auto load = dyn_cast<LoadBlockOp>(op)) {
      if (load.getSlot() == slot)
        addReader(block.findAncestorOpInBlock(*load));
      return WalkResult::advance();
    }
    auto shared = dyn_cast<SharedOperandOp>(op);
    if (!shared || shared.getSlot() != slot)
      return WalkResult::advance();
    for (Operation *user : shared->getUsers()) {
      Operation *reader = block.findAncestorOpInBlock(*user);
      if (!reader)
        return WalkResult::interrupt();
      readers.asynchronous += user->hasAttr(kWgmmaBufferAttr);
      addReader(reader);
    }
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  return readers;
}

bool mlir::kiln::gpu::hasDot(scf::ForOp loop) {
  return llvm::any_of(*loop.getBody(), [](Operation &op) { return isa<DotOp>(op); });
}

TensorMapVersionSide mlir::kiln::gpu::getTensorMapVersionSide(Operation *op) {
  for (auto version = op->getParentOfType<scf::IfOp>(); version;
       version = version->getParentOfType<scf::IfOp>())
    if (version->hasAttr(kTensorMapVersionAttr))
      return {version, version.getThenRegion().isAncestor(op->getParentRegion())};
  return {};
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

std::optional<ChainedDots> mlir::kiln::gpu::getChainedDots(scf::ForOp loop, int numWarps,
                                                           int threadsPerWarp) {
  SmallVector<DotOp> dots;
  for (Operation &op : *loop.getBody())
    if (auto dot = dyn_cast<DotOp>(op))
      dots.push_back(dot);
  if (dots.size() != 2)
    return std::nullopt;
  for (DotOp dot : dots)
    if (getDotTensorCores(dot, numWarps, threadsPerWarp) != TensorCores::wgmma ||
        !dot.getType().getElementType().isF32())
      return std::nullopt;
  ChainedDots chained{dots[0], dots[1], 0, {}};
  Value result = chained.second.getResult();
  Operation *yield = loop.getBody()->getTerminator();
  if (!result.hasOneUse() || *result.getUsers().begin() != yield)
    return std::nullopt;
  chained.accIndex = result.getUses().begin()->getOperandNumber();
  BlockArgument acc = loop.getRegionIterArgs()[chained.accIndex];
  if (!acc.hasOneUse())
    return std::nullopt;
  // Back from the second dot's accumulator operand to the carried value.
  Value value = chained.second.getC();
  while (value != acc) {
    Operation *op = value.getDefiningOp();
    if (!op || op->getBlock() != loop.getBody() || !op->hasTrait<OpTrait::Elementwise>() ||
        op->getNumResults() != 1 || !value.hasOneUse())
      return std::nullopt;
    chained.chain.insert(chained.chain.begin(), op);
    Value next;
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      bool leadsToAcc = operand == acc || (producer && producer->getBlock() == loop.getBody() &&
                                           producer->hasTrait<OpTrait::Elementwise>() &&
                                           operand.hasOneUse());
      if (!leadsToAcc)
        continue;
      if (next)
        return std::nullopt;
      next = operand;
    }
    if (!next)
      return std::nullopt;
    value = next;
  }
  return chained;
}
