//===- EraseNeedlessBarriers.cpp - Drop CTA barriers that order nothing ----===//
//
// Implements kiln-nvvm-erase-needless-barriers, which runs on the LLVM +
// NVVM module that convert-kiln-gpu-to-nvvm leaves. The lowerings place a
// barrier wherever their own shared-memory accesses need one, each on its
// own; this pass removes those that the code around them makes needless,
// and the `kiln.shared_only` marks the lowerings left on barriers.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNNVVMERASENEEDLESSBARRIERS
#include "kiln/Conversion/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

/// Whether `op`, met before any shared-memory access of its function, may
/// itself access shared memory. Conservative: what is not known to touch
/// only registers or global memory counts as a shared access.
static bool mayAccessShared(Operation *op) {
  // Shuffles and special registers exchange and read registers only, but
  // NVVM does not declare them free of memory effects.
  if (isMemoryEffectFree(op) || isa<NVVM::Barrier0Op, NVVM::ShflOp>(op) ||
      op->getName().getStringRef().starts_with("nvvm.read.ptx.sreg."))
    return false;
  auto inGlobal = [](Value address) {
    auto pointer = dyn_cast<LLVM::LLVMPointerType>(address.getType());
    return pointer && pointer.getAddressSpace() == 1;
  };
  if (auto load = dyn_cast<LLVM::LoadOp>(op))
    return !inGlobal(load.getAddr());
  if (auto store = dyn_cast<LLVM::StoreOp>(op))
    return !inGlobal(store.getAddr());
  // The instructions that read or write shared memory or order it
  // (ldmatrix, mma, wgmma fences and groups, cp.async groups, proxy
  // fences) are NVVM ops with memory effects: shared accesses below.
  // Inline PTX counts unless it names only the global state space (the
  // predicated global loads, stores and atomics).
  if (auto inlineAsm = dyn_cast<LLVM::InlineAsmOp>(op)) {
    StringRef text = inlineAsm.getAsmString();
    return !text.contains(".global") || text.contains("shared") || text.contains("bar.");
  }
  return true;
}

/// Removes CTA barriers that order nothing:
/// - one that follows another in the same block with no memory access or
///   side effect between them: the second orders nothing the first did
///   not. Several lowerings each need one (the layer-norm tutorial's lock
///   release is a `debug_barrier` right before a scalar atomic's own), and
///   inside a critical section every extra one is paid by every program
///   waiting for the lock;
/// - one that orders shared memory only (a reduction's, before it writes
///   the scratch) with no shared access before it in the function's entry
///   block: there is no earlier access to order. A row softmax's first
///   reduction is such a case, and each of its programs is short enough
///   for one barrier to show.
static void eraseNeedlessBarriers(ModuleOp module) {
  llvm::SetVector<Operation *> needless;
  module.walk([&](Block *block) {
    bool afterBarrier = false;
    for (Operation &op : *block) {
      if (isa<NVVM::Barrier0Op>(op)) {
        if (afterBarrier)
          needless.insert(&op);
        afterBarrier = true;
      } else if (!isMemoryEffectFree(&op)) {
        afterBarrier = false;
      }
    }
  });
  module.walk([&](LLVM::LLVMFuncOp function) {
    if (function.isExternal())
      return;
    for (Operation &op : function.getBody().front()) {
      if (isa<NVVM::Barrier0Op>(op) && op.hasAttr(kSharedOnlyBarrierAttr))
        needless.insert(&op);
      else if (mayAccessShared(&op))
        break;
    }
  });
  for (Operation *op : needless)
    op->erase();
  module.walk([](NVVM::Barrier0Op barrier) {
    barrier->removeAttr(kSharedOnlyBarrierAttr);
  });
}

namespace {

struct KilnNVVMEraseNeedlessBarriers
    : public kiln::impl::KilnNVVMEraseNeedlessBarriersBase<KilnNVVMEraseNeedlessBarriers> {
  using Base::Base;

  void runOnOperation() override { eraseNeedlessBarriers(getOperation()); }
};

} // namespace
