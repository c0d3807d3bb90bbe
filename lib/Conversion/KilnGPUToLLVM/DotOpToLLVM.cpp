//===- DotOpToLLVM.cpp - GPU lowering of kiln.dot --------------------------===//
//
// Both ways of computing a dot start the same: every thread writes the
// operand elements it holds into the shared memory scratch, A as [M][K] and
// B as [K][N] (row-major, per batch), then a barrier.
//
// * Tensor cores (a result in the layout getMmaAccumulatorLayout gives):
//   each warp loads its fragments with ldmatrix (B transposed on the way)
//   and issues mma.sync.m16n8k16. The accumulator layout is a blocked layout
//   whose 8-row groups pair up into the instruction's 16 rows, so each
//   thread's accumulator elements are exactly the instruction's d registers.
//   The operand tiles are stored with their 16-byte chunks XOR-swizzled by
//   row, so that the 8 rows one ldmatrix reads fall in distinct banks.
// * FMAs (any other blocked result): each thread reads, for every k, the A
//   elements of the rows and the B elements of the columns it holds, and
//   multiply-adds them into its accumulator elements.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"
#include "kiln/Target/NVIDIA/TensorCores.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "llvm/ADT/MapVector.h"

#include <functional>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;
using namespace mlir::kiln::nvidia;

namespace {

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
    SharedTile tile{byteOffset, rows, cols, elementBytes};
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
                          Value base, int64_t byteOffset = 0) {
  SharedTile tile = SharedTile::get(byteOffset, shape[0], shape[1], elementBytes,
                                    /*swizzle=*/true, /*blockBytes=*/wgmma ? 128 : 0);
  tile.base = base;
  return tile;
}

/// Maps a block row to the row of the shared tile it is stored in.
using RowMap = std::function<Value(OpBuilder &, Location, Value)>;

/// Where wgmma needs the rows of an [m][k] A tile on `numWarps` warps: a
/// row R of the block (warp w = (R / 8) % numWarps, g = R % 8, repeat
/// r = R / (8 numWarps)) is the instruction row 16 (w % 4) + 8 (r % 2) + g
/// of 64-row tile (w / 4, r / 2), so that the accumulator rows of warp w
/// are its blocked-layout rows.
RowMap getWgmmaRowMap(int numWarps, int64_t m) {
  int64_t tilesPerGroup = m / (16 * numWarps);
  return [=](OpBuilder &builder, Location l, Value row) -> Value {
    auto c = [&](int64_t v) { return createI32Constant(builder, l, v); };
    Value warp = LLVM::URemOp::create(builder, l, LLVM::UDivOp::create(builder, l, row, c(8)),
                                      c(numWarps));
    Value g = LLVM::URemOp::create(builder, l, row, c(8));
    Value rep = LLVM::UDivOp::create(builder, l, row, c(8 * numWarps));
    Value group = LLVM::UDivOp::create(builder, l, warp, c(4));
    Value tile = LLVM::AddOp::create(
        builder, l, LLVM::MulOp::create(builder, l, group, c(tilesPerGroup)),
        LLVM::UDivOp::create(builder, l, rep, c(2)));
    Value inTile = LLVM::AddOp::create(
        builder, l,
        LLVM::AddOp::create(
            builder, l,
            LLVM::MulOp::create(builder, l, LLVM::URemOp::create(builder, l, warp, c(4)), c(16)),
            LLVM::MulOp::create(builder, l, LLVM::URemOp::create(builder, l, rep, c(2)), c(8))),
        g);
    return LLVM::AddOp::create(builder, l, LLVM::MulOp::create(builder, l, tile, c(64)), inTile);
  };
}

/// Slot `slot` (an i32) of `buffer` (kiln-gpu-pipeline-loads) as a tile of
/// `type`, transposed in a K-major slot: the pipeline buffers start
/// `pipelineStart` bytes into shared memory.
SharedTile getSlotTile(OpBuilder &b, Location loc, OperandBufferAttr buffer, Value slot,
                       RankedTensorType type, int64_t pipelineStart) {
  Value offset = LLVM::AddOp::create(
      b, loc, createI32Constant(b, loc, pipelineStart + buffer.getOffset()),
      LLVM::MulOp::create(b, loc, slot, createI32Constant(b, loc, buffer.getSlotBytes())));
  Value base = getSharedAddress(b, loc, getScratchBase(b, loc), offset);
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<int64_t> tileShape = buffer.getKMajor() ? SmallVector<int64_t>{shape[1], shape[0]}
                                                      : SmallVector<int64_t>(shape);
  return getOperandTile(buffer.isWgmma(), tileShape,
                        getSharedElementBytes(type.getElementType()), base);
}

/// Writes the elements a thread holds of `operand` (a 2-D or 3-D block,
/// batches stacked along the rows) into `tile`, with vector stores of the
/// runs of consecutive columns a thread holds. `transposed` stores element
/// (r, c) of each batch at row c, column r of the batch's tile, one at a
/// time;
/// `roundToTf32` rounds f32 elements to tf32 to nearest first.
void storeOperandTile(OpBuilder &b, Location loc, Value converted,
                      RankedTensorType type, const SharedTile &tile,
                      const LaunchShape &launch, const RowMap &rowMap = nullptr,
                      bool transposed = false, bool roundToTf32 = false) {
  Value base = tile.base;
  SmallVector<Value> values = unpackElements(b, loc, converted);
  if (roundToTf32)
    for (Value &v : values)
      v = LLVM::BitcastOp::create(
          b, loc, b.getF32Type(),
          createInlineAsm(b, loc, /*hasSideEffects=*/false, b.getI32Type(), {v},
                          "cvt.rna.tf32.f32 $0, $1;", "=r,f"));
  SmallVector<Value> coords = emitBlockCoordinates(b, loc, type, launch);
  unsigned rank = type.getRank();
  SmallVector<SmallVector<Value>> coordOf(rank);
  for (unsigned d = 0; d < rank; ++d)
    coordOf[d] = unpackElements(b, loc, coords[d]);

  // Runs of consecutive columns, checked against the layout's static
  // offsets: the thread's first element along the columns is a multiple of
  // its run.
  int64_t run = transposed ? 1 : getSharedRunWidth(type);
  SmallVector<SmallVector<int32_t>> offsets;
  if (run > 1) {
    std::optional<ThreadLayout> layout = getThreadLayout(type);
    offsets = getElementOffsets(layout->blocked, layout->shape);
  }
  Type element = values.front().getType();
  // Where element `e` goes: batches are stacked along the tile's rows.
  unsigned rowDim = transposed ? rank - 1 : rank - 2;
  unsigned colDim = transposed ? rank - 2 : rank - 1;
  auto addressOf = [&](size_t e) {
    Value row = coordOf[rowDim][e];
    if (rank == 3)
      row = LLVM::AddOp::create(
          b, loc, row,
          LLVM::MulOp::create(b, loc, coordOf[0][e],
                              createI32Constant(b, loc, type.getDimSize(rowDim))));
    if (rowMap)
      row = rowMap(b, loc, row);
    return getSharedAddress(b, loc, base, tile.emitOffset(b, loc, row, coordOf[colDim][e]));
  };
  for (size_t e = 0; e < values.size(); e += run) {
    int64_t length = run;
    for (int64_t i = 1; i < length; ++i)
      if (e + i >= values.size() || offsets[rank - 1][e + i] != offsets[rank - 1][e] + i)
        length = 1;
    if (length == 1) {
      for (int64_t i = 0; i < run && e + i < values.size(); ++i)
        LLVM::StoreOp::create(b, loc, values[e + i], addressOf(e + i));
      continue;
    }
    auto vectorType = VectorType::get({length}, element);
    Value vector = packElements(b, loc, vectorType,
                                ArrayRef<Value>(values).slice(e, length));
    LLVM::StoreOp::create(b, loc, vector, addressOf(e),
                          /*alignment=*/unsigned(length * tile.elementBytes));
  }
}

