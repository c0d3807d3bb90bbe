//===- ReduceScanOpToLLVM.cpp - Lower reductions, scans, layout changes ----===//
//
// The ops whose results depend on elements other threads hold:
// - kiln.reduce combines a thread's own elements, then butterfly-shuffles
//   across the lanes of a warp along the axis, then, when several warps
//   share the axis, exchanges warp results through shared memory;
// - kiln.scan scans a thread's run, then the lanes of a warp with shfl.up,
//   then the warps through shared memory, and carries each repeat of the
//   layout's tile into the next;
// - kiln_gpu.convert_layout between different layouts writes the block to
//   shared memory in one layout and reads it back in the other.
// Each shared-memory use is bracketed by barriers (see Utility.h).
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "llvm/ADT/STLExtras.h"

#include <map>
#include <utility>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// How a block's elements along one axis spread over a thread, the lanes of
/// a warp and the warps of the CTA, counting only threads that hold
/// distinct elements (a block smaller than the layout's tile is replicated).
struct AxisSpread {
  ThreadLayout layout;
  unsigned dim;            // the axis, as a dimension of layout.shape
  int64_t uniqueLanes;     // lanes with distinct elements along dim
  int64_t uniqueWarps;     // warps with distinct elements along dim
  int64_t laneStride;      // lane-id distance between neighbours along dim

  static std::optional<AxisSpread> get(RankedTensorType type, unsigned axis) {
    std::optional<ThreadLayout> layout = getThreadLayout(type);
    if (!layout)
      return std::nullopt;
    AxisSpread spread;
    spread.layout = *layout;
    spread.dim = layout->layoutDim(axis);
    BlockedEncodingAttr blocked = layout->blocked;
    int64_t extent = layout->shape[spread.dim];
    int64_t perThread = blocked.getSizePerThread()[spread.dim];
    int64_t lanes = blocked.getThreadsPerWarp()[spread.dim];
    int64_t warps = blocked.getWarpsPerCTA()[spread.dim];
    spread.uniqueLanes = std::min(lanes, std::max<int64_t>(1, extent / perThread));
    spread.uniqueWarps =
        std::min(warps, std::max<int64_t>(1, extent / (perThread * lanes)));
    spread.laneStride = 1;
    for (unsigned d : blocked.getOrder()) {
      if (d == spread.dim)
        break;
      spread.laneStride *= blocked.getThreadsPerWarp()[d];
    }
    return spread;
  }
};

int64_t alignTo8(int64_t bytes) { return (bytes + 7) / 8 * 8; }

/// Number of elements of a reduction's result (1 for a scalar).
int64_t getResultCount(ReduceOp op) {
  auto type = dyn_cast<RankedTensorType>(op.getResult().front().getType());
  return type ? type.getNumElements() : 1;
}

/// Byte offset of each operand's array of `slots` elements, and the total.
SmallVector<int64_t> getArrayOffsets(TypeRange elements, int64_t slots,
                                     int64_t &total) {
  SmallVector<int64_t> offsets;
  total = 0;
  for (Type element : elements) {
    offsets.push_back(total);
    total += alignTo8(slots * getSharedElementBytes(element));
  }
  return offsets;
}

SmallVector<Type> getElementTypes(ValueRange values) {
  SmallVector<Type> types;
  for (Value v : values)
    types.push_back(getElementTypeOrSelf(v.getType()));
  return types;
}


Value mulConst(OpBuilder &builder, Location loc, Value v, int64_t c) {
  return LLVM::MulOp::create(builder, loc, v, createI32Constant(builder, loc, c));
}

/// Address of element `slot` (an i32) of the scratch array of `element`s
/// that starts `arrayOffset` bytes after `base`.
Value getArrayElementAddress(OpBuilder &builder, Location loc, Value base,
                             int64_t arrayOffset, Type element, Value slot) {
  Value offset = LLVM::AddOp::create(
      builder, loc, mulConst(builder, loc, slot, getSharedElementBytes(element)),
      createI32Constant(builder, loc, arrayOffset));
  return getSharedAddress(builder, loc, base, offset);
}

