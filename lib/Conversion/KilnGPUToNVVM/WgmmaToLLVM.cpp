//===- WgmmaToLLVM.cpp - kiln.dot on wgmma ----------------------------------===//
//
// kiln.dot on the warpgroup tensor cores (sm_90a): wgmma.mma_async reads
// both operands by descriptors from 128-byte swizzled shared tiles; fences,
// commit groups and waits order it against the stores that fill the tiles
// and the reads of its accumulators (kiln_gpu.async_dot_wait).
//
//===----------------------------------------------------------------------===//

#include "DotOpToLLVM.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

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

/// wgmma.wait_group `pending`, taking and returning `values` (f32 or i32
/// accumulators): nothing can read them before the wait.
SmallVector<Value> emitWait(OpBuilder &b, Location loc, ArrayRef<Value> values,
                            int64_t pending) {
  if (values.empty()) {
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, pending);
    return {};
  }
  SmallVector<Type> types;
  for (Value v : values)
    types.push_back(v.getType());
  // A string: NVVM's wait takes no operands, so nothing would keep LLVM
  // from reading the accumulators before it.
  Value waited = createInlineAsm(b, loc, /*hasSideEffects=*/true,
                                 LLVM::LLVMStructType::getLiteral(b.getContext(), types),
                                 values,
                                 "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";",
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
                                        emitWait(rewriter, loc, values, op.getPending())));
    return success();
  }
};

/// The wgmma shared-memory matrix descriptors of a tile's blocks at byte
/// offsets from one base address. A descriptor's low word holds the start
/// address / 16 (bits 0-13) and the leading byte offset / 16 (bits 16-29),
/// its high word the stride byte offset and the swizzle mode. Shared
/// addresses stay below 256 KB, so the start field of base + offset (both
/// multiples of 16) is the base's plus offset / 16, never carrying into the
/// next field: each k-step's descriptor is one 64-bit add of a constant to
/// the base's whole descriptor, made once per dot. Kept as 64-bit adds,
/// ptxas computes them in uniform registers, which wgmma reads its
/// descriptors from; a 32-bit add to the low word, widened and or-ed with
/// the high word per k-step, was computed in ordinary registers and moved
/// to uniform ones (R2UR) before every wgmma.
struct TileDescriptors {
  Value base; // i64: the descriptor of the block at offset 0

  TileDescriptors(OpBuilder &b, Location loc, Value baseAddress, const SharedTile &tile,
                  int64_t leadingBytes) {
    auto constant = [&](int64_t v) { return createI32Constant(b, loc, v); };
    int64_t swizzleMode = tile.rowBytes() == 128 ? 1 : tile.rowBytes() == 64 ? 2 : 3;
    int64_t strideBytes = 8 * tile.rowBytes(); // between 8-row groups
    int64_t highWord = ((strideBytes >> 4) & 0x3FFF) | (swizzleMode << 30);
    Value start = LLVM::AndOp::create(
        b, loc, LLVM::LShrOp::create(b, loc, baseAddress, constant(4)), constant(0x3FFF));
    Value lowWord =
        LLVM::OrOp::create(b, loc, start, constant(((leadingBytes >> 4) & 0x3FFF) << 16));
    Type i64 = b.getI64Type();
    Value highBits = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(highWord << 32));
    base = LLVM::OrOp::create(b, loc, LLVM::ZExtOp::create(b, loc, i64, lowWord), highBits);
  }

  /// The descriptor of the block `offsetBytes` (a multiple of 16) from the base.
  Value at(OpBuilder &b, Location loc, int64_t offsetBytes) const {
    if (!offsetBytes)
      return base;
    Type i64 = b.getI64Type();
    Value startStep = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(offsetBytes >> 4));
    return LLVM::AddOp::create(b, loc, base, startStep);
  }
};

} // namespace

