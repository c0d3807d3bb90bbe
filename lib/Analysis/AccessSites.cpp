//===- AccessSites.cpp - The kernel parameter behind each access -----------===//
//
// Walks each access's address up its use-def chain to the kernel parameters
// it may come from. Pure ops pass every pointer operand on (addptr, splat,
// broadcast, reshape, layout conversions, select), loops and ifs pass on the
// values that reach the carried or yielded one; the access has a parameter
// only when every path ends at the same one.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/AccessSites.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Values a trace may visit before it gives up: use-def chains of real
/// kernels are a few dozen values long.
constexpr size_t kTraceLimit = 4096;

bool isPointerLike(Type type) {
  return isa<PointerType>(getElementTypeOrSelf(type));
}

} // namespace

std::string mlir::kiln::describeLocation(Location loc) {
  std::string text = "<unknown>";
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      text = (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
              ":" + std::to_string(file.getColumn()));
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return text;
}

int64_t mlir::kiln::traceKernelParameter(Value ptr) {
  SmallVector<Value> work{ptr};
  llvm::DenseSet<Value> seen;
  int64_t found = -1;
  while (!work.empty()) {
    Value value = work.pop_back_val();
    // A value met again (a loop's carried value) adds no new source.
    if (!seen.insert(value).second)
      continue;
    if (seen.size() > kTraceLimit)
      return -1;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (auto function = dyn_cast<FunctionOpInterface>(owner)) {
        // A helper function's parameter is not the launch's.
        if (!function->hasAttr("kiln.kernel") || !arg.getOwner()->isEntryBlock())
          return -1;
        if (found >= 0 && found != int64_t(arg.getArgNumber()))
          return -1;
        found = arg.getArgNumber();
        continue;
      }
      auto loop = dyn_cast<scf::ForOp>(owner);
      if (!loop || arg == loop.getInductionVar())
        return -1;
      unsigned index = arg.getArgNumber() - loop.getNumInductionVars();
      work.push_back(loop.getInitArgs()[index]);
      work.push_back(loop.getYieldedValues()[index]);
      continue;
    }
    Operation *op = value.getDefiningOp();
    unsigned result = cast<OpResult>(value).getResultNumber();
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      work.push_back(loop.getInitArgs()[result]);
      work.push_back(loop.getYieldedValues()[result]);
      continue;
    }
    if (auto branch = dyn_cast<scf::IfOp>(op)) {
      work.push_back(branch.thenYield().getOperand(result));
      if (branch.elseBlock())
        work.push_back(branch.elseYield().getOperand(result));
      continue;
    }
    if (!isMemoryEffectFree(op))
      return -1;
    bool any = false;
    for (Value operand : op->getOperands()) {
      if (isPointerLike(operand.getType())) {
        work.push_back(operand);
        any = true;
      }
    }
    if (!any) // made from integers
      return -1;
  }
  return found;
}

SmallVector<AccessSite> mlir::kiln::collectAccessSites(ModuleOp module) {
  SmallVector<AccessSite> sites;
  module.walk([&](Operation *op) {
    Value ptr;
    if (auto load = dyn_cast<LoadOp>(op))
      ptr = load.getPtr();
    else if (auto store = dyn_cast<StoreOp>(op))
      ptr = store.getPtr();
    else if (auto rmw = dyn_cast<AtomicRMWOp>(op))
      ptr = rmw.getPtr();
    else if (auto cas = dyn_cast<AtomicCASOp>(op))
      ptr = cas.getPtr();
    else
      return;
    int64_t parameter = traceKernelParameter(ptr);
    if (parameter < 0)
      return;
    // A pointer to pointers holds 64-bit addresses.
    Type pointee = getPointeeType(ptr.getType());
    unsigned bits = pointee.isIntOrFloat() ? pointee.getIntOrFloatBitWidth() : 64;
    sites.push_back({op, unsigned(parameter), !isa<LoadOp>(op),
                     std::max(1u, bits / 8), describeLocation(op->getLoc())});
  });
  return sites;
}
