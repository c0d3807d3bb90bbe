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
// This file places the operand tiles and dispatches; each instruction
// family lives in its own file (see DotOpToLLVM.h).
//
//===----------------------------------------------------------------------===//

#include "DotOpToLLVM.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"
#include "kiln/Target/NVIDIA/TensorCores.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;
using namespace mlir::kiln::nvidia;

SharedTile mlir::kiln::gpu::getOperandTile(bool wgmma, ArrayRef<int64_t> shape,
                                           int64_t elementBytes, Value base,
                                           int64_t byteOffset) {
  SharedTile tile = SharedTile::get(byteOffset, shape[0], shape[1], elementBytes,
                                    /*swizzle=*/true, /*blockBytes=*/wgmma ? 128 : 0);
  tile.base = base;
  return tile;
}

RowMap mlir::kiln::gpu::getWgmmaRowMap(int numWarps, int64_t m) {
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

SharedTile mlir::kiln::gpu::getSlotTile(OpBuilder &b, Location loc, OperandBufferAttr buffer,
                                        Value slot, RankedTensorType type,
                                        int64_t pipelineStart) {
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


void mlir::kiln::gpu::storeOperandTile(OpBuilder &b, Location loc, Value converted,
                                       RankedTensorType type, const SharedTile &tile,
                                       const LaunchShape &launch, const RowMap &rowMap,
                                       bool transposed, bool roundToTf32) {
  Value base = tile.base;
  SmallVector<Value> values = unpackElements(b, loc, converted);
  if (roundToTf32)
    for (Value &v : values)
      v = LLVM::BitcastOp::create(
          b, loc, b.getF32Type(),
          NVVM::ConvertFloatToTF32Op::create(b, loc, b.getI32Type(), v,
                                             NVVM::FPRoundingMode::RNA));
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


std::optional<int64_t> mlir::kiln::gpu::getWgmmaBuffer(DotOp op) {
  if (auto buffer = op->getAttrOfType<IntegerAttr>(KilnGPUDialect::getWgmmaBufferAttrName()))
    return buffer.getInt();
  return std::nullopt;
}


Value mlir::kiln::gpu::packPair(OpBuilder &b, Location loc, Value low, Value high) {
  auto vector = VectorType::get({2}, low.getType());
  Value pair = LLVM::PoisonOp::create(b, loc, vector);
  pair = LLVM::InsertElementOp::create(b, loc, pair, low, createI32Constant(b, loc, 0));
  pair = LLVM::InsertElementOp::create(b, loc, pair, high, createI32Constant(b, loc, 1));
  return LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair);
}


std::pair<Value, Value> mlir::kiln::gpu::unpackHalves(OpBuilder &b, Location loc, Value reg) {
  auto vector = VectorType::get({2}, b.getF16Type());
  Value pair = LLVM::BitcastOp::create(b, loc, vector, reg);
  return {LLVM::ExtractElementOp::create(b, loc, pair, createI32Constant(b, loc, 0)),
          LLVM::ExtractElementOp::create(b, loc, pair, createI32Constant(b, loc, 1))};
}


namespace {

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
    DotScratchPlan plan = getDotScratchPlan(op, launch.numWarps, launch.threadsPerWarp);
    SharedTile aTile, bTile;
    if (wgmma) {
      // An asynchronous dot (kiln-gpu-async-dots) uses its half of the
      // scratch.
      int64_t start = getWgmmaBuffer(op).value_or(0) * plan.bytes / 2;
      aTile = getOperandTile(true, {m, k}, bytes, scratch, start);
      bTile = getOperandTile(true, kMajorB ? SmallVector<int64_t>{n, k} : SmallVector<int64_t>{k, n},
                             bytes, scratch, start + plan.wgmmaBOffset);
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
      Value result = lowerDotWithWgmma(op, adaptor, rewriter, *getTypeConverter(), launch,
                                       *tensorCore, aTile, bTile, plan);
      if (!result)
        return failure();
      rewriter.replaceOp(op, result);
      return success();
    }
    // Each use of the scratch starts with a barrier: earlier readers are
    // done. (Pipeline slots are ready: kiln_gpu.async_wait synchronized.)
    if (plan.aStored || plan.bStored) {
      bool round = tensorCore && tensorCore->roundsToTf32();
      emitBarrier(rewriter, loc);
      if (plan.aStored)
        storeOperandTile(rewriter, loc, adaptor.getA(), aType, aTile, launch,
                         /*rowMap=*/nullptr, /*transposed=*/false, round);
      if (plan.bStored)
        storeOperandTile(rewriter, loc, adaptor.getB(), bType, bTile, launch,
                         /*rowMap=*/nullptr, kMajorB, round);
      emitBarrier(rewriter, loc);
    }

    Value result = mma ? lowerDotWithMma(op, adaptor, rewriter, *getTypeConverter(), launch,
                                         *tensorCore, aTile, bTile)
                       : lowerDotWithFma(op, adaptor, rewriter, *getTypeConverter(), launch,
                                         aTile, bTile);
    if (!result)
      return failure();
    rewriter.replaceOp(op, result);
    return success();
  }

  static int64_t alignTo16(int64_t v) { return (v + 15) / 16 * 16; }

  LaunchShape launch;
  int64_t pipelineStart;
};

} // namespace

