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
#include "MemoryOpToLLVM.h"
#include "ShapeOpToLLVM.h"
#include "StackSlot.h"

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
constexpr StringLiteral kSitesAttr = "kiln_cpu.sites";

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

/// Reductions of blocks wider than this many elements first combine slices
/// of the block read back from the stack (see ReduceLowering).
constexpr int64_t kMaxTreeLanes = 1024;

/// Combines `values` (vectors of a block of `shape`, reduced along `axis`)
/// slice by slice until at most about kMaxTreeLanes elements are left, and
/// returns the partial results, a block of shape [G, outer * inner] to be
/// reduced along its axis 0 (`shape` and `axis` are updated to say so).
///
/// A halving tree over a whole wide block is what LLVM's x86 code
/// generator cannot always take: from about 4096 lanes, the reduction of
/// an extended i1 or i8 block crashes it (LLVM 22's DAG combiner), and its
/// compile time grows faster than the block. Each source is stored to the
/// stack with the reduced axis outermost, and read back in slices of G
/// rows by volatile loads, which no combine looks through; slices are
/// combined in order, as a thread of a GPU combines its own elements
/// before the threads combine theirs.
FailureOr<SmallVector<Value>> combineSlices(ReduceOp op, ConversionPatternRewriter &rewriter,
                                            SmallVector<Value> values, SmallVector<int64_t> &shape,
                                            int64_t &axis) {
  Location loc = op.getLoc();
  int64_t outer = 1, inner = 1, extent = shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < int64_t(shape.size()); ++d)
    inner *= shape[d];
  int64_t rest = outer * inner;
  // A power of two, as the extent is: the rows of a slice, at most
  // kMaxTreeLanes elements where a row is not already more.
  int64_t rows = std::min<int64_t>(
      extent, int64_t(llvm::bit_floor(uint64_t(std::max<int64_t>(1, kMaxTreeLanes / rest)))));
  int64_t sliceLanes = rows * rest, total = extent * rest;
  // The reduced axis outermost: element (o, r, i) moves to (r, o, i).
  SmallVector<int32_t> outermost;
  if (outer > 1)
    for (int64_t r = 0; r < extent; ++r)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i)
          outermost.push_back(int32_t((o * extent + r) * inner + i));
  auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
  Value stack = LLVM::StackSaveOp::create(rewriter, loc, ptrType);
  SmallVector<Value> slots;
  SmallVector<Type> elements, originals;
  for (Value value : values) {
    originals.push_back(cast<VectorType>(value.getType()).getElementType());
    if (outer > 1)
      value = LLVM::ShuffleVectorOp::create(rewriter, loc, value, value, outermost);
    Type element = slotElementType(rewriter, originals.back());
    Value slot = allocateStackSlot(rewriter, loc, element, total, /*alignment=*/16);
    LLVM::StoreOp::create(rewriter, loc, toSlotForm(rewriter, loc, value), slot, /*alignment=*/16);
    slots.push_back(slot);
    elements.push_back(element);
  }
  SmallVector<Value> partial;
  for (int64_t start = 0; start < extent; start += rows) {
    SmallVector<Value> slice;
    for (auto [slot, element, wanted] : llvm::zip(slots, elements, originals)) {
      Value address = LLVM::GEPOp::create(rewriter, loc, ptrType, element, slot,
                                          ArrayRef<LLVM::GEPArg>{int32_t(start * rest)});
      // The slot is 16-byte aligned; so is a slice whose offset is.
      int64_t offsetBytes = start * rest * slotElementBytes(element);
      unsigned alignment = unsigned(std::min<uint64_t>(16, offsetBytes ? offsetBytes & -offsetBytes : 16));
      Value loaded = LLVM::LoadOp::create(rewriter, loc, VectorType::get({sliceLanes}, element), address,
                                          alignment, /*isVolatile=*/true);
      slice.push_back(fromSlotForm(rewriter, loc, loaded, wanted));
    }
    if (partial.empty()) {
      partial = slice;
      continue;
    }
    FailureOr<SmallVector<Value>> combined = emitCombine(op, rewriter, partial, slice);
    if (failed(combined))
      return failure();
    partial = *combined;
  }
  LLVM::StackRestoreOp::create(rewriter, loc, stack);
  shape = {rows, rest};
  axis = 0;
  return partial;
}

/// A reduction halves the reduced axis until it has one element: each step
/// combines the lower half with the upper half, on whole vectors. Blocks of
/// more than kMaxTreeLanes elements are first combined slice by slice
/// (combineSlices).
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
    if (type.getNumElements() > kMaxTreeLanes && shape[axis] > 1) {
      FailureOr<SmallVector<Value>> partial = combineSlices(op, rewriter, values, shape, axis);
      if (failed(partial))
        return failure();
      values = *partial;
    }
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
// Preparation on the kiln IR
//===----------------------------------------------------------------------===//

/// Numbers every load, store and atomic of a kernel whose buffer is known
/// (for checked mode) and records where each is in the source.
void numberAccessSites(ModuleOp module) {
  Builder builder(module.getContext());
  SmallVector<Attribute> sites;
  for (const AccessSite &site : collectAccessSites(module)) {
    int64_t id = int64_t(sites.size()) | (int64_t(site.parameter) << 16);
    site.op->setAttr(kAccessSiteAttr, builder.getI32IntegerAttr(id));
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

/// Boolean blocks of this many elements or more are refused: LLVM 22's x86
/// code generator stops with a fatal error ("SmallVector unable to grow")
/// on i1 vectors of 2^16 lanes, whatever the processor.
constexpr int64_t kMaxBooleanLanes = (1 << 16) - 1;

/// Refuses blocks of booleans wider than kMaxBooleanLanes (a compare or a
/// mask of 65536 elements), naming the op that makes the first one, instead
/// of letting LLVM abort the process.
LogicalResult refuseWideBooleanBlocks(ModuleOp module) {
  WalkResult found = module.walk([](Operation *op) {
    for (Value result : op->getResults()) {
      auto tensor = dyn_cast<RankedTensorType>(result.getType());
      if (tensor && tensor.getElementType().isInteger(1) && tensor.getNumElements() > kMaxBooleanLanes) {
        op->emitError() << "the CPU backend compiles blocks of booleans (compares, masks) of at most "
                        << kMaxBooleanLanes << " elements, and this one has " << tensor.getNumElements()
                        << " (LLVM's code generator fails on wider ones); use smaller blocks";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
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
    if (failed(refuseInlineAsm(module)) || failed(refuseWideBooleanBlocks(module)))
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
    populatePointerCastToLLVMPatterns(converter, patterns);
    patterns.add<MakeRangeLowering, BlockConstantLowering, ExpandDimsLowering,
                 BroadcastLowering, ReduceLowering, ScanLowering>(converter);
    populateMemoryOpToLLVMCPUPatterns(converter, patterns, plans, checked, vectorGathers,
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
    module.walk([](Operation *op) { op->removeAttr(kAccessSiteAttr); });
    addEntryFunctions(module);
  }
};

} // namespace
