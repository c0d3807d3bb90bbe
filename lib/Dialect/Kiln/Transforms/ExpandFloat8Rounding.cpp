//===- ExpandFloat8Rounding.cpp - f32 -> fp8 as integer ops ----------------===//
//
// Implements kiln-expand-float8-rounding: every kiln.f32_to_float8 becomes
// the integer ops of createF32ToFloat8, for targets without an instruction
// that rounds f32 to 8-bit floats (the CPU, NVIDIA chips before sm_90).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNEXPANDFLOAT8ROUNDING
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

struct KilnExpandFloat8Rounding
    : public kiln::impl::KilnExpandFloat8RoundingBase<KilnExpandFloat8Rounding> {
  void runOnOperation() override {
    getOperation().walk([](F32ToFloat8Op op) {
      OpBuilder builder(op);
      op.replaceAllUsesWith(
          createF32ToFloat8(builder, op.getLoc(), op.getSrc(), op.getFormat()));
      op.erase();
    });
  }
};

} // namespace
