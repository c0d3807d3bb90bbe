//===- KilnToLLVMCPU.cpp - Lower kiln kernels to host LLVM -----------------===//
//
// Implements convert-kiln-to-llvm-cpu. One program instance runs on one host
// thread, so each block becomes the LLVM vector of all its elements in
// row-major order and LLVM's backend splits the vectors into the host's SIMD
// registers. Grid queries read extra kernel parameters, and an entry
// function gives every kernel one calling convention for the launcher.
//
//===----------------------------------------------------------------------===//

#include "AtomicOpToLLVM.h"
#include "CancellationPoints.h"
#include "CountedLoop.h"
#include "DivisionToLLVM.h"
#include "DotOpToLLVM.h"
#include "ShapeOpToLLVM.h"

#include "kiln/Analysis/AccessSites.h"
#include "kiln/Analysis/AxisInfo.h"
#include "kiln/Conversion/LLVMCommon/ElementwiseCall.h"
#include "kiln/Conversion/LLVMCommon/Patterns.h"
#include "kiln/Conversion/LLVMCommon/VectorUtils.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_CONVERTKILNTOLLVMCPU
#include "kiln/Conversion/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Program ids and program counts, three of each, follow a kernel's own
/// parameters.
constexpr unsigned kGridParameters = 6;
constexpr StringLiteral kSiteAttr = "kiln_cpu.site";
constexpr StringLiteral kSitesAttr = "kiln_cpu.sites";
constexpr StringLiteral kBoundsFunction = "__kiln_cpu_bounds";
constexpr StringLiteral kCheckFunction = "__kiln_cpu_check";

/// Math ops LLVM has no intrinsic for call the C library, whose functions
/// the JIT resolves in the process (f16 and bf16 compute in f32).
const ScalarFunction kHostMathFunctions[] = {
    {"math.erf", "erff", "erf"},
    {"math.erfc", "erfcf", "erfc"},
    {"math.cbrt", "cbrtf", "cbrt"},
};

/// A block becomes a vector of all its elements; pointers live in the host's
/// single address space.
class CPUTypeConverter : public LLVMTypeConverter {
public:
  explicit CPUTypeConverter(MLIRContext *context) : LLVMTypeConverter(context) {
    addConversion([context](PointerType) -> Type {
      return LLVM::LLVMPointerType::get(context);
    });
    addConversion([this](RankedTensorType type) -> std::optional<Type> {
      if (type.getEncoding())
        return std::nullopt;
      Type element = convertType(type.getElementType());
      if (!element)
        return std::nullopt;
      return VectorType::get({type.getNumElements()}, element);
    });
  }
};

Type withElement(Type type, Type element) {
  if (auto vector = dyn_cast<VectorType>(type))
    return VectorType::get(vector.getShape(), element);
  return element;
}

//===----------------------------------------------------------------------===//
// Block creation and shape
//===----------------------------------------------------------------------===//

struct MakeRangeLowering : public ConvertOpToLLVMPattern<MakeRangeOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(MakeRangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    SmallVector<int32_t> values;
    for (int64_t i = op.getStart(); i < op.getEnd(); ++i)
      values.push_back(int32_t(i));
    rewriter.replaceOpWithNewOp<LLVM::ConstantOp>(
        op, type, DenseElementsAttr::get(type, ArrayRef<int32_t>(values)));
    return success();
  }
};

/// Constant blocks, splat or not: the whole block is one vector constant.
struct BlockConstantLowering : public ConvertOpToLLVMPattern<arith::ConstantOp> {
  BlockConstantLowering(const LLVMTypeConverter &converter)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(arith::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!dense || !isa<RankedTensorType>(op.getType()))
      return failure();
    auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOpWithNewOp<LLVM::ConstantOp>(op, type, dense.reshape(type));
    return success();
  }
};

/// Inserting a dimension of size one keeps the row-major element order.
struct ExpandDimsLowering : public ConvertOpToLLVMPattern<ExpandDimsOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(ExpandDimsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getSrc());
    return success();
  }
};

/// Each result element takes the source element at its coordinates, with
/// the broadcast dimensions at zero: a shuffle with a static mask.
struct BroadcastLowering : public ConvertOpToLLVMPattern<BroadcastOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ArrayRef<int64_t> srcShape = op.getSrc().getType().getShape();
    ArrayRef<int64_t> dstShape = op.getType().getShape();
    int64_t rank = dstShape.size();
    SmallVector<int32_t> mask;
    for (int64_t flat = 0; flat < op.getType().getNumElements(); ++flat) {
      int64_t rest = flat, source = 0, stride = 1;
      for (int64_t d = rank - 1; d >= 0; --d) {
        int64_t coord = rest % dstShape[d];
        rest /= dstShape[d];
        source += (srcShape[d] == 1 ? 0 : coord) * stride;
        stride *= srcShape[d];
      }
      mask.push_back(int32_t(source));
    }
    Value src = adaptor.getSrc();
    rewriter.replaceOpWithNewOp<LLVM::ShuffleVectorOp>(op, src, src, mask);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reductions and scans
