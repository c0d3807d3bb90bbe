//===- AccessWidth.h - Vector width of a thread's accesses ------*- C++ -*-===//
//
// How many elements one access of a thread moves, from the target-neutral
// axis info and the block's kiln_gpu layout.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILNGPU_ANALYSIS_ACCESSWIDTH_H
#define KILN_DIALECT_KILNGPU_ANALYSIS_ACCESSWIDTH_H

#include "kiln/Analysis/AxisInfo.h"

namespace mlir::kiln::gpu {

/// Widest run of elements one access of a thread may move for `ptr` (a
/// block with a kiln_gpu layout) and `mask` (may be null): as many as are
/// proven contiguous, aligned and uniformly masked, within the run each
/// thread holds along its layout's fastest dimension. 1 for a scalar, a
/// block without a layout, or a slice layout sliced along its fastest
/// dimension.
int64_t getAccessWidth(AxisInfoAnalysis &axisInfo, Value ptr, Value mask);

} // namespace mlir::kiln::gpu

#endif // KILN_DIALECT_KILNGPU_ANALYSIS_ACCESSWIDTH_H
