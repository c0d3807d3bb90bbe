//===- PipelinedOperands.h - Which loads a loop's slots take -*- C++ -*-===//
//
// The first half of kiln-gpu-pipeline-loads: which of a loop's loads feed
// its tensor-core dots from shared-memory slots, in which views the dots
// read them, and whether the TMA unit can copy them. The second half
// (PipelineLoads.cpp) rewrites the loop.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_DIALECT_KILNGPU_TRANSFORMS_PIPELINEDOPERANDS_H
#define KILN_LIB_DIALECT_KILNGPU_TRANSFORMS_PIPELINEDOPERANDS_H

#include "kiln/Analysis/AxisInfo.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Target/NVIDIA/TensorCores.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>

namespace mlir::kiln::gpu {

/// A dot that reads a pipelined block from its slot.
struct SlotReader {
  DotOp dot;
  unsigned index;   // 0: A, 1: B
  /// B is the transpose of the block (`b.T` of a [N, K] block).
  bool transposed;
  /// B's view of the slot is K-major: [N][K].
  bool kMajor;
  /// The ops between the load and the dot (layout conversions, and for a
  /// transposed B the transpose), which the slot replaces.
  SmallVector<Operation *> between;
};

/// A load whose block only feeds operands of the loop's dots (when loaded
/// before the loop, also anything else): one dot's A, or the B of one or
/// more wgmma dots, each reading the slot in its own view. The slot holds
/// the block's rows along its slowest dimension, each contiguous along
/// its fastest one, as the copies write it; that is [N][K] (K-major) for
/// a B that is contiguous along K, and [K][N] (N-major) for one that is
/// contiguous along N, so one slot serves a dot reading the block and
/// another reading its transpose (tutorial 06's backward: `dot(k, qT)`
/// and `dot(dsT, tl.trans(qT))`).
struct PipelinedOperand {
  mutable LoadOp load;
  nvidia::TensorCores tensorCores;
  nvidia::TensorCoreOperands tensorCore;
  /// Loaded before the loop (the same block every iteration): copied once
  /// into a slot of its own.
  bool invariant;
  SmallVector<SlotReader> readers;
  /// The view the copies write through: the operand (0: A, 1: B), whether
  /// the slot is K-major in it, and whether it is the block's transpose.
  unsigned index;
  bool kMajor;
  bool transposed;
  /// Whether cp.async can copy it (its runs along the slot's rows are at
  /// least 4 bytes wide).
  bool copyable;
  /// The TMA box, where the load names a tensor map (a kernel parameter)
  /// whose box the slot can take. The TMA unit copies the block as it
  /// lies: a B slot is K-major exactly when the dot reads the block
  /// transposed. (A block loaded once goes the way of the loop's: by the
  /// TMA unit only in a loop of TMA copies.)
  std::optional<TmaBox> tmaBox;
};

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
SmallVector<PipelinedOperand> getPipelinedOperands(scf::ForOp loop, ArrayRef<DotOp> dots,
                                                   int numWarps, int threadsPerWarp,
                                                   AxisInfoAnalysis &axisInfo);

/// Whether the TMA unit can copy every operand: each load names a tensor
/// map with a box for its slot, and no parameter is asked for two boxes.
/// (The box is a property of the parameter's tensor map, which the host
/// encodes once per launch.)
bool canUseTma(ArrayRef<PipelinedOperand> operands);

/// Records on each tensor-map parameter the box its copies use
/// (kTensorMapBoxAttr), which the host encodes the tensor map with.
void recordTmaBoxes(ArrayRef<PipelinedOperand> operands);

} // namespace mlir::kiln::gpu

#endif // KILN_LIB_DIALECT_KILNGPU_TRANSFORMS_PIPELINEDOPERANDS_H
