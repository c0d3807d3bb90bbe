//===- WrittenArguments.cpp - Kernel arguments a kernel may write ---------===//
//
// Implements the written-arguments analysis as a forward data flow over the
// whole module: each pointer value gets the set of kernel arguments it may
// derive from (or "any"), propagated through the ops that make pointers from
// pointers, through scf loops and ifs, branches and calls of private
// functions, until nothing changes. Sets only grow, so it terminates. The
// pointers of stores and atomics then name the written arguments.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/WrittenArguments.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The kernel arguments a pointer value may derive from.
struct Origins {
  bool any = false;
  llvm::BitVector arguments;

  /// Adds `other`; true when that changed anything.
  bool merge(const Origins &other) {
    bool changed = other.any && !any;
    any |= other.any;
    if (arguments.size() < other.arguments.size())
      arguments.resize(other.arguments.size());
    for (unsigned index : other.arguments.set_bits()) {
      changed |= !arguments.test(index);
      arguments.set(index);
    }
    return changed;
  }
};

bool isPointer(Type type) { return isa<PointerType>(getElementTypeOrSelf(type)); }

class PointerOrigins {
public:
  PointerOrigins(ModuleOp module, FunctionOpInterface kernel) : module(module) {
    for (BlockArgument argument : kernel.getArguments()) {
      Origins &origins = table[argument];
      origins.arguments.resize(kernel.getNumArguments());
      origins.arguments.set(argument.getArgNumber());
    }
    bool changed;
    do {
      changed = false;
      module.walk([&](Operation *op) { changed |= step(op); });
    } while (changed);
  }

  const Origins &of(Value value) { return table[value]; }

private:
  bool flow(Value from, Value to) {
    if (!isPointer(to.getType()))
      return false;
    Origins origins = table[from]; // a copy: `table[to]` may rehash
    return table[to].merge(origins);
  }

  bool makeAny(Value to) {
    if (!isPointer(to.getType()))
      return false;
    return table[to].merge(Origins{true, {}});
  }

  bool flowAll(ValueRange from, ValueRange to) {
    bool changed = false;
    for (auto [source, target] : llvm::zip(from, to))
      changed |= flow(source, target);
    return changed;
  }

  /// Applies the rule of `op` once; true when any value's origins grew.
  bool step(Operation *op) {
    bool changed = false;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
      changed |= flowAll(loop.getInitArgs(), loop.getRegionIterArgs());
      changed |= flowAll(yield.getOperands(), loop.getRegionIterArgs());
      changed |= flowAll(yield.getOperands(), loop.getResults());
      // A loop that runs no iteration gives its initial values.
      changed |= flowAll(loop.getInitArgs(), loop.getResults());
      return changed;
    }
    if (auto loop = dyn_cast<scf::WhileOp>(op)) {
      changed |= flowAll(loop.getInits(), loop.getBeforeArguments());
      changed |= flowAll(loop.getYieldOp().getOperands(), loop.getBeforeArguments());
      changed |= flowAll(loop.getConditionOp().getArgs(), loop.getAfterArguments());
      changed |= flowAll(loop.getConditionOp().getArgs(), loop.getResults());
      return changed;
    }
    if (auto branch = dyn_cast<scf::IfOp>(op)) {
      for (Region *region : {&branch.getThenRegion(), &branch.getElseRegion()})
        if (!region->empty())
          changed |= flowAll(region->front().getTerminator()->getOperands(), branch.getResults());
      return changed;
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(module, call.getCalleeAttr());
      if (!callee || callee.isExternal()) {
        for (Value result : call.getResults())
          changed |= makeAny(result);
        return changed;
      }
      changed |= flowAll(call.getOperands(), callee.getArguments());
      callee.walk([&](func::ReturnOp ret) { changed |= flowAll(ret.getOperands(), call.getResults()); });
      return changed;
    }
    if (auto branch = dyn_cast<BranchOpInterface>(op)) {
      for (unsigned i = 0; i < op->getNumSuccessors(); ++i) {
        SuccessorOperands operands = branch.getSuccessorOperands(i);
        Block *successor = op->getSuccessor(i);
        changed |= flowAll(operands.getForwardedOperands(),
                           successor->getArguments().drop_front(operands.getProducedOperandCount()));
      }
      return changed;
    }
    if (isa<FunctionOpInterface>(op))
      return false; // arguments: the kernel's are seeded, a helper's come from its calls
    // Regions the rules above do not know (combiners of reductions and
    // scans) may carry pointers from anywhere.
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument argument : block.getArguments())
          changed |= makeAny(argument);
    if (op->getNumResults() == 0)
      return changed;
    // A pointer read from memory (a load, the old value of an atomic) can
    // point anywhere; other ops make pointers from their pointer operands
    // (addptr, splat, broadcast, select, reshape, join, ...).
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    bool reads = effects && effects.hasEffect<MemoryEffects::Read>();
    bool hasPointerOperand = llvm::any_of(op->getOperandTypes(), isPointer);
    for (Value result : op->getResults()) {
      if (reads || !hasPointerOperand) {
        changed |= makeAny(result);
        continue;
      }
      for (Value operand : op->getOperands())
        if (isPointer(operand.getType()))
          changed |= flow(operand, result);
    }
    return changed;
  }

  ModuleOp module;
  llvm::DenseMap<Value, Origins> table;
};

} // namespace

SmallVector<unsigned> mlir::kiln::writtenKernelArguments(ModuleOp module, Operation *kernelOp) {
  auto kernel = cast<FunctionOpInterface>(kernelOp);
  PointerOrigins origins(module, kernel);
  Origins written;
  module.walk([&](Operation *op) {
    if (auto store = dyn_cast<StoreOp>(op)) {
      written.merge(origins.of(store.getPtr()));
    } else if (auto atomic = dyn_cast<AtomicRMWOp>(op)) {
      written.merge(origins.of(atomic.getPtr()));
    } else if (auto atomic = dyn_cast<AtomicCASOp>(op)) {
      written.merge(origins.of(atomic.getPtr()));
    } else if (isa<LoadOp, PrintOp, AssertOp, AssumeOp>(op)) {
      // They write no memory through their pointer operands (the effects
      // of print, assert and assume only order them).
    } else if (auto effects = dyn_cast<MemoryEffectOpInterface>(op);
               effects && effects.hasEffect<MemoryEffects::Write>()) {
      // An op added later that writes: every pointer it takes, to be safe.
      for (Value operand : op->getOperands())
        if (isPointer(operand.getType()))
          written.merge(origins.of(operand));
    }
  });
  SmallVector<unsigned> indices;
  for (BlockArgument argument : kernel.getArguments()) {
    unsigned index = argument.getArgNumber();
    if (isPointer(argument.getType()) &&
        (written.any || (index < written.arguments.size() && written.arguments.test(index))))
      indices.push_back(index);
  }
  return indices;
}
