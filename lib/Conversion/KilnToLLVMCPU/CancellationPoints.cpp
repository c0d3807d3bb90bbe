//===- CancellationPoints.cpp - Interruptible kernel loops -----------------===//
//
// A launch can only be interrupted between programs unless the programs
// themselves look: a kernel spinning in `while x < 1:` on a value it never
// changes would otherwise run until the process is killed. So each
// iteration of a loop that may run long loads the launcher's flag and
// returns from the function when it is set; a program stopped this way
// leaves its outputs partly written, which is fine for a launch that ends
// in KeyboardInterrupt.
//
// Loops with a constant trip count of at most kUncheckedTripCount (the
// chunk loops of strip-mined kernels, small unrolled loops) are bounded and
// left alone, so the common kernels pay nothing. The load is volatile: LLVM
// keeps it in the loop, while alias analysis still lets other loads move
// across it (an atomic load would order them). Elsewhere the cost is one
// load, compare and branch per iteration.
//
// The loads are placed while loops are still scf ops, which says which
// loops are the kernel's; the branches are added once scf became branches,
// where a block can end in a return.
//
//===----------------------------------------------------------------------===//

#include "CancellationPoints.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

constexpr int64_t kUncheckedTripCount = 1024;

bool isShortConstantLoop(scf::ForOp loop) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lower || !upper || !step || *step <= 0)
    return false;
  return *upper <= *lower || (*upper - *lower) / *step < kUncheckedTripCount;
}

/// Whether `op` is a load that insertCancellationLoads placed.
bool isCancellationLoad(Operation *op) {
  auto load = dyn_cast<LLVM::LoadOp>(op);
  if (!load || !load.getVolatile_())
    return false;
  auto address = load.getAddr().getDefiningOp<LLVM::AddressOfOp>();
  return address && address.getGlobalName() == kCancelFlagSymbol;
}

/// Emits the function's early return at the end of its body, returning zeros
/// for its results; null if a result type has no zero constant.
Block *createCancelledReturn(OpBuilder &builder, func::FuncOp function) {
  SmallVector<TypedAttr> zeros;
  for (Type type : function.getResultTypes()) {
    auto zero = dyn_cast_or_null<TypedAttr>(builder.getZeroAttr(type));
    if (!zero)
      return nullptr;
    zeros.push_back(zero);
  }
  Location loc = function.getLoc();
  Block *exit = builder.createBlock(&function.getBody(), function.getBody().end());
  SmallVector<Value> results;
  for (TypedAttr zero : zeros)
    results.push_back(arith::ConstantOp::create(builder, loc, zero));
  func::ReturnOp::create(builder, loc, results);
  return exit;
}

} // namespace

void mlir::kiln::insertCancellationLoads(ModuleOp module) {
  MLIRContext *context = module.getContext();
  OpBuilder builder(context);
  Type i32 = builder.getI32Type();
  auto ptrType = LLVM::LLVMPointerType::get(context);
  bool declared = false;
  module.walk([&](Operation *op) {
    Block *body = nullptr;
    if (auto loop = dyn_cast<scf::WhileOp>(op))
      body = loop.getAfterBody();
    else if (auto loop = dyn_cast<scf::ForOp>(op); loop && !isShortConstantLoop(loop))
      body = loop.getBody();
    if (!body)
      return;
    if (!declared) {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(module.getBody());
      LLVM::GlobalOp::create(builder, module.getLoc(), i32, /*isConstant=*/false,
                             LLVM::Linkage::External, kCancelFlagSymbol, Attribute());
      declared = true;
    }
    builder.setInsertionPointToStart(body);
    Location loc = op->getLoc();
    Value address = LLVM::AddressOfOp::create(builder, loc, ptrType, kCancelFlagSymbol);
    LLVM::LoadOp::create(builder, loc, i32, address, /*alignment=*/4, /*isVolatile=*/true);
  });
}

void mlir::kiln::branchOnCancellation(ModuleOp module) {
  OpBuilder builder(module.getContext());
  for (auto function : module.getOps<func::FuncOp>()) {
    SmallVector<Operation *> loads;
    function.walk([&](Operation *op) {
      if (isCancellationLoad(op))
        loads.push_back(op);
    });
    if (loads.empty())
      continue;
    Block *exit = createCancelledReturn(builder, function);
    for (Operation *load : loads) {
      if (!exit) { // nothing to return: the loop stays uninterruptible
        Operation *address = load->getOperand(0).getDefiningOp();
        load->erase();
        if (address->use_empty())
          address->erase();
        continue;
      }
      Block *block = load->getBlock();
      Block *rest = block->splitBlock(load->getNextNode());
      builder.setInsertionPointToEnd(block);
      Location loc = load->getLoc();
      Value zero = LLVM::ConstantOp::create(builder, loc, builder.getI32Type(),
                                            builder.getI32IntegerAttr(0));
      Value cancelled = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::ne,
                                             load->getResult(0), zero);
      cf::CondBranchOp::create(builder, loc, cancelled, exit, ValueRange{}, rest,
                               ValueRange{});
    }
  }
}
