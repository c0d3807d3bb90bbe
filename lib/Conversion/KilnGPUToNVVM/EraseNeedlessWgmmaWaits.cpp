//===- EraseNeedlessWgmmaWaits.cpp - Drop waits for complete wgmma groups -===//
//
// Implements kiln-nvvm-erase-needless-wgmma-waits (see Passes.td). Each
// lowering waits for the wgmma groups that it needs complete, on its own;
// where an earlier wait already left no more groups in flight, ptxas still
// issues the later one (a WARPGROUP.DEPBAR each).
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <optional>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNNVVMERASENEEDLESSWGMMAWAITS
#include "kiln/Conversion/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

/// The pending-group count of `op` if it is a wgmma wait: NVVM's, or the
/// inline PTX that returns accumulators (marked `kWgmmaWaitAttr`).
static std::optional<int64_t> getWaitPending(Operation *op) {
  if (auto wait = dyn_cast<NVVM::WgmmaWaitGroupSyncOp>(op))
    return wait.getGroup();
  if (auto mark = op->getAttrOfType<IntegerAttr>(kWgmmaWaitAttr))
    return mark.getInt();
  return std::nullopt;
}

/// Whether `op` may commit or wait for wgmma groups in a way the walk does
/// not follow: a call but to libdevice's math (`__nv_*`), an op with
/// regions, or inline PTX of the kernel's own (`inline_asm_elementwise`)
/// that names them.
static bool mayChangeGroups(Operation *op) {
  if (auto call = dyn_cast<LLVM::CallOp>(op)) {
    std::optional<StringRef> callee = call.getCallee();
    return !callee || !callee->starts_with("__nv_");
  }
  if (op->getNumRegions() != 0)
    return true;
  auto inlineAsm = dyn_cast<LLVM::InlineAsmOp>(op);
  if (!inlineAsm)
    return false;
  StringRef text = inlineAsm.getAsmString();
  return text.contains("wgmma.commit_group") || text.contains("wgmma.wait_group");
}

/// How many committed wgmma groups may be in flight at a point: at most
/// the count, or unknown (nullopt).
using InFlight = std::optional<int64_t>;

/// Counts above this become unknown, so that a loop that commits more
/// groups than it waits for still reaches a fixed point.
static constexpr int64_t kMaxCountedGroups = 8;

/// What may be in flight where control flow meets: the most of both.
static InFlight join(InFlight a, InFlight b) {
  if (!a || !b)
    return std::nullopt;
  return std::max(*a, *b);
}

/// What may be in flight after `block`, entered with `inFlight`: a commit
/// adds one group, a wait for `n` pending leaves at most `n`. Each wait
/// that allows at least as many groups as may be in flight is needless and
/// goes to `needless` (when given).
static InFlight walkBlock(Block &block, InFlight inFlight,
                          SmallVectorImpl<Operation *> *needless) {
  for (Operation &op : block) {
    if (isa<NVVM::WgmmaGroupSyncAlignedOp>(op)) {
      if (inFlight)
        inFlight = *inFlight < kMaxCountedGroups ? InFlight(*inFlight + 1) : std::nullopt;
    } else if (InFlight pending = getWaitPending(&op)) {
      if (inFlight && *inFlight <= *pending) {
        if (needless)
          needless->push_back(&op);
      } else {
        inFlight = *pending;
      }
    } else if (mayChangeGroups(&op)) {
      inFlight = std::nullopt;
    }
  }
  return inFlight;
}

/// The needless wgmma waits of `function`: a forward dataflow over its
/// blocks of how many groups may be in flight, none at a kernel's entry
/// (unknown at another function's), the most of all predecessors where
/// blocks meet.
static void findNeedlessWaits(LLVM::LLVMFuncOp function,
                              SmallVectorImpl<Operation *> &needless) {
  Region &body = function.getBody();
  llvm::DenseMap<Block *, InFlight> atEntry;
  bool isKernel = function->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName());
  atEntry[&body.front()] = isKernel ? InFlight(0) : std::nullopt;
  SmallVector<Block *> worklist = {&body.front()};
  while (!worklist.empty()) {
    Block *block = worklist.pop_back_val();
    InFlight atExit = walkBlock(*block, atEntry.lookup(block), /*needless=*/nullptr);
    for (Block *successor : block->getSuccessors()) {
      auto [entry, first] = atEntry.try_emplace(successor, atExit);
      InFlight joined = first ? atExit : join(entry->second, atExit);
      if (first || joined != entry->second) {
        entry->second = joined;
        worklist.push_back(successor);
      }
    }
  }
  // Blocks that no path from the entry reaches keep unknown.
  for (Block &block : body)
    walkBlock(block, atEntry.lookup(&block), &needless);
}

/// Erases the needless wgmma waits: NVVM's goes; the inline PTX that
/// returns accumulators keeps its operands, results and side effects with
/// no text, so that nothing reads the accumulators before the earlier
/// wait. Then removes the `kWgmmaWaitAttr` marks.
static void eraseNeedlessWgmmaWaits(ModuleOp module) {
  SmallVector<Operation *> needless;
  module.walk([&](LLVM::LLVMFuncOp function) {
    if (!function.isExternal())
      findNeedlessWaits(function, needless);
  });
  for (Operation *op : needless) {
    if (auto inlineAsm = dyn_cast<LLVM::InlineAsmOp>(op))
      inlineAsm.setAsmString("");
    else
      op->erase();
  }
  module.walk([](LLVM::InlineAsmOp op) { op->removeAttr(kWgmmaWaitAttr); });
}

namespace {

struct KilnNVVMEraseNeedlessWgmmaWaits
    : public kiln::impl::KilnNVVMEraseNeedlessWgmmaWaitsBase<KilnNVVMEraseNeedlessWgmmaWaits> {
  using Base::Base;

  void runOnOperation() override { eraseNeedlessWgmmaWaits(getOperation()); }
};

} // namespace
