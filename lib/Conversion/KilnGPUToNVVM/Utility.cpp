//===- Utility.cpp - Shared pieces of the kiln_gpu -> LLVM lowering --------===//
//
// Implements the per-thread type conversion and the layout arithmetic that
// maps each element a thread holds to its coordinates in the block.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

KilnGPUToNVVMTypeConverter::KilnGPUToNVVMTypeConverter(MLIRContext *context)
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
  SmallVector<int64_t> tile = layout.getShapePerCTATile();
  int64_t count = layout.getElementsPerThread(shape);

  // Where this thread's first element lies, per dimension.
  ThreadCoordinates thread = emitThreadCoordinates(builder, loc, layout, launch);
  SmallVector<Value> &laneCoords = thread.lane, &warpCoords = thread.warp;

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

ThreadCoordinates mlir::kiln::gpu::emitThreadCoordinates(
    OpBuilder &builder, Location loc, BlockedEncodingAttr layout,
    const LaunchShape &launch) {
  Value tid = NVVM::ThreadIdXOp::create(builder, loc, builder.getI32Type());
  Value warpSize = createI32Constant(builder, loc, launch.threadsPerWarp);
  Value lane = LLVM::URemOp::create(builder, loc, tid, warpSize);
  Value warp = LLVM::UDivOp::create(builder, loc, tid, warpSize);
  return {delinearize(builder, loc, lane, layout.getThreadsPerWarp(),
                      layout.getOrder()),
          delinearize(builder, loc, warp, layout.getWarpsPerCTA(),
                      layout.getOrder())};
}

//===----------------------------------------------------------------------===//
// Shared memory scratch
//===----------------------------------------------------------------------===//

static constexpr StringLiteral kScratchName = "kiln_scratch";

void mlir::kiln::gpu::declareScratch(ModuleOp module, int64_t bytes) {
  MLIRContext *context = module.getContext();
  OpBuilder builder(context);
  if (bytes == 0 || module.lookupSymbol(kScratchName))
    return;
  builder.setInsertionPointToStart(module.getBody());
  // Dynamic shared memory: a zero-length external array, sized at launch,
  // aligned as wgmma's swizzled tiles need (their phase is read from the
  // address bits above 128 bytes).
  auto type = LLVM::LLVMArrayType::get(IntegerType::get(context, 8), 0);
  LLVM::GlobalOp::create(builder, module.getLoc(), type, /*isConstant=*/false,
                         LLVM::Linkage::External, kScratchName, Attribute(),
                         /*alignment=*/1024, /*addrSpace=*/3);
}

int64_t mlir::kiln::gpu::getSharedElementBytes(Type element) {
  if (isa<PointerType>(element))
    return 8;
  return std::max<int64_t>(1, getMemoryElementType(element).getIntOrFloatBitWidth() / 8);
}

int64_t mlir::kiln::gpu::getSharedRunWidth(RankedTensorType type) {
  std::optional<ThreadLayout> layout = getThreadLayout(type);
  Type element = type.getElementType();
  if (!layout || layout->slicedDim >= 0 || type.getRank() == 0 || element.isInteger(1))
    return 1;
  unsigned last = type.getRank() - 1;
  if (layout->blocked.getOrder()[0] != last)
    return 1;
  int64_t width = std::min({int64_t(layout->blocked.getSizePerThread()[last]),
                            16 / getSharedElementBytes(element), type.getDimSize(last)});
  return int64_t(llvm::bit_floor(uint64_t(std::max<int64_t>(1, width))));
}

void mlir::kiln::gpu::storeShared(OpBuilder &builder, Location loc, Value value,
                                  Value address) {
  if (value.getType().isInteger(1))
    value = LLVM::ZExtOp::create(builder, loc, builder.getI8Type(), value);
  LLVM::StoreOp::create(builder, loc, value, address);
}

Value mlir::kiln::gpu::loadShared(OpBuilder &builder, Location loc, Type type,
                                  Value address) {
  if (!type.isInteger(1))
    return LLVM::LoadOp::create(builder, loc, type, address);
  Value byte = LLVM::LoadOp::create(builder, loc, builder.getI8Type(), address);
  return LLVM::TruncOp::create(builder, loc, type, byte);
}

Value mlir::kiln::gpu::getScratchBase(OpBuilder &builder, Location loc) {
  return LLVM::AddressOfOp::create(
      builder, loc, LLVM::LLVMPointerType::get(builder.getContext(), 3),
      kScratchName);
}