/// Row-major linear index of each element a thread holds of `type`, from
/// its coordinates (an i32 per element).
SmallVector<Value> emitLinearIndices(OpBuilder &builder, Location loc,
                                     RankedTensorType type,
                                     const LaunchShape &launch) {
  SmallVector<Value> coords = emitBlockCoordinates(builder, loc, type, launch);
  Value linear;
  int64_t stride = 1;
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    Value term = stride == 1 ? coords[d]
                             : LLVM::MulOp::create(
                                   builder, loc, coords[d],
                                   splatVector(builder, loc, cast<VectorType>(coords[d].getType()),
                                               createI32Constant(builder, loc, stride)));
    linear = linear ? LLVM::AddOp::create(builder, loc, linear, term) : term;
    stride *= type.getDimSize(d);
  }
  return unpackElements(builder, loc, linear);
}

/// Combines per-operand values with the op's combine function; `active`
/// (if given) is where the result is used (see emitCombine).
SmallVector<Value> combine(Operation *op, OpBuilder &builder, ValueRange a,
                           ValueRange b, bool &failedCombine,
                           Value active = Value()) {
  FailureOr<SmallVector<Value>> result = emitCombine(op, builder, a, b, active);
  if (failed(result)) {
    failedCombine = true;
    return SmallVector<Value>(a);
  }
  return *result;
}

/// Groups the elements a thread holds of a block with `layout` by their
/// position off `dim` (elements along `dim` in increasing order within a
/// group), keyed by those offsets.
std::map<SmallVector<int32_t>, SmallVector<int64_t>>
groupAlongDim(const ThreadLayout &layout, unsigned dim) {
  SmallVector<SmallVector<int32_t>> offsets =
      getElementOffsets(layout.blocked, layout.shape);
  std::map<SmallVector<int32_t>, SmallVector<int64_t>> groups;
  int64_t count = layout.getElementsPerThread();
  for (int64_t e = 0; e < count; ++e) {
    SmallVector<int32_t> key;
    for (unsigned d = 0; d < offsets.size(); ++d)
      if (d != dim)
        key.push_back(offsets[d][e]);
    groups[key].push_back(e);
  }
  // By offset along `dim`, then by element (the order they were added in):
  // a stable order without std::stable_sort, whose temporary buffer
  // libstdc++ 12 builds with a deprecated function.
  for (auto &[key, members] : groups)
    llvm::sort(members, [&](int64_t a, int64_t b) {
      return std::make_pair(offsets[dim][a], a) < std::make_pair(offsets[dim][b], b);
    });
  return groups;
}

//===----------------------------------------------------------------------===//
// kiln.reduce
//===----------------------------------------------------------------------===//

struct ReduceOpLowering : public ConvertOpToLLVMPattern<ReduceOp> {
  ReduceOpLowering(const LLVMTypeConverter &converter, LaunchShape launch)
      : ConvertOpToLLVMPattern(converter), launch(launch) {}

