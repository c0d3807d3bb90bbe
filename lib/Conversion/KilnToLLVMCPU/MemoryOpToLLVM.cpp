//===- MemoryOpToLLVM.cpp - CPU lowering of loads and stores ---------------===//
//
// A load or store moves a block's elements as masked vector accesses along
// the runs of consecutive addresses its plan gives (the whole block, or
// each row), and as masked gathers or scatters otherwise; masked-off lanes
// never touch memory. In checked mode each active lane is compared with
// the buffer of the kernel parameter its address derives from.
//
//===----------------------------------------------------------------------===//

#include "MemoryOpToLLVM.h"

#include "AtomicOpToLLVM.h"
#include "CountedLoop.h"
#include "StackSlot.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"
#include "kiln/Conversion/LLVMCommon/VectorUtils.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// The CPU runtime's functions that checked mode calls: the launch's table
/// of (base, bytes) per kernel parameter, and the report of a bad lane.
constexpr StringLiteral kBoundsFunction = "__kiln_cpu_bounds";
constexpr StringLiteral kCheckFunction = "__kiln_cpu_check";

Type withElement(Type type, Type element) {
  if (auto vector = dyn_cast<VectorType>(type))
    return VectorType::get(vector.getShape(), element);
  return element;
}

} // namespace

/// Compares each lane's address with the buffer of the parameter the access
/// `op` derives from (its site attribute), reports the first active lane
/// outside it, and returns the mask without such lanes.
Value mlir::kiln::checkAccessBounds(Operation *op, OpBuilder &builder, Value ptrs,
                                    Value mask, unsigned elementBytes) {
  auto site = op->getAttrOfType<IntegerAttr>(kAccessSiteAttr);
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

} // namespace

void mlir::kiln::populateMemoryOpToLLVMCPUPatterns(const LLVMTypeConverter &converter,
                                                   RewritePatternSet &patterns,
                                                   const AccessPlans &plans, bool checked,
                                                   bool vectorGathers, bool vectorScatters) {
  patterns.add<LoadLowering, StoreLowering>(converter, plans, checked, vectorGathers,
                                            vectorScatters);
}