Value mlir::kiln::gpu::getSharedAddress(OpBuilder &builder, Location loc,
                                        Value base, Value byteOffset) {
  return LLVM::GEPOp::create(builder, loc, base.getType(), builder.getI8Type(),
                             base, ValueRange{byteOffset});
}

void mlir::kiln::gpu::emitIf(ConversionPatternRewriter &rewriter, Location loc,
                             Value condition, function_ref<void(OpBuilder &)> body) {
  Block *before = rewriter.getInsertionBlock();
  Block *after = rewriter.splitBlock(before, rewriter.getInsertionPoint());
  Block *then = rewriter.createBlock(before->getParent(), after->getIterator());
  rewriter.setInsertionPointToEnd(before);
  LLVM::CondBrOp::create(rewriter, loc, condition, then, after);
  rewriter.setInsertionPointToEnd(then);
  body(rewriter);
  LLVM::BrOp::create(rewriter, loc, ValueRange{}, after);
  rewriter.setInsertionPointToStart(after);
}

void mlir::kiln::gpu::emitBarrier(OpBuilder &builder, Location loc) {
  auto barrier = NVVM::Barrier0Op::create(builder, loc);
  barrier->setAttr(kSharedOnlyBarrierAttr, builder.getUnitAttr());
}

void mlir::kiln::gpu::emitAsyncProxyFence(OpBuilder &builder, Location loc) {
  NVVM::FenceProxyOp::create(
      builder, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(builder.getContext(), NVVM::SharedSpace::shared_cta));
}

Value mlir::kiln::gpu::emitShuffle(OpBuilder &builder, Location loc,
                                   Value value, Value operand,
                                   NVVM::ShflKind kind) {
  Type type = value.getType();
  Type i32 = builder.getI32Type();
  Value all = createI32Constant(builder, loc, -1);
  // shfl.up clamps at lane 0, the others at lane 31.
  Value clamp = createI32Constant(builder, loc, kind == NVVM::ShflKind::up ? 0 : 0x1f);
  auto shuffle32 = [&](Value v) -> Value {
    return NVVM::ShflOp::create(builder, loc, i32, all, v, operand, clamp, kind,
                                UnitAttr());
  };
  unsigned bits = type.getIntOrFloatBitWidth();
  Type intType = builder.getIntegerType(bits);
  Value asInt = isa<IntegerType>(type) ? value
                                       : LLVM::BitcastOp::create(builder, loc, intType, value);
  Value shuffled;
  if (bits == 64) {
    auto pair = VectorType::get({2}, i32);
    Value halves = LLVM::BitcastOp::create(builder, loc, pair, asInt);
    Value result = LLVM::PoisonOp::create(builder, loc, pair);
    for (int i = 0; i < 2; ++i) {
      Value index = createI32Constant(builder, loc, i);
      Value half = LLVM::ExtractElementOp::create(builder, loc, halves, index);
      result = LLVM::InsertElementOp::create(builder, loc, result, shuffle32(half), index);
    }
    shuffled = LLVM::BitcastOp::create(builder, loc, intType, result);
  } else if (bits == 32) {
    shuffled = shuffle32(asInt);
  } else {
    Value wide = LLVM::ZExtOp::create(builder, loc, i32, asInt);
    shuffled = LLVM::TruncOp::create(builder, loc, intType, shuffle32(wide));
  }
  return isa<IntegerType>(type) ? shuffled
                                : LLVM::BitcastOp::create(builder, loc, type, shuffled);
}

Value mlir::kiln::gpu::createInlineAsm(OpBuilder &builder, Location loc,
                                       bool hasSideEffects, Type result,
                                       ValueRange operands, StringRef text,
                                       StringRef constraints) {
  MLIRContext *context = builder.getContext();
  bool isVoid = isa<LLVM::LLVMVoidType>(result);
  auto op = LLVM::InlineAsmOp::create(
      builder, loc, isVoid ? Type() : result, operands, text, constraints,
      hasSideEffects, /*is_align_stack=*/false, LLVM::TailCallKind::None,
      LLVM::AsmDialectAttr::get(context, LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  return isVoid ? Value() : op.getResult(0);
}

Value mlir::kiln::gpu::emitIsFirstThread(OpBuilder &builder, Location loc) {
  Value tid = NVVM::ThreadIdXOp::create(builder, loc, builder.getI32Type());
  return LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::eq, tid,
                              createI32Constant(builder, loc, 0));
}