  LogicalResult
  matchAndRewrite(ReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = cast<RankedTensorType>(op.getSrcs().front().getType());
    std::optional<AxisSpread> spread = AxisSpread::get(srcType, op.getAxis());
    if (!spread)
      return rewriter.notifyMatchFailure(op, "expected a thread layout");
    unsigned n = op.getSrcs().size();
    for (Value src : op.getSrcs())
      if (cast<RankedTensorType>(src.getType()).getEncoding() != srcType.getEncoding())
        return op.emitOpError("expected all operands in one layout");
    SmallVector<SmallVector<Value>> elements;
    for (Value src : adaptor.getSrcs())
      elements.push_back(unpackElements(rewriter, loc, src));
    bool failedCombine = false;

    // 1. Each thread combines its own elements of each group.
    auto groups = groupAlongDim(spread->layout, spread->dim);
    std::map<SmallVector<int32_t>, SmallVector<Value>> partial;
    for (auto &[key, members] : groups) {
      SmallVector<Value> acc;
      for (unsigned i = 0; i < n; ++i)
        acc.push_back(elements[i][members.front()]);
      for (int64_t e : ArrayRef(members).drop_front()) {
        SmallVector<Value> next;
        for (unsigned i = 0; i < n; ++i)
          next.push_back(elements[i][e]);
        acc = combine(op, rewriter, acc, next, failedCombine);
      }
      partial[key] = acc;
    }

    // 2. Butterfly across the lanes of a warp along the axis.
    for (int64_t step = 1; step < spread->uniqueLanes; step *= 2) {
      Value offset = createI32Constant(rewriter, loc, step * spread->laneStride);
      for (auto &[key, acc] : partial) {
        SmallVector<Value> other;
        for (Value v : acc)
          other.push_back(emitShuffle(rewriter, loc, v, offset, NVVM::ShflKind::bfly));
        acc = combine(op, rewriter, acc, other, failedCombine);
      }
    }

    // The result elements this thread holds, each with its group.
    auto resultType = dyn_cast<RankedTensorType>(op.getResult().front().getType());
    SmallVector<SmallVector<int32_t>> resultKeys;
    if (!resultType) {
      resultKeys.push_back(partial.begin()->first);
    } else {
      std::optional<ThreadLayout> resultLayout = getThreadLayout(resultType);
      if (!resultLayout || resultLayout->blocked != spread->layout.blocked)
        return op.emitOpError("expected its result in the slice of its "
                              "operand's layout (kiln-gpu-match-shape-layouts)");
      SmallVector<SmallVector<int32_t>> offsets =
          getElementOffsets(resultLayout->blocked, resultLayout->shape);
      for (int64_t e = 0; e < resultLayout->getElementsPerThread(); ++e) {
        SmallVector<int32_t> key;
        for (unsigned d = 0; d < offsets.size(); ++d)
          if (d != spread->dim)
            key.push_back(offsets[d][e]);
        if (!partial.count(key))
          return op.emitOpError("found no partial result for a result element");
        resultKeys.push_back(key);
      }
    }
    SmallVector<SmallVector<Value>> results;
    for (auto &key : resultKeys)
      results.push_back(partial[key]);

    // 3. Across the warps along the axis, through shared memory.
    if (spread->uniqueWarps > 1) {
      int64_t count = getResultCount(op), total;
      SmallVector<Type> types = getElementTypes(op.getSrcs());
      SmallVector<int64_t> arrays =
          getArrayOffsets(types, spread->uniqueWarps * count, total);
      SmallVector<Value> linear =
          resultType ? emitLinearIndices(rewriter, loc, resultType, launch)
                     : SmallVector<Value>{createI32Constant(rewriter, loc, 0)};
      ThreadCoordinates thread =
          emitThreadCoordinates(rewriter, loc, spread->layout.blocked, launch);
      Value lane = thread.lane[spread->dim], warp = thread.warp[spread->dim];
      Value zero = createI32Constant(rewriter, loc, 0);
      Value writes = LLVM::AndOp::create(
          rewriter, loc,
          LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, lane, zero),
          LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::ult, warp,
                               createI32Constant(rewriter, loc, spread->uniqueWarps)));
      Value base = getScratchBase(rewriter, loc);
      // Each operand's element `slot` of the scratch arrays.
      auto loadSlot = [&](Value slot) {
        SmallVector<Value> loaded;
        for (unsigned i = 0; i < n; ++i)
          loaded.push_back(loadShared(
              rewriter, loc, types[i],
              getArrayElementAddress(rewriter, loc, base, arrays[i], types[i], slot)));
        return loaded;
      };
      emitBarrier(rewriter, loc);
      // Only the writers store, behind a branch: a select of a shared
      // dummy address for the others would be a (harmless) race that
      // racecheck reports, hiding real ones.
      emitIf(rewriter, loc, writes, [&](OpBuilder &b) {
        for (auto [r, values] : llvm::enumerate(results)) {
          Value slot = LLVM::AddOp::create(b, loc, mulConst(b, loc, warp, count), linear[r]);
          for (unsigned i = 0; i < n; ++i)
            storeShared(b, loc, values[i],
                        getArrayElementAddress(b, loc, base, arrays[i], types[i], slot));
        }
      });
      emitBarrier(rewriter, loc);
      if (!resultType) {
        // A scalar result: every thread wants the same value, so the lanes
        // of each warp share the work. Lane l reads warp (l mod W)'s
        // partial, and a butterfly over the low lane bits combines them:
        // one shared load and log2(W) shuffles instead of W loads.
        Value lane = LLVM::URemOp::create(
            rewriter, loc, NVVM::ThreadIdXOp::create(rewriter, loc, rewriter.getI32Type()),
            createI32Constant(rewriter, loc, launch.threadsPerWarp));
        Value slot = LLVM::AndOp::create(
            rewriter, loc, lane, createI32Constant(rewriter, loc, spread->uniqueWarps - 1));
        SmallVector<Value> acc = loadSlot(slot);
        for (int64_t step = 1; step < spread->uniqueWarps; step *= 2) {
          Value offset = createI32Constant(rewriter, loc, step);
          SmallVector<Value> other;
          for (Value v : acc)
            other.push_back(emitShuffle(rewriter, loc, v, offset, NVVM::ShflKind::bfly));
          acc = combine(op, rewriter, acc, other, failedCombine);
        }
        results.front() = acc;
      }
      for (auto [r, values] : llvm::enumerate(results)) {
        if (!resultType)
          break;
        SmallVector<Value> acc;
        for (int64_t w = 0; w < spread->uniqueWarps; ++w) {
          Value slot = LLVM::AddOp::create(rewriter, loc,
                                           createI32Constant(rewriter, loc, w * count),
                                           linear[r]);
          SmallVector<Value> loaded = loadSlot(slot);
          acc = acc.empty() ? loaded : combine(op, rewriter, acc, loaded, failedCombine);
        }
        values = acc;
      }
    }
    if (failedCombine)
      return failure();

    SmallVector<Value> replacements;
    for (unsigned i = 0; i < n; ++i) {
      if (!resultType) {
        replacements.push_back(results.front()[i]);
        continue;
      }
      SmallVector<Value> values;
      for (auto &r : results)
        values.push_back(r[i]);
      Type converted = getTypeConverter()->convertType(op.getResult()[i].getType());
      replacements.push_back(packElements(rewriter, loc, converted, values));
    }
    rewriter.replaceOp(op, replacements);
    return success();
  }

  LaunchShape launch;
};

