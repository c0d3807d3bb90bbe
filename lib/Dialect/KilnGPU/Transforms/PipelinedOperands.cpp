//===- PipelinedOperands.cpp - Which loads a loop's slots take -------------===//
//
// Implements PipelinedOperands.h for kiln-gpu-pipeline-loads.
//
//===----------------------------------------------------------------------===//

#include "PipelinedOperands.h"

#include "kiln/Dialect/KilnGPU/Analysis/AccessWidth.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;
using namespace mlir::kiln::nvidia;

namespace {

/// Whether a masked-off element may read as zero: cp.async zero-fills it.
bool isZeroOrAbsent(Value other) { return !other || isZeroBlock(other); }

/// The kernel parameter a load's tensor map is, or null. (The launcher
/// encodes the kernel's parameters only: a map that a helper function
/// receives, or a loop carries, is not one.)
BlockArgument getTensorMapParameter(LoadOp load) {
  auto arg = dyn_cast_if_present<BlockArgument>(load.getTensorMap());
  if (!arg)
    return {};
  auto function = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!function || !function->hasAttr("kiln.kernel") ||
      !function.getArgAttr(arg.getArgNumber(), "kiln.tensor_map"))
    return {};
  return arg;
}

/// The box a TMA copy of operand `index`'s load into a wgmma slot uses
/// (the tile as loaded; K-major for a transposed B), or nullopt.
std::optional<TmaBox> getOperandTmaBox(LoadOp load, unsigned index, bool kMajor,
                                       TensorCores tensorCores,
                                       const TensorCoreOperands &tensorCore) {
  if (tensorCores != TensorCores::wgmma || !getTensorMapParameter(load) || tensorCore.elementBytes == 4)
    return std::nullopt;
  // Only 16-bit B is read N-major.
  if (index == 1 && !kMajor && tensorCore.needsKMajorB())
    return std::nullopt;
  auto type = cast<RankedTensorType>(load.getType());
  // The box depends on the buffer's operand and tensor cores only.
  auto buffer = OperandBufferAttr::get(load.getContext(), index,
                                       TensorCoresAttr::get(load.getContext(), tensorCores),
                                       0, 0, 1, kMajor);
  return getTmaBox(buffer, type.getShape(), tensorCore.elementBytes);
}

/// Whether every use of `load`'s block, and of the conversions and
/// transposes on the way to `readers`, is one of the readers' steps: an op
/// between, or the dot operand at the end.
bool onlyReadBy(LoadOp load, ArrayRef<SlotReader> readers) {
  llvm::SmallPtrSet<Operation *, 8> between;
  llvm::SmallPtrSet<OpOperand *, 8> reads;
  for (const SlotReader &reader : readers) {
    between.insert(reader.between.begin(), reader.between.end());
    reads.insert(&reader.dot->getOpOperand(reader.index));
  }
  SmallVector<Operation *> worklist{load.getOperation()};
  llvm::SmallPtrSet<Operation *, 8> seen;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!seen.insert(op).second)
      continue;
    for (OpOperand &use : op->getUses()) {
      if (between.contains(use.getOwner()))
        worklist.push_back(use.getOwner());
      else if (!reads.contains(&use))
        return false;
    }
  }
  return true;
}

} // namespace

