//===- TestAxisInfo.cpp - Print what the axis-info analysis knows ---------===//
//
// test-kiln-axis-info: a remark at each integer or pointer value with its
// contiguity, divisibility and constancy per dimension, and its value where
// it is a known constant, so that lit tests can check the analysis. Values
// come in the order of the text: an op's results, then the arguments of the
// blocks of its regions (a function's arguments, a loop's induction
// variable and carried values), then the ops inside.
//
// Before:
//   %r = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
// Remark:
//   contiguity = [128], divisibility = [1073741824], constancy = [1]
//
// Only kiln-opt links it: it is a test of the analysis, not a step of any
// pipeline.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/AxisInfo.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The values the analysis describes: integers and pointers, as scalars or
/// blocks.
bool isDescribed(Type type) {
  Type element = getElementTypeOrSelf(type);
  return isa<IntegerType, IndexType, PointerType>(element);
}

void printList(llvm::raw_ostream &os, ArrayRef<int64_t> values) {
  os << "[";
  llvm::interleaveComma(values, os);
  os << "]";
}

void remark(Value value, const AxisInfo &info) {
  InFlightDiagnostic diagnostic = emitRemark(value.getLoc());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "contiguity = ";
  printList(os, info.contiguity);
  os << ", divisibility = ";
  printList(os, info.divisibility);
  os << ", constancy = ";
  printList(os, info.constancy);
  if (info.constantValue)
    os << ", constant = " << *info.constantValue;
  diagnostic << text;
}

struct TestAxisInfoPass
    : public PassWrapper<TestAxisInfoPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestAxisInfoPass)

  StringRef getArgument() const final { return "test-kiln-axis-info"; }
  StringRef getDescription() const final {
    return "Remark the axis info (contiguity, divisibility, constancy) of "
           "every integer and pointer value";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    AxisInfoAnalysis analysis(module);
    auto describe = [&](Value value) {
      if (isDescribed(value.getType()))
        remark(value, analysis.getAxisInfo(value));
    };
    module.walk<WalkOrder::PreOrder>([&](Operation *op) {
      for (Value result : op->getResults())
        describe(result);
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument argument : block.getArguments())
            describe(argument);
    });
  }
};

} // namespace

namespace mlir::kiln::test {
void registerTestAxisInfoPass() { PassRegistration<TestAxisInfoPass>(); }
} // namespace mlir::kiln::test