//===----------------------------------------------------------------------===//
// kiln_gpu.convert_layout
//===----------------------------------------------------------------------===//

/// Through shared memory: every thread writes its elements at their
/// row-major index, then reads the elements of the new layout.
/// How kiln_gpu.convert_layout lays a block out in the scratch: row-major,
/// each row (of the last dimension) padded by 16 bytes where rows are whole
/// 16-byte chunks, so that a layout whose threads each hold a few columns
/// of many rows (a tensor-core accumulator) stores to distinct banks.
struct ConversionScratch {
  int64_t rowElements = 1;
  int64_t padElements = 0;

  static ConversionScratch get(RankedTensorType type) {
    ConversionScratch scratch;
    int64_t bytes = getSharedElementBytes(type.getElementType());
    scratch.rowElements = type.getRank() ? type.getShape().back() : 1;
    if (type.getRank() >= 2 && (scratch.rowElements * bytes) % 16 == 0 && bytes <= 16)
      scratch.padElements = 16 / bytes;
    return scratch;
  }
  int64_t bytes(RankedTensorType type) const {
    int64_t rows = type.getNumElements() / rowElements;
    return rows * (rowElements + padElements) * getSharedElementBytes(type.getElementType());
  }
  /// The padded index of row-major element `index` (an i32).
  Value emitIndex(OpBuilder &builder, Location loc, Value index) const {
    if (!padElements)
      return index;
    Value row = LLVM::UDivOp::create(builder, loc, index,
                                     createI32Constant(builder, loc, rowElements));
    return LLVM::AddOp::create(builder, loc, index, mulConst(builder, loc, row, padElements));
  }
};

struct ConvertLayoutOpLowering : public ConvertOpToLLVMPattern<ConvertLayoutOp> {
  ConvertLayoutOpLowering(const LLVMTypeConverter &converter, LaunchShape launch)
      : ConvertOpToLLVMPattern(converter), launch(launch) {}

