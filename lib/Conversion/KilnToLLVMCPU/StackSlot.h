//===- StackSlot.h - Vectors spilled to the stack in CPU lowerings -*- C++ -*-===//
//
// Several CPU lowerings store a block's vector to a stack slot and read its
// lanes back (gathers, lane loops, slices of wide reductions). They share
// how a vector sits in memory: i1 vectors are bit-packed, so their lanes go
// through bytes; every other element keeps its type.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CONVERSION_KILNTOLLVMCPU_STACKSLOT_H
#define KILN_LIB_CONVERSION_KILNTOLLVMCPU_STACKSLOT_H

#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::kiln {

/// The element a slot holds for lanes of `element`: i8 for i1, else itself.
Type slotElementType(OpBuilder &builder, Type element);

/// The bytes of one slot element (pointers: 8).
unsigned slotElementBytes(Type slotElement);

/// `vector` in its slot form (an i1 vector widened to i8).
Value toSlotForm(OpBuilder &builder, Location loc, Value vector);

/// `loaded`, a vector read from a slot, back as a vector of `element`.
Value fromSlotForm(OpBuilder &builder, Location loc, Value loaded, Type element);

/// A new stack slot of `count` elements of `slotElement`.
Value allocateStackSlot(OpBuilder &builder, Location loc, Type slotElement,
                        int64_t count, unsigned alignment);

/// A new stack slot holding the lanes of `vector` in their slot form,
/// aligned to `alignment` bytes (by default, one slot element's).
Value storeInStackSlot(OpBuilder &builder, Location loc, Value vector,
                       std::optional<unsigned> alignment = std::nullopt);

/// The address of lane `lane` of a slot of `slotElement`s.
Value laneAddress(OpBuilder &builder, Location loc, Type slotElement, Value slot,
                  Value lane);

} // namespace mlir::kiln

#endif // KILN_LIB_CONVERSION_KILNTOLLVMCPU_STACKSLOT_H