/// The scratch half of an asynchronous wgmma dot (kiln-gpu-async-dots).
std::optional<int64_t> getWgmmaBuffer(DotOp op) {
  if (auto buffer = op->getAttrOfType<IntegerAttr>("kiln_gpu.wgmma_buffer"))
    return buffer.getInt();
  return std::nullopt;
}

/// Inline-asm constraints for `count` registers (f32 for `kind` 'f', i32
/// for 'r') that an instruction updates in place: `count` outputs, the
/// operands in `between` (each with its leading comma), then the inputs
/// tied to the outputs.
std::string getTiedConstraints(int64_t count, StringRef between, char kind) {
  std::string constraints;
  for (int64_t i = 0; i < count; ++i)
    constraints += std::string(i ? ",=" : "=") + kind;
  constraints += between;
  for (int64_t i = 0; i < count; ++i)
    constraints += "," + std::to_string(i);
  return constraints;
}

/// The inline-asm register kind of accumulators of type `type`: 'r' for
/// i32, 'f' for f32.
char getRegisterKind(Type type) { return type.isInteger(32) ? 'r' : 'f'; }

/// wgmma.wait_group 0, taking and returning `values` (f32 or i32
/// accumulators): nothing can read them before the wait.
SmallVector<Value> emitWaitAll(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  if (values.empty()) {
    createInlineAsm(b, loc, true, LLVM::LLVMVoidType::get(b.getContext()), {},
                    "wgmma.wait_group.sync.aligned 0;", "");
    return {};
  }
  SmallVector<Type> types;
  for (Value v : values)
    types.push_back(v.getType());
  Value waited = createInlineAsm(b, loc, /*hasSideEffects=*/true,
                                 LLVM::LLVMStructType::getLiteral(b.getContext(), types),
                                 values, "wgmma.wait_group.sync.aligned 0;",
                                 getTiedConstraints(values.size(), "",
                                                    getRegisterKind(types.front())));
  SmallVector<Value> results;
  for (size_t i = 0; i < values.size(); ++i)
    results.push_back(LLVM::ExtractValueOp::create(b, loc, waited, i));
  return results;
}

/// kiln_gpu.async_dot_wait: the accumulators of in-flight wgmma groups.
struct AsyncDotWaitOpLowering : public ConvertOpToLLVMPattern<AsyncDotWaitOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(AsyncDotWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Value> values = unpackElements(rewriter, loc, adaptor.getSrc());
    if (!values.empty() &&
        !llvm::all_of(values, [&](Value v) {
          return v.getType() == values.front().getType() &&
                 (v.getType().isF32() || v.getType().isInteger(32));
        }))
      return op.emitOpError("expected f32 or i32 accumulators");
    rewriter.replaceOp(op, packElements(rewriter, loc, adaptor.getSrc().getType(),
                                        emitWaitAll(rewriter, loc, values)));
    return success();
  }
};

/// kiln_gpu.async_copy: per run of elements a thread holds, one cp.async
/// into the slot (zero-filled where masked off); runs of 1 or 2 bytes, which
/// cp.async cannot move, are loaded and stored.
struct AsyncCopyOpLowering : public ConvertOpToLLVMPattern<AsyncCopyOp> {
  AsyncCopyOpLowering(const LLVMTypeConverter &converter, LaunchShape launch,
                      const AccessWidths &widths, int64_t pipelineStart)
      : ConvertOpToLLVMPattern(converter), launch(launch), widths(widths),
        pipelineStart(pipelineStart) {}

  LogicalResult
  matchAndRewrite(AsyncCopyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getPtr().getType();
    OperandBufferAttr buffer = op.getBuffer();
    Type element = cast<PointerType>(type.getElementType()).getPointeeType();
    auto tileType = RankedTensorType::get(type.getShape(), element, type.getEncoding());
    SharedTile tile = getSlotTile(b, loc, buffer, adaptor.getSlot(), tileType, pipelineStart);
    RowMap rowMap;
    if (buffer.isWgmma() && buffer.getOperand() == 0)
      rowMap = getWgmmaRowMap(launch.numWarps, type.getDimSize(0));

    SmallVector<Value> ptrs = unpackElements(b, loc, adaptor.getPtr());
    SmallVector<Value> masks;
    if (adaptor.getMask())
      masks = unpackElements(b, loc, adaptor.getMask());
    SmallVector<Value> coords = emitBlockCoordinates(b, loc, type, launch);
    SmallVector<Value> rows = unpackElements(b, loc, coords[0]);
    SmallVector<Value> cols = unpackElements(b, loc, coords[1]);
    // The widths of kiln.load: runs along the layout's fastest dimension
    // (the columns; in a K-major slot, the rows, which are its columns),
    // never across a 16-byte chunk of the tile's rows.
    bool kMajor = buffer.getKMajor();
    int64_t width = std::min<int64_t>(widths.lookup(op), tile.chunkElements());
    int64_t bytes = width * tile.elementBytes;
    Type i32 = b.getI32Type(), i16 = b.getI16Type();
    std::string narrowLoad = bytes == 1 ? "ld.global.u8" : "ld.global.b16";
    auto voidType = LLVM::LLVMVoidType::get(b.getContext());
    for (size_t e = 0; e < ptrs.size(); e += width) {
      Value row = rowMap ? rowMap(b, loc, rows[e]) : rows[e];
      Value offset = kMajor ? tile.emitOffset(b, loc, cols[e], row)
                            : tile.emitOffset(b, loc, row, cols[e]);
      Value address = getSharedAddress(b, loc, tile.base, offset);
      if (bytes >= 4) {
        // The source size is 0 where masked off: nothing is read, the
        // destination is zero-filled.
        Value size = createI32Constant(b, loc, bytes);
        if (!masks.empty())
          size = LLVM::SelectOp::create(b, loc, masks[e], size, createI32Constant(b, loc, 0));
        std::string text = std::string("cp.async.") + (bytes == 16 ? "cg" : "ca") +
                           ".shared.global [$0], [$1], " + std::to_string(bytes) + ", $2;";
        createInlineAsm(b, loc, /*hasSideEffects=*/true, voidType,
                        {LLVM::PtrToIntOp::create(b, loc, i32, address), ptrs[e], size}, text,
                        "r,l,r");
        continue;
      }
      Value mask = masks.empty() ? Value(LLVM::ConstantOp::create(b, loc, b.getI1Type(),
                                                                  b.getBoolAttr(true)))
                                 : masks[e];
      Value word = createInlineAsm(
          b, loc, /*hasSideEffects=*/true, i16,
          {ptrs[e], LLVM::ZExtOp::create(b, loc, i32, mask)},
          "{\n.reg .pred p;\nsetp.ne.b32 p, $2, 0;\nmov.b16 $0, 0;\n@p " + narrowLoad +
              " $0, [$1];\n}",
          "=h,l,r");
      if (bytes == 1)
        word = LLVM::TruncOp::create(b, loc, b.getI8Type(), word);
      LLVM::StoreOp::create(b, loc, word, address);
    }
    b.eraseOp(op);
    return success();
  }

  LaunchShape launch;
  const AccessWidths &widths;
  int64_t pipelineStart;
};

/// The i32 shared-memory address `offset` bytes into the pipeline buffers
/// (which start `pipelineStart` bytes into shared memory), plus `slot`
/// times `stride`.
Value getPipelineAddress(OpBuilder &b, Location loc, int64_t pipelineStart, int64_t offset,
                         Value slot, int64_t stride) {
  Value bytes = LLVM::AddOp::create(
      b, loc, createI32Constant(b, loc, pipelineStart + offset),
      LLVM::MulOp::create(b, loc, slot, createI32Constant(b, loc, stride)));
  Value address = getSharedAddress(b, loc, getScratchBase(b, loc), bytes);
  return LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), address);
}

