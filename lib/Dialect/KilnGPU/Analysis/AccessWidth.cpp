//===- AccessWidth.cpp - Vector width of a thread's accesses ---------------===//
//
// Reads the run a thread holds from the block's layout and asks the axis
// info how much of it one access may cover.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnGPU/Analysis/AccessWidth.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"

using namespace mlir;
using namespace mlir::kiln;

int64_t mlir::kiln::gpu::getAccessWidth(AxisInfoAnalysis &axisInfo, Value ptr, Value mask) {
  auto tensor = dyn_cast<RankedTensorType>(ptr.getType());
  if (!tensor)
    return 1;
  std::optional<ThreadLayout> layout = getThreadLayout(tensor);
  if (!layout)
    return 1;
  // The layout's fastest dimension, as a dimension of the block itself (a
  // slice's removed dimension holds one element: no run to widen).
  int64_t fastest = layout->blocked.getOrder()[0];
  if (fastest == layout->slicedDim)
    return 1;
  int64_t blockDim = layout->slicedDim >= 0 && fastest > layout->slicedDim ? fastest - 1 : fastest;
  return axisInfo.getAccessWidth(ptr, mask, blockDim,
                                 layout->blocked.getSizePerThread()[fastest]);
}
