//===- MmaSyncToLLVM.cpp - kiln.dot on mma.sync -----------------------------===//
//
// kiln.dot on the warp-level tensor cores (sm_80 and up): each warp loads
// its operand fragments from the swizzled shared tiles with ldmatrix (B
// transposed on the way where it lies [K][N]) and issues mma.sync into the
// accumulator registers its blocked layout gives it.
//
//===----------------------------------------------------------------------===//

#include "DotOpToLLVM.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

/// mma.sync (m16n8k16 for f16 and bf16, m16n8k8 for tf32, m16n8k32 for
/// s8) over the warp's tiles, operands through ldmatrix: each 8x8 matrix
/// of 16-bit elements it loads is 8 rows of 16 bytes, whichever the
/// element type, and leaves each thread the 4 bytes of row lane / 4 that
/// the instructions want. A batched dot does each batch in turn, its
/// tiles stacked along the rows of the shared ones.
Value mlir::kiln::gpu::lowerDotWithMma(DotOp op, DotOp::Adaptor adaptor, ConversionPatternRewriter &b,
                                   const LLVMTypeConverter &converter, const LaunchShape &launch,
                                   const TensorCoreOperands &tensorCore,
                                   const SharedTile &aTile, const SharedTile &bTile) {
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

  // Integer products saturate at the s32 bounds (.satfinite). f16
  // operands and accumulators are f16x2 vectors to the instruction, the
  // other operands i32 registers.
  auto halves = VectorType::get({2}, b.getF16Type());
  int accRegs = f16Acc ? 2 : 4;
  Type accType = tensorCore.integer ? i32 : f16Acc ? Type(halves) : f32;
  Type mmaResult = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                    SmallVector<Type>(accRegs, accType));
  auto asOperand = [&](Value reg, NVVM::MMATypes ptxType) -> Value {
    return ptxType == NVVM::MMATypes::f16 ? Value(LLVM::BitcastOp::create(b, loc, halves, reg))
                                          : reg;
  };
  std::optional<NVVM::MMAIntOverflow> overflow;
  if (tensorCore.integer)
    overflow = NVVM::MMAIntOverflow::satfinite;
  // tf32x3: each fragment register as its tf32 high part and the tf32
  // rounding of what is left.
  auto split = [&](ArrayRef<Value> regs) {
    std::pair<SmallVector<Value>, SmallVector<Value>> parts;
    for (Value reg : regs) {
      // cvt.rna.tf32.f32 of the value, then of what it leaves.
      Value value = LLVM::BitcastOp::create(b, loc, f32, reg);
      Value high = NVVM::ConvertFloatToTF32Op::create(b, loc, i32, value,
                                                      NVVM::FPRoundingMode::RNA);
      Value rest =
          LLVM::FSubOp::create(b, loc, value, LLVM::BitcastOp::create(b, loc, f32, high));
      parts.first.push_back(high);
      parts.second.push_back(
          NVVM::ConvertFloatToTF32Op::create(b, loc, i32, rest, NVVM::FPRoundingMode::RNA));
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
      SmallVector<Value> aOperands, bOperands, cOperands;
      for (Value reg : aRegs)
        aOperands.push_back(asOperand(reg, tensorCore.aType));
      for (Value reg : bRegs)
        bOperands.push_back(asOperand(reg, tensorCore.bType));
      if (f16Acc) {
        cOperands = {LLVM::BitcastOp::create(b, loc, halves,
                                             packPair(b, loc, acc[top], acc[top + 1])),
                     LLVM::BitcastOp::create(b, loc, halves,
                                             packPair(b, loc, acc[bottom], acc[bottom + 1]))};
      } else {
        cOperands = {acc[top], acc[top + 1], acc[bottom], acc[bottom + 1]};
      }
      Value d = NVVM::MmaOp::create(
          b, loc, mmaResult, aOperands, bOperands, cOperands,
          {16, 8, tensorCore.instructionK()}, /*b1Op=*/std::nullopt, overflow,
          std::array<NVVM::MMATypes, 2>{tensorCore.aType, tensorCore.bType},
          std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
      if (f16Acc) {
        std::tie(acc[top], acc[top + 1]) =
            unpackHalves(b, loc, LLVM::BitcastOp::create(
                                     b, loc, i32, LLVM::ExtractValueOp::create(b, loc, d, 0)));
        std::tie(acc[bottom], acc[bottom + 1]) =
            unpackHalves(b, loc, LLVM::BitcastOp::create(
                                     b, loc, i32, LLVM::ExtractValueOp::create(b, loc, d, 1)));
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
  return packElements(b, loc, converter.convertType(type), acc);
}