/// An i32 that is 1 where `condition` holds, for an inline-asm predicate.
Value predicateOperand(OpBuilder &b, Location loc, Value condition) {
  return LLVM::ZExtOp::create(b, loc, b.getI32Type(), condition);
}

/// Thread 0 issues `instruction` (PTX naming an mbarrier's address as
/// `$ADDR`) for each of the `count` mbarriers `offset` bytes into the
/// pipeline buffers, then `after` (if any), all in one inline asm.
void emitOnEachBarrier(OpBuilder &b, Location loc, int64_t pipelineStart, int64_t offset,
                       int32_t count, StringRef instruction, StringRef after = "") {
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  Value isFirst = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, tid,
                                       createI32Constant(b, loc, 0));
  SmallVector<Value> operands{predicateOperand(b, loc, isFirst)};
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $0, 0;\n";
  std::string constraints = "r";
  Value zero = createI32Constant(b, loc, 0);
  for (int32_t i = 0; i < count; ++i) {
    operands.push_back(getPipelineAddress(b, loc, pipelineStart, offset + 8 * i, zero, 0));
    std::string address = "$" + std::to_string(i + 1);
    text += "@p " + StringRef(instruction).str() + ";\n";
    text.replace(text.rfind("$ADDR"), 5, address);
    constraints += ",r";
  }
  if (!after.empty())
    text += "@p " + after.str() + ";\n";
  text += "}";
  createInlineAsm(b, loc, /*hasSideEffects=*/true, LLVM::LLVMVoidType::get(b.getContext()),
                  operands, text, constraints);
}

/// kiln_gpu.init_tma_barriers: thread 0 initializes the mbarriers and
/// fences the initialization for the TMA unit; then a barrier.
struct InitTmaBarriersOpLowering : public ConvertOpToLLVMPattern<InitTmaBarriersOp> {
  InitTmaBarriersOpLowering(const LLVMTypeConverter &converter, int64_t pipelineStart)
      : ConvertOpToLLVMPattern(converter), pipelineStart(pipelineStart) {}

  LogicalResult
  matchAndRewrite(InitTmaBarriersOp op, OpAdaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    emitOnEachBarrier(b, loc, pipelineStart, op.getOffset(), op.getCount(),
                      "mbarrier.init.shared::cta.b64 [$ADDR], " +
                          std::to_string(op.getArrivals()),
                      "fence.mbarrier_init.release.cluster");
    emitBarrier(b, loc);
    b.eraseOp(op);
    return success();
  }

  int64_t pipelineStart;
};

/// kiln_gpu.async_tma_copy: lane 0 of the first warp arrives at the slot's
/// mbarrier expecting the tile's bytes; the first warp's lanes each copy
/// a box (or several) of the tile with cp.async.bulk.tensor, into the
/// place the slot's layout gives its first row (A's rows permuted for
/// wgmma, in groups of 8).
struct AsyncTmaCopyOpLowering : public ConvertOpToLLVMPattern<AsyncTmaCopyOp> {
  AsyncTmaCopyOpLowering(const LLVMTypeConverter &converter, LaunchShape launch,
                         int64_t pipelineStart)
      : ConvertOpToLLVMPattern(converter), launch(launch), pipelineStart(pipelineStart) {}

  LogicalResult
  matchAndRewrite(AsyncTmaCopyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto tileType = cast<RankedTensorType>(op.getTile());
    ArrayRef<int64_t> shape = tileType.getShape();
    OperandBufferAttr buffer = op.getBuffer();
    int64_t elementBytes = getSharedElementBytes(tileType.getElementType());
    std::optional<TmaBox> box = getTmaBox(buffer, shape, elementBytes);
    if (!box)
      return op.emitOpError("expected a tile the TMA unit can copy into its slot");
    SharedTile tile = getOperandTile(/*wgmma=*/true, shape, elementBytes, Value());
    RowMap rowMap;
    if (buffer.getOperand() == 0)
      rowMap = getWgmmaRowMap(launch.numWarps, shape[0]);
    auto c = [&](int64_t v) { return createI32Constant(b, loc, v); };
    Type i32 = b.getI32Type();
    auto voidType = LLVM::LLVMVoidType::get(b.getContext());

    Value slot = adaptor.getSlot();
    Value slotAddress =
        getPipelineAddress(b, loc, pipelineStart, buffer.getOffset(), slot, buffer.getSlotBytes());
    Value barrier = getPipelineAddress(b, loc, pipelineStart, op.getBarriers(), slot, 8);
    Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
    Value pred = adaptor.getPred();
    Value arrives = LLVM::AndOp::create(
        b, loc, pred, LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, tid, c(0)));
    createInlineAsm(b, loc, /*hasSideEffects=*/true, voidType,
                    {predicateOperand(b, loc, arrives), barrier, c(tileType.getNumElements() * elementBytes)},
                    "{\n.reg .pred p;\n.reg .b64 state;\nsetp.ne.b32 p, $0, 0;\n"
                    "@p mbarrier.arrive.expect_tx.shared::cta.b64 state, [$1], $2;\n}",
                    "r,r,r");

    Value map = LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), adaptor.getTensorMap());
    Value row0 = adaptor.getCoords()[0], col0 = adaptor.getCoords()[1];
    int64_t colBlocks = shape[1] / box->cols;
    int64_t boxes = (shape[0] / box->rows) * colBlocks;
    int64_t threads = launch.threadsPerWarp;
    for (int64_t first = 0; first < boxes; first += threads) {
      Value index = LLVM::AddOp::create(b, loc, tid, c(first));
      Value issues = LLVM::AndOp::create(
          b, loc, pred,
          LLVM::AndOp::create(
              b, loc, LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, tid, c(threads)),
              LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, index, c(boxes))));
      Value row = LLVM::MulOp::create(
          b, loc, LLVM::UDivOp::create(b, loc, index, c(colBlocks)), c(box->rows));
      Value col = LLVM::MulOp::create(
          b, loc, LLVM::URemOp::create(b, loc, index, c(colBlocks)), c(box->cols));
      Value slotRow = rowMap ? rowMap(b, loc, row) : row;
      // The box's first element: its chunk is not swizzled (the box
      // starts a swizzle period), so this is its first byte.
      Value destination = LLVM::AddOp::create(b, loc, slotAddress,
                                              tile.emitOffset(b, loc, slotRow, col));
      Value x = LLVM::AddOp::create(b, loc, col0, col);
      Value y = LLVM::AddOp::create(b, loc, row0, row);
      createInlineAsm(
          b, loc, /*hasSideEffects=*/true, voidType,
          {predicateOperand(b, loc, issues), destination, map, x, y, barrier},
          "{\n.reg .pred p;\nsetp.ne.b32 p, $0, 0;\n"
          "@p cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
          "[$1], [$2, {$3, $4}], [$5];\n}",
          "r,r,l,r,r,r");
    }
    b.eraseOp(op);
    return success();
  }

  LaunchShape launch;
  int64_t pipelineStart;
};

/// kiln_gpu.wait_tma_barrier: spins on mbarrier.try_wait.parity, then a
/// barrier.
struct WaitTmaBarrierOpLowering : public ConvertOpToLLVMPattern<WaitTmaBarrierOp> {
  WaitTmaBarrierOpLowering(const LLVMTypeConverter &converter, int64_t pipelineStart)
      : ConvertOpToLLVMPattern(converter), pipelineStart(pipelineStart) {}

