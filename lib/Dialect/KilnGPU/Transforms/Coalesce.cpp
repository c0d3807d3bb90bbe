//===- Coalesce.cpp - Layouts for coalesced, vectorized memory access ------===//
//
// Implements kiln-gpu-coalesce. For each block shape that global memory is
// accessed with, it asks the axis-info analysis how many consecutive,
// aligned elements one thread can move in a 16-byte access along each
// dimension, and gives every block of that shape a blocked layout with that
// many elements per thread along the widest one, threads and warps next to
// each other.
// Consecutive threads then touch consecutive chunks: coalesced warps and
// vector instructions. Blocks of other shapes keep their layout. A load or
// store whose pointers run along another dimension than its shape's layout
// (a column-major output of a block loaded row-major; attention's K block,
// read transposed, of the same shape as Q) then gets a layout of its own:
// the pointers, mask and `other` are recomputed under it, and the value
// converted.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/AxisInfo.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"

#include "Rematerializer.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/MapVector.h"

#include <map>

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUCOALESCE
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

RankedTensorType withLayout(Type type, Attribute layout) {
  auto blockType = cast<RankedTensorType>(type);
  return RankedTensorType::get(blockType.getShape(), blockType.getElementType(), layout);
}

/// A pointer block that a loop carries for `load` alone, advancing it by an
/// offset each iteration (`p = p + step`), is carried in `layout` instead:
/// its initial value and offset are recomputed (or converted once) under
/// it. Otherwise the block would be converted every iteration.
bool carryPointersInLayout(Value ptr, LoadOp load, Attribute layout,
                           Rematerializer &rematerializer) {
  auto arg = dyn_cast<BlockArgument>(ptr);
  auto loop = arg ? dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()) : scf::ForOp();
  if (!loop || arg.getArgNumber() == 0)
    return false;
  unsigned index = arg.getArgNumber() - 1;
  Operation *yield = loop.getBody()->getTerminator();
  auto advance = yield->getOperand(index).getDefiningOp<AddPtrOp>();
  if (!advance || advance.getPtr() != arg || !advance->hasOneUse() ||
      !llvm::all_of(arg.getUsers(), [&](Operation *user) {
        return user == load.getOperation() || user == advance.getOperation();
      }))
    return false;
  FailureOr<Value> init = rematerializer.get(loop.getInitArgs()[index], layout);
  FailureOr<Value> step = rematerializer.get(advance.getOffset(), layout);
  if (failed(init) || failed(step))
    return false;
  Type oldType = arg.getType();
  loop.getInitArgsMutable()[index].set(*init);
  arg.setType(withLayout(oldType, layout));
  advance.getOffsetMutable().assign(*step);
  advance.getResult().setType(arg.getType());
  Value result = loop.getResult(index);
  result.setType(arg.getType());
  if (!result.use_empty()) {
    OpBuilder builder(loop->getContext());
    builder.setInsertionPointAfter(loop);
    auto back = ConvertLayoutOp::create(builder, loop.getLoc(), oldType, result);
    result.replaceAllUsesExcept(back, back);
  }
  return true;
}

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
    // Each access's own run, and its width along every dimension.
    struct AccessRun {
      Run run;
      SmallVector<int64_t> widths;
    };
    llvm::MapVector<Operation *, AccessRun> accessRuns;
    auto visitAccess = [&](Value ptr, Operation *access) {
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
      SmallVector<int64_t> widths;
      for (unsigned dim = 0; dim < type.getRank(); ++dim)
        widths.push_back(widthAlong(dim));
      accessRuns[access] = {run, widths};
    };
    module.walk([&](Operation *op) {
      if (auto load = dyn_cast<LoadOp>(op); load && load.getPtr())
        visitAccess(load.getPtr(), load);
      else if (auto store = dyn_cast<StoreOp>(op))
        visitAccess(store.getPtr(), store);
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

    // Accesses that their shape's layout would split into narrower ones
    // than their own run allows access from a layout of their own.
    Rematerializer rematerializer(/*convertWhenStuck=*/true);
    for (auto &[op, own] : accessRuns) {
      auto load = dyn_cast<LoadOp>(op);
      auto store = dyn_cast<StoreOp>(op);
      Value ptr = load ? load.getPtr() : store.getPtr();
      auto type = cast<RankedTensorType>(ptr.getType());
      auto layout = dyn_cast_if_present<BlockedEncodingAttr>(type.getEncoding());
      if (!layout)
        continue;
      unsigned fastest = layout.getOrder()[0];
      if (own.run.dim == fastest || own.run.width <= own.widths[fastest])
        continue;
      SmallVector<unsigned> order{own.run.dim};
      for (unsigned dim : layout.getOrder())
        if (dim != own.run.dim)
          order.push_back(dim);
      BlockedEncodingAttr ownLayout = getDefaultBlockedEncoding(
          &getContext(), type.getShape(), order, own.run.width, numWarps, threadsPerWarp);
      // The pointers, mask and `other` under the access's own layout.
      SmallVector<OpOperand *> blocks;
      for (OpOperand &operand : op->getOpOperands())
        if (isa<RankedTensorType>(operand.get().getType()) &&
            (!store || operand.get() != store.getValue()))
          blocks.push_back(&operand);
      if (load)
        carryPointersInLayout(load.getPtr(), load, ownLayout, rematerializer);
      SmallVector<Value> recomputed;
      for (OpOperand *operand : blocks) {
        FailureOr<Value> value = rematerializer.get(operand->get(), ownLayout);
        if (failed(value))
          break;
        recomputed.push_back(*value);
      }
      if (recomputed.size() != blocks.size())
        continue;
      for (auto [operand, value] : llvm::zip(blocks, recomputed))
        operand->set(value);
      OpBuilder builder(op);
      auto withOwnLayout = [&](Type t) { return withLayout(t, ownLayout); };
      if (store) {
        store.getValueMutable().assign(ConvertLayoutOp::create(
            builder, store.getLoc(), withOwnLayout(store.getValue().getType()),
            store.getValue()));
        continue;
      }
      // A load's block is converted to the shape's layout (which a dot
      // operand's copy into shared memory then drops).
      Type oldType = load.getType();
      load.getResult().setType(withOwnLayout(oldType));
      builder.setInsertionPointAfter(load);
      auto back = ConvertLayoutOp::create(builder, load.getLoc(), oldType, load.getResult());
      load.getResult().replaceAllUsesExcept(back, back);
    }
  }
};

} // namespace
