//===- Coalesce.cpp - Layouts for coalesced, vectorized memory access ------===//
//
// Implements kiln-gpu-coalesce. For each block shape that global memory is
// accessed with, it asks the axis-info analysis how many consecutive,
// aligned elements one thread can move in a 16-byte access along each
// dimension, and gives every block of that shape a blocked layout with that
// many elements per thread along the widest one, threads and warps next to
// each other.
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

    // For each accessed shape, the dimension a thread's elements run along
    // and how many it holds: the widest access among its loads and stores
    // (a narrower access then takes several instructions, a wider one would
    // need a layout change), along whichever dimension its pointers are
    // contiguous in (a column-major operand runs down its columns).
    struct Run {
      unsigned dim;
      int64_t width;
    };
    std::map<SmallVector<int64_t>, Run> runs;
    auto visitAccess = [&](Value ptr) {
      auto type = dyn_cast<RankedTensorType>(ptr.getType());
      if (!type)
        return;
      auto layout = dyn_cast_if_present<BlockedEncodingAttr>(type.getEncoding());
      if (!layout)
        return;
      // Do not give a thread more than its share of the block: the other
      // threads would then replicate work instead of splitting it.
      int64_t threads = int64_t(numWarps) * threadsPerWarp;
      int64_t share = std::max<int64_t>(1, type.getNumElements() / threads);
      auto widthAlong = [&](unsigned dim) {
        return std::min({axisInfo.getPtrVectorWidth(ptr, dim), share, type.getDimSize(dim)});
      };
      // The layout's fastest dimension unless another is strictly wider.
      Run run{layout.getOrder()[0], widthAlong(layout.getOrder()[0])};
      for (unsigned dim : layout.getOrder().drop_front())
        if (int64_t width = widthAlong(dim); width > run.width)
          run = {dim, width};
      SmallVector<int64_t> shape(type.getShape());
      auto [it, inserted] = runs.try_emplace(shape, run);
      if (!inserted && run.width > it->second.width)
        it->second = run;
    };
    module.walk([&](Operation *op) {
      if (auto load = dyn_cast<LoadOp>(op))
        visitAccess(load.getPtr());
      else if (auto store = dyn_cast<StoreOp>(op))
        visitAccess(store.getPtr());
    });

    setBlockEncodings(module, [&](RankedTensorType type) -> Attribute {
      auto it = runs.find(SmallVector<int64_t>(type.getShape()));
      auto layout = dyn_cast_if_present<BlockedEncodingAttr>(type.getEncoding());
      if (it == runs.end() || !layout)
        return {};
      // The run's dimension first, the others in their former order.
      SmallVector<unsigned> order{it->second.dim};
      for (unsigned dim : layout.getOrder())
        if (dim != it->second.dim)
          order.push_back(dim);
      return getDefaultBlockedEncoding(&getContext(), type.getShape(), order,
                                       it->second.width, numWarps, threadsPerWarp);
    });
  }
};

} // namespace