//===----------------------------------------------------------------------===//

/// Row-major strides of `shape`.
SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// For each element of a block of `shape` with `shape[axis]` replaced by
/// `extent`, the index in a block of `shape` of the element at the same
/// coordinates, with `shift` added along `axis`.
SmallVector<int32_t> shiftedIndices(ArrayRef<int64_t> shape, int64_t axis,
                                    int64_t extent, int64_t shift) {
  SmallVector<int64_t> outShape(shape);
  outShape[axis] = extent;
  SmallVector<int64_t> inStrides = rowMajorStrides(shape);
  SmallVector<int64_t> outStrides = rowMajorStrides(outShape);
  int64_t count = 1;
  for (int64_t d : outShape)
    count *= d;
  SmallVector<int32_t> indices;
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t coord = (i / outStrides[d]) % outShape[d];
      if (int64_t(d) == axis)
        coord += shift;
      index += coord * inStrides[d];
    }
    indices.push_back(int32_t(index));
  }
  return indices;
}

SmallVector<Value> shuffleAll(OpBuilder &builder, Location loc,
                              ArrayRef<Value> values, ArrayRef<int32_t> mask) {
  SmallVector<Value> shuffled;
  for (Value v : values)
    shuffled.push_back(LLVM::ShuffleVectorOp::create(builder, loc, v, v, mask));
  return shuffled;
}

/// A reduction halves the reduced axis until it has one element: each step
/// combines the lower half with the upper half, on whole vectors.
struct ReduceLowering : public ConvertOpToLLVMPattern<ReduceOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(ReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getSrcs().front().getType());
    SmallVector<int64_t> shape(type.getShape());
    int64_t axis = op.getAxis();
    if (!llvm::isPowerOf2_64(shape[axis]))
      return op.emitOpError("expected a power-of-two extent along the axis");
    SmallVector<Value> values(adaptor.getSrcs());
    while (shape[axis] > 1) {
      int64_t half = shape[axis] / 2;
      SmallVector<Value> lower =
          shuffleAll(rewriter, loc, values, shiftedIndices(shape, axis, half, 0));
      SmallVector<Value> upper = shuffleAll(
          rewriter, loc, values, shiftedIndices(shape, axis, half, half));
      FailureOr<SmallVector<Value>> combined =
          emitCombine(op, rewriter, lower, upper);
      if (failed(combined))
        return failure();
      values = *combined;
      shape[axis] = half;
    }
    for (auto [i, result] : llvm::enumerate(op.getResult()))
      if (!isa<RankedTensorType>(result.getType()))
        values[i] = LLVM::ExtractElementOp::create(
            rewriter, loc, values[i], createI32Constant(rewriter, loc, 0));
    rewriter.replaceOp(op, values);
    return success();
  }
};

/// An inclusive scan in log2(n) steps (Hillis and Steele): at step k each
/// element combines with the element k before it along the axis (after it,
/// for a reverse scan), where there is one.
struct ScanLowering : public ConvertOpToLLVMPattern<ScanOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(ScanOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getSrcs().front().getType());
    ArrayRef<int64_t> shape = type.getShape();
    int64_t axis = op.getAxis(), extent = shape[axis];
    bool reverse = op.getReverse();
    SmallVector<int64_t> strides = rowMajorStrides(shape);
    SmallVector<Value> values(adaptor.getSrcs());
    auto maskType = VectorType::get({type.getNumElements()}, rewriter.getI1Type());
    for (int64_t step = 1; step < extent; step *= 2) {
      // Lanes without a partner take their own value; the select below
      // keeps them unchanged.
      SmallVector<int32_t> partner;
      SmallVector<bool> hasPartner;
      for (int64_t i = 0; i < type.getNumElements(); ++i) {
        int64_t coord = (i / strides[axis]) % extent;
        bool inside = reverse ? coord + step < extent : coord >= step;
        hasPartner.push_back(inside);
        int64_t offset = reverse ? step : -step;
        partner.push_back(int32_t(inside ? i + offset * strides[axis] : i));
      }
      SmallVector<Value> other = shuffleAll(rewriter, loc, values, partner);
      FailureOr<SmallVector<Value>> combined =
          emitCombine(op, rewriter, other, values);
      if (failed(combined))
        return failure();
      Value mask = LLVM::ConstantOp::create(
          rewriter, loc, maskType,
          DenseElementsAttr::get(maskType, ArrayRef<bool>(hasPartner)));
      for (auto [value, next] : llvm::zip(values, *combined))
        value = LLVM::SelectOp::create(rewriter, loc, mask, next, value);
    }
    rewriter.replaceOp(op, values);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Loads and stores