  LogicalResult
  matchAndRewrite(WaitTmaBarrierOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value barrier =
        getPipelineAddress(b, loc, pipelineStart, op.getBarriers(), adaptor.getSlot(), 8);
    // The label is local to the braces, so the asm may appear many times.
    createInlineAsm(b, loc, /*hasSideEffects=*/true, LLVM::LLVMVoidType::get(b.getContext()),
                    {barrier, adaptor.getPhase()},
                    "{\n.reg .pred done;\nwait_phase:\n"
                    "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
                    "@!done bra wait_phase;\n}",
                    "r,r");
    emitBarrier(b, loc);
    b.eraseOp(op);
    return success();
  }

  int64_t pipelineStart;
};

/// kiln_gpu.inval_tma_barriers: a barrier, then thread 0 invalidates the
/// mbarriers.
struct InvalTmaBarriersOpLowering : public ConvertOpToLLVMPattern<InvalTmaBarriersOp> {
  InvalTmaBarriersOpLowering(const LLVMTypeConverter &converter, int64_t pipelineStart)
      : ConvertOpToLLVMPattern(converter), pipelineStart(pipelineStart) {}

  LogicalResult
  matchAndRewrite(InvalTmaBarriersOp op, OpAdaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    emitBarrier(b, loc);
    emitOnEachBarrier(b, loc, pipelineStart, op.getOffset(), op.getCount(),
                      "mbarrier.inval.shared::cta.b64 [$ADDR]");
    b.eraseOp(op);
    return success();
  }

  int64_t pipelineStart;
};

/// kiln_gpu.async_commit_group: cp.async.commit_group.
struct AsyncCommitGroupOpLowering : public ConvertOpToLLVMPattern<AsyncCommitGroupOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(AsyncCommitGroupOp op, OpAdaptor,
                  ConversionPatternRewriter &b) const override {
    createInlineAsm(b, op.getLoc(), true, LLVM::LLVMVoidType::get(b.getContext()), {},
                    "cp.async.commit_group;", "");
    b.eraseOp(op);
    return success();
  }
};

/// kiln_gpu.async_wait: cp.async.wait_group, a proxy fence where wgmma
/// reads the copies, and a barrier.
struct AsyncWaitOpLowering : public ConvertOpToLLVMPattern<AsyncWaitOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(AsyncWaitOp op, OpAdaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto voidType = LLVM::LLVMVoidType::get(b.getContext());
    createInlineAsm(b, loc, true, voidType, {},
                    "cp.async.wait_group " + std::to_string(op.getPending()) + ";", "");
    // cp.async writes through the generic proxy; wgmma reads through the
    // async one.
    if (hasWarpgroupMma(op->getParentOfType<ModuleOp>()))
      createInlineAsm(b, loc, true, voidType, {}, "fence.proxy.async.shared::cta;", "");
    emitBarrier(b, loc);
    b.eraseOp(op);
    return success();
  }
};

/// kiln_gpu.shared_operand: no registers; the dot that uses it reads the
/// slot.
struct SharedOperandOpLowering : public ConvertOpToLLVMPattern<SharedOperandOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(SharedOperandOp op, OpAdaptor,
                  ConversionPatternRewriter &b) const override {
    b.replaceOpWithNewOp<LLVM::PoisonOp>(op, getTypeConverter()->convertType(op.getType()));
    return success();
  }
};

struct DotOpLowering : public ConvertOpToLLVMPattern<DotOp> {
  DotOpLowering(const LLVMTypeConverter &converter, LaunchShape launch, int64_t pipelineStart)
      : ConvertOpToLLVMPattern(converter), launch(launch), pipelineStart(pipelineStart) {}

  LogicalResult
  matchAndRewrite(DotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType aType = op.getA().getType(), bType = op.getB().getType();
    RankedTensorType type = op.getType();
    for (RankedTensorType t : {aType, bType, type})
      if (!getThreadLayout(t))
        return rewriter.notifyMatchFailure(op, "expected thread layouts");
    Location loc = op.getLoc();
    unsigned rank = type.getRank();
    int64_t batch = rank == 3 ? type.getDimSize(0) : 1;
    int64_t m = type.getDimSize(rank - 2), n = type.getDimSize(rank - 1);
    int64_t k = aType.getDimSize(rank - 1);
    Type element = aType.getElementType();
    int64_t bytes = getSharedElementBytes(element);
    std::optional<TensorCores> tensorCores =
        getDotTensorCores(op, launch.numWarps, launch.threadsPerWarp);
    bool wgmma = tensorCores == TensorCores::wgmma, mma = tensorCores == TensorCores::mma;
    if (op.hasFloat8Operands() && !wgmma)
      return op.emitOpError("expected 8-bit float operands only on wgmma "
                            "(kiln-gpu-accelerate-matmul decodes the others)");
    auto aShared = op.getA().getDefiningOp<SharedOperandOp>();
    auto bShared = op.getB().getDefiningOp<SharedOperandOp>();
    if ((aShared || bShared) && !wgmma && !mma)
      return op.emitOpError("expected tensor cores to read operands from pipeline slots");
    std::optional<TensorCoreOperands> tensorCore;
    if (wgmma || mma)
      tensorCore = getTensorCoreOperands(op);
    // B lies K-major ([N][K]) where the instructions cannot transpose it,
    // and where its slot holds it so (the slot verifier refuses an N-major
    // slot of a B that must be K-major).
    if (tensorCore && bShared)
      tensorCore->kMajorB = bShared.getBuffer().getKMajor();
    bool kMajorB = tensorCore && tensorCore->isKMajorB();

    // The operand tiles: in the scratch, or in the pipeline slots that
    // kiln_gpu.shared_operand names.
    Value scratch = getScratchBase(rewriter, loc);
    SharedTile aTile, bTile;
    if (wgmma) {
      // Each tile starts 1024-byte aligned (the swizzle repeats every 8
      // rows of 128 bytes, and the hardware reads the phase from the
      // address); an asynchronous dot (kiln-gpu-async-dots) uses its half
      // of the scratch.
      int64_t start = getWgmmaBuffer(op).value_or(0) * getDotOpScratchBytes(op) / 2;
      aTile = getOperandTile(true, {m, k}, bytes, scratch, start);
      bTile = getOperandTile(true, kMajorB ? SmallVector<int64_t>{n, k} : SmallVector<int64_t>{k, n},
                             bytes, scratch, start + (aTile.bytes() + 1023) / 1024 * 1024);
    } else {
      aTile = SharedTile::get(0, batch * m, k, bytes, mma);
      bTile = kMajorB ? SharedTile::get(alignTo16(aTile.bytes()), batch * n, k, bytes, mma)
                      : SharedTile::get(alignTo16(aTile.bytes()), batch * k, n, bytes, mma);
      aTile.base = bTile.base = scratch;
    }
    if (aShared)
      aTile = getSlotTile(rewriter, loc, aShared.getBuffer(),
                          rewriter.getRemappedValue(aShared.getSlot()), aType, pipelineStart);
    if (bShared)
      bTile = getSlotTile(rewriter, loc, bShared.getBuffer(),
                          rewriter.getRemappedValue(bShared.getSlot()), bType, pipelineStart);

    if (wgmma) {
      Value result =
          lowerWithWgmma(op, adaptor, rewriter, *tensorCore, aTile, bTile, aShared, bShared);
      if (!result)
        return failure();
      rewriter.replaceOp(op, result);
      return success();
    }
    // Each use of the scratch starts with a barrier: earlier readers are
    // done. (Pipeline slots are ready: kiln_gpu.async_wait synchronized.)
    if (!aShared || !bShared) {
      bool round = tensorCore && tensorCore->roundsToTf32();
      emitBarrier(rewriter, loc);
      if (!aShared)
        storeOperandTile(rewriter, loc, adaptor.getA(), aType, aTile, launch,
                         /*rowMap=*/nullptr, /*transposed=*/false, round);
      if (!bShared)
        storeOperandTile(rewriter, loc, adaptor.getB(), bType, bTile, launch,
                         /*rowMap=*/nullptr, kMajorB, round);
      emitBarrier(rewriter, loc);
    }

    Value result = mma ? lowerWithMma(op, adaptor, rewriter, *tensorCore, aTile, bTile)
                       : lowerWithFma(op, adaptor, rewriter, aTile, bTile);
    if (!result)
      return failure();
    rewriter.replaceOp(op, result);
    return success();
  }

