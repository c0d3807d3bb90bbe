//===- TmaToLLVM.cpp - Pipeline slots by the TMA unit -----------------------===//
//
// On sm_90a, operands read through host tensor descriptors reach their
// pipeline slots by the TMA unit: cp.async.bulk.tensor copies boxes of the
// tile and completes transactions on the slot's mbarrier, which the
// consumer waits on by phase. The mbarriers are initialized before the loop
// and invalidated after it. Slots that the threads fill with cp.async can
// complete such mbarriers too (kiln_gpu.async_copy_arrive).
//
//===----------------------------------------------------------------------===//

#include "DotOpToLLVM.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;
using namespace mlir::kiln::nvidia;

namespace {

/// The shared-memory pointer `offset` bytes into the pipeline buffers
/// (which start `pipelineStart` bytes into shared memory), plus `slot`
/// times `stride`.
Value getPipelinePointer(OpBuilder &b, Location loc, int64_t pipelineStart, int64_t offset,
                         Value slot, int64_t stride) {
  Value bytes = LLVM::AddOp::create(
      b, loc, createI32Constant(b, loc, pipelineStart + offset),
      LLVM::MulOp::create(b, loc, slot, createI32Constant(b, loc, stride)));
  return getSharedAddress(b, loc, getScratchBase(b, loc), bytes);
}

/// getPipelinePointer as the i32 address inline PTX takes.
Value getPipelineAddress(OpBuilder &b, Location loc, int64_t pipelineStart, int64_t offset,
                         Value slot, int64_t stride) {
  return LLVM::PtrToIntOp::create(b, loc, b.getI32Type(),
                                  getPipelinePointer(b, loc, pipelineStart, offset, slot, stride));
}

/// An i32 that is 1 where `condition` holds, for an inline-asm predicate.
Value predicateOperand(OpBuilder &b, Location loc, Value condition) {
  return LLVM::ZExtOp::create(b, loc, b.getI32Type(), condition);
}

/// Thread 0, under a branch, calls `emit` with the shared-memory address
/// of each of the `count` mbarriers `offset` bytes into the pipeline
/// buffers (which start `pipelineStart` bytes into shared memory), then
/// `after` (if any). They run once per kernel, before and after the loop.
void emitOnEachBarrier(ConversionPatternRewriter &b, Location loc, int64_t pipelineStart,
                       int64_t offset, int32_t count,
                       function_ref<void(OpBuilder &, Value)> emit,
                       function_ref<void(OpBuilder &)> after = nullptr) {
  emitIf(b, loc, emitIsFirstThread(b, loc), [&](OpBuilder &then) {
    for (int32_t i = 0; i < count; ++i)
      emit(then, getSharedAddress(then, loc, getScratchBase(then, loc),
                                  createI32Constant(then, loc, pipelineStart + offset + 8 * i)));
    if (after)
      after(then);
  });
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
    emitOnEachBarrier(
        b, loc, pipelineStart, op.getOffset(), op.getCount(),
        [&](OpBuilder &then, Value address) {
          NVVM::MBarrierInitOp::create(then, loc, address,
                                       createI32Constant(then, loc, op.getArrivals()),
                                       /*predicate=*/Value());
        },
        [&](OpBuilder &then) { NVVM::FenceMbarrierInitOp::create(then, loc); });
    // Before a warp-specialized kernel's producer warps branch off, they
    // wait too: every thread of the CTA (a barrier the eraser keeps and
    // kiln-nvvm-name-consumer-barriers leaves alone).
    if (op.getAllWarps())
      NVVM::BarrierOp::create(b, loc, Type(), Value(), Value(), NVVM::BarrierReductionAttr(),
                              Value());
    else
      emitBarrier(b, loc);
    b.eraseOp(op);
    return success();
  }

  int64_t pipelineStart;
};

/// kiln_gpu.async_tma_copy: lane 0 of the issuing warp (the first, or the
/// op's `warp`) arrives at the slot's mbarrier expecting the tile's bytes;
/// that warp's lanes each copy a box (or several) of the tile with
/// cp.async.bulk.tensor, into the place the slot's layout gives its first
/// row (A's rows permuted for wgmma, in groups of 8).
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
    // The thread's index within the issuing warp's and those after it.
    Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
    if (std::optional<uint32_t> warp = op.getWarp(); warp && *warp)
      tid = LLVM::SubOp::create(b, loc, tid, c(int64_t(*warp) * launch.threadsPerWarp));
    Value pred = adaptor.getPred();
    Value arrives = LLVM::AndOp::create(
        b, loc, pred, LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, tid, c(0)));
    // Strings here: the predicated forms of NVVM's arrive and bulk tensor
    // copy lower only to inline PTX (MLIR's own); intrinsics would need a branch.
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

/// kiln_gpu.wait_tma_barrier: spins on mbarrier.try_wait.parity (in the
/// lanes of the op's `warp` alone, when it has one), then (unless
/// `perThread`) a barrier.
struct WaitTmaBarrierOpLowering : public ConvertOpToLLVMPattern<WaitTmaBarrierOp> {
  WaitTmaBarrierOpLowering(const LLVMTypeConverter &converter, LaunchShape launch,
                           int64_t pipelineStart)
      : ConvertOpToLLVMPattern(converter), launch(launch), pipelineStart(pipelineStart) {}

