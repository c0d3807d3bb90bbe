//===- Patterns.h - Lowerings shared by Kiln's LLVM conversions -*- C++ -*-===//
//
// The pieces of the kiln -> LLVM lowering that do not depend on how a target
// spreads a block over threads: both the GPU lowering (a thread's elements)
// and the CPU lowering (a program's elements) represent a block as an LLVM
// vector, so splats and pointer arithmetic lower the same way.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_LLVMCOMMON_PATTERNS_H
#define KILN_CONVERSION_LLVMCOMMON_PATTERNS_H

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {

/// The type an element has in memory: booleans are bytes.
Type getMemoryElementType(Type element);

/// Rewrites structured control flow (scf) into branches (cf), so that the
/// type conversion that follows only meets block arguments and branches.
LogicalResult convertStructuredControlFlow(ModuleOp module);

/// Adds the lowerings of kiln.splat (a vector splat of the converted block
/// type) and kiln.addptr (a GEP over the memory element type).
void populateSplatAndAddPtrToLLVMPatterns(const LLVMTypeConverter &converter,
                                          RewritePatternSet &patterns);

/// Adds the lowerings of the pointer casts: kiln.ptr_to_int and
/// kiln.int_to_ptr become LLVM's ptrtoint and inttoptr, kiln.ptr_bitcast
/// its operand (pointers are opaque in LLVM).
void populatePointerCastToLLVMPatterns(const LLVMTypeConverter &converter,
                                       RewritePatternSet &patterns);

/// Adds the lowerings of the hint ops, which only inform the axis-info
/// analysis: kiln.axis_hint becomes its operand, kiln.assume disappears.
void populateHintOpToLLVMPatterns(const LLVMTypeConverter &converter,
                                  RewritePatternSet &patterns);

/// The address of a NUL-terminated copy of `text` in an internal global of
/// its own (named kiln_debug_string_N) in `op`'s module.
Value createGlobalCString(OpBuilder &builder, Location loc, Operation *op,
                          StringRef text);

/// Emits the combine function of a kiln.reduce or kiln.scan (its single
/// block) on `accumulated` and `next`, one value per operand each, and
/// returns the combined values. The values are scalars or vectors of one
/// length: on vectors, the combine function's scalar ops are cloned as the
/// same ops on vectors (lane by lane), with scalars they use splat. The
/// clones are left for the conversion to lower. Fails, with an error on
/// `op`, if the combine function has control flow.
FailureOr<SmallVector<Value>> emitCombine(Operation *op, OpBuilder &builder,
                                          ValueRange accumulated,
                                          ValueRange next,
                                          Value active = Value());

/// Marks a kiln.assert cloned from a combine function: each thread checks
/// its own values (a scalar elsewhere is one value that one thread checks).
/// With an `active` predicate (an i1 per thread), emitCombine also makes the
/// assert pass where `active` is false: the combine's result is discarded
/// there, and its inputs need not be values the combine ever takes.
inline constexpr llvm::StringLiteral kPerThreadAssertAttr = "kiln.per_thread";

} // namespace mlir::kiln

#endif // KILN_CONVERSION_LLVMCOMMON_PATTERNS_H
