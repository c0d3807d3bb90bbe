//===- VectorUtils.cpp - LLVM vector helpers for Kiln's lowerings ----------===//
//
// Implements the vector builders shared by the GPU and CPU lowerings.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/LLVMCommon/VectorUtils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

Value mlir::kiln::createI32Constant(OpBuilder &builder, Location loc,
                                    int64_t value) {
  return LLVM::ConstantOp::create(builder, loc, builder.getI32Type(),
                                  builder.getI32IntegerAttr(value));
}

Value mlir::kiln::splatVector(OpBuilder &builder, Location loc, VectorType type,
                              Value scalar) {
  Value poison = LLVM::PoisonOp::create(builder, loc, type);
  Value first = LLVM::InsertElementOp::create(builder, loc, poison, scalar,
                                              createI32Constant(builder, loc, 0));
  SmallVector<int32_t> zeros(type.getNumElements(), 0);
  return LLVM::ShuffleVectorOp::create(builder, loc, first, poison, zeros);
}

SmallVector<Value> mlir::kiln::unpackElements(OpBuilder &builder, Location loc,
                                              Value value) {
  auto vector = dyn_cast<VectorType>(value.getType());
  if (!vector)
    return {value};
  SmallVector<Value> elements;
  for (int64_t i = 0; i < vector.getNumElements(); ++i)
    elements.push_back(LLVM::ExtractElementOp::create(
        builder, loc, value, createI32Constant(builder, loc, i)));
  return elements;
}

Value mlir::kiln::packElements(OpBuilder &builder, Location loc, Type type,
                               ArrayRef<Value> elements) {
  if (!isa<VectorType>(type))
    return elements.front();
  Value result = LLVM::PoisonOp::create(builder, loc, type);
  for (auto [i, element] : llvm::enumerate(elements))
    result = LLVM::InsertElementOp::create(builder, loc, result, element,
                                           createI32Constant(builder, loc, i));
  return result;
}