  static int64_t alignTo16(int64_t v) { return (v + 15) / 16 * 16; }

  /// mma.sync (m16n8k16 for f16 and bf16, m16n8k8 for tf32, m16n8k32 for
  /// s8) over the warp's tiles, operands through ldmatrix: each 8x8 matrix
  /// of 16-bit elements it loads is 8 rows of 16 bytes, whichever the
  /// element type, and leaves each thread the 4 bytes of row lane / 4 that
  /// the instructions want. A batched dot does each batch in turn, its
  /// tiles stacked along the rows of the shared ones.
  Value lowerWithMma(DotOp op, OpAdaptor adaptor, ConversionPatternRewriter &b,
                     const TensorCoreOperands &tensorCore, const SharedTile &aTile,
                     const SharedTile &bTile) const {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    auto layout = cast<BlockedEncodingAttr>(type.getEncoding());
    unsigned rank = type.getRank();
    int64_t batches = rank == 3 ? type.getDimSize(0) : 1;
    int64_t m = type.getDimSize(rank - 2), n = type.getDimSize(rank - 1);
    int64_t k = op.getA().getType().getDimSize(rank - 1);
    // Elements in the 16 bytes of a matrix row; an instruction's K is two.
    int64_t chunk = 16 / tensorCore.elementBytes;
    // Warps beyond the block's 8-column tiles hold copies of the first ones'
    // elements (getMmaAccumulatorLayout) and compute them alike.
    unsigned warpsM = layout.getWarpsPerCTA()[rank - 2], warpsN = layout.getWarpsPerCTA()[rank - 1];
    unsigned layoutWarpsN = warpsN;
    warpsN = std::min<int64_t>(warpsN, n / 8);
    int64_t repsM = m / (8 * warpsM), repsN = n / (8 * warpsN);
    auto constant = [&](int64_t v) { return createI32Constant(b, loc, v); };
    Type i32 = b.getI32Type(), f32 = b.getF32Type();

    Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
    Value lane = LLVM::URemOp::create(b, loc, tid, constant(32));
    Value warp = LLVM::UDivOp::create(b, loc, tid, constant(32));
    Value warpN = LLVM::URemOp::create(b, loc, warp, constant(warpsN));
    Value warpM = LLVM::URemOp::create(
        b, loc, LLVM::UDivOp::create(b, loc, warp, constant(layoutWarpsN)), constant(warpsM));
    Value rowInGroup = LLVM::URemOp::create(b, loc, lane, constant(8)); // ldmatrix row
    Value matrix = LLVM::UDivOp::create(b, loc, lane, constant(8));     // its matrix
    Value matrixLow = LLVM::URemOp::create(b, loc, matrix, constant(2));
    Value matrixHigh = LLVM::UDivOp::create(b, loc, matrix, constant(2));

    // The accumulator: element (batch, rep m, rep n, j) of the blocked
    // layout is register j + 2 * (rep n + repsN * (rep m + repsM * batch)).
    // f16 accumulators stay f16: the instructions take each row's pair of
    // columns as one f16x2 register.
    Value converted = adaptor.getC();
    SmallVector<Value> acc = unpackElements(b, loc, converted);
    bool f16Acc = type.getElementType().isF16();

    auto ldmatrix = [&](Value row, Value col, const SharedTile &tile, int count,
                        bool transpose) {
      Value offset = tile.emitOffset(b, loc, row, col);
      Value address = getSharedAddress(b, loc, tile.base, offset);
      SmallVector<Type> fields(count, i32);
      Type resultType = LLVM::LLVMStructType::getLiteral(b.getContext(), fields);
      Value loaded = NVVM::LdMatrixOp::create(
          b, loc, resultType, address, count,
          transpose ? NVVM::MMALayout::col : NVVM::MMALayout::row,
          NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
          NVVM::LdStMatrixEltType::B16);
      SmallVector<Value> regs;
      for (int i = 0; i < count; ++i)
        regs.push_back(LLVM::ExtractValueOp::create(b, loc, loaded, i));
      return regs;
    };

    // Integer products saturate at the s32 bounds (.satfinite).
    std::string accKind = tensorCore.integer ? "s32" : f16Acc ? "f16" : "f32";
    int accRegs = f16Acc ? 2 : 4;
    std::string text = "mma.sync.aligned.m16n8k" + std::to_string(tensorCore.instructionK()) +
                       ".row.col." + (tensorCore.integer ? "satfinite." : "") + accKind + "." +
                       tensorCore.ptxType.str() + "." + tensorCore.bPtxType.str() + "." + accKind +
                       (f16Acc ? " {$0,$1}, {$2,$3,$4,$5}, {$6,$7}, {$8,$9};"
                               : " {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};");
    Type accType = tensorCore.integer || f16Acc ? i32 : f32;
    Type mmaResult = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                      SmallVector<Type>(accRegs, accType));
    std::string constraints = getTiedConstraints(accRegs, ",r,r,r,r,r,r",
                                                 tensorCore.integer || f16Acc ? 'r' : 'f');
    // tf32x3: each fragment register as its tf32 high part and the tf32
    // rounding of what is left.
    auto split = [&](ArrayRef<Value> regs) {
      std::pair<SmallVector<Value>, SmallVector<Value>> parts;
      Type pair = LLVM::LLVMStructType::getLiteral(b.getContext(), {i32, i32});
      for (Value reg : regs) {
        Value both = createInlineAsm(
            b, loc, /*hasSideEffects=*/false, pair, {reg},
            "{\n.reg .f32 rest;\ncvt.rna.tf32.f32 $0, $2;\nsub.f32 rest, $2, $0;\n"
            "cvt.rna.tf32.f32 $1, rest;\n}",
            "=r,=r,r");
        parts.first.push_back(LLVM::ExtractValueOp::create(b, loc, both, 0));
        parts.second.push_back(LLVM::ExtractValueOp::create(b, loc, both, 1));
      }
      return parts;
    };

