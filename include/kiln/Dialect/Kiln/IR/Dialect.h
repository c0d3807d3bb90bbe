//===- Dialect.h - The kiln dialect -----------------------------*- C++ -*-===//
//
// Declares the kiln dialect, its pointer type and its operations.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_DIALECT_H
#define KILN_DIALECT_KILN_IR_DIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kiln/Dialect/Kiln/IR/Traits.h"

#include "kiln/Dialect/Kiln/IR/KilnDialect.h.inc"
#include "kiln/Dialect/Kiln/IR/KilnEnums.h.inc"

namespace mlir::kiln {
/// Returns the i1 type of the same shape (and layout) as `type`.
Type getI1SameShape(Type type);

/// Low bits of argument `index` of `kernel` that are zero in every launch:
/// those of its `kiln.divisibility` (a power of two the launch specialized).
unsigned getKnownZeroBits(FunctionOpInterface kernel, unsigned index);

/// The module attribute that records how the launcher computes the tensor
/// maps of descriptors made in the kernel (kiln-hoist-tensor-maps): one
/// dictionary per map parameter, in parameter order.
inline constexpr llvm::StringLiteral kDerivedTensorMapsAttr = "kiln.derived_tensor_maps";
/// Marks a `kiln.make_tensor_map` that the kernel reads only after checking
/// that the TMA unit takes its tensor (kiln-tensor-map-pointer-loads): the
/// launcher passes no map, instead of refusing the launch, where it does not.
inline constexpr llvm::StringLiteral kGuardedTensorMapAttr = "kiln.guarded";
/// Marks the `scf.if` that kiln-tensor-map-pointer-loads makes: its then
/// region is a loop whose loads name tensor maps, its else region that loop
/// as it was. Where no TMA copy comes to read the maps, the else region is
/// all that stays (kiln-gpu-drop-unread-tensor-maps).
inline constexpr llvm::StringLiteral kTensorMapVersionAttr = "kiln.tensor_map_version";
} // namespace mlir::kiln

#define GET_TYPEDEF_CLASSES
#include "kiln/Dialect/Kiln/IR/KilnTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Kiln/IR/KilnAttrs.h.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/Kiln/IR/KilnOps.h.inc"

namespace mlir::kiln {

/// Returns `type` with its element type replaced, keeping shape and encoding.
Type getTypeWithElement(Type type, Type elementType);

/// Returns the pointee of a pointer or block-of-pointers type.
Type getPointeeType(Type ptrLike);

/// Where each element of a shape op's result (kiln.reshape, trans, join,
/// split, cat, flip, gather) comes from: the element at coordinates `c`
/// takes element `offset + sum(coefficients[d] * c[d])` of the row-major
/// concatenation of the op's block operands (for kiln.gather, of its source
/// only, plus `index[c]` times the source's stride along the axis).
struct ElementSource {
  SmallVector<int64_t> coefficients;
  int64_t offset = 0;
};

/// The element source of each result of `op`, or nothing if `op` is not a
/// shape op.
std::optional<SmallVector<ElementSource>> getElementSources(Operation *op);

/// Row-major strides of `shape`.
SmallVector<int64_t> getRowMajorStrides(ArrayRef<int64_t> shape);

/// Whether `value` is zero: a zero constant (a scalar, or a block splat
/// either as a constant or by kiln.splat).
bool isZeroBlock(Value value);

/// Decodes `bytes` (an i8 scalar or block) holding 8-bit floats of `format`
/// into f32, exactly, with integer arith ops that every target lowers: the
/// one decoder of the frontend's fp8 casts and of decodeFloat8Operands.
Value createFloat8ToF32(OpBuilder &builder, Location loc, Value bytes, Float8Format format);

/// Rounds `f32` (an f32 scalar or block) to 8-bit floats of `format`, as
/// kiln.f32_to_float8 defines, with integer arith ops that every target
/// lowers; returns their bytes (i8).
Value createF32ToFloat8(OpBuilder &builder, Location loc, Value f32, Float8Format format);

/// Rewrites an fp8 `dot` into an f16 dot of its decoded operands (f16 holds
/// every value of both formats), for targets without 8-bit float tensor
/// cores. Does nothing to other dots.
void decodeFloat8Operands(DotOp dot);

} // namespace mlir::kiln

#endif // KILN_DIALECT_KILN_IR_DIALECT_H
