//===- DotOpToLLVM.h - What the NVIDIA dot lowerings share ------*- C++ -*-===//
//
// The dot lowering is split by instruction family: DotOpToLLVM.cpp places
// the operand tiles and dispatches to mma.sync (MmaSyncToLLVM.cpp), wgmma
// (WgmmaToLLVM.cpp) or FMAs (FmaDotToLLVM.cpp); the pipeline slots are
// filled by cp.async (AsyncCopyToLLVM.cpp) or the TMA unit with its
// mbarriers (TmaToLLVM.cpp). This header holds what several of them use:
// where operand tiles lie in shared memory and how threads store them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CONVERSION_KILNGPUTONVVM_DOTOPTOLLVM_H
#define KILN_LIB_CONVERSION_KILNGPUTONVVM_DOTOPTOLLVM_H

#include "Utility.h"

#include "kiln/Target/NVIDIA/TensorCores.h"

#include <functional>

namespace mlir::kiln::gpu {

using nvidia::TensorCoreOperands;

/// Where each element of an operand tile lies in shared memory: row-major
/// with `cols` elements a row, and, when swizzled, each row's 16-byte
/// chunks permuted by XOR with a phase that changes every `perPhase` rows
/// and repeats after `maxPhase` phases. Rows read 8 at a time by ldmatrix
/// then cover all 32 banks.
struct SharedTile {
  int64_t byteOffset = 0; // from `base`
  int64_t rows = 0, cols = 0, elementBytes = 0;
  int64_t perPhase = 1, maxPhase = 1;
  /// Columns of one stored block: rows wider than 128 bytes are stored as
  /// consecutive [rows][colsPerBlock] blocks (what wgmma's 128-byte
  /// swizzled layouts want); otherwise all of them.
  int64_t colsPerBlock = 0;
  /// Where the tile's memory starts (a shared-memory pointer): the scratch
  /// base, or a pipeline slot.
  Value base;

  /// `blockBytes` (0: one block of whole rows) caps the bytes of a row of
  /// a block.
  static SharedTile get(int64_t byteOffset, int64_t rows, int64_t cols,
                        int64_t elementBytes, bool swizzle, int64_t blockBytes = 0) {
    SharedTile tile;
    tile.byteOffset = byteOffset;
    tile.rows = rows;
    tile.cols = cols;
    tile.elementBytes = elementBytes;
    tile.colsPerBlock = cols;
    if (blockBytes && cols * elementBytes > blockBytes)
      tile.colsPerBlock = blockBytes / elementBytes;
    int64_t rowBytes = tile.rowBytes();
    int64_t chunks = rowBytes / 16;
    if (swizzle && rowBytes % 16 == 0 && chunks >= 2) {
      tile.maxPhase = std::min<int64_t>(chunks, 8);
      tile.perPhase = std::max<int64_t>(1, 128 / rowBytes);
    }
    return tile;
  }
  /// Bytes of a row of one block.
  int64_t rowBytes() const { return colsPerBlock * elementBytes; }
  int64_t blockBytes() const { return rows * rowBytes(); }
  int64_t bytes() const { return rows * cols * elementBytes; }
  int64_t chunkElements() const { return 16 / elementBytes; }

