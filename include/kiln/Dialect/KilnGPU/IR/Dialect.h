//===- Dialect.h - The kiln_gpu dialect -------------------------*- C++ -*-===//
//
// Declares the kiln_gpu dialect, its layout encodings and operations.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILNGPU_IR_DIALECT_H
#define KILN_DIALECT_KILNGPU_IR_DIALECT_H

#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "kiln/Dialect/KilnGPU/IR/KilnGPUDialect.h.inc"
#include "kiln/Dialect/KilnGPU/IR/KilnGPUEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/KilnGPU/IR/KilnGPUAttrs.h.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnGPU/IR/KilnGPUOps.h.inc"

namespace mlir::kiln::gpu {

/// The compute capability (80 for "sm_80") and whether the name asks for
/// the architecture-specific features (the `a` of "sm_90a") of an NVIDIA
/// chip name, or nothing if `name` is not one.
std::optional<std::pair<unsigned, bool>> parseChipName(StringRef name);

/// Returns the number of warps a kiln_gpu module runs with (1 if unset).
int getNumWarps(ModuleOp module);

/// Returns the threads per warp of a kiln_gpu module (32 if unset).
int getThreadsPerWarp(ModuleOp module);

/// Whether `numWarps` warps make two or more whole warpgroups (4 warps
/// each): what warpgroups taking turns (kiln_gpu.await_turn) need.
bool hasSeveralWarpgroups(int numWarps);

/// Builds the default blocked layout for `shape`: `sizePerThread` elements
/// per thread along the fastest dimension (`order[0]`), then threads and
/// warps laid out fastest dimension first, as long as the shape has room.
BlockedEncodingAttr getDefaultBlockedEncoding(MLIRContext *context,
                                              ArrayRef<int64_t> shape,
                                              ArrayRef<unsigned> order,
                                              unsigned sizePerThread,
                                              int numWarps, int threadsPerWarp);

/// The blocked layout that `mma.sync.m16n8k16` leaves its accumulator in,
/// for an [M, N] dot result on `numWarps` warps: pairs of columns per
/// thread, 4 threads along a row and 8 rows per warp, warps tiled over the
/// block as evenly as it allows. For a batched [B, M, N] result the same
/// on each batch in turn (the batch dimension repeats slowest). Null when
/// the block does not tile: each warp needs whole 16-row instruction tiles
/// (rows 8 apart in the layout's repeats pair up) and whole 8-column ones.
/// Warps beyond the block's instruction tiles repeat them along the
/// columns (replicated elements).
BlockedEncodingAttr getMmaAccumulatorLayout(MLIRContext *context,
                                            ArrayRef<int64_t> shape, int numWarps,
                                            int threadsPerWarp);

/// The blocked layout a warpgroup's `wgmma.mma_async.m64nNk16` accumulator
/// is read in, for an [M, N] dot result on `numWarps` warps (a multiple of
/// 4): pairs of columns per thread, 4 threads along a row, 8 rows per warp,
/// all warps stacked along the rows, every thread spanning all N columns.
/// The A rows are permuted in shared memory so that each warp's 8-row
/// groups are the instruction's. Null when the block does not tile: M a
/// multiple of 16 * numWarps, N a multiple of 64 and at most 256.
BlockedEncodingAttr getWgmmaAccumulatorLayout(MLIRContext *context,
                                              ArrayRef<int64_t> shape,
                                              int numWarps, int threadsPerWarp);

/// Whether `type` (a dot result) has the layout getMmaAccumulatorLayout
/// gives for its shape on `numWarps` warps.
bool hasMmaAccumulatorLayout(RankedTensorType type, int numWarps,
                             int threadsPerWarp);

/// The kernel-parameter attribute (on a tensor map) that records the box
/// the kernel's TMA copies use: [rows, cols, swizzle bytes].
inline constexpr llvm::StringLiteral kTensorMapBoxAttr = "kiln.tensor_map_box";

/// How the TMA unit copies a tile into a wgmma pipeline slot: boxes of
/// `rows` x `cols` elements of the tensor map, each landing as whole
/// `swizzleBytes`-byte rows swizzled the way wgmma reads them (the
/// 32/64/128-byte swizzles of the slot layout are the TMA unit's).
struct TmaBox {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t swizzleBytes = 0;
};

/// The box for a tile of `tileShape` (as loaded: [M][K] for A, [K][N] for
/// a B slot, [N][K] for a K-major one) in `buffer`, or nullopt where the
/// TMA unit cannot write the slot's layout: not wgmma, rows of a 128-byte
/// block narrower than 32 bytes, or more than 256 rows. A's rows are
/// permuted in groups of 8 for wgmma, so its boxes have 8 rows.
std::optional<TmaBox> getTmaBox(OperandBufferAttr buffer, ArrayRef<int64_t> tileShape,
                                int64_t elementBytes);

/// A range of bytes of the kernel's pipeline buffers, [first, end).
struct SlotBytes {
  int64_t first = 0;
  int64_t end = 0;

  bool overlaps(const SlotBytes &other) const {
    return first < other.end && other.first < end;
  }
};

/// The bytes that all of `buffer`'s slots take.
SlotBytes getSlotBytes(OperandBufferAttr buffer);

/// The bytes of the pipeline buffers that `op` writes, where it is a copy
/// into slots (kiln_gpu.async_copy, async_tma_copy, async_copy_block) or
/// initializes their mbarriers; nullopt for any other op.
std::optional<SlotBytes> getWrittenSlotBytes(Operation *op);

/// How a block's elements are spread over threads, whatever its encoding: a
/// blocked layout and the shape it applies to. A slice layout is its parent
/// applied to the block's shape with a dimension of size one inserted.
struct ThreadLayout {
  BlockedEncodingAttr blocked;
  SmallVector<int64_t> shape;
  /// The inserted dimension of a slice layout, or -1.
  int64_t slicedDim = -1;

  /// The dimension of the layout's shape that dimension `dim` of the block
  /// is.
  unsigned layoutDim(unsigned dim) const {
    return slicedDim >= 0 && int64_t(dim) >= slicedDim ? dim + 1 : dim;
  }
  int64_t getElementsPerThread() const {
    return blocked.getElementsPerThread(shape);
  }
};

/// The thread layout of a block type with a blocked or slice encoding.
std::optional<ThreadLayout> getThreadLayout(RankedTensorType type);

/// Rewrites in place the type of every block value under `root` (op results,
/// block arguments, function signatures, dense constants) to carry the
/// encoding `encodingFor` returns for its current type; a null attribute
/// leaves the type as it is. Element-wise ops need no other change, which is
/// why layout assignment can be a type rewrite.
void setBlockEncodings(Operation *root,
                       function_ref<Attribute(RankedTensorType)> encodingFor);

} // namespace mlir::kiln::gpu

#endif // KILN_DIALECT_KILNGPU_IR_DIALECT_H
