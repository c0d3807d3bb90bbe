//===- WarpgroupTurnsToLLVM.cpp - Warpgroups taking turns at the tensor cores ===//
//
// Lowers kiln_gpu.begin_turns, kiln_gpu.await_turn and kiln_gpu.pass_turn
// (kiln-gpu-ping-pong) to named barriers: warpgroup w's turn barrier is
// named barrier kFirstTurnBarrier + w, met by w's threads (bar.sync: w
// waits) and the previous warpgroup's (bar.arrive: it passes the turn and
// goes on). Each round of a turn barrier thus counts two warpgroups.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

constexpr int64_t kWarpsPerWarpgroup = 4;

/// What the three lowerings share: the calling thread's warpgroup, and the
/// named barrier of a warpgroup's turn.
template <typename TurnOp>
struct TurnOpLowering : public ConvertOpToLLVMPattern<TurnOp> {
  TurnOpLowering(const LLVMTypeConverter &converter, const LaunchShape &launch)
      : ConvertOpToLLVMPattern<TurnOp>(converter), launch(launch) {}

  int64_t warpgroupThreads() const { return kWarpsPerWarpgroup * launch.threadsPerWarp; }
  int64_t warpgroups() const { return launch.numWarps / kWarpsPerWarpgroup; }

  /// The calling thread's warpgroup (uniform in each warp).
  Value getWarpgroup(OpBuilder &b, Location loc) const {
    Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
    return LLVM::UDivOp::create(b, loc, tid, createI32Constant(b, loc, warpgroupThreads()));
  }

  Value getTurnBarrier(OpBuilder &b, Location loc, Value warpgroup) const {
    return LLVM::AddOp::create(b, loc, warpgroup, createI32Constant(b, loc, kFirstTurnBarrier));
  }

  Value getRoundThreads(OpBuilder &b, Location loc) const {
    return createI32Constant(b, loc, 2 * warpgroupThreads());
  }

  LaunchShape launch;
};

/// Warpgroup 0 arrives on its own turn barrier: its first kiln_gpu.await_turn
/// then completes the round by itself.
struct BeginTurnsOpLowering : public TurnOpLowering<BeginTurnsOp> {
  using TurnOpLowering::TurnOpLowering;

  LogicalResult
  matchAndRewrite(BeginTurnsOp op, OpAdaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value warpgroup = getWarpgroup(b, loc);
    Value first = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, warpgroup,
                                       createI32Constant(b, loc, 0));
    emitIf(b, loc, first, [&](OpBuilder &then) {
      NVVM::BarrierArriveOp::create(then, loc, createI32Constant(then, loc, kFirstTurnBarrier),
                                    getRoundThreads(then, loc));
    });
    b.eraseOp(op);
    return success();
  }
};

struct AwaitTurnOpLowering : public TurnOpLowering<AwaitTurnOp> {
  using TurnOpLowering::TurnOpLowering;

  LogicalResult
  matchAndRewrite(AwaitTurnOp op, OpAdaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value barrier = getTurnBarrier(b, loc, getWarpgroup(b, loc));
    NVVM::BarrierOp::create(b, loc, Type(), barrier, getRoundThreads(b, loc),
                            NVVM::BarrierReductionAttr(), Value());
    b.eraseOp(op);
    return success();
  }
};

struct PassTurnOpLowering : public TurnOpLowering<PassTurnOp> {
  using TurnOpLowering::TurnOpLowering;

  LogicalResult
  matchAndRewrite(PassTurnOp op, OpAdaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value next = LLVM::AddOp::create(b, loc, getWarpgroup(b, loc), createI32Constant(b, loc, 1));
    next = LLVM::URemOp::create(b, loc, next, createI32Constant(b, loc, warpgroups()));
    NVVM::BarrierArriveOp::create(b, loc, getTurnBarrier(b, loc, next), getRoundThreads(b, loc));
    b.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::kiln::gpu::populateWarpgroupTurnsToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                                           RewritePatternSet &patterns,
                                                           const LaunchShape &launch) {
  patterns.add<BeginTurnsOpLowering, AwaitTurnOpLowering, PassTurnOpLowering>(converter, launch);
}