//===----------------------------------------------------------------------===//

} // namespace

/// Compares each lane's address with the buffer of the parameter the access
/// `op` derives from (its site attribute), reports the first active lane
/// outside it, and returns the mask without such lanes.
Value mlir::kiln::checkAccessBounds(Operation *op, OpBuilder &builder, Value ptrs,
                                    Value mask, unsigned elementBytes) {
  auto site = op->getAttrOfType<IntegerAttr>(kSiteAttr);
  if (!site)
    return mask;
  Location loc = op->getLoc();
  MLIRContext *context = builder.getContext();
  auto module = op->getParentOfType<ModuleOp>();
  int64_t lanes = cast<VectorType>(ptrs.getType()).getNumElements();
  Type i64 = builder.getI64Type();
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto laneType = VectorType::get({lanes}, i64);

  // The launch's table of (base, size in bytes) per kernel parameter.
  auto boundsFn = LLVM::lookupOrCreateFn(builder, module, kBoundsFunction, {},
                                         ptrType);
  auto checkFn = LLVM::lookupOrCreateFn(
      builder, module, kCheckFunction,
      {builder.getI32Type(), builder.getI1Type(), i64},
      LLVM::LLVMVoidType::get(context));
  if (failed(boundsFn) || failed(checkFn))
    return mask;
  Value table = LLVM::CallOp::create(builder, loc, *boundsFn, ValueRange{})
                    .getResult();
  int64_t param = site.getInt() >> 16;
  Value entry = LLVM::GEPOp::create(builder, loc, ptrType, i64, table,
                                    ArrayRef<LLVM::GEPArg>{2 * param});
  Value base = LLVM::LoadOp::create(builder, loc, i64, entry);
  Value sizeAddr = LLVM::GEPOp::create(builder, loc, ptrType, i64, entry,
                                       ArrayRef<LLVM::GEPArg>{1});
  Value size = LLVM::LoadOp::create(builder, loc, i64, sizeAddr);

  Value addresses = LLVM::PtrToIntOp::create(builder, loc, laneType, ptrs);
  Value offsets = LLVM::SubOp::create(builder, loc, addresses,
                                      splatVector(builder, loc, laneType, base));
  Value zero = LLVM::ConstantOp::create(builder, loc, laneType,
                                        SplatElementsAttr::get(laneType, builder.getI64IntegerAttr(0)));
  Value width = LLVM::ConstantOp::create(
      builder, loc, laneType,
      SplatElementsAttr::get(laneType, builder.getI64IntegerAttr(elementBytes)));
  Value end = LLVM::AddOp::create(builder, loc, offsets, width);
  Value inside = LLVM::AndOp::create(
      builder, loc,
      LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::sge, offsets, zero),
      LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::sle, end,
                           splatVector(builder, loc, laneType, size)));
  auto laneMaskType = VectorType::get({lanes}, builder.getI1Type());
  Value outside = LLVM::XOrOp::create(
      builder, loc, inside,
      LLVM::ConstantOp::create(builder, loc, laneMaskType,
                               SplatElementsAttr::get(laneMaskType, true)));
  Value bad = LLVM::AndOp::create(builder, loc, mask, outside);
  Value anyBad = LLVM::vector_reduce_or::create(builder, loc,
                                                builder.getI1Type(), bad);
  Value index = LLVM::SDivOp::create(builder, loc, offsets, width);
  Value largest = LLVM::ConstantOp::create(
      builder, loc, laneType,
      SplatElementsAttr::get(laneType, builder.getI64IntegerAttr(INT64_MAX)));
  Value badIndices = LLVM::SelectOp::create(builder, loc, bad, index, largest);
  Value firstBad =
      LLVM::vector_reduce_smin::create(builder, loc, i64, badIndices);
  Value siteId = createI32Constant(builder, loc, site.getInt() & 0xffff);
  LLVM::CallOp::create(builder, loc, *checkFn,
                       ValueRange{siteId, anyBad, firstBad});
  return LLVM::AndOp::create(builder, loc, mask, inside);
}

