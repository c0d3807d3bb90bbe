//===- DropUnreadTensorMaps.cpp - Maps no TMA copy reads, dropped ----------===//
//
// Implements kiln-gpu-drop-unread-tensor-maps (see Passes.td): the tensor-map
// parameters that kiln-hoist-tensor-maps made for descriptors made in the
// kernel, where no TMA copy came to read them, go again, so that the
// launcher has no map to compute and the kernel keeps the native launch.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::kiln::gpu {
#define GEN_PASS_DEF_KILNGPUDROPUNREADTENSORMAPS
#include "kiln/Dialect/KilnGPU/Transforms/Passes.h.inc"
} // namespace mlir::kiln::gpu

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Whether kernel argument `arg`, a tensor map, is only named by loads that
/// read through their pointers (none of its uses is a TMA copy, a loop's
/// carried value or any other op).
bool onlyLoadsName(BlockArgument arg) {
  for (OpOperand &use : arg.getUses()) {
    auto load = dyn_cast<LoadOp>(use.getOwner());
    if (!load || load.getTensorMap() != arg)
      return false;
  }
  return true;
}

/// Whether `region` reads what the TMA unit copies: it holds a TMA copy, or
/// waits for those of a producer warpgroup (kiln-gpu-warp-specialize moved
/// them there).
bool copiesByTma(Region &region) {
  return region
      .walk([](Operation *op) {
        auto wait = dyn_cast<gpu::WaitTmaBarrierOp>(op);
        return isa<gpu::AsyncTmaCopyOp>(op) || (wait && !wait.getThreadCopies()) ? WalkResult::interrupt()
                                                                                 : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The blocks that loops of `region` still load themselves, in the loop
/// body: what kiln-gpu-pipeline-loads copied asynchronously is a copy now.
unsigned countLoopLoads(Region &region) {
  unsigned count = 0;
  region.walk([&](LoadOp load) {
    auto loop = load->getParentOfType<scf::ForOp>();
    if (isa<RankedTensorType>(load.getType()) && loop && region.isAncestor(loop->getParentRegion()))
      ++count;
  });
  return count;
}

/// Replaces each loop that kiln-tensor-map-pointer-loads versioned by the
/// loop as it was, where the version that names tensor maps came to have
/// no TMA copy (the two would be the same code twice), or loads in its
/// loop a block that the loop as it was copies asynchronously: the TMA
/// unit's copies are not worth a load that waits in every trip (a block
/// the pipeliner could not copy by TMA with the others, such as a B read
/// both as loaded and transposed).
void keepOnlyCopiedVersions(ModuleOp module) {
  SmallVector<scf::IfOp> uncopied;
  module.walk([&](scf::IfOp branch) {
    if (branch->hasAttr(kTensorMapVersionAttr) &&
        (!copiesByTma(branch.getThenRegion()) ||
         countLoopLoads(branch.getThenRegion()) > countLoopLoads(branch.getElseRegion())))
      uncopied.push_back(branch);
  });
  for (scf::IfOp branch : uncopied) {
    Block &original = branch.getElseRegion().front();
    auto yield = cast<scf::YieldOp>(original.getTerminator());
    branch->replaceAllUsesWith(yield.getOperands());
    yield.erase();
    branch->getBlock()->getOperations().splice(branch->getIterator(), original.getOperations());
    branch.erase();
  }
}

struct KilnGPUDropUnreadTensorMaps
    : public kiln::gpu::impl::KilnGPUDropUnreadTensorMapsBase<KilnGPUDropUnreadTensorMaps> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    keepOnlyCopiedVersions(module);
    auto recipes = module->getAttrOfType<ArrayAttr>(kDerivedTensorMapsAttr);
    if (!recipes)
      return;
    FunctionOpInterface kernel;
    module.walk([&](FunctionOpInterface function) {
      if (function->hasAttr("kiln.kernel"))
        kernel = function;
    });
    if (!kernel)
      return;
    // The recipes are in parameter order, after the kernel's own.
    llvm::BitVector dropped(kernel.getNumArguments());
    SmallVector<Attribute> kept;
    unsigned removedBefore = 0;
    for (Attribute entry : recipes) {
      auto recipe = cast<DictionaryAttr>(entry);
      auto index = recipe.getAs<IntegerAttr>("arg");
      if (!index || index.getInt() < 0 || index.getInt() >= kernel.getNumArguments()) {
        module.emitError("kiln.derived_tensor_maps names no parameter of the kernel");
        return signalPassFailure();
      }
      BlockArgument arg = kernel.getArgument(index.getInt());
      // (A map whose only version went is read by nothing, box or not.)
      if ((arg.use_empty() || !kernel.getArgAttr(arg.getArgNumber(), gpu::kTensorMapBoxAttr)) &&
          onlyLoadsName(arg)) {
        for (OpOperand &use : llvm::make_early_inc_range(arg.getUses()))
          cast<LoadOp>(use.getOwner()).dropTensorMap();
        dropped.set(arg.getArgNumber());
        ++removedBefore;
        continue;
      }
      // Parameters dropped before this one shift it down.
      SmallVector<NamedAttribute> fields(recipe.getValue());
      for (NamedAttribute &field : fields)
        if (field.getName() == "arg")
          field.setValue(IntegerAttr::get(index.getType(), index.getInt() - removedBefore));
      kept.push_back(DictionaryAttr::get(module.getContext(), fields));
    }
    if (dropped.none())
      return;
    if (failed(kernel.eraseArguments(dropped))) {
      kernel.emitError("cannot remove the unread tensor-map parameters");
      return signalPassFailure();
    }
    if (kept.empty())
      module->removeAttr(kDerivedTensorMapsAttr);
    else
      module->setAttr(kDerivedTensorMapsAttr, ArrayAttr::get(module.getContext(), kept));
  }
};

} // namespace