DotScratchPlan mlir::kiln::gpu::getDotScratchPlan(DotOp dot, int numWarps, int threadsPerWarp) {
  DotScratchPlan plan;
  plan.aInRegisters = readsWgmmaAFromRegisters(dot, numWarps, threadsPerWarp);
  plan.aStored = storesAInScratch(dot, numWarps, threadsPerWarp);
  plan.bStored = storesBInScratch(dot);
  auto alignTo1024 = [](int64_t v) { return (v + 1023) / 1024 * 1024; };
  int64_t bytes = getSharedElementBytes(dot.getA().getType().getElementType());
  // (A read from registers takes no room.)
  plan.wgmmaBOffset =
      plan.aInRegisters ? 0 : alignTo1024(dot.getA().getType().getNumElements() * bytes);
  if (!plan.aStored && !plan.bStored)
    return plan;
  // Room for the wgmma tiles' 1024-byte alignment of B, whichever way it
  // goes (more than mma.sync's tiles need).
  int64_t tiles = plan.wgmmaBOffset + dot.getB().getType().getNumElements() * bytes;
  // An asynchronous dot has two halves, one per buffer.
  plan.bytes = getWgmmaBuffer(dot) ? 2 * alignTo1024(tiles) : tiles;
  return plan;
}

int64_t mlir::kiln::gpu::getDotOpScratchBytes(Operation *op) {
  auto dot = dyn_cast<DotOp>(op);
  if (!dot)
    return 0;
  auto module = dot->getParentOfType<ModuleOp>();
  return getDotScratchPlan(dot, getNumWarps(module), getThreadsPerWarp(module)).bytes;
}

int64_t mlir::kiln::gpu::getPipelineBytes(ModuleOp module) {
  int64_t bytes = 0;
  module.walk([&](Operation *op) {
    if (std::optional<SlotBytes> written = getWrittenSlotBytes(op))
      bytes = std::max(bytes, written->end);
    else if (auto blockLoad = dyn_cast<LoadBlockOp>(op))
      bytes = std::max(bytes, blockLoad.getBuffer().getEnd());
    else if (auto shared = dyn_cast<SharedOperandOp>(op))
      bytes = std::max(bytes, shared.getBuffer().getEnd());
  });
  return bytes;
}

void mlir::kiln::gpu::populateDotOpToLLVMPatterns(
    KilnGPUToNVVMTypeConverter &converter, RewritePatternSet &patterns,
    const LaunchShape &launch, const AccessWidths &widths, int64_t pipelineStart) {
  patterns.add<DotOpLowering>(converter, launch, pipelineStart);
  populateWgmmaToLLVMPatterns(converter, patterns);
  populateAsyncCopyToLLVMPatterns(converter, patterns, launch, widths, pipelineStart);
  populateTmaToLLVMPatterns(converter, patterns, launch, pipelineStart);
}