namespace {

/// How one load or store accesses memory, decided before conversion.
struct AccessPlan {
  /// Elements (in row-major order) in each run of consecutive addresses
  /// that one masked vector access moves from the run's first address: the
  /// whole block, each row, or 1 (a gather or scatter).
  int64_t runLength = 1;
  unsigned alignment = 1;
};

/// Lanes [start, start + count) of `vector`.
Value sliceVector(OpBuilder &builder, Location loc, Value vector, int64_t start,
                  int64_t count) {
  SmallVector<int32_t> lanes;
  for (int64_t i = 0; i < count; ++i)
    lanes.push_back(int32_t(start + i));
  return LLVM::ShuffleVectorOp::create(builder, loc, vector, vector, lanes);
}

/// The vectors of `parts`, one after the other (pairwise, as a tree).
Value concatVectors(OpBuilder &builder, Location loc, SmallVector<Value> parts) {
  auto length = [](Value v) { return cast<VectorType>(v.getType()).getNumElements(); };
  // shufflevector takes two operands of one type: the shorter is padded.
  auto padTo = [&](Value v, int64_t size) {
    SmallVector<int32_t> lanes;
    for (int64_t j = 0; j < size; ++j)
      lanes.push_back(j < length(v) ? int32_t(j) : -1);
    return Value(LLVM::ShuffleVectorOp::create(builder, loc, v, v, lanes));
  };
  while (parts.size() > 1) {
    SmallVector<Value> joined;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      int64_t a = length(parts[i]), b = length(parts[i + 1]);
      int64_t width = std::max(a, b);
      Value first = a < width ? padTo(parts[i], width) : parts[i];
      Value second = b < width ? padTo(parts[i + 1], width) : parts[i + 1];
      SmallVector<int32_t> lanes;
      for (int64_t j = 0; j < a + b; ++j)
        lanes.push_back(int32_t(j < a ? j : width + (j - a)));
      joined.push_back(LLVM::ShuffleVectorOp::create(builder, loc, first, second, lanes));
    }
    if (parts.size() % 2)
      joined.push_back(parts.back());
    parts = std::move(joined);
  }
  return parts.front();
}

using AccessPlans = llvm::DenseMap<Operation *, AccessPlan>;

/// Gathers and scatters of more lanes than this, of elements narrower than
/// 32 bits (or of any element on a target without such instructions: no
/// gathers before AVX2, no scatters before AVX-512), are loops over the lanes: hosts have no gather instruction
/// for such elements, and LLVM scalarizes one into a branch per lane, which
/// takes seconds to compile for blocks of a thousand lanes (a 32x32 fp16
/// tile with run-time strides; minutes for a 64x32 fp32 tile at x86-64-v2).
/// The loop compiles in constant time.
constexpr int64_t kMaxScalarizedLanes = 16;

bool needsLaneLoop(Type memElement, int64_t lanes, bool vectorInstruction) {
  return lanes > kMaxScalarizedLanes &&
         (!vectorInstruction ||
          (memElement.isIntOrFloat() && memElement.getIntOrFloatBitWidth() < 32));
}

/// A new stack slot holding the lanes of `vector` (bytes for an i1 mask,
/// whose vectors are bit-packed in memory).
Value storeInStackSlot(OpBuilder &builder, Location loc, Value vector) {
  auto type = cast<VectorType>(vector.getType());
  Type element = type.getElementType();
  if (element.isInteger(1)) {
    element = builder.getI8Type();
    vector = LLVM::ZExtOp::create(
        builder, loc, VectorType::get(type.getShape(), element), vector);
  }
  unsigned alignment = isa<LLVM::LLVMPointerType>(element)
                           ? 8
                           : std::max(1u, element.getIntOrFloatBitWidth() / 8);
  auto ptrType = LLVM::LLVMPointerType::get(builder.getContext());
  Value slot = LLVM::AllocaOp::create(
      builder, loc, ptrType, element,
      createI64Constant(builder, loc, type.getNumElements()), alignment);
  LLVM::StoreOp::create(builder, loc, vector, slot, alignment);
  return slot;
}

/// The address of lane `lane` of a slot of `element`s.
Value laneAddress(OpBuilder &builder, Location loc, Type element, Value slot,
                  Value lane) {
  auto ptrType = LLVM::LLVMPointerType::get(builder.getContext());
  return LLVM::GEPOp::create(builder, loc, ptrType, element, slot,
                             ArrayRef<LLVM::GEPArg>{lane});
}

/// For lane `lane` of the spilled pointers and mask: its address where the
/// mask is set, else `fallback`, so that the lane loops need no branch.
Value activeAddress(OpBuilder &builder, Location loc, Value ptrSlot, Value maskSlot,
                    Value lane, Value fallback) {
  auto ptrType = LLVM::LLVMPointerType::get(builder.getContext());
  Type i8 = builder.getI8Type();
  Value active = LLVM::LoadOp::create(builder, loc, i8,
                                      laneAddress(builder, loc, i8, maskSlot, lane), 1);
  Value set = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::ne, active,
                                   LLVM::ConstantOp::create(builder, loc, i8,
                                                            builder.getI8IntegerAttr(0)));
  Value ptr = LLVM::LoadOp::create(builder, loc, ptrType,
                                   laneAddress(builder, loc, ptrType, ptrSlot, lane), 8);
  return LLVM::SelectOp::create(builder, loc, set, ptr, fallback);
}

