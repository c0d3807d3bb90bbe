//===- LoopUtils.h - Loop analyses shared by the pipelining passes -*- C++ -*-===//
//
// What kiln-gpu-prefetch-loads, kiln-gpu-pipeline-loads and
// kiln-gpu-async-dots need to know about an scf.for that computes a dot.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_DIALECT_KILNGPU_TRANSFORMS_LOOPUTILS_H
#define KILN_LIB_DIALECT_KILNGPU_TRANSFORMS_LOOPUTILS_H

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::kiln::gpu {

/// Whether the loop body writes memory (then a load cannot move ahead of it).
bool writesMemory(scf::ForOp loop);

/// The ops of the loop body that `roots` are computed from, in body order,
/// or failure when one of them is not a pure, region-free op.
FailureOr<SmallVector<Operation *>> getBodySlice(scf::ForOp loop, ValueRange roots);

/// getBodySlice for the ops of any block: those of `block` that `roots`
/// are computed from (values from elsewhere end the walk), in order.
FailureOr<SmallVector<Operation *>> getBlockSlice(Block *block, ValueRange roots);

/// The first op of `block` that uses `op`'s result (or holds such a use in
/// a nested region), or null when a use lies outside `block` or there is
/// none.
Operation *getFirstUserInBlock(Operation *op, Block &block);

/// A kiln_gpu.async_dot_wait for `value` (the result of asynchronous dots)
/// at `builder`'s insertion point; every other user of `value` then reads
/// it through the wait. Returns the wait's result.
Value readThroughWait(OpBuilder &builder, Location loc, Value value);

/// The readers of pipeline slot `slot` in `block`: the ops of `block` that
/// hold a user of a kiln_gpu.shared_operand of that slot, or a
/// kiln_gpu.load_block of it (in `block` or in a region nested in it).
struct SlotReaders {
  /// The last of them in `block`.
  Operation *last = nullptr;
  int count = 0;
  /// How many of the users are asynchronous dots (kiln_gpu.wgmma_buffer).
  int asynchronous = 0;
};

/// `slot`'s readers in `block`, or failure when a user of one of its
/// shared operands lies outside `block`.
FailureOr<SlotReaders> getSlotReaders(Block &block, Value slot);

/// `mask && condition` for an access of `ptrType` (a block of pointers),
/// `condition` being a scalar i1; `mask` may be null.
Value andMask(OpBuilder &builder, Location loc, Value mask, Value condition,
              RankedTensorType ptrType);

/// Whether `loop`'s own body (not a nested region) computes a dot.
bool hasDot(scf::ForOp loop);

/// Where `op` lies in a loop versioned by kiln-tensor-map-pointer-loads:
/// the innermost `scf.if` marked `kiln.tensor_map_version` around it (null
/// where there is none), and whether `op` is on its then side, the version
/// that reads through tensor maps (else on the side of the loop as it was).
struct TensorMapVersionSide {
  scf::IfOp version;
  bool throughMaps = false;
};
TensorMapVersionSide getTensorMapVersionSide(Operation *op);

/// The dot of `loop`'s body when there is exactly one (null otherwise).
DotOp getOnlyDot(scf::ForOp loop);

/// The one dot of `loop` if it can run asynchronously: a wgmma dot whose
/// accumulator (f32 or integer) is a value the loop carries, used by nothing
/// else, and whose result is only yielded back into it.
DotOp getAccumulatingDot(scf::ForOp loop, int numWarps, int threadsPerWarp);

/// A loop with two wgmma dots where the second accumulates into a value the
/// loop carries (attention's `acc = dot(p, v, acc * alpha)`): the
/// accumulator reaches the second dot through single-use element-wise ops
/// (`chain`, in body order), and the second dot's result is only yielded
/// back into it.
struct ChainedDots {
  DotOp first, second;
  /// The accumulator's iter-arg index.
  unsigned accIndex;
  SmallVector<Operation *> chain;
};

/// The chained dots of `loop`, if it has them (f32 results, both wgmma).
std::optional<ChainedDots> getChainedDots(scf::ForOp loop, int numWarps, int threadsPerWarp);

/// An i32 constant.
Value createI32(OpBuilder &builder, Location loc, int64_t value);

/// `predicates` (i1 values, at least one) or-ed together, each value once.
Value anyOf(OpBuilder &builder, Location loc, ArrayRef<Value> predicates);

/// The attribute of an asynchronous wgmma dot (kiln-gpu-async-dots,
/// kiln-gpu-overlap-dots, kiln-gpu-pipeline-loads set it).
constexpr llvm::StringLiteral kWgmmaBufferAttr = KilnGPUDialect::getWgmmaBufferAttrName();

/// The loop attribute kiln-gpu-pipeline-loads sets on a loop with chained
/// dots whose copies it runs one iteration less ahead than its slots allow,
/// so that kiln-gpu-overlap-dots can keep the second dot's operands an
/// iteration longer.
constexpr llvm::StringLiteral kOverlapDotsAttr = "kiln_gpu.overlap_dots";

} // namespace mlir::kiln::gpu

#endif // KILN_LIB_DIALECT_KILNGPU_TRANSFORMS_LOOPUTILS_H