  /// Through the scratch: each thread stores the runs of consecutive
  /// elements it holds, then loads those it will hold, as vectors.
  LogicalResult
  matchAndRewrite(ConvertLayoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType srcType = op.getSrc().getType(), dstType = op.getType();
    if (srcType == dstType) {
      rewriter.replaceOp(op, adaptor.getSrc());
      return success();
    }
    if (!getThreadLayout(srcType) || !getThreadLayout(dstType))
      return rewriter.notifyMatchFailure(op, "expected thread layouts");
    Location loc = op.getLoc();
    // Pointer blocks move as LLVM pointers: the scratch holds the converted
    // element type, not the kiln one.
    Type element = getTypeConverter()->convertType(srcType.getElementType());
    int64_t bytes = getSharedElementBytes(srcType.getElementType());
    ConversionScratch scratch = ConversionScratch::get(srcType);
    Value base = getScratchBase(rewriter, loc);
    auto addressOf = [&](Value index) {
      return getSharedAddress(rewriter, loc, base,
                              mulConst(rewriter, loc, scratch.emitIndex(rewriter, loc, index),
                                       bytes));
    };
    SmallVector<Value> values = unpackElements(rewriter, loc, adaptor.getSrc());
    SmallVector<Value> srcIndices = emitLinearIndices(rewriter, loc, srcType, launch);
    emitBarrier(rewriter, loc);
    int64_t storeWidth = getSharedRunWidth(srcType);
    for (size_t e = 0; e < values.size(); e += storeWidth) {
      Value address = addressOf(srcIndices[e]);
      if (storeWidth == 1) {
        storeShared(rewriter, loc, values[e], address);
        continue;
      }
      auto vectorType = VectorType::get({storeWidth}, element);
      Value vector = LLVM::PoisonOp::create(rewriter, loc, vectorType);
      for (int64_t i = 0; i < storeWidth; ++i)
        vector = LLVM::InsertElementOp::create(rewriter, loc, vector, values[e + i],
                                               createI32Constant(rewriter, loc, i));
      LLVM::StoreOp::create(rewriter, loc, vector, address, unsigned(storeWidth * bytes));
    }
    emitBarrier(rewriter, loc);
    SmallVector<Value> result;
    int64_t loadWidth = getSharedRunWidth(dstType);
    SmallVector<Value> dstIndices = emitLinearIndices(rewriter, loc, dstType, launch);
    for (size_t e = 0; e < dstIndices.size(); e += loadWidth) {
      Value address = addressOf(dstIndices[e]);
      if (loadWidth == 1) {
        result.push_back(loadShared(rewriter, loc, element, address));
        continue;
      }
      auto vectorType = VectorType::get({loadWidth}, element);
      Value vector = LLVM::LoadOp::create(rewriter, loc, vectorType, address,
                                          unsigned(loadWidth * bytes));
      for (int64_t i = 0; i < loadWidth; ++i)
        result.push_back(LLVM::ExtractElementOp::create(rewriter, loc, vector,
                                                        createI32Constant(rewriter, loc, i)));
    }
    rewriter.replaceOp(op, packElements(rewriter, loc,
                                        getTypeConverter()->convertType(dstType), result));
    return success();
  }

  LaunchShape launch;
};

//===----------------------------------------------------------------------===//
// kiln.scan
//===----------------------------------------------------------------------===//

/// A value per operand that may be absent (no elements combined into it
/// yet): `values` empty when statically absent, `valid` (an i1) when only
/// known at run time, null when always present.
struct MaybeValues {
  SmallVector<Value> values;
  Value valid;
  bool present() const { return !values.empty(); }
};

struct ScanOpLowering : public ConvertOpToLLVMPattern<ScanOp> {
  ScanOpLowering(const LLVMTypeConverter &converter, LaunchShape launch)
      : ConvertOpToLLVMPattern(converter), launch(launch) {}