    int64_t tilesM = repsM / 2;
    int64_t steps = k / tensorCore.instructionK();
    for (int64_t iteration = 0; iteration < batches * steps; ++iteration) {
      int64_t batch = iteration / steps, step = iteration % steps;
      // A fragments: matrix q of the x4 load is rows (rep 2i + q % 2),
      // column chunk 2 step + q / 2.
      SmallVector<SmallVector<Value>> aFragments;
      for (int64_t i = 0; i < tilesM; ++i) {
        Value rep = LLVM::AddOp::create(b, loc, constant(2 * i), matrixLow);
        Value row = LLVM::AddOp::create(
            b, loc,
            LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, warpM, constant(8)),
                                LLVM::MulOp::create(b, loc, rep, constant(8 * warpsM))),
            LLVM::AddOp::create(b, loc, rowInGroup, constant(batch * m)));
        Value col = LLVM::MulOp::create(
            b, loc, LLVM::AddOp::create(b, loc, constant(2 * step), matrixHigh),
            constant(chunk));
        aFragments.push_back(ldmatrix(row, col, aTile, 4, /*transpose=*/false));
      }
      // B fragments, two column tiles per x4 load. [K][N] (16-bit, loaded
      // transposed): matrix q is rows 16 step + 8 (q % 2) of column tile
      // (rep n + q / 2). [N][K]: matrix q is rows of column tile
      // (rep n + q / 2), column chunk 2 step + q % 2.
      SmallVector<SmallVector<Value>> bFragments;
      Value kRow = LLVM::AddOp::create(
          b, loc, LLVM::AddOp::create(b, loc, constant(batch * k + 16 * step),
                                      LLVM::MulOp::create(b, loc, matrixLow, constant(8))),
          rowInGroup);
      Value kCol = LLVM::MulOp::create(
          b, loc, LLVM::AddOp::create(b, loc, constant(2 * step), matrixLow), constant(chunk));
      for (int64_t rep = 0; rep < repsN; rep += 2) {
        bool pair = rep + 1 < repsN;
        Value tile = pair ? LLVM::AddOp::create(b, loc, constant(rep), matrixHigh)
                          : constant(rep);
        Value nStart = LLVM::MulOp::create(
            b, loc,
            LLVM::AddOp::create(b, loc, warpN, LLVM::MulOp::create(b, loc, tile, constant(warpsN))),
            constant(8));
        SmallVector<Value> regs =
            tensorCore.isKMajorB()
                ? ldmatrix(LLVM::AddOp::create(b, loc, nStart,
                                               LLVM::AddOp::create(b, loc, rowInGroup,
                                                                   constant(batch * n))),
                           kCol, bTile, pair ? 4 : 2, /*transpose=*/false)
                : ldmatrix(kRow, nStart, bTile, pair ? 4 : 2, /*transpose=*/true);
        bFragments.push_back({regs[0], regs[1]});
        if (pair)
          bFragments.push_back({regs[2], regs[3]});
      }
      auto issue = [&](int64_t i, int64_t rep, ArrayRef<Value> aRegs, ArrayRef<Value> bRegs) {
        int64_t top = 2 * (rep + repsN * (2 * i + repsM * batch));
        int64_t bottom = 2 * (rep + repsN * (2 * i + 1 + repsM * batch));
        SmallVector<Value> operands(aRegs);
        llvm::append_range(operands, bRegs);
        if (f16Acc) {
          operands.append({packHalves(b, loc, acc[top], acc[top + 1]),
                           packHalves(b, loc, acc[bottom], acc[bottom + 1])});
        } else {
          operands.append({acc[top], acc[top + 1], acc[bottom], acc[bottom + 1]});
        }
        Value d = createInlineAsm(b, loc, /*hasSideEffects=*/false, mmaResult, operands, text,
                                  constraints);
        if (f16Acc) {
          std::tie(acc[top], acc[top + 1]) =
              unpackHalves(b, loc, LLVM::ExtractValueOp::create(b, loc, d, 0));
          std::tie(acc[bottom], acc[bottom + 1]) =
              unpackHalves(b, loc, LLVM::ExtractValueOp::create(b, loc, d, 1));
          return;
        }
        acc[top] = LLVM::ExtractValueOp::create(b, loc, d, 0);
        acc[top + 1] = LLVM::ExtractValueOp::create(b, loc, d, 1);
        acc[bottom] = LLVM::ExtractValueOp::create(b, loc, d, 2);
        acc[bottom + 1] = LLVM::ExtractValueOp::create(b, loc, d, 3);
      };
      if (!tensorCore.split) {
        for (int64_t i = 0; i < tilesM; ++i)
          for (int64_t rep = 0; rep < repsN; ++rep)
            issue(i, rep, aFragments[i], bFragments[rep]);
        continue;
      }
      // tf32x3: the two small cross products first, then the large one.
      SmallVector<std::pair<SmallVector<Value>, SmallVector<Value>>> aParts, bParts;
      for (const SmallVector<Value> &regs : aFragments)
        aParts.push_back(split(regs));
      for (const SmallVector<Value> &regs : bFragments)
        bParts.push_back(split(regs));
      for (int64_t i = 0; i < tilesM; ++i)
        for (int64_t rep = 0; rep < repsN; ++rep) {
          issue(i, rep, aParts[i].second, bParts[rep].first);
          issue(i, rep, aParts[i].first, bParts[rep].second);
          issue(i, rep, aParts[i].first, bParts[rep].first);
        }
    }
    return packElements(b, loc, getTypeConverter()->convertType(type), acc);
  }

  /// Two f16 values as the f16x2 register the instructions take: `low` in
  /// the low half.
  static Value packHalves(OpBuilder &b, Location loc, Value low, Value high) {
    auto vector = VectorType::get({2}, b.getF16Type());
    Value pair = LLVM::PoisonOp::create(b, loc, vector);
    pair = LLVM::InsertElementOp::create(b, loc, pair, low, createI32Constant(b, loc, 0));
    pair = LLVM::InsertElementOp::create(b, loc, pair, high, createI32Constant(b, loc, 1));
    return LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair);
  }

  /// The two f16 values of an f16x2 register, low half first.
  static std::pair<Value, Value> unpackHalves(OpBuilder &b, Location loc, Value reg) {
    auto vector = VectorType::get({2}, b.getF16Type());
    Value pair = LLVM::BitcastOp::create(b, loc, vector, reg);
    return {LLVM::ExtractElementOp::create(b, loc, pair, createI32Constant(b, loc, 0)),
            LLVM::ExtractElementOp::create(b, loc, pair, createI32Constant(b, loc, 1))};
  }

  /// A wgmma shared-memory matrix descriptor for a tile starting at
  /// `address` (an i32 shared-space byte address).
  static Value emitDescriptor(OpBuilder &b, Location loc, Value address,
                              const SharedTile &tile, int64_t leadingBytes) {
    Type i64 = b.getI64Type();
    auto constant64 = [&](int64_t v) {
      return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
    };
    int64_t swizzleMode = tile.rowBytes() == 128 ? 1 : tile.rowBytes() == 64 ? 2 : 3;
    int64_t strideBytes = 8 * tile.rowBytes(); // between 8-row groups
    int64_t fields = (((leadingBytes >> 4) & 0x3FFF) << 16) |
                     (((strideBytes >> 4) & 0x3FFF) << 32) | (swizzleMode << 62);
    Value start = LLVM::ZExtOp::create(b, loc, i64, address);
    start = LLVM::AndOp::create(
        b, loc, LLVM::LShrOp::create(b, loc, start, constant64(4)), constant64(0x3FFF));
    return LLVM::OrOp::create(b, loc, start, constant64(fields));
  }

  /// wgmma.mma_async (m64nNk16 for f16 and bf16, m64nNk8 for tf32, m64nNk32
  /// for s8, e4m3 and e5m2: 32 bytes of K each) per warpgroup and 64-row
  /// tile, operands read by descriptors from the swizzled shared tiles: A
  /// [M][K] K-major, B [K][N] N-major in blocks of 64 columns for 16-bit
  /// types, else (or from a K-major slot) [N][K] K-major: wgmma transposes
  /// only 16-bit operands. Operands not `shared` (in a pipeline slot) are
  /// stored into their tiles first.
  Value lowerWithWgmma(DotOp op, OpAdaptor adaptor, ConversionPatternRewriter &b,
                       const TensorCoreOperands &tensorCore, const SharedTile &aTile,
                       const SharedTile &bTile, bool aShared, bool bShared) const {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t m = type.getDimSize(0), n = type.getDimSize(1);
    int64_t k = op.getA().getType().getDimSize(1);
    int numWarps = launch.numWarps;
    int64_t repsM = m / (8 * numWarps), repsN = n / 8;
    int64_t tilesPerGroup = repsM / 2;
    auto constant = [&](int64_t v) { return createI32Constant(b, loc, v); };
    Type i32 = b.getI32Type(), f32 = b.getF32Type();

    // Operands in registers go through the scratch (those in pipeline
    // slots are there already: kiln_gpu.async_wait made them visible).
    if (!aShared || !bShared) {
      emitBarrier(b, loc);
      if (!aShared)
        storeOperandTile(b, loc, adaptor.getA(), op.getA().getType(), aTile, launch,
                         getWgmmaRowMap(numWarps, m), /*transposed=*/false,
                         tensorCore.roundsToTf32());
      if (!bShared)
        storeOperandTile(b, loc, adaptor.getB(), op.getB().getType(), bTile, launch,
                         /*rowMap=*/nullptr, tensorCore.isKMajorB(), tensorCore.roundsToTf32());
      // The stores are the generic proxy's; wgmma reads through the async one.
      createInlineAsm(b, loc, /*hasSideEffects=*/true, LLVM::LLVMVoidType::get(b.getContext()),
                      {}, "fence.proxy.async.shared::cta;", "");
      emitBarrier(b, loc);
    }

    SmallVector<Value> acc = unpackElements(b, loc, adaptor.getC());
    bool f16Acc = type.getElementType().isF16();

    Value aBase = LLVM::PtrToIntOp::create(b, loc, i32, aTile.base);
    Value bBase = LLVM::PtrToIntOp::create(b, loc, i32, bTile.base);
    Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
    Value group = LLVM::UDivOp::create(b, loc, tid, constant(128));
    auto voidType = LLVM::LLVMVoidType::get(b.getContext());
    createInlineAsm(b, loc, true, voidType, {}, "wgmma.fence.sync.aligned;", "");

    // Accumulator registers per thread per instruction: f16 ones hold a
    // row's pair of columns each (f16x2). Integer products saturate at the
    // s32 bounds (.satfinite).
    int64_t outputs = f16Acc ? n / 4 : n / 2;
    std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(outputs + 2) +
                       ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k" +
                       std::to_string(tensorCore.instructionK()) +
                       (tensorCore.integer ? ".satfinite.s32." : f16Acc ? ".f16." : ".f32.") +
                       tensorCore.ptxType.str() + "." +
                       tensorCore.bPtxType.str() + " {";
    for (int64_t i = 0; i < outputs; ++i)
      text += (i ? ",$" : "$") + std::to_string(i);
    // scale-d, then for floats (8-bit ones too) the scales of A and B (1),
    // then for 16-bit types whether A and B are transposed (B where it is
    // N-major).
    text += "}, $" + std::to_string(outputs) + ", $" + std::to_string(outputs + 1) + ", p" +
            (tensorCore.integer ? "" : ", 1, 1") +
            (tensorCore.elementBytes != 2 ? "" : tensorCore.isKMajorB() ? ", 0, 0" : ", 0, 1") +
            ";\n}";
    // The descriptors of A and B, scale-d, then the accumulators in place.
    Type accType = tensorCore.integer || f16Acc ? i32 : f32;
    std::string constraints =
        getTiedConstraints(outputs, ",l,l,r", tensorCore.integer || f16Acc ? 'r' : 'f');
    SmallVector<Type> fields(outputs, accType);
    Type resultType = LLVM::LLVMStructType::getLiteral(b.getContext(), fields);
    Value one = constant(1), zero = constant(0);

    // fp8 with max_num_imprecise_acc at most K (Triton's promotion): each
    // run of `promoteSteps` instructions accumulates from zero into partial
    // sums, added to the fp32 accumulator once the run is done, so that at
    // most that many products are summed at the instructions' precision.
    int64_t steps = k / tensorCore.instructionK();
    int64_t promoteSteps = steps;
    // (An f16 accumulator is no more precise than the instructions: never
    // promoted.)
    bool promotes = op.hasFloat8Operands() && op.getMaxNumImpreciseAcc() <= k && !f16Acc;
    if (promotes)
      promoteSteps =
          std::max<int64_t>(1, op.getMaxNumImpreciseAcc() / tensorCore.instructionK());
    // The registers the instructions accumulate into: f16 pairs packed
    // (elements 2p and 2p + 1, a row's two columns, are register p).
    SmallVector<Value> sums;
    if (f16Acc) {
      for (size_t p = 0; p < acc.size() / 2; ++p)
        sums.push_back(packHalves(b, loc, acc[2 * p], acc[2 * p + 1]));
    } else {
      sums = acc;
    }

    // Register of instruction output (col group i, half h, j) in the
    // thread's blocked elements, for 64-row tile t of its warpgroup.
    auto elementIndex = [&](int64_t t, int64_t i, int64_t h, int64_t j) {
      return j + 2 * (i + repsN * (2 * t + h));
    };
    // Where column `kStart` of a K-major tile lies: its block's offset and
    // the byte in the block's rows.
    auto kMajorOffset = [](const SharedTile &tile, int64_t kStart) {
      return tile.byteOffset + kStart / tile.colsPerBlock * tile.blockBytes() +
             kStart % tile.colsPerBlock * tile.elementBytes;
    };
    for (int64_t step = 0; step < steps; ++step) {
      int64_t kStart = tensorCore.instructionK() * step;
      bool restart = promotes && step % promoteSteps == 0;
      // B N-major: rows kStart.. of every 64-column block (blocks LBO
      // apart). K-major: all N rows, columns kStart...
      Value bDesc;
      if (tensorCore.isKMajorB()) {
        Value bAddress = LLVM::AddOp::create(b, loc, bBase, constant(kMajorOffset(bTile, kStart)));
        bDesc = emitDescriptor(b, loc, bAddress, bTile, /*leadingBytes=*/16);
      } else {
        Value bAddress = LLVM::AddOp::create(
            b, loc, bBase, constant(bTile.byteOffset + kStart * bTile.rowBytes()));
        bDesc = emitDescriptor(b, loc, bAddress, bTile, bTile.blockBytes());
      }
      for (int64_t t = 0; t < tilesPerGroup; ++t) {
        // A: 64 rows of this warpgroup's tile t, columns kStart...
        Value rowStart = LLVM::MulOp::create(
            b, loc,
            LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, group, constant(tilesPerGroup)),
                                constant(t)),
            constant(64 * aTile.rowBytes()));
        Value aAddress = LLVM::AddOp::create(b, loc, LLVM::AddOp::create(b, loc, aBase, rowStart),
                                             constant(kMajorOffset(aTile, kStart)));
        Value aDesc = emitDescriptor(b, loc, aAddress, aTile, /*leadingBytes=*/16);
        SmallVector<Value> operands{aDesc, bDesc, restart ? zero : one};
        // Register of output (i, h, j): f16 pairs share one.
        auto sumIndex = [&](int64_t i, int64_t h, int64_t j) {
          return f16Acc ? elementIndex(t, i, h, 0) / 2 : elementIndex(t, i, h, j);
        };
        int64_t perHalf = f16Acc ? 1 : 2;
        for (int64_t i = 0; i < repsN; ++i)
          for (int64_t h = 0; h < 2; ++h)
            for (int64_t j = 0; j < perHalf; ++j)
              operands.push_back(sums[sumIndex(i, h, j)]);
        Value d = createInlineAsm(b, loc, /*hasSideEffects=*/true, resultType, operands,
                                  text, constraints);
        int64_t r = 0;
        for (int64_t i = 0; i < repsN; ++i)
          for (int64_t h = 0; h < 2; ++h)
            for (int64_t j = 0; j < perHalf; ++j)
              sums[sumIndex(i, h, j)] = LLVM::ExtractValueOp::create(b, loc, d, r++);
      }
      if (promotes && (step % promoteSteps == promoteSteps - 1 || step == steps - 1)) {
        createInlineAsm(b, loc, true, voidType, {}, "wgmma.commit_group.sync.aligned;", "");
        sums = emitWaitAll(b, loc, sums);
        for (auto [total, part] : llvm::zip(acc, sums))
          total = LLVM::FAddOp::create(b, loc, total, part);
      }
    }
    // Promoting, every group is complete and `acc` holds the sums.
    if (!promotes) {
      createInlineAsm(b, loc, true, voidType, {}, "wgmma.commit_group.sync.aligned;", "");
      // (f16 accumulators are never in flight: see getAccumulatingDot.)
      if (getWgmmaBuffer(op) && !f16Acc) {
        // Asynchronous: only the previous dot's group, which read the
        // other half of the scratch, must be done. The accumulators are in
        // flight: the next wgmma chains on them, kiln_gpu.async_dot_wait
        // reads them.
        createInlineAsm(b, loc, true, voidType, {}, "wgmma.wait_group.sync.aligned 1;", "");
        acc = sums;
      } else {
        // The wait returns the accumulators, so that nothing reads them
        // before.
        acc = emitWaitAll(b, loc, sums);
      }
    }
    if (f16Acc) {
      SmallVector<Value> halves;
      for (Value reg : acc) {
        auto [low, high] = unpackHalves(b, loc, reg);
        halves.append({low, high});
      }
      acc = halves;
    }
    return packElements(b, loc, getTypeConverter()->convertType(type), acc);
  }

  /// Per k, each thread's distinct A rows and B columns, multiply-added into
  /// its accumulator elements.
  Value lowerWithFma(DotOp op, OpAdaptor adaptor, ConversionPatternRewriter &b,
                     const SharedTile &aTile, const SharedTile &bTile) const {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    auto layout = dyn_cast<BlockedEncodingAttr>(type.getEncoding());
    if (!layout) {
      op.emitOpError("expected a blocked result layout");
      return {};
    }
    unsigned rank = type.getRank();
    int64_t k = op.getA().getType().getDimSize(rank - 1);
    int64_t m = type.getDimSize(rank - 2);
    Type element = op.getA().getType().getElementType();
    Type accElement = type.getElementType();
    bool isInt = isa<IntegerType>(accElement);
    // f64 dots accumulate in f64, every other float dot in f32.
    Type computeType = isInt || accElement.isF64() ? accElement : b.getF32Type();

    SmallVector<Value> acc = unpackElements(b, loc, adaptor.getC());
    if (accElement.isF16())
      for (Value &v : acc)
        v = LLVM::FPExtOp::create(b, loc, computeType, v);
    SmallVector<Value> coords = emitBlockCoordinates(b, loc, type, launch);
    SmallVector<SmallVector<Value>> coordOf(rank);
    for (unsigned d = 0; d < rank; ++d)
      coordOf[d] = unpackElements(b, loc, coords[d]);
    SmallVector<SmallVector<int32_t>> offsets = getElementOffsets(layout, type.getShape());

    // Distinct (batch, row) and (batch, column) of the thread's elements,
    // by their static offsets: equal offsets are equal coordinates.
    auto keyOf = [&](size_t e, unsigned dim) {
      return std::make_pair(rank == 3 ? offsets[0][e] : 0, offsets[dim][e]);
    };
    llvm::MapVector<std::pair<int32_t, int32_t>, size_t> rows, cols;
    for (size_t e = 0; e < acc.size(); ++e) {
      rows.insert({keyOf(e, rank - 2), e});
      cols.insert({keyOf(e, rank - 1), e});
    }
    auto extend = [&](Value v) -> Value {
      if (isInt)
        return LLVM::SExtOp::create(b, loc, computeType, v);
      if (v.getType() == computeType)
        return v;
      return LLVM::FPExtOp::create(b, loc, computeType, v);
    };
    auto batchRow = [&](size_t e, int64_t extent, Value row) -> Value {
      if (rank != 3)
        return row;
      return LLVM::AddOp::create(
          b, loc, row,
          LLVM::MulOp::create(b, loc, coordOf[0][e], createI32Constant(b, loc, extent)));
    };

    for (int64_t kk = 0; kk < k; ++kk) {
      Value kValue = createI32Constant(b, loc, kk);
      DenseMap<std::pair<int32_t, int32_t>, Value> aValues, bValues;
      for (auto [key, e] : rows) {
        Value row = batchRow(e, m, coordOf[rank - 2][e]);
        Value at = getSharedAddress(b, loc, aTile.base, aTile.emitOffset(b, loc, row, kValue));
        aValues[key] = extend(LLVM::LoadOp::create(b, loc, element, at));
      }
      for (auto [key, e] : cols) {
        Value row = batchRow(e, k, kValue);
        Value at = getSharedAddress(b, loc, bTile.base,
                                    bTile.emitOffset(b, loc, row, coordOf[rank - 1][e]));
        bValues[key] = extend(LLVM::LoadOp::create(b, loc, element, at));
      }
      for (size_t e = 0; e < acc.size(); ++e) {
        Value x = aValues[keyOf(e, rank - 2)], y = bValues[keyOf(e, rank - 1)];
        if (isInt)
          acc[e] = LLVM::AddOp::create(b, loc, acc[e], LLVM::MulOp::create(b, loc, x, y));
        else
          acc[e] = LLVM::FMAOp::create(b, loc, x, y, acc[e]);
      }
    }
    if (accElement.isF16())
      for (Value &v : acc)
        v = LLVM::FPTruncOp::create(b, loc, accElement, v);
    return packElements(b, loc, getTypeConverter()->convertType(type), acc);
  }

  LaunchShape launch;
  int64_t pipelineStart;
};

} // namespace

