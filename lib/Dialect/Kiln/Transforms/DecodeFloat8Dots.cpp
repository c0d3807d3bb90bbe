//===- DecodeFloat8Dots.cpp - fp8 dots as f16 dots -------------------------===//
//
// Implements kiln-decode-fp8-dots: for targets without 8-bit float tensor
// cores, every dot of 8-bit floats becomes a dot of its operands decoded to
// f16 (decodeFloat8Operands). The GPU pipeline decodes instead, dot by
// dot, the fp8 dots it does not give to wgmma (kiln-gpu-accelerate-matmul).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNDECODEFLOAT8DOTS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

struct KilnDecodeFloat8Dots
    : public kiln::impl::KilnDecodeFloat8DotsBase<KilnDecodeFloat8Dots> {
  void runOnOperation() override {
    getOperation().walk([](DotOp dot) { decodeFloat8Operands(dot); });
  }
};

} // namespace
