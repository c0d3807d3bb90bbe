//===- Utility.cpp - Shared pieces of the kiln_gpu -> LLVM lowering --------===//
//
// Implements the per-thread type conversion and the layout arithmetic that
// maps each element a thread holds to its coordinates in the block.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

KilnGPUToLLVMTypeConverter::KilnGPUToLLVMTypeConverter(MLIRContext *context)
    : LLVMTypeConverter(context) {
  addConversion([context](PointerType type) -> Type {
    return LLVM::LLVMPointerType::get(context, type.getAddressSpace());
  });
  addConversion([this](RankedTensorType type) -> std::optional<Type> {
    std::optional<ThreadLayout> layout = getThreadLayout(type);
    if (!layout)
      return std::nullopt;
    Type element = convertType(type.getElementType());
    if (!element)
      return std::nullopt;
    return VectorType::get({layout->getElementsPerThread()}, element);
  });
}

/// Splits a linear id into coordinates over `counts`, fastest dimension first
/// as `order` lists them.
static SmallVector<Value> delinearize(OpBuilder &builder, Location loc,
                                      Value linear, ArrayRef<unsigned> counts,
                                      ArrayRef<unsigned> order) {
  SmallVector<Value> coords(counts.size());
  for (unsigned dim : order) {
    Value count = createI32Constant(builder, loc, counts[dim]);
    coords[dim] = LLVM::URemOp::create(builder, loc, linear, count);
    linear = LLVM::UDivOp::create(builder, loc, linear, count);
  }
  return coords;
}

SmallVector<SmallVector<int32_t>>
mlir::kiln::gpu::getElementOffsets(BlockedEncodingAttr layout,
                                   ArrayRef<int64_t> shape) {
  unsigned rank = layout.getRank();
  ArrayRef<unsigned> order = layout.getOrder();
  SmallVector<int64_t> tile = layout.getShapePerCTATile();
  SmallVector<int64_t> perThread, repeats;
  for (unsigned d = 0; d < rank; ++d) {
    perThread.push_back(std::min<int64_t>(layout.getSizePerThread()[d], shape[d]));
    repeats.push_back(std::max<int64_t>(1, shape[d] / tile[d]));
  }
  int64_t count = layout.getElementsPerThread(shape);
  // The element index enumerates the thread's own run (fastest dimension
  // first), then the repeats of the tile.
  SmallVector<SmallVector<int32_t>> offsets(rank, SmallVector<int32_t>(count));
  for (int64_t e = 0; e < count; ++e) {
    int64_t rest = e;
    SmallVector<int64_t> within(rank), repeat(rank);
    for (unsigned dim : order) {
      within[dim] = rest % perThread[dim];
      rest /= perThread[dim];
    }
    for (unsigned dim : order) {
      repeat[dim] = rest % repeats[dim];
      rest /= repeats[dim];
    }
    for (unsigned d = 0; d < rank; ++d)
      offsets[d][e] = repeat[d] * tile[d] + within[d];
  }
  return offsets;
}

SmallVector<Value> mlir::kiln::gpu::emitBlockCoordinates(
    OpBuilder &builder, Location loc, RankedTensorType type,
    const LaunchShape &launch, Value *isOwner) {
  std::optional<ThreadLayout> layout = getThreadLayout(type);
  SmallVector<Value> coords = emitElementCoordinates(
      builder, loc, layout->blocked, layout->shape, launch, isOwner);
  if (layout->slicedDim >= 0)
    coords.erase(coords.begin() + layout->slicedDim);
  return coords;
}

SmallVector<Value> mlir::kiln::gpu::emitElementCoordinates(
    OpBuilder &builder, Location loc, BlockedEncodingAttr layout,
    ArrayRef<int64_t> shape, const LaunchShape &launch, Value *isOwner) {
  unsigned rank = layout.getRank();
  ArrayRef<unsigned> order = layout.getOrder();
  SmallVector<int64_t> tile = layout.getShapePerCTATile();
  int64_t count = layout.getElementsPerThread(shape);

  // Where this thread's first element lies, per dimension.
  Value tid = NVVM::ThreadIdXOp::create(builder, loc, builder.getI32Type());
  Value warpSize = createI32Constant(builder, loc, launch.threadsPerWarp);
  Value lane = LLVM::URemOp::create(builder, loc, tid, warpSize);
  Value warp = LLVM::UDivOp::create(builder, loc, tid, warpSize);
  SmallVector<Value> laneCoords =
      delinearize(builder, loc, lane, layout.getThreadsPerWarp(), order);
  SmallVector<Value> warpCoords =
      delinearize(builder, loc, warp, layout.getWarpsPerCTA(), order);

  SmallVector<SmallVector<int32_t>> offsets = getElementOffsets(layout, shape);

  auto vectorType = VectorType::get({count}, builder.getI32Type());
  SmallVector<Value> coords;
  Value owner;
  for (unsigned d = 0; d < rank; ++d) {
    Value threadIndex = LLVM::AddOp::create(
        builder, loc,
        LLVM::MulOp::create(builder, loc, warpCoords[d],
                            createI32Constant(builder, loc, layout.getThreadsPerWarp()[d])),
        laneCoords[d]);
    Value start = LLVM::MulOp::create(
        builder, loc, threadIndex,
        createI32Constant(builder, loc, layout.getSizePerThread()[d]));
    Value offsetVector = LLVM::ConstantOp::create(
        builder, loc, vectorType,
        DenseElementsAttr::get(vectorType, ArrayRef<int32_t>(offsets[d])));
    Value coord = LLVM::AddOp::create(
        builder, loc, splatVector(builder, loc, vectorType, start), offsetVector);
    if (tile[d] > shape[d]) {
      // The tile is larger than the block: threads past its end hold
      // replicas of the elements at the start.
      Value extent = splatVector(builder, loc, vectorType,
                                 createI32Constant(builder, loc, shape[d]));
      Value inside = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::ult,
                                          coord, extent);
      owner = owner ? LLVM::AndOp::create(builder, loc, owner, inside) : inside;
      coord = LLVM::URemOp::create(builder, loc, coord, extent);
    }
    coords.push_back(coord);
  }
  if (isOwner)
    *isOwner = owner;
  return coords;
}