int64_t mlir::kiln::gpu::getDotOpScratchBytes(Operation *op) {
  auto dot = dyn_cast<DotOp>(op);
  // Operands in pipeline slots need none.
  if (!dot || (dot.getA().getDefiningOp<SharedOperandOp>() &&
               dot.getB().getDefiningOp<SharedOperandOp>()))
    return 0;
  int64_t bytes = getSharedElementBytes(dot.getA().getType().getElementType());
  // Room for the wgmma tiles' 1024-byte alignment of B, whichever way it goes.
  auto alignTo1024 = [](int64_t v) { return (v + 1023) / 1024 * 1024; };
  int64_t aBytes = alignTo1024(dot.getA().getType().getNumElements() * bytes);
  int64_t tiles = aBytes + dot.getB().getType().getNumElements() * bytes;
  // An asynchronous dot has two halves, one per buffer.
  return getWgmmaBuffer(dot) ? 2 * alignTo1024(tiles) : tiles;
}

int64_t mlir::kiln::gpu::getPipelineBytes(ModuleOp module) {
  int64_t bytes = 0;
  module.walk([&](Operation *op) {
    if (auto copy = dyn_cast<AsyncCopyOp>(op))
      bytes = std::max(bytes, copy.getBuffer().getEnd());
    else if (auto shared = dyn_cast<SharedOperandOp>(op))
      bytes = std::max(bytes, shared.getBuffer().getEnd());
    else if (auto barriers = dyn_cast<InitTmaBarriersOp>(op))
      bytes = std::max<int64_t>(bytes, barriers.getOffset() + 8 * int64_t(barriers.getCount()));
  });
  return bytes;
}

void mlir::kiln::gpu::populateDotOpToLLVMPatterns(
    KilnGPUToLLVMTypeConverter &converter, RewritePatternSet &patterns,
    const LaunchShape &launch, const AccessWidths &widths, int64_t pipelineStart) {
  patterns.add<DotOpLowering>(converter, launch, pipelineStart);
  patterns.add<AsyncCopyOpLowering>(converter, launch, widths, pipelineStart);
  patterns.add<AsyncTmaCopyOpLowering>(converter, launch, pipelineStart);
  patterns.add<InitTmaBarriersOpLowering, WaitTmaBarrierOpLowering, InvalTmaBarriersOpLowering>(
      converter, pipelineStart);
  patterns.add<AsyncDotWaitOpLowering, AsyncCommitGroupOpLowering, AsyncWaitOpLowering,
               SharedOperandOpLowering>(converter);
}
