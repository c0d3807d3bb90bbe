//===- kiln-opt.cpp - Kiln's mlir-opt driver -------------------------------===//
//
// Reads and writes any stage of a Kiln kernel as textual MLIR and runs Kiln's
// passes and registered pipelines on it, the very ones the JIT runs.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::kiln::registerAllDialects(registry);
  mlir::kiln::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