  LogicalResult
  matchAndRewrite(ScanOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getSrcs().front().getType());
    std::optional<AxisSpread> spread = AxisSpread::get(type, op.getAxis());
    if (!spread)
      return rewriter.notifyMatchFailure(op, "expected a thread layout");
    for (Value src : op.getSrcs())
      if (cast<RankedTensorType>(src.getType()).getEncoding() != type.getEncoding())
        return op.emitOpError("expected all operands in one layout");
    unsigned n = op.getSrcs().size();
    bool reverse = op.getReverse();
    bool failedCombine = false;
    auto combineValues = [&](ValueRange a, ValueRange b, Value active = Value()) {
      return combine(op, rewriter, a, b, failedCombine, active);
    };
    // `earlier` then `later`, either possibly absent.
    auto combineMaybe = [&](const MaybeValues &earlier,
                            const MaybeValues &later) -> MaybeValues {
      if (!earlier.present())
        return later;
      if (!later.present())
        return earlier;
      Value bothValid = earlier.valid && later.valid
                            ? LLVM::AndOp::create(rewriter, loc, earlier.valid, later.valid)
                            : (earlier.valid ? earlier.valid : later.valid);
      SmallVector<Value> both = combineValues(earlier.values, later.values, bothValid);
      if (!earlier.valid && !later.valid)
        return {both, Value()};
      MaybeValues result;
      for (unsigned i = 0; i < n; ++i) {
        Value v = both[i];
        if (later.valid)
          v = LLVM::SelectOp::create(rewriter, loc, later.valid, v, earlier.values[i]);
        if (earlier.valid)
          v = LLVM::SelectOp::create(rewriter, loc, earlier.valid, v, later.values[i]);
        result.values.push_back(v);
      }
      if (earlier.valid && later.valid)
        result.valid = LLVM::OrOp::create(rewriter, loc, earlier.valid, later.valid);
      return result;
    };

    const ThreadLayout &layout = spread->layout;
    BlockedEncodingAttr blocked = layout.blocked;
    unsigned dim = spread->dim;
    int64_t extent = layout.shape[dim];
    int64_t perThread = std::min<int64_t>(blocked.getSizePerThread()[dim], extent);
    int64_t tile = blocked.getShapePerCTATile()[dim];
    int64_t chunks = std::max<int64_t>(1, extent / tile);
    int64_t lanes = spread->uniqueLanes, warps = spread->uniqueWarps;

    SmallVector<SmallVector<Value>> elements;
    for (Value src : adaptor.getSrcs())
      elements.push_back(unpackElements(rewriter, loc, src));
    auto groupMap = groupAlongDim(layout, dim);
    SmallVector<SmallVector<int64_t>> groups;
    for (auto &[key, members] : groupMap)
      groups.push_back(members);