/// Whether kiln_gpu.async_dot_wait with at most one group pending follows
/// `dot`, with at most a kiln_gpu.pass_turn between them.
static bool isFollowedByWaitForOneGroup(DotOp dot) {
  Operation *next = dot->getNextNode();
  if (isa_and_present<PassTurnOp>(next))
    next = next->getNextNode();
  auto wait = dyn_cast_or_null<AsyncDotWaitOp>(next);
  return wait && wait.getPending() <= 1;
}

/// wgmma.mma_async (m64nNk16 for f16 and bf16, m64nNk8 for tf32, m64nNk32
/// for s8, e4m3 and e5m2: 32 bytes of K each) per warpgroup and 64-row
/// tile, operands read by descriptors from the swizzled shared tiles: A
/// [M][K] K-major, B [K][N] N-major in blocks of 64 columns for 16-bit
/// types, else (or from a K-major slot) [N][K] K-major: wgmma transposes
/// only 16-bit operands. Operands not `shared` (in a pipeline slot) are
/// stored into their tiles first.
Value mlir::kiln::gpu::lowerDotWithWgmma(DotOp op, DotOp::Adaptor adaptor, ConversionPatternRewriter &b,
                                   const LLVMTypeConverter &converter, const LaunchShape &launch,
                                   const TensorCoreOperands &tensorCore,
                                   const SharedTile &aTile, const SharedTile &bTile,
                                   const DotScratchPlan &plan) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getType();
  int64_t m = type.getDimSize(0), n = type.getDimSize(1);
  int64_t k = op.getA().getType().getDimSize(1);
  int numWarps = launch.numWarps;
  int64_t repsM = m / (8 * numWarps), repsN = n / 8;
  int64_t tilesPerGroup = repsM / 2;
  auto constant = [&](int64_t v) { return createI32Constant(b, loc, v); };
  Type i32 = b.getI32Type(), f32 = b.getF32Type();

  // A in the accumulator layout is read from registers; other operands in
  // registers go through the scratch (those in pipeline slots are there
  // already: kiln_gpu.async_wait made them visible).
  bool aInRegisters = plan.aInRegisters;
  if (plan.aStored || plan.bStored) {
    emitBarrier(b, loc);
    if (plan.aStored)
      storeOperandTile(b, loc, adaptor.getA(), op.getA().getType(), aTile, launch,
                       getWgmmaRowMap(numWarps, m), /*transposed=*/false,
                       tensorCore.roundsToTf32());
    if (plan.bStored)
      storeOperandTile(b, loc, adaptor.getB(), op.getB().getType(), bTile, launch,
                       /*rowMap=*/nullptr, tensorCore.isKMajorB(), tensorCore.roundsToTf32());
    // The stores are the generic proxy's; wgmma reads through the async one.
    emitAsyncProxyFence(b, loc);
    emitBarrier(b, loc);
  }

  SmallVector<Value> acc = unpackElements(b, loc, adaptor.getC());
  bool f16Acc = type.getElementType().isF16();

  Value aBase = LLVM::PtrToIntOp::create(b, loc, i32, aTile.base);
  Value bBase = LLVM::PtrToIntOp::create(b, loc, i32, bTile.base);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);

  // Accumulator registers per thread per instruction: f16 ones hold a
  // row's pair of columns each (f16x2). Integer products saturate at the
  // s32 bounds (.satfinite).
  int64_t outputs = f16Acc ? n / 4 : n / 2;
  // A is one descriptor, or four registers of 16-bit pairs.
  int64_t aOperands = aInRegisters ? 4 : 1;
  auto operand = [](int64_t index) { return "$" + std::to_string(index); };
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, " + operand(outputs + aOperands + 1) +
                     ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k" +
                     std::to_string(tensorCore.instructionK()) +
                     (tensorCore.integer ? ".satfinite.s32." : f16Acc ? ".f16." : ".f32.") +
                     NVVM::stringifyMMATypes(tensorCore.aType).str() + "." +
                     NVVM::stringifyMMATypes(tensorCore.bType).str() + " {";
  for (int64_t i = 0; i < outputs; ++i)
    text += (i ? "," : "") + operand(i);
  text += "}, ";
  if (aInRegisters)
    text += "{" + operand(outputs) + "," + operand(outputs + 1) + "," + operand(outputs + 2) +
            "," + operand(outputs + 3) + "}";
  else
    text += operand(outputs);
  // scale-d, then for floats (8-bit ones too) the scales of A and B (1),
  // then for 16-bit types whether A (when in shared memory) and B are
  // transposed (B where it is N-major).
  std::string transposeB = tensorCore.isKMajorB() ? "0" : "1";
  text += ", " + operand(outputs + aOperands) + ", p" + (tensorCore.integer ? "" : ", 1, 1") +
          (tensorCore.elementBytes != 2 ? ""
           : aInRegisters               ? ", " + transposeB
                                        : ", 0, " + transposeB) +
          ";\n}";
  // A (its descriptor or registers), B's descriptor, scale-d, then the
  // accumulators in place.
  Type accType = tensorCore.integer || f16Acc ? i32 : f32;
  std::string constraints = getTiedConstraints(
      outputs, aInRegisters ? ",r,r,r,r,l,r" : ",l,l,r", tensorCore.integer || f16Acc ? 'r' : 'f');
  // A's registers: the thread's elements of A, in the accumulator layout,
  // as 16-bit pairs; register (i, h) holds 8-column group i of row half h.
  SmallVector<Value> aElements;
  int64_t aGroups = k / 8;
  if (aInRegisters)
    aElements = unpackElements(b, loc, adaptor.getA());
  auto aRegister = [&](int64_t t, int64_t i, int64_t h) {
    int64_t first = 2 * (i + aGroups * (2 * t + h));
    return packPair(b, loc, aElements[first], aElements[first + 1]);
  };
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
  // (elements 2p and 2p + 1, a row's two columns, are register p). A dot
  // into zeros (a fresh `kl.dot(a, b)`) starts with scale-d 0, which
  // ignores them: they are left undefined rather than set to zero each
  // time (32 moves per 64 x 64 tile, in attention's loops every iteration).
  bool startsFromZero = isZeroBlock(op.getC()) && !promotes;
  SmallVector<Value> sums;
  if (startsFromZero) {
    sums.assign(f16Acc ? acc.size() / 2 : acc.size(), LLVM::UndefOp::create(b, loc, accType));
  } else if (f16Acc) {
    for (size_t p = 0; p < acc.size() / 2; ++p)
      sums.push_back(packPair(b, loc, acc[2 * p], acc[2 * p + 1]));
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
  // B's blocks from its base; A's (when in shared memory) from the first
  // row of each of this warpgroup's 64-row tiles.
  TileDescriptors bDescriptors(b, loc, bBase, bTile,
                               tensorCore.isKMajorB() ? 16 : bTile.blockBytes());
  SmallVector<TileDescriptors> aDescriptors;
  if (!aInRegisters) {
    // The warpgroup, from lane 0's warp index: ptxas then knows it is the
    // same across the warp and keeps A's descriptors, made from it, in
    // uniform registers (from the thread index itself it could not).
    Value tid = NVVM::ThreadIdXOp::create(b, loc, i32);
    Value warp = emitShuffle(b, loc, LLVM::UDivOp::create(b, loc, tid, constant(32)), constant(0),
                             NVVM::ShflKind::idx);
    Value group = LLVM::UDivOp::create(b, loc, warp, constant(4));
    for (int64_t t = 0; t < tilesPerGroup; ++t) {
      Value rowStart = LLVM::MulOp::create(
          b, loc,
          LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, group, constant(tilesPerGroup)),
                              constant(t)),
          constant(64 * aTile.rowBytes()));
      aDescriptors.emplace_back(b, loc, LLVM::AddOp::create(b, loc, aBase, rowStart), aTile,
                                /*leadingBytes=*/16);
    }
  }
  for (int64_t step = 0; step < steps; ++step) {
    int64_t kStart = tensorCore.instructionK() * step;
    bool restart = promotes && step % promoteSteps == 0;
    // A run after the first writes the partial sums that the previous run's
    // additions read: those are accesses of the same registers by other
    // instructions, which the wgmmas may overtake without a fence (PTX ISA,
    // wgmma.fence). Without it, fp8 dots promoting more than once per tile
    // lost or doubled partial sums on an H200.
    if (restart && step > 0)
      NVVM::WgmmaFenceAlignedOp::create(b, loc);
    // B N-major: rows kStart.. of every 64-column block (blocks LBO
    // apart). K-major: all N rows, columns kStart...
    Value bDesc = bDescriptors.at(b, loc, tensorCore.isKMajorB()
                                              ? kMajorOffset(bTile, kStart)
                                              : bTile.byteOffset + kStart * bTile.rowBytes());
    for (int64_t t = 0; t < tilesPerGroup; ++t) {
      SmallVector<Value> operands;
      if (aInRegisters) {
        // k-step `step` covers 8-column groups 2 step and 2 step + 1.
        operands = {aRegister(t, 2 * step, 0), aRegister(t, 2 * step, 1),
                    aRegister(t, 2 * step + 1, 0), aRegister(t, 2 * step + 1, 1)};
      } else {
        // A: 64 rows of this warpgroup's tile t, columns kStart...
        operands.push_back(aDescriptors[t].at(b, loc, kMajorOffset(aTile, kStart)));
      }
      operands.append({bDesc, restart || (startsFromZero && step == 0) ? zero : one});
      // Register of output (i, h, j): f16 pairs share one.
      auto sumIndex = [&](int64_t i, int64_t h, int64_t j) {
        return f16Acc ? elementIndex(t, i, h, 0) / 2 : elementIndex(t, i, h, j);
      };
      int64_t perHalf = f16Acc ? 1 : 2;
      for (int64_t i = 0; i < repsN; ++i)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t j = 0; j < perHalf; ++j)
            operands.push_back(sums[sumIndex(i, h, j)]);
      // A string: NVVM's WgmmaMmaAsyncOp has no intrinsic (MLIR lowers it
      // to inline PTX itself) and takes scale-d as an attribute.
      Value d = createInlineAsm(b, loc, /*hasSideEffects=*/true, resultType, operands,
                                text, constraints);
      int64_t r = 0;
      for (int64_t i = 0; i < repsN; ++i)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t j = 0; j < perHalf; ++j)
            sums[sumIndex(i, h, j)] = LLVM::ExtractValueOp::create(b, loc, d, r++);
    }
    if (promotes && (step % promoteSteps == promoteSteps - 1 || step == steps - 1)) {
      NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
      sums = emitWait(b, loc, sums, 0);
      for (auto [total, part] : llvm::zip(acc, sums))
        total = LLVM::FAddOp::create(b, loc, total, part);
    }
  }
  // Promoting, every group is complete and `acc` holds the sums.
  if (!promotes) {
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    // (f16 accumulators are never in flight: see getAccumulatingDot.)
    if (getWgmmaBuffer(op) && !f16Acc) {
      // Asynchronous: only the previous dot's group, which read the
      // other half of the scratch, must be done. The accumulators are in
      // flight: the next wgmma chains on them, kiln_gpu.async_dot_wait
      // reads them. A wait for at most one group right after the dot
      // (only a warpgroup's turn passed between) waits for as much: then
      // the turn passes while the groups still run.
      if (!isFollowedByWaitForOneGroup(op))
        NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
      acc = sums;
    } else {
      // The wait returns the accumulators, so that nothing reads them
      // before.
      acc = emitWait(b, loc, sums, 0);
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
  return packElements(b, loc, converter.convertType(type), acc);
}

void mlir::kiln::gpu::populateWgmmaToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                                  RewritePatternSet &patterns) {
  patterns.add<AsyncDotWaitOpLowering>(converter);
}