/// A masked gather as a loop over the lanes, through stack slots: the
/// result slot starts as `other`, and each lane loads from its address
/// when its mask bit is set and from its own result entry when not.
Value emitGatherLoop(ConversionPatternRewriter &rewriter, Location loc,
                     VectorType type, Value ptrs, Value mask, Value other) {
  auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
  Type element = type.getElementType();
  unsigned bytes = std::max(1u, element.getIntOrFloatBitWidth() / 8);
  Value stack = LLVM::StackSaveOp::create(rewriter, loc, ptrType);
  Value ptrSlot = storeInStackSlot(rewriter, loc, ptrs);
  Value maskSlot = storeInStackSlot(rewriter, loc, mask);
  Value result = storeInStackSlot(rewriter, loc, other);
  emitCountedLoop(rewriter, loc, type.getNumElements(), {}, [&](Value lane, ValueRange) {
    Value own = laneAddress(rewriter, loc, element, result, lane);
    Value from = activeAddress(rewriter, loc, ptrSlot, maskSlot, lane, own);
    Value value = LLVM::LoadOp::create(rewriter, loc, element, from, bytes);
    LLVM::StoreOp::create(rewriter, loc, value, own, bytes);
    return SmallVector<Value>{};
  });
  Value gathered = LLVM::LoadOp::create(rewriter, loc, type, result, bytes);
  LLVM::StackRestoreOp::create(rewriter, loc, stack);
  return gathered;
}

/// A masked scatter as a loop over the lanes, in lane order (a later lane
/// wins where addresses repeat, as for llvm.masked.scatter); masked-off
/// lanes store to a scratch element instead.
void emitScatterLoop(ConversionPatternRewriter &rewriter, Location loc, Value value,
                     Value ptrs, Value mask) {
  auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
  auto type = cast<VectorType>(value.getType());
  Type element = type.getElementType();
  unsigned bytes = std::max(1u, element.getIntOrFloatBitWidth() / 8);
  Value stack = LLVM::StackSaveOp::create(rewriter, loc, ptrType);
  Value ptrSlot = storeInStackSlot(rewriter, loc, ptrs);
  Value maskSlot = storeInStackSlot(rewriter, loc, mask);
  Value values = storeInStackSlot(rewriter, loc, value);
  Value scratch = LLVM::AllocaOp::create(rewriter, loc, ptrType, element,
                                         createI64Constant(rewriter, loc, 1), bytes);
  emitCountedLoop(rewriter, loc, type.getNumElements(), {}, [&](Value lane, ValueRange) {
    Value to = activeAddress(rewriter, loc, ptrSlot, maskSlot, lane, scratch);
    Value laneValue = LLVM::LoadOp::create(
        rewriter, loc, element, laneAddress(rewriter, loc, element, values, lane), bytes);
    LLVM::StoreOp::create(rewriter, loc, laneValue, to, bytes);
    return SmallVector<Value>{};
  });
  LLVM::StackRestoreOp::create(rewriter, loc, stack);
}

/// Shared by loads and stores: the access's vector of addresses, its mask
/// (all-true when absent) and, in checked mode, the mask narrowed to the
/// lanes inside the parameter buffer the address derives from.
template <typename OpTy>
struct AccessLowering : public ConvertOpToLLVMPattern<OpTy> {
  AccessLowering(const LLVMTypeConverter &converter, const AccessPlans &plans,
                 bool checked, bool vectorGathers, bool vectorScatters)
      : ConvertOpToLLVMPattern<OpTy>(converter), plans(plans), checked(checked),
        vectorGathers(vectorGathers), vectorScatters(vectorScatters) {}

  Value allTrue(OpBuilder &builder, Location loc, int64_t lanes) const {
    auto type = VectorType::get({lanes}, builder.getI1Type());
    return LLVM::ConstantOp::create(builder, loc, type,
                                    SplatElementsAttr::get(type, true));
  }

  /// In checked mode, narrows the mask to the lanes inside the buffer.
  Value checkBounds(OpTy op, OpBuilder &builder, Value ptrs, Value mask,
                    unsigned elementBytes) const {
    return checked ? checkAccessBounds(op, builder, ptrs, mask, elementBytes) : mask;
  }