    // This thread's position along the axis, in scan order.
    ThreadCoordinates thread = emitThreadCoordinates(rewriter, loc, blocked, launch);
    auto scanPosition = [&](Value coord, int64_t unique) -> Value {
      Value position = LLVM::AndOp::create(rewriter, loc, coord,
                                           createI32Constant(rewriter, loc, unique - 1));
      if (reverse)
        position = LLVM::SubOp::create(rewriter, loc,
                                       createI32Constant(rewriter, loc, unique - 1), position);
      return position;
    };
    Value lanePosition = scanPosition(thread.lane[dim], lanes);
    Value warpPosition = scanPosition(thread.warp[dim], warps);
    auto atLeast = [&](Value position, int64_t k) -> Value {
      return LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::uge, position,
                                  createI32Constant(rewriter, loc, k));
    };
    NVVM::ShflKind shiftKind = reverse ? NVVM::ShflKind::down : NVVM::ShflKind::up;
    // The lane holding the last (in scan order) position of this thread's
    // row of lanes.
    Value tid = NVVM::ThreadIdXOp::create(rewriter, loc, rewriter.getI32Type());
    Value laneId = LLVM::URemOp::create(
        rewriter, loc, tid, createI32Constant(rewriter, loc, launch.threadsPerWarp));
    Value lastLane = LLVM::AddOp::create(
        rewriter, loc,
        LLVM::SubOp::create(rewriter, loc, laneId,
                            mulConst(rewriter, loc, thread.lane[dim], spread->laneStride)),
        createI32Constant(rewriter, loc, (reverse ? 0 : lanes - 1) * spread->laneStride));

    // Shared memory for the warps' totals: [warp][group position].
    // Positions off the axis: the number of independent scans.
    int64_t groupCount = 1;
    for (int64_t d : layout.shape)
      groupCount *= d;
    groupCount /= extent;
    SmallVector<Type> types = getElementTypes(op.getSrcs());
    int64_t total;
    SmallVector<int64_t> arrays = getArrayOffsets(types, warps * groupCount, total);
    SmallVector<Value> groupIndex;
    if (warps > 1) {
      SmallVector<Value> coords =
          emitElementCoordinates(rewriter, loc, blocked, layout.shape, launch);
      for (auto &members : groups) {
        Value index = createI32Constant(rewriter, loc, 0);
        Value memberIndex = createI32Constant(rewriter, loc, members.front());
        for (unsigned d = 0; d < layout.shape.size(); ++d) {
          if (d == dim)
            continue;
          Value coord = LLVM::ExtractElementOp::create(rewriter, loc, coords[d], memberIndex);
          index = LLVM::AddOp::create(rewriter, loc,
                                      mulConst(rewriter, loc, index, layout.shape[d]), coord);
        }
        groupIndex.push_back(index);
      }
    }
    Value base = warps > 1 ? getScratchBase(rewriter, loc) : Value();
    auto totalAddress = [&](Value warp, Value group, unsigned i) {
      Value slot = LLVM::AddOp::create(rewriter, loc, mulConst(rewriter, loc, warp, groupCount),
                                       group);
      return getArrayElementAddress(rewriter, loc, base, arrays[i], types[i], slot);
    };

    SmallVector<MaybeValues> carry(groups.size());
    for (int64_t step = 0; step < chunks; ++step) {
      int64_t chunk = reverse ? chunks - 1 - step : step;
      SmallVector<SmallVector<int64_t>> runs;
      SmallVector<MaybeValues> lanePrefix(groups.size());
      SmallVector<SmallVector<Value>> warpTotal(groups.size());
      for (auto [g, members] : llvm::enumerate(groups)) {
        SmallVector<int64_t> run(members.begin() + chunk * perThread,
                                 members.begin() + (chunk + 1) * perThread);
        if (reverse)
          std::reverse(run.begin(), run.end());
        // 1. The thread's own run.
        for (size_t j = 1; j < run.size(); ++j) {
          SmallVector<Value> previous, current;
          for (unsigned i = 0; i < n; ++i) {
            previous.push_back(elements[i][run[j - 1]]);
            current.push_back(elements[i][run[j]]);
          }
          SmallVector<Value> combined = combineValues(previous, current);
          for (unsigned i = 0; i < n; ++i)
            elements[i][run[j]] = combined[i];
        }
        SmallVector<Value> inclusive;
        for (unsigned i = 0; i < n; ++i)
          inclusive.push_back(elements[i][run.back()]);
        // 2. The lanes of the warp (Hillis and Steele over shuffles).
        for (int64_t k = 1; k < lanes; k *= 2) {
          Value delta = createI32Constant(rewriter, loc, k * spread->laneStride);
          SmallVector<Value> other;
          for (Value v : inclusive)
            other.push_back(emitShuffle(rewriter, loc, v, delta, shiftKind));
          Value has = atLeast(lanePosition, k);
          SmallVector<Value> combined = combineValues(other, inclusive, has);
          for (unsigned i = 0; i < n; ++i)
            inclusive[i] = LLVM::SelectOp::create(rewriter, loc, has, combined[i], inclusive[i]);
        }
        if (lanes > 1) {
          Value delta = createI32Constant(rewriter, loc, spread->laneStride);
          for (Value v : inclusive) {
            lanePrefix[g].values.push_back(emitShuffle(rewriter, loc, v, delta, shiftKind));
            warpTotal[g].push_back(
                emitShuffle(rewriter, loc, v, lastLane, NVVM::ShflKind::idx));
          }
          lanePrefix[g].valid = atLeast(lanePosition, 1);
        } else {
          warpTotal[g] = inclusive;
        }
        runs.push_back(run);
      }

      // 3. The warps, through shared memory.
      SmallVector<MaybeValues> warpPrefix(groups.size());
      SmallVector<SmallVector<Value>> chunkTotal = warpTotal;
      if (warps > 1) {
        emitBarrier(rewriter, loc);
        Value myWarp = LLVM::AndOp::create(rewriter, loc, thread.warp[dim],
                                           createI32Constant(rewriter, loc, warps - 1));
        for (size_t g = 0; g < groups.size(); ++g)
          for (unsigned i = 0; i < n; ++i)
            storeShared(rewriter, loc, warpTotal[g][i], totalAddress(myWarp, groupIndex[g], i));
        emitBarrier(rewriter, loc);
        for (size_t g = 0; g < groups.size(); ++g) {
          MaybeValues prefix, running;
          for (int64_t p = 0; p < warps; ++p) {
            int64_t w = reverse ? warps - 1 - p : p;
            SmallVector<Value> loaded;
            for (unsigned i = 0; i < n; ++i)
              loaded.push_back(loadShared(rewriter, loc, types[i],
                                          totalAddress(createI32Constant(rewriter, loc, w),
                                                       groupIndex[g], i)));
            if (p > 0) {
              // Warps at position p and after have the running total of
              // positions before p as prefix.
              Value mine = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq,
                                                warpPosition,
                                                createI32Constant(rewriter, loc, p));
              if (!prefix.present()) {
                prefix = {running.values, mine};
              } else {
                for (unsigned i = 0; i < n; ++i)
                  prefix.values[i] = LLVM::SelectOp::create(rewriter, loc, mine,
                                                            running.values[i], prefix.values[i]);
                prefix.valid = LLVM::OrOp::create(rewriter, loc, prefix.valid, mine);
              }
            }
            running = combineMaybe(running, MaybeValues{loaded, Value()});
          }
          warpPrefix[g] = prefix;
          chunkTotal[g] = running.values;
        }
      }

      // 4. Everything before this thread's run, applied to the run.
      for (size_t g = 0; g < groups.size(); ++g) {
        MaybeValues prefix =
            combineMaybe(combineMaybe(carry[g], warpPrefix[g]), lanePrefix[g]);
        if (prefix.present()) {
          for (int64_t e : runs[g]) {
            SmallVector<Value> current;
            for (unsigned i = 0; i < n; ++i)
              current.push_back(elements[i][e]);
            SmallVector<Value> combined = combineValues(prefix.values, current, prefix.valid);
            for (unsigned i = 0; i < n; ++i)
              elements[i][e] = prefix.valid ? LLVM::SelectOp::create(rewriter, loc, prefix.valid,
                                                                     combined[i], current[i])
                                            : combined[i];
          }
        }
        carry[g] = combineMaybe(carry[g], MaybeValues{chunkTotal[g], Value()});
      }
    }
    if (failedCombine)
      return failure();

    SmallVector<Value> results;
    for (unsigned i = 0; i < n; ++i)
      results.push_back(packElements(
          rewriter, loc, getTypeConverter()->convertType(op.getResult()[i].getType()),
          elements[i]));
    rewriter.replaceOp(op, results);
    return success();
  }

  LaunchShape launch;
};

} // namespace