  LogicalResult
  matchAndRewrite(WaitTmaBarrierOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value barrier =
        getPipelineAddress(b, loc, pipelineStart, op.getBarriers(), adaptor.getSlot(), 8);
    auto spin = [&](OpBuilder &builder) {
      // A string: NVVM's try_wait.parity loop is MLIR's own inline PTX; its
      // intrinsic form would need the loop built of blocks.
      // The label is local to the braces, so the asm may appear many times.
      createInlineAsm(builder, loc, /*hasSideEffects=*/true,
                      LLVM::LLVMVoidType::get(builder.getContext()), {barrier, adaptor.getPhase()},
                      "{\n.reg .pred done;\nwait_phase:\n"
                      "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
                      "@!done bra wait_phase;\n}",
                      "r,r");
    };
    if (std::optional<uint32_t> warp = op.getWarp()) {
      Type i32 = b.getI32Type();
      Value thread = NVVM::ThreadIdXOp::create(b, loc, i32);
      Value warpIndex = LLVM::UDivOp::create(b, loc, thread,
                                             createI32Constant(b, loc, launch.threadsPerWarp));
      Value waits = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, warpIndex,
                                         createI32Constant(b, loc, int64_t(*warp)));
      emitIf(b, loc, waits, spin);
    } else {
      spin(b);
    }
    // The threads' cp.async copies write through the generic proxy; wgmma
    // reads through the async one.
    if (op.getThreadCopies() && hasWarpgroupMma(op->getParentOfType<ModuleOp>()))
      emitAsyncProxyFence(b, loc);
    if (!op.getPerThread())
      emitBarrier(b, loc);
    b.eraseOp(op);
    return success();
  }

  LaunchShape launch;
  int64_t pipelineStart;
};

/// kiln_gpu.async_copy_arrive: where the predicate holds,
/// cp.async.mbarrier.arrive.noinc on the slot's mbarrier (which counts
/// every thread's arrival, so none increments the count it expects).
struct AsyncCopyArriveOpLowering : public ConvertOpToLLVMPattern<AsyncCopyArriveOp> {
  AsyncCopyArriveOpLowering(const LLVMTypeConverter &converter, int64_t pipelineStart)
      : ConvertOpToLLVMPattern(converter), pipelineStart(pipelineStart) {}

  LogicalResult
  matchAndRewrite(AsyncCopyArriveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value slot = adaptor.getSlot();
    emitIf(b, loc, adaptor.getPred(), [&](OpBuilder &then) {
      Value barrier = getPipelinePointer(then, loc, pipelineStart, op.getBarriers(), slot, 8);
      NVVM::CpAsyncMBarrierArriveOp::create(then, loc, barrier, /*noinc=*/true);
    });
    b.eraseOp(op);
    return success();
  }

  int64_t pipelineStart;
};

/// kiln_gpu.release_slot: each warp's lanes meet (what they read of the
/// slot is read), then lane 0 arrives on the slot's "empty" mbarrier, for
/// the warp: its release orders those reads before the producer's next
/// copy into the slot.
struct ReleaseSlotOpLowering : public ConvertOpToLLVMPattern<ReleaseSlotOp> {
  ReleaseSlotOpLowering(const LLVMTypeConverter &converter, int64_t pipelineStart)
      : ConvertOpToLLVMPattern(converter), pipelineStart(pipelineStart) {}

  LogicalResult
  matchAndRewrite(ReleaseSlotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Type i32 = b.getI32Type();
    NVVM::SyncWarpOp::create(b, loc, createI32Constant(b, loc, -1));
    Value lane = NVVM::LaneIdOp::create(b, loc, i32);
    Value first = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, lane,
                                       createI32Constant(b, loc, 0));
    Value slot = adaptor.getSlot();
    emitIf(b, loc, first, [&](OpBuilder &then) {
      Value barrier = getPipelinePointer(then, loc, pipelineStart, op.getBarriers(), slot, 8);
      NVVM::MBarrierArriveOp::create(then, loc, then.getI64Type(), barrier, Value());
    });
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
                      [&](OpBuilder &then, Value address) {
                        NVVM::MBarrierInvalOp::create(then, loc, address);
                      });
    b.eraseOp(op);
    return success();
  }

  int64_t pipelineStart;
};

} // namespace

void mlir::kiln::gpu::populateTmaToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                                RewritePatternSet &patterns,
                                                const LaunchShape &launch,
                                                int64_t pipelineStart) {
  patterns.add<AsyncTmaCopyOpLowering, WaitTmaBarrierOpLowering>(converter, launch, pipelineStart);
  patterns.add<InitTmaBarriersOpLowering, InvalTmaBarriersOpLowering, ReleaseSlotOpLowering,
               AsyncCopyArriveOpLowering>(converter, pipelineStart);
}