/// The loads whose blocks the loop's tensor-core dots can read from
/// pipeline slots: each a load in the body whose every reader is such a
/// dot operand (maybe through layout conversions, and for B a
/// transpose), or a load before the loop (read by anything else too);
/// several readers only as the B of wgmma dots. cp.async copies a block
/// whose runs along the layout's fastest dimension are at least 4 bytes
/// wide, which the slot's rows hold contiguously, for readers of a type
/// the tensor cores read as copied (TensorCoreOperands::canCopyAsync). A
/// load through a tensor map also records its TMA box. A B that is the
/// transpose of a load (`b.T` of a [N, K] descriptor's block) is copied as
/// it lies into a K-major slot: by the TMA unit, or by cp.async when its
/// runs are along K.
SmallVector<PipelinedOperand> mlir::kiln::gpu::getPipelinedOperands(scf::ForOp loop, ArrayRef<DotOp> dots,
                                                   int numWarps, int threadsPerWarp,
                                                   AxisInfoAnalysis &axisInfo) {
  // Every dot operand that is a load, maybe through conversions and a
  // transpose, grouped by load in the order first read.
  llvm::MapVector<Operation *, PipelinedOperand> candidates;
  llvm::DenseSet<Operation *> mismatched;
  for (DotOp dot : dots) {
    TensorCores tensorCores = *getDotTensorCores(dot, numWarps, threadsPerWarp);
    TensorCoreOperands tensorCore = *getTensorCoreOperands(dot);
    for (unsigned index : {0u, 1u}) {
      Value value = dot->getOperand(index);
      SlotReader reader{dot, index, false, false, {}};
      // (A conversion may have other readers too: a slot holds the block
      // as loaded, whatever layout each reader had it converted to.)
      while (Operation *op = value.getDefiningOp()) {
        auto transpose = dyn_cast<TransOp>(op);
        if (!(isa<ConvertLayoutOp>(op) || (transpose && !reader.transposed && index == 1 &&
                                           op->hasOneUse())))
          break;
        reader.transposed |= bool(transpose);
        reader.between.push_back(op);
        value = op->getOperand(0);
      }
      auto load = value.getDefiningOp<LoadOp>();
      if (!load || load.getIsVolatile())
        continue;
      bool invariant = !loop->isAncestor(load);
      if (!invariant && load->getBlock() != loop.getBody())
        continue;
      auto [it, inserted] = candidates.try_emplace(load.getOperation());
      PipelinedOperand &operand = it->second;
      if (inserted) {
        operand.load = load;
        operand.tensorCores = tensorCores;
        operand.tensorCore = tensorCore;
        operand.invariant = invariant;
      } else if (operand.tensorCores != tensorCores ||
                 operand.tensorCore.elementBytes != tensorCore.elementBytes) {
        mismatched.insert(load.getOperation());
      }
      operand.readers.push_back(std::move(reader));
    }
  }

  SmallVector<PipelinedOperand> operands;
  for (auto &candidate : candidates) {
    Operation *op = candidate.first;
    PipelinedOperand &operand = candidate.second;
    LoadOp load = operand.load;
    ArrayRef<SlotReader> readers = operand.readers;
    if (mismatched.contains(op))
      continue;
    // A block loaded in the body reaches nothing but these readers: every
    // use of it, and of the ops between it and them, is one of theirs.
    if (!operand.invariant && !onlyReadBy(load, readers))
      continue;
    // An A slot's rows are permuted for wgmma: only B slots are shared.
    if (readers.size() > 1 &&
        (operand.tensorCores != TensorCores::wgmma ||
         llvm::any_of(readers, [](const SlotReader &r) { return r.index != 1; })))
      continue;
    // The copies write through a reader that reads the block as loaded,
    // else through a transposed reader's K-major view.
    const SlotReader *writer = llvm::find_if(readers, [](const SlotReader &r) {
      return !r.transposed;
    });
    if (writer == readers.end())
      writer = &readers.front();
    operand.index = writer->index;
    operand.transposed = writer->transposed;

    std::optional<TmaBox> box;
    bool tmaReadable = llvm::all_of(readers, [&](const SlotReader &r) {
      return !(r.index == 1 && !r.transposed && operand.tensorCore.needsKMajorB());
    });
    if (tmaReadable)
      box = getOperandTmaBox(load, operand.index, /*kMajor=*/operand.transposed,
                             operand.tensorCores, operand.tensorCore);
    bool copyable = false;
    auto ptrType = dyn_cast<RankedTensorType>(load.getPtr().getType());
    std::optional<ThreadLayout> layout =
        ptrType && ptrType.getRank() == 2 ? getThreadLayout(ptrType) : std::nullopt;
    if (isZeroOrAbsent(load.getOther()) && layout && layout->slicedDim < 0 &&
        getAccessWidth(axisInfo, load.getPtr(), load.getMask()) *
                operand.tensorCore.elementBytes >= 4) {
      unsigned fastest = layout->blocked.getOrder()[0];
      copyable = true;
      for (SlotReader &reader : operand.readers) {
        // A transposed B is loaded [N, K]: its K is the block's columns,
        // and its runs along K go into a K-major slot as they lie.
        unsigned kDim = reader.index == 0 || reader.transposed ? 1 : 0;
        bool alongK = fastest == kDim;
        reader.kMajor = reader.index == 1 && alongK;
        // (A transposed reader's N-major view is written by another's.)
        bool written = !reader.transposed || alongK || !writer->transposed;
        copyable &= written && operand.tensorCore.canCopyAsync(reader.index, alongK);
      }
    }
    operand.kMajor = writer->kMajor;
    operand.copyable = copyable;
    operand.tmaBox = box;
    if (copyable || box)
      operands.push_back(operand);
  }
  return operands;
}

/// Whether the TMA unit can copy every operand: each load names a tensor
/// map with a box for its slot, and no parameter is asked for two boxes.
/// (The box is a property of the parameter's tensor map, which the host
/// encodes once per launch.)
bool mlir::kiln::gpu::canUseTma(ArrayRef<PipelinedOperand> operands) {
  llvm::DenseMap<BlockArgument, TmaBox> boxes;
  for (const PipelinedOperand &operand : operands) {
    if (!operand.tmaBox)
      return false;
    BlockArgument arg = getTensorMapParameter(operand.load);
    auto function = cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    const TmaBox &box = *operand.tmaBox;
    SmallVector<int64_t> wanted{box.rows, box.cols, box.swizzleBytes};
    if (auto existing = function.getArgAttrOfType<DenseI64ArrayAttr>(arg.getArgNumber(),
                                                                       kTensorMapBoxAttr))
      if (existing.asArrayRef() != ArrayRef<int64_t>(wanted))
        return false;
    auto [it, inserted] = boxes.try_emplace(arg, box);
    if (!inserted && (it->second.rows != box.rows || it->second.cols != box.cols))
      return false;
  }
  return true;
}

/// Records on each tensor-map parameter the box its copies use
/// (kTensorMapBoxAttr), which the host encodes the tensor map with.
void mlir::kiln::gpu::recordTmaBoxes(ArrayRef<PipelinedOperand> operands) {
  for (const PipelinedOperand &operand : operands) {
    BlockArgument arg = getTensorMapParameter(operand.load);
    auto function = cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    const TmaBox &box = *operand.tmaBox;
    function.setArgAttr(arg.getArgNumber(), kTensorMapBoxAttr,
                        DenseI64ArrayAttr::get(arg.getContext(),
                                               {box.rows, box.cols, box.swizzleBytes}));
  }
}