int64_t mlir::kiln::gpu::getScratchBytes(Operation *op, const LaunchShape &launch) {
  if (int64_t bytes = getShapeOpScratchBytes(op))
    return bytes;
  if (int64_t bytes = getDotOpScratchBytes(op))
    return bytes;
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    auto type = cast<RankedTensorType>(reduce.getSrcs().front().getType());
    std::optional<AxisSpread> spread = AxisSpread::get(type, reduce.getAxis());
    if (!spread || spread->uniqueWarps <= 1)
      return 0;
    int64_t total;
    getArrayOffsets(getElementTypes(reduce.getSrcs()),
                    spread->uniqueWarps * getResultCount(reduce), total);
    return total;
  }
  if (auto scan = dyn_cast<ScanOp>(op)) {
    auto type = cast<RankedTensorType>(scan.getSrcs().front().getType());
    std::optional<AxisSpread> spread = AxisSpread::get(type, scan.getAxis());
    if (!spread || spread->uniqueWarps <= 1)
      return 0;
    int64_t total;
    getArrayOffsets(getElementTypes(scan.getSrcs()),
                    spread->uniqueWarps * type.getNumElements() / type.getDimSize(scan.getAxis()),
                    total);
    return total;
  }
  if (auto convert = dyn_cast<ConvertLayoutOp>(op)) {
    RankedTensorType type = convert.getSrc().getType();
    if (type == convert.getType())
      return 0;
    return alignTo8(ConversionScratch::get(type).bytes(type));
  }
  return 0;
}

void mlir::kiln::gpu::populateReduceScanOpToLLVMPatterns(
    KilnGPUToNVVMTypeConverter &converter, RewritePatternSet &patterns,
    const LaunchShape &launch) {
  patterns.add<ReduceOpLowering, ScanOpLowering, ConvertLayoutOpLowering>(converter, launch);
}
