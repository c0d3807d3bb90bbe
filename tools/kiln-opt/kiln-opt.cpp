//===- kiln-opt.cpp - Kiln's mlir-opt driver -------------------------------===//
//
// Reads and writes any stage of a Kiln kernel as textual MLIR and runs Kiln's
// passes and registered pipelines on it, the very ones the JIT runs.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace mlir::kiln::test {
// Passes that only test the compiler (test/lib), registered here alone.
void registerTestAxisInfoPass();
} // namespace mlir::kiln::test

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::kiln::registerAllDialects(registry);
  mlir::kiln::registerAllPasses();
  mlir::kiln::test::registerTestAxisInfoPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