  /// Scalars are accessed as one-lane vectors so they share the masked path.
  Value asVector(OpBuilder &builder, Location loc, Value value) const {
    if (isa<VectorType>(value.getType()))
      return value;
    auto type = VectorType::get({1}, value.getType());
    return splatVector(builder, loc, type, value);
  }

  const AccessPlans &plans;
  bool checked;
  bool vectorGathers;
  bool vectorScatters;
};

struct LoadLowering : public AccessLowering<LoadOp> {
  using AccessLowering::AccessLowering;
  LogicalResult
  matchAndRewrite(LoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type resultType = getTypeConverter()->convertType(op.getType());
    Type element = getTypeConverter()->convertType(getPointeeType(op.getPtr().getType()));
    Type memElement = getMemoryElementType(element);
    Value ptrs = asVector(rewriter, loc, adaptor.getPtr());
    int64_t lanes = cast<VectorType>(ptrs.getType()).getNumElements();
    auto memType = VectorType::get({lanes}, memElement);
    Value mask = adaptor.getMask() ? asVector(rewriter, loc, adaptor.getMask())
                                   : allTrue(rewriter, loc, lanes);
    Value other;
    if (adaptor.getOther()) {
      other = asVector(rewriter, loc, adaptor.getOther());
      if (memElement != element)
        other = LLVM::ZExtOp::create(rewriter, loc, memType, other);
    } else {
      other = LLVM::ZeroOp::create(rewriter, loc, memType);
    }
    AccessPlan plan = plans.lookup(op);
    mask = checkBounds(op, rewriter, ptrs, mask,
                       memElement.getIntOrFloatBitWidth() / 8);
    Value loaded;
    if (plan.runLength == lanes) {
      Value base = LLVM::ExtractElementOp::create(
          rewriter, loc, ptrs, createI32Constant(rewriter, loc, 0));
      loaded = LLVM::MaskedLoadOp::create(rewriter, loc, memType, base, mask,
                                          other, plan.alignment);
    } else if (plan.runLength > 1) {
      int64_t run = plan.runLength;
      auto runType = VectorType::get({run}, memElement);
      SmallVector<Value> parts;
      for (int64_t start = 0; start < lanes; start += run) {
        Value base = LLVM::ExtractElementOp::create(
            rewriter, loc, ptrs, createI32Constant(rewriter, loc, start));
        parts.push_back(LLVM::MaskedLoadOp::create(
            rewriter, loc, runType, base, sliceVector(rewriter, loc, mask, start, run),
            sliceVector(rewriter, loc, other, start, run), plan.alignment));
      }
      loaded = concatVectors(rewriter, loc, parts);
    } else if (needsLaneLoop(memElement, lanes, this->vectorGathers)) {
      loaded = emitGatherLoop(rewriter, loc, memType, ptrs, mask, other);
    } else {
      loaded = LLVM::masked_gather::create(rewriter, loc, memType, ptrs, mask,
                                           ValueRange{other}, plan.alignment);
    }
    if (memElement != element)
      loaded = LLVM::TruncOp::create(rewriter, loc, withElement(memType, element),
                                     loaded);
    if (!isa<VectorType>(resultType))
      loaded = LLVM::ExtractElementOp::create(rewriter, loc, loaded,
                                              createI32Constant(rewriter, loc, 0));
    rewriter.replaceOp(op, loaded);
    return success();
  }
};

