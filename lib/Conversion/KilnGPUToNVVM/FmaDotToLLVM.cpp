//===- FmaDotToLLVM.cpp - kiln.dot on FMAs ----------------------------------===//
//
// kiln.dot without tensor cores (any blocked result): each thread reads,
// for every k, the A elements of the rows and the B elements of the columns
// it holds from the shared tiles, and multiply-adds them into its
// accumulator elements.
//
//===----------------------------------------------------------------------===//

#include "DotOpToLLVM.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

/// Per k, each thread's distinct A rows and B columns, multiply-added into
/// its accumulator elements.
Value mlir::kiln::gpu::lowerDotWithFma(DotOp op, DotOp::Adaptor adaptor, ConversionPatternRewriter &b,
                                   const LLVMTypeConverter &converter, const LaunchShape &launch,
                                   const SharedTile &aTile, const SharedTile &bTile) {
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
  return packElements(b, loc, converter.convertType(type), acc);
}
