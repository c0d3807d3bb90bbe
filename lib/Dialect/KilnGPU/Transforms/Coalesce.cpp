//===- Coalesce.cpp - Layouts for coalesced, vectorized memory access ------===//
//
// Implements kiln-gpu-coalesce. For each block shape that global memory is
// accessed with, it asks the axis-info analysis how many consecutive,
// aligned elements one thread can move in a 16-byte access, and gives every
// block of that shape a blocked layout with that many elements per thread
// along the contiguous dimension, threads and warps next to each other.
// Consecutive threads then touch consecutive chunks: coalesced warps and
// vector instructions. Blocks of other shapes keep their layout.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/AxisInfo.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <map>

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUCOALESCE
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

struct KilnGPUCoalesce : public gpu::impl::KilnGPUCoalesceBase<KilnGPUCoalesce> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int numWarps = getNumWarps(module);
    int threadsPerWarp = getThreadsPerWarp(module);
    AxisInfoAnalysis axisInfo(module);

    // Elements per thread wanted for each accessed shape: the widest access
    // among its loads and stores (a narrower access then takes several
    // instructions, a wider one would need a layout change).
    std::map<SmallVector<int64_t>, int64_t> elementsPerThread;
    auto visitAccess = [&](Value ptr) {
      auto type = dyn_cast<RankedTensorType>(ptr.getType());
      if (!type)
        return;
      auto layout = dyn_cast_if_present<BlockedEncodingAttr>(type.getEncoding());
      if (!layout)
        return;
      unsigned fastest = layout.getOrder()[0];
      int64_t width = axisInfo.getPtrVectorWidth(ptr, fastest);
      // Do not give a thread more than its share of the block: the other
      // threads would then replicate work instead of splitting it.
      int64_t threads = int64_t(numWarps) * threadsPerWarp;
      int64_t share = std::max<int64_t>(1, type.getNumElements() / threads);
      width = std::min({width, share, type.getDimSize(fastest)});
      SmallVector<int64_t> shape(type.getShape());
      auto [it, inserted] = elementsPerThread.try_emplace(shape, width);
      if (!inserted)
        it->second = std::max(it->second, width);
    };
    module.walk([&](Operation *op) {
      if (auto load = dyn_cast<LoadOp>(op))
        visitAccess(load.getPtr());
      else if (auto store = dyn_cast<StoreOp>(op))
        visitAccess(store.getPtr());
    });

    setBlockEncodings(module, [&](RankedTensorType type) -> Attribute {
      auto it = elementsPerThread.find(SmallVector<int64_t>(type.getShape()));
      auto layout = dyn_cast_if_present<BlockedEncodingAttr>(type.getEncoding());
      if (it == elementsPerThread.end() || !layout)
        return {};
      return getDefaultBlockedEncoding(&getContext(), type.getShape(),
                                       layout.getOrder(), it->second, numWarps,
                                       threadsPerWarp);
    });
  }
};

} // namespace