struct StoreLowering : public AccessLowering<StoreOp> {
  using AccessLowering::AccessLowering;
  LogicalResult
  matchAndRewrite(StoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = getTypeConverter()->convertType(getPointeeType(op.getPtr().getType()));
    Type memElement = getMemoryElementType(element);
    Value ptrs = asVector(rewriter, loc, adaptor.getPtr());
    int64_t lanes = cast<VectorType>(ptrs.getType()).getNumElements();
    Value value = asVector(rewriter, loc, adaptor.getValue());
    if (memElement != element)
      value = LLVM::ZExtOp::create(rewriter, loc,
                                   VectorType::get({lanes}, memElement), value);
    Value mask = adaptor.getMask() ? asVector(rewriter, loc, adaptor.getMask())
                                   : allTrue(rewriter, loc, lanes);
    mask = checkBounds(op, rewriter, ptrs, mask,
                       memElement.getIntOrFloatBitWidth() / 8);
    AccessPlan plan = plans.lookup(op);
    auto alignment = rewriter.getI32IntegerAttr(plan.alignment);
    if (plan.runLength == lanes) {
      Value base = LLVM::ExtractElementOp::create(
          rewriter, loc, ptrs, createI32Constant(rewriter, loc, 0));
      LLVM::MaskedStoreOp::create(rewriter, loc, value, base, mask, alignment);
    } else if (plan.runLength > 1) {
      int64_t run = plan.runLength;
      for (int64_t start = 0; start < lanes; start += run) {
        Value base = LLVM::ExtractElementOp::create(
            rewriter, loc, ptrs, createI32Constant(rewriter, loc, start));
        LLVM::MaskedStoreOp::create(rewriter, loc, sliceVector(rewriter, loc, value, start, run),
                                    base, sliceVector(rewriter, loc, mask, start, run),
                                    alignment);
      }
    } else if (needsLaneLoop(memElement, lanes, this->vectorScatters)) {
      emitScatterLoop(rewriter, loc, value, ptrs, mask);
    } else {
      LLVM::masked_scatter::create(rewriter, loc, value, ptrs, mask, alignment);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Preparation on the kiln IR
//===----------------------------------------------------------------------===//

/// Numbers every load, store and atomic of a kernel whose buffer is known
/// (for checked mode) and records where each is in the source.
void numberAccessSites(ModuleOp module) {
  Builder builder(module.getContext());
  SmallVector<Attribute> sites;
  for (const AccessSite &site : collectAccessSites(module)) {
    int64_t id = int64_t(sites.size()) | (int64_t(site.parameter) << 16);
    site.op->setAttr(kSiteAttr, builder.getI32IntegerAttr(id));
    // An atomic writes: it is reported as a store.
    sites.push_back(builder.getDictionaryAttr({
        builder.getNamedAttr("loc", builder.getStringAttr(site.location)),
        builder.getNamedAttr("param", builder.getI32IntegerAttr(site.parameter)),
        builder.getNamedAttr("store", builder.getBoolAttr(site.writes)),
        builder.getNamedAttr("element_bytes", builder.getI32IntegerAttr(site.elementBytes)),
    }));
  }
  module->setAttr(kSitesAttr, builder.getArrayAttr(sites));
}

/// Appends the grid parameters to each kernel and replaces the grid queries
/// with them. Returns failure if a query is outside a kernel.
LogicalResult addGridParameters(ModuleOp module) {
  MLIRContext *context = module.getContext();
  Type i32 = IntegerType::get(context, 32);
  for (auto function : module.getOps<func::FuncOp>()) {
    if (!function->hasAttr("kiln.kernel"))
      continue;
    unsigned first = function.getNumArguments();
    SmallVector<unsigned> indices(kGridParameters, first);
    SmallVector<Type> types(kGridParameters, i32);
    SmallVector<DictionaryAttr> attrs(kGridParameters, DictionaryAttr::get(context));
    SmallVector<Location> locs(kGridParameters, function.getLoc());
    if (failed(function.insertArguments(indices, types, attrs, locs)))
      return failure();
    function.walk([&](Operation *op) {
      if (auto id = dyn_cast<ProgramIdOp>(op)) {
        id.replaceAllUsesWith(function.getArgument(first + id.getAxis()));
        id.erase();
      } else if (auto count = dyn_cast<NumProgramsOp>(op)) {
        count.replaceAllUsesWith(function.getArgument(first + 3 + count.getAxis()));
        count.erase();
      }
    });
  }
  WalkResult stray = module.walk([](Operation *op) {
    if (isa<ProgramIdOp, NumProgramsOp>(op)) {
      op->emitOpError("outside a kernel cannot be lowered for the CPU");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(stray.wasInterrupted());
}

/// Refuses kiln.elementwise_inline_asm: its text is a GPU's assembly (PTX),
/// which the host cannot run.
LogicalResult refuseInlineAsm(ModuleOp module) {
  WalkResult found = module.walk([](ElementwiseInlineAsmOp op) {
    op.emitOpError("cannot be lowered for the CPU: inline assembly is GPU "
                   "code (PTX) that the host cannot run");
    return WalkResult::interrupt();
  });
  return failure(found.wasInterrupted());
}

/// Adds `<kernel>.kiln_entry(ptr params, i32 x 6)`, which reads each kernel
/// parameter from its 8-byte slot (params[i] points at it) and calls the
/// kernel: one signature for the launcher, whatever the kernel's.
void addEntryFunctions(ModuleOp module) {
  MLIRContext *context = module.getContext();
  OpBuilder builder(context);
  auto ptrType = LLVM::LLVMPointerType::get(context);
  Type i32 = IntegerType::get(context, 32);
  SmallVector<LLVM::LLVMFuncOp> kernels;
  module.walk([&](LLVM::LLVMFuncOp function) {
    if (function->hasAttr("kiln.kernel"))
      kernels.push_back(function);
  });
  for (LLVM::LLVMFuncOp kernel : kernels) {
    kernel->removeAttr("kiln.kernel");
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
      kernel.removeArgAttr(i, StringAttr::get(context, "kiln.divisibility"));
    Location loc = kernel.getLoc();
    builder.setInsertionPointAfter(kernel);
    SmallVector<Type> entryInputs{ptrType};
    entryInputs.append(kGridParameters, i32);
    auto entry = LLVM::LLVMFuncOp::create(
        builder, loc, (kernel.getName() + ".kiln_entry").str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context), entryInputs));
    Block *body = entry.addEntryBlock(builder);
    builder.setInsertionPointToStart(body);
    SmallVector<Value> arguments;
    unsigned own = kernel.getNumArguments() - kGridParameters;
    for (unsigned i = 0; i < own; ++i) {
      Value slotAddress = LLVM::GEPOp::create(builder, loc, ptrType, ptrType,
                                              body->getArgument(0),
                                              ArrayRef<LLVM::GEPArg>{int32_t(i)});
      Value slot = LLVM::LoadOp::create(builder, loc, ptrType, slotAddress);
      arguments.push_back(LLVM::LoadOp::create(
          builder, loc, kernel.getArgumentTypes()[i], slot));
    }
    for (unsigned i = 0; i < kGridParameters; ++i)
      arguments.push_back(body->getArgument(1 + i));
    LLVM::CallOp::create(builder, loc, kernel, arguments);
    LLVM::ReturnOp::create(builder, loc, ValueRange{});
  }
}

struct ConvertKilnToLLVMCPU
    : public kiln::impl::ConvertKilnToLLVMCPUBase<ConvertKilnToLLVMCPU> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    if (failed(refuseInlineAsm(module)))
      return signalPassFailure();
    numberAccessSites(module);
    if (failed(addGridParameters(module)))
      return signalPassFailure();

    // Access plans come from the axis info of the kiln IR: a 1-D block
    // proven contiguous over its whole length is one masked vector access.
    AxisInfoAnalysis axisInfo(module);
    AccessPlans plans;
    module.walk([&](Operation *op) {
      Value ptr;
      if (auto load = dyn_cast<LoadOp>(op))
        ptr = load.getPtr();
      else if (auto store = dyn_cast<StoreOp>(op))
        ptr = store.getPtr();
      else
        return;
      AccessPlan plan;
      int64_t bytes = std::max<int64_t>(
          1, getMemoryElementType(getPointeeType(ptr.getType())).getIntOrFloatBitWidth() / 8);
      const AxisInfo &info = axisInfo.getAxisInfo(ptr);
      auto tensor = dyn_cast<RankedTensorType>(ptr.getType());
      if (!tensor) {
        plan.runLength = 1; // a scalar: one lane at its own address
        plan.alignment = unsigned(std::clamp<int64_t>(info.divisibility[0], bytes, 64));
      } else {
        // Consecutive along the last dimension, whole rows at a time; a
        // 1-D block or rows of one element then cover the whole block.
        int64_t last = tensor.getRank() - 1;
        int64_t row = tensor.getDimSize(last);
        if (info.contiguity[last] >= row && row > 1)
          plan.runLength = tensor.getRank() == 1 ? tensor.getNumElements() : row;
        plan.alignment = unsigned(std::clamp<int64_t>(info.divisibility[last], bytes, 64));
      }
      plans[op] = plan;
    });

    insertCancellationLoads(module);
    if (failed(convertStructuredControlFlow(module)))
      return signalPassFailure();
    branchOnCancellation(module);

    CPUTypeConverter converter(context);
    RewritePatternSet patterns(context);
    populateSplatAndAddPtrToLLVMPatterns(converter, patterns);
    patterns.add<MakeRangeLowering, BlockConstantLowering, ExpandDimsLowering,
                 BroadcastLowering, ReduceLowering, ScanLowering>(converter);
    patterns.add<LoadLowering, StoreLowering>(converter, plans, checked, vectorGathers,
                                              vectorScatters);
    populateAtomicAndHintOpToLLVMCPUPatterns(converter, patterns, checked);
    populateDebugOpToLLVMCPUPatterns(converter, patterns);
    populateShapeOpToLLVMCPUPatterns(converter, patterns);
    populateDotOpToLLVMCPUPatterns(converter, patterns);
    populateSafeDivisionToLLVMPatterns(converter, patterns);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    populateMathToCallPatterns(converter, patterns, kHostMathFunctions,
                               /*benefit=*/2);
    populateExternElementwiseToLLVMPatterns(converter, patterns);
    populateMathToLLVMConversionPatterns(converter, patterns);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    populateFuncToLLVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(*context);
    target.addLegalOp<ModuleOp>();
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    module.walk([](Operation *op) { op->removeAttr(kSiteAttr); });
    addEntryFunctions(module);
  }
};

} // namespace
