//===- StackSlot.cpp - Vectors spilled to the stack in CPU lowerings ------===//

#include "StackSlot.h"

#include "CountedLoop.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::kiln;

Type mlir::kiln::slotElementType(OpBuilder &builder, Type element) {
  return element.isInteger(1) ? builder.getI8Type() : element;
}

unsigned mlir::kiln::slotElementBytes(Type slotElement) {
  if (isa<LLVM::LLVMPointerType>(slotElement))
    return 8;
  return std::max(1u, slotElement.getIntOrFloatBitWidth() / 8);
}

Value mlir::kiln::toSlotForm(OpBuilder &builder, Location loc, Value vector) {
  auto type = cast<VectorType>(vector.getType());
  Type element = slotElementType(builder, type.getElementType());
  if (element == type.getElementType())
    return vector;
  return LLVM::ZExtOp::create(builder, loc, VectorType::get(type.getShape(), element), vector);
}

Value mlir::kiln::fromSlotForm(OpBuilder &builder, Location loc, Value loaded, Type element) {
  auto type = cast<VectorType>(loaded.getType());
  if (type.getElementType() == element)
    return loaded;
  return LLVM::TruncOp::create(builder, loc, VectorType::get(type.getShape(), element), loaded);
}

Value mlir::kiln::allocateStackSlot(OpBuilder &builder, Location loc, Type slotElement,
                                    int64_t count, unsigned alignment) {
  auto ptrType = LLVM::LLVMPointerType::get(builder.getContext());
  return LLVM::AllocaOp::create(builder, loc, ptrType, slotElement,
                                createI64Constant(builder, loc, count), alignment);
}

Value mlir::kiln::storeInStackSlot(OpBuilder &builder, Location loc, Value vector,
                                   std::optional<unsigned> alignment) {
  auto type = cast<VectorType>(vector.getType());
  Type element = slotElementType(builder, type.getElementType());
  unsigned bytes = alignment.value_or(slotElementBytes(element));
  Value slot = allocateStackSlot(builder, loc, element, type.getNumElements(), bytes);
  LLVM::StoreOp::create(builder, loc, toSlotForm(builder, loc, vector), slot, bytes);
  return slot;
}

Value mlir::kiln::laneAddress(OpBuilder &builder, Location loc, Type slotElement, Value slot,
                              Value lane) {
  auto ptrType = LLVM::LLVMPointerType::get(builder.getContext());
  return LLVM::GEPOp::create(builder, loc, ptrType, slotElement, slot,
                             ArrayRef<LLVM::GEPArg>{lane});
}
