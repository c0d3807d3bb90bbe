//===- AsyncCopyToLLVM.cpp - Pipeline slots by cp.async ---------------------===//
//
// The software pipeline's asynchronous copies (kiln-gpu-pipeline-loads):
// kiln_gpu.async_copy fills a slot of shared memory with cp.async,
// async_commit_group and async_wait group and wait for the copies, and
// shared_operand names the slot a dot reads.
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

/// One cp.async of `bytes` (4, 8 or 16) from `source` to the shared
/// `address`, whose source size is 0 where `mask` (if any) is false:
/// nothing is read, the destination is zero-filled. With `predicate`, the
/// copy is issued only where it is true.
void emitCpAsync(OpBuilder &b, Location loc, Value address, Value source, int64_t bytes, Value mask,
                 Value predicate) {
  Type i32 = b.getI32Type();
  Value size = createI32Constant(b, loc, bytes);
  if (mask)
    size = LLVM::SelectOp::create(b, loc, mask, size, createI32Constant(b, loc, 0));
  // A string: NVVM's CpAsyncOp takes the destination as a 64-bit shared
  // pointer, which grew the registers of matmul kernels; the string takes
  // the 32-bit shared address.
  std::string copy = std::string("cp.async.") + (bytes == 16 ? "cg" : "ca") +
                     ".shared.global [$0], [$1], " + std::to_string(bytes) + ", $2;";
  SmallVector<Value> operands{LLVM::PtrToIntOp::create(b, loc, i32, address), source, size};
  Type voidType = LLVM::LLVMVoidType::get(b.getContext());
  if (!predicate) {
    createInlineAsm(b, loc, /*hasSideEffects=*/true, voidType, operands, copy, "r,l,r");
    return;
  }
  operands.push_back(LLVM::ZExtOp::create(b, loc, i32, predicate));
  createInlineAsm(b, loc, /*hasSideEffects=*/true, voidType, operands,
                  "{\n.reg .pred p;\nsetp.ne.b32 p, $3, 0;\n@p " + copy + "\n}", "r,l,r,r");
}

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
    // The operand as the dot reads it: transposed pointers hold it as a
    // K-major slot does, [N, K].
    bool transposed = op.getTransposed();
    SmallVector<int64_t> shape(type.getShape());
    if (transposed)
      std::swap(shape[0], shape[1]);
    auto tileType = RankedTensorType::get(shape, element);
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
    // (the columns; in a K-major slot, the rows, which are its columns,
    // unless the pointers are transposed already), never across a 16-byte
    // chunk of the tile's rows.
    bool swapped = buffer.getKMajor() && !transposed;
    int64_t width = std::min<int64_t>(widths.lookup(op), tile.chunkElements());
    int64_t bytes = width * tile.elementBytes;
    Type i32 = b.getI32Type(), i16 = b.getI16Type();
    std::string narrowLoad = bytes == 1 ? "ld.global.u8" : "ld.global.b16";
    for (size_t e = 0; e < ptrs.size(); e += width) {
      Value row = rowMap ? rowMap(b, loc, rows[e]) : rows[e];
      Value offset = swapped ? tile.emitOffset(b, loc, cols[e], row)
                            : tile.emitOffset(b, loc, row, cols[e]);
      Value address = getSharedAddress(b, loc, tile.base, offset);
      if (bytes >= 4) {
        emitCpAsync(b, loc, address, ptrs[e], bytes, masks.empty() ? Value() : masks[e], Value());
        continue;
      }
      Value mask = masks.empty() ? Value(LLVM::ConstantOp::create(b, loc, b.getI1Type(),
                                                                  b.getBoolAttr(true)))
                                 : masks[e];
      // A string: no NVVM op loads under a predicate with a zero default.
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

/// The start of slot `slot` of a block buffer (the pipeline buffers
/// starting at `pipelineStart`), and the byte offset of each element a
/// thread holds of a block of `type` in it (row-major).
struct BlockSlotAddresses {
  Value base;
  SmallVector<Value> offsets;
};

BlockSlotAddresses getBlockSlotAddresses(OpBuilder &b, Location loc, BlockBufferAttr buffer,
                                         Value slot, RankedTensorType type, int64_t elementBytes,
                                         int64_t pipelineStart, const LaunchShape &launch,
                                         Value *isOwner = nullptr) {
  Value start = LLVM::AddOp::create(
      b, loc, createI32Constant(b, loc, pipelineStart + buffer.getOffset()),
      LLVM::MulOp::create(b, loc, slot, createI32Constant(b, loc, buffer.getSlotBytes())));
  BlockSlotAddresses addresses;
  addresses.base = getSharedAddress(b, loc, getScratchBase(b, loc), start);
  SmallVector<Value> coordinates = emitBlockCoordinates(b, loc, type, launch, isOwner);
  ArrayRef<int64_t> shape = type.getShape();
  int64_t stride = elementBytes;
  for (int64_t dim = type.getRank() - 1; dim >= 0; --dim) {
    SmallVector<Value> along = unpackElements(b, loc, coordinates[dim]);
    addresses.offsets.resize(along.size());
    for (auto [offset, coordinate] : llvm::zip(addresses.offsets, along)) {
      Value scaled = LLVM::MulOp::create(b, loc, coordinate, createI32Constant(b, loc, stride));
      offset = offset ? Value(LLVM::AddOp::create(b, loc, offset, scaled)) : scaled;
    }
    stride *= shape[dim];
  }
  return addresses;
}

/// kiln_gpu.async_copy_block: per run of elements a thread owns, one
/// cp.async into the slot's row-major elements (zero-filled where masked
/// off). Replicas of another thread's elements are not copied: a zero
/// fill of a masked replica could land after the owner's copy.
struct AsyncCopyBlockOpLowering : public ConvertOpToLLVMPattern<AsyncCopyBlockOp> {
  AsyncCopyBlockOpLowering(const LLVMTypeConverter &converter, LaunchShape launch,
                           const AccessWidths &widths, int64_t pipelineStart)
      : ConvertOpToLLVMPattern(converter), launch(launch), widths(widths),
        pipelineStart(pipelineStart) {}

  LogicalResult
  matchAndRewrite(AsyncCopyBlockOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getPtr().getType();
    Type element = cast<PointerType>(type.getElementType()).getPointeeType();
    int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
    Value owner;
    BlockSlotAddresses addresses =
        getBlockSlotAddresses(b, loc, op.getBuffer(), adaptor.getSlot(), type, elementBytes,
                              pipelineStart, launch, &owner);
    SmallVector<Value> ptrs = unpackElements(b, loc, adaptor.getPtr());
    SmallVector<Value> masks, owners;
    if (adaptor.getMask())
      masks = unpackElements(b, loc, adaptor.getMask());
    if (owner)
      owners = unpackElements(b, loc, owner);
    // A thread's runs are contiguous in the slot only along its last
    // dimension, which a 1-D block's runs are.
    int64_t width =
        type.getRank() == 1 ? std::clamp<int64_t>(widths.lookup(op), 1, 16 / elementBytes) : 1;
    int64_t bytes = width * elementBytes;
    for (size_t e = 0; e < ptrs.size(); e += width)
      emitCpAsync(b, loc, getSharedAddress(b, loc, addresses.base, addresses.offsets[e]), ptrs[e],
                  bytes, masks.empty() ? Value() : masks[e], owners.empty() ? Value() : owners[e]);
    b.eraseOp(op);
    return success();
  }

  LaunchShape launch;
  const AccessWidths &widths;
  int64_t pipelineStart;
};

/// kiln_gpu.load_block: each element a thread holds, loaded from its place
/// in the slot.
struct LoadBlockOpLowering : public ConvertOpToLLVMPattern<LoadBlockOp> {
  LoadBlockOpLowering(const LLVMTypeConverter &converter, LaunchShape launch, int64_t pipelineStart)
      : ConvertOpToLLVMPattern(converter), launch(launch), pipelineStart(pipelineStart) {}

  LogicalResult
  matchAndRewrite(LoadBlockOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type element = getTypeConverter()->convertType(type.getElementType());
    int64_t elementBytes = type.getElementType().getIntOrFloatBitWidth() / 8;
    BlockSlotAddresses addresses = getBlockSlotAddresses(
        b, loc, op.getBuffer(), adaptor.getSlot(), type, elementBytes, pipelineStart, launch);
    SmallVector<Value> values;
    for (Value offset : addresses.offsets)
      values.push_back(LLVM::LoadOp::create(
          b, loc, element, getSharedAddress(b, loc, addresses.base, offset), elementBytes));
    b.replaceOp(op, packElements(b, loc, getTypeConverter()->convertType(type), values));
    return success();
  }

  LaunchShape launch;
  int64_t pipelineStart;
};

/// kiln_gpu.async_commit_group: cp.async.commit_group.
struct AsyncCommitGroupOpLowering : public ConvertOpToLLVMPattern<AsyncCommitGroupOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(AsyncCommitGroupOp op, OpAdaptor,
                  ConversionPatternRewriter &b) const override {
    NVVM::CpAsyncCommitGroupOp::create(b, op.getLoc());
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
    NVVM::CpAsyncWaitGroupOp::create(b, loc, op.getPending());
    // cp.async writes through the generic proxy; wgmma reads through the
    // async one.
    if (hasWarpgroupMma(op->getParentOfType<ModuleOp>()))
      emitAsyncProxyFence(b, loc);
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

} // namespace

void mlir::kiln::gpu::populateAsyncCopyToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                                      RewritePatternSet &patterns,
                                                      const LaunchShape &launch,
                                                      const AccessWidths &widths,
                                                      int64_t pipelineStart) {
  patterns.add<AsyncCopyOpLowering, AsyncCopyBlockOpLowering>(converter, launch, widths,
                                                             pipelineStart);
  patterns.add<LoadBlockOpLowering>(converter, launch, pipelineStart);
  patterns.add<AsyncCommitGroupOpLowering, AsyncWaitOpLowering, SharedOperandOpLowering>(
      converter);
}