  /// Byte offset (from `base`) of element (row, col); `row` and
  /// `col` are i32 values.
  Value emitOffset(OpBuilder &b, Location loc, Value row, Value col) const {
    auto constant = [&](int64_t v) { return createI32Constant(b, loc, v); };
    Value blockStart;
    if (colsPerBlock < cols) {
      blockStart = LLVM::MulOp::create(
          b, loc, LLVM::UDivOp::create(b, loc, col, constant(colsPerBlock)),
          constant(blockBytes()));
      col = LLVM::URemOp::create(b, loc, col, constant(colsPerBlock));
    }
    Value rowStart = LLVM::MulOp::create(b, loc, row, constant(rowBytes()));
    if (blockStart)
      rowStart = LLVM::AddOp::create(b, loc, rowStart, blockStart);
    Value colBytes = LLVM::MulOp::create(b, loc, col, constant(elementBytes));
    if (maxPhase > 1) {
      Value phase = LLVM::URemOp::create(
          b, loc, LLVM::UDivOp::create(b, loc, row, constant(perPhase)),
          constant(maxPhase));
      // XOR the chunk index (bits 4 and up of the byte offset in the row).
      colBytes = LLVM::XOrOp::create(
          b, loc, colBytes, LLVM::ShlOp::create(b, loc, phase, constant(4)));
    }
    return LLVM::AddOp::create(
        b, loc, constant(byteOffset), LLVM::AddOp::create(b, loc, rowStart, colBytes));
  }
};

/// An operand tile ([M][K] for A, [K][N] for B) as wgmma or mma.sync reads
/// it, `byteOffset` bytes from `base`: rows of swizzled 16-byte chunks,
/// split into 128-byte-wide blocks for wgmma.
SharedTile getOperandTile(bool wgmma, ArrayRef<int64_t> shape, int64_t elementBytes,
                          Value base, int64_t byteOffset = 0);

/// Maps a block row to the row of the shared tile it is stored in.
using RowMap = std::function<Value(OpBuilder &, Location, Value)>;

/// Where wgmma needs the rows of an [m][k] A tile on `numWarps` warps: a
/// row R of the block (warp w = (R / 8) % numWarps, g = R % 8, repeat
/// r = R / (8 numWarps)) is the instruction row 16 (w % 4) + 8 (r % 2) + g
/// of 64-row tile (w / 4, r / 2), so that the accumulator rows of warp w
/// are its blocked-layout rows.
RowMap getWgmmaRowMap(int numWarps, int64_t m);

/// Slot `slot` (an i32) of `buffer` (kiln-gpu-pipeline-loads) as a tile of
/// `type`, transposed in a K-major slot: the pipeline buffers start
/// `pipelineStart` bytes into shared memory.
SharedTile getSlotTile(OpBuilder &b, Location loc, OperandBufferAttr buffer, Value slot,
                       RankedTensorType type, int64_t pipelineStart);

/// Writes the elements a thread holds of `operand` (a 2-D or 3-D block,
/// batches stacked along the rows) into `tile`, with vector stores of the
/// runs of consecutive columns a thread holds. `transposed` stores element
/// (r, c) of each batch at row c, column r of the batch's tile, one at a
/// time;
/// `roundToTf32` rounds f32 elements to tf32 to nearest first.
void storeOperandTile(OpBuilder &b, Location loc, Value converted,
                      RankedTensorType type, const SharedTile &tile,
                      const LaunchShape &launch, const RowMap &rowMap = nullptr,
                      bool transposed = false, bool roundToTf32 = false);

/// The scratch half of an asynchronous wgmma dot (kiln-gpu-async-dots).
std::optional<int64_t> getWgmmaBuffer(DotOp op);

/// Two 16-bit values (f16 or bf16) as one 32-bit register: `low` in the
/// low half.
Value packPair(OpBuilder &b, Location loc, Value low, Value high);

/// The two f16 values of an f16x2 register, low half first.
std::pair<Value, Value> unpackHalves(OpBuilder &b, Location loc, Value reg);

/// mma.sync over the warp's tiles, operands through ldmatrix from `aTile`
/// and `bTile` (MmaSyncToLLVM.cpp). Returns null after an error.
Value lowerDotWithMma(DotOp op, DotOp::Adaptor adaptor, ConversionPatternRewriter &b,
                      const LLVMTypeConverter &converter, const LaunchShape &launch,
                      const TensorCoreOperands &tensorCore, const SharedTile &aTile,
                      const SharedTile &bTile);

/// Where a dot reads its operands and what it takes of the scratch, decided
/// once for the scratch allocation (getDotOpScratchBytes) and the lowering.
struct DotScratchPlan {
  /// wgmma reads A from registers (nvidia::readsWgmmaAFromRegisters).
  bool aInRegisters = false;
  /// The operands stored into the scratch first: neither in a pipeline
  /// slot nor (A) read from registers.
  bool aStored = false, bStored = false;
  /// Where B's wgmma tile starts, from the dot's part of the scratch: after
  /// A's, 1024-byte aligned (the swizzle repeats every 8 rows of 128 bytes,
  /// and the hardware reads the phase from the address).
  int64_t wgmmaBOffset = 0;
  /// The scratch the dot needs (both halves for an asynchronous dot).
  int64_t bytes = 0;
};

DotScratchPlan getDotScratchPlan(DotOp dot, int numWarps, int threadsPerWarp);

/// wgmma.mma_async per warpgroup, operands by descriptors from `aTile` and
/// `bTile` (or A from registers, as `plan` says); operands the plan stores
/// are stored into their tiles first (WgmmaToLLVM.cpp).
Value lowerDotWithWgmma(DotOp op, DotOp::Adaptor adaptor, ConversionPatternRewriter &b,
                        const LLVMTypeConverter &converter, const LaunchShape &launch,
                        const TensorCoreOperands &tensorCore, const SharedTile &aTile,
                        const SharedTile &bTile, const DotScratchPlan &plan);

/// FMAs over the operand tiles, for any blocked result (FmaDotToLLVM.cpp).
/// Returns null after an error.
Value lowerDotWithFma(DotOp op, DotOp::Adaptor adaptor, ConversionPatternRewriter &b,
                      const LLVMTypeConverter &converter, const LaunchShape &launch,
                      const SharedTile &aTile, const SharedTile &bTile);

/// kiln_gpu.async_dot_wait (WgmmaToLLVM.cpp).
void populateWgmmaToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                 RewritePatternSet &patterns);

/// kiln_gpu.async_copy, async_commit_group, async_wait and shared_operand:
/// pipeline slots filled by cp.async (AsyncCopyToLLVM.cpp).
void populateAsyncCopyToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                     RewritePatternSet &patterns, const LaunchShape &launch,
                                     const AccessWidths &widths, int64_t pipelineStart);

/// kiln_gpu.async_tma_copy and the TMA mbarrier ops (TmaToLLVM.cpp).
void populateTmaToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                               RewritePatternSet &patterns, const LaunchShape &launch,
                               int64_t pipelineStart);

} // namespace mlir::kiln::gpu

#endif // KILN_LIB_CONVERSION_KILNGPUTONVVM_DOTOPTOLLVM_H
