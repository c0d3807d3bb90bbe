//===- MemoryOpToLLVM.cpp - Lower masked loads and stores ------------------===//
//
// Lowers kiln.load and kiln.store to predicated PTX global accesses, one per
// run of `width` consecutive elements a thread holds (the width was proven
// contiguous, aligned and uniformly masked by the axis-info analysis). Each
// access is a single `ld.global.v4.b32`-style instruction in inline
// assembly, because PTX predication is the cheapest way to skip a masked
// access and LLVM's own masked intrinsics would be scalarized. In checked
// mode each run is first compared with its parameter's extent
// (CheckedAccess.cpp) and a run outside is predicated off.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// How a run of elements travels: `count` words of `bits` bits each.
struct AccessShape {
  unsigned bits;  // 8, 16, 32 or 64
  unsigned count; // 1, 2 or 4
  Type wordType(MLIRContext *context) const {
    // PTX has no 8-bit registers: bytes travel in 16-bit ones.
    return IntegerType::get(context, bits == 8 ? 16 : bits);
  }
  StringRef constraint() const { return bits == 64 ? "l" : bits == 32 ? "r" : "h"; }
  std::string typeSuffix() const {
    std::string suffix = count > 1 ? llvm::formatv(".v{0}", count).str() : "";
    return suffix + (bits == 8 ? ".u8" : llvm::formatv(".b{0}", bits).str());
  }
};

/// 64-bit elements travel as 64-bit words (ld.global.v2.b64); narrower
/// ones packed into words of up to 32 bits.
static AccessShape getAccessShape(unsigned elementBits, int64_t width) {
  unsigned totalBits = elementBits * width;
  unsigned bits = elementBits == 64 ? 64 : std::min(32u, totalBits);
  return {bits, totalBits / bits};
}

/// Packs a run of memory-typed scalars into access words: the run's bits,
/// reinterpreted as `shape.count` integers of `shape.bits` bits.
static SmallVector<Value> packWords(OpBuilder &builder, Location loc,
                                    ArrayRef<Value> elements, AccessShape shape) {
  MLIRContext *context = builder.getContext();
  auto runType = VectorType::get({int64_t(elements.size())},
                                 elements.front().getType());
  auto wordsType = VectorType::get({int64_t(shape.count)},
                                   IntegerType::get(context, shape.bits));
  Value run = packElements(builder, loc, runType, elements);
  Value words = LLVM::BitcastOp::create(builder, loc, wordsType, run);
  SmallVector<Value> result = unpackElements(builder, loc, words);
  if (shape.bits == 8)
    for (Value &word : result)
      word = LLVM::ZExtOp::create(builder, loc, shape.wordType(context), word);
  return result;
}

/// Reinterprets access words as a run of `width` scalars of `element`.
static SmallVector<Value> unpackWords(OpBuilder &builder, Location loc,
                                      ArrayRef<Value> words, AccessShape shape,
                                      Type element, int64_t width) {
  MLIRContext *context = builder.getContext();
  SmallVector<Value> narrowed(words);
  if (shape.bits == 8)
    for (Value &word : narrowed)
      word = LLVM::TruncOp::create(builder, loc, IntegerType::get(context, 8), word);
  auto wordsType = VectorType::get({int64_t(shape.count)},
                                   IntegerType::get(context, shape.bits));
  Value packed = packElements(builder, loc, wordsType, narrowed);
  auto runType = VectorType::get({width}, element);
  return unpackElements(builder, loc,
                        LLVM::BitcastOp::create(builder, loc, runType, packed));
}

static std::string cacheSuffix(CacheModifier cache) {
  if (cache == CacheModifier::none)
    return "";
  return "." + stringifyCacheModifier(cache).str();
}

static std::string evictionSuffix(EvictionPolicy policy) {
  switch (policy) {
  case EvictionPolicy::evict_first: return ".L1::evict_first";
  case EvictionPolicy::evict_last: return ".L1::evict_last";
  case EvictionPolicy::normal: return "";
  }
  return "";
}

static Value trueConstant(OpBuilder &builder, Location loc) {
  return LLVM::ConstantOp::create(builder, loc, builder.getI1Type(),
                                  builder.getBoolAttr(true));
}

/// In checked mode, each run's predicate (one per `width` elements) without
/// the runs outside the access's parameter; otherwise the masks as they are.
static SmallVector<Value> checkRuns(ConversionPatternRewriter &rewriter, Location loc,
                                    Operation *op, const AccessChecks &checks,
                                    ArrayRef<Value> ptrs, ArrayRef<Value> masks,
                                    int64_t width, unsigned elementBytes) {
  SmallVector<Value> runPtrs, runMasks;
  for (size_t start = 0; start < ptrs.size(); start += width) {
    runPtrs.push_back(ptrs[start]);
    if (!masks.empty())
      runMasks.push_back(masks[start]);
  }
  auto check = checks.find(op);
  if (check == checks.end())
    return runMasks;
  return emitAccessCheck(rewriter, loc, check->second, runPtrs, runMasks,
                         width * elementBytes);
}

struct LoadOpLowering : public ConvertOpToLLVMPattern<LoadOp> {
  LoadOpLowering(const LLVMTypeConverter &converter, const AccessWidths &widths,
                 const AccessChecks &checks)
      : ConvertOpToLLVMPattern(converter), widths(widths), checks(checks) {}

  LogicalResult
  matchAndRewrite(LoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = getContext();
    Type resultType = getTypeConverter()->convertType(op.getType());
    Type element = getTypeConverter()->convertType(getPointeeType(op.getPtr().getType()));
    Type memElement = getMemoryElementType(element);
    int64_t width = widths.lookup(op);
    SmallVector<Value> ptrs = unpackElements(rewriter, loc, adaptor.getPtr());
    SmallVector<Value> masks;
    if (adaptor.getMask())
      masks = unpackElements(rewriter, loc, adaptor.getMask());
    SmallVector<Value> others;
    if (adaptor.getOther()) {
      others = unpackElements(rewriter, loc, adaptor.getOther());
      if (memElement != element)
        for (Value &other : others)
          other = LLVM::ZExtOp::create(rewriter, loc, memElement, other);
    }

    AccessShape shape = getAccessShape(memElement.getIntOrFloatBitWidth(), width);
    Type wordType = shape.wordType(context);
    SmallVector<Value> runMasks =
        checkRuns(rewriter, loc, op, checks, ptrs, masks, width,
                  memElement.getIntOrFloatBitWidth() / 8);
    SmallVector<Value> results;
    for (size_t start = 0; start < ptrs.size(); start += width) {
      // Inline PTX: outputs $0..$n-1, then the `other` words, the address
      // and the predicate.
      SmallVector<Value> operands;
      std::string asmText, constraints;
      unsigned n = shape.count;
      for (unsigned w = 0; w < n; ++w)
        constraints += (w ? ",=" : "=") + shape.constraint().str();
      SmallVector<Value> otherWords;
      if (!others.empty())
        otherWords = packWords(rewriter, loc,
                               ArrayRef<Value>(others).slice(start, width), shape);
      for (unsigned w = 0; w < n; ++w) {
        std::string movType = shape.bits == 64 ? "b64" : shape.bits == 32 ? "b32" : "b16";
        if (otherWords.empty()) {
          asmText += llvm::formatv("mov.{0} ${1}, 0;\n\t", movType, w).str();
        } else {
          asmText += llvm::formatv("mov.{0} ${1}, ${2};\n\t", movType, w,
                                   n + operands.size()).str();
          operands.push_back(otherWords[w]);
          constraints += "," + shape.constraint().str();
        }
      }
      unsigned ptrIndex = n + operands.size();
      operands.push_back(ptrs[start]);
      constraints += ",l";
      operands.push_back(runMasks.empty() ? trueConstant(rewriter, loc)
                                          : runMasks[start / width]);
      constraints += ",b";
      std::string outputs;
      for (unsigned w = 0; w < n; ++w)
        outputs += (w ? ", $" : "$") + std::to_string(w);
      if (n > 1)
        outputs = "{ " + outputs + " }";
      asmText += llvm::formatv("@${0} ld{1}.global{2}{3}{4} {5}, [ ${6} + 0 ];",
                               ptrIndex + 1, op.getIsVolatile() ? ".volatile" : "",
                               cacheSuffix(op.getCache()),
                               evictionSuffix(op.getEvict()), shape.typeSuffix(),
                               outputs, ptrIndex)
                     .str();
      Type asmResult = n == 1 ? wordType
                              : LLVM::LLVMStructType::getLiteral(
                                    context, SmallVector<Type>(n, wordType));
      // A string: no NVVM op loads under a predicate with cache and
      // eviction qualifiers.
      Value loaded = createInlineAsm(rewriter, loc, /*hasSideEffects=*/true, asmResult,
                                     operands, asmText, constraints);
      SmallVector<Value> words;
      if (n == 1)
        words.push_back(loaded);
      else
        for (unsigned w = 0; w < n; ++w)
          words.push_back(LLVM::ExtractValueOp::create(rewriter, loc, loaded, w));
      SmallVector<Value> run =
          unpackWords(rewriter, loc, words, shape, memElement, width);
      for (Value value : run)
        results.push_back(memElement == element
                              ? value
                              : LLVM::TruncOp::create(rewriter, loc, element, value));
    }
    rewriter.replaceOp(op, packElements(rewriter, loc, resultType, results));
    return success();
  }
  const AccessWidths &widths;
  const AccessChecks &checks;
};

struct StoreOpLowering : public ConvertOpToLLVMPattern<StoreOp> {
  StoreOpLowering(const LLVMTypeConverter &converter, const AccessWidths &widths,
                  LaunchShape launch, const AccessChecks &checks)
      : ConvertOpToLLVMPattern(converter), widths(widths), launch(launch),
        checks(checks) {}

  LogicalResult
  matchAndRewrite(StoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = getContext();
    Type element = getTypeConverter()->convertType(getPointeeType(op.getPtr().getType()));
    Type memElement = getMemoryElementType(element);
    int64_t width = widths.lookup(op);
    SmallVector<Value> ptrs = unpackElements(rewriter, loc, adaptor.getPtr());
    SmallVector<Value> values = unpackElements(rewriter, loc, adaptor.getValue());
    if (memElement != element)
      for (Value &value : values)
        value = LLVM::ZExtOp::create(rewriter, loc, memElement, value);

    // Replicated elements are stored by their owner thread only, and a
    // scalar by thread 0: a store every thread repeated could land after a
    // later write by another program (a store under a lock, released by
    // thread 0's atomic, would then be undone by a lagging warp).
    Value owner;
    if (auto tensor = dyn_cast<RankedTensorType>(op.getPtr().getType())) {
      if (getThreadLayout(tensor))
        emitBlockCoordinates(rewriter, loc, tensor, launch, &owner);
    } else {
      owner = emitIsFirstThread(rewriter, loc);
    }
    Value predicates = adaptor.getMask();
    if (owner)
      predicates = predicates ? LLVM::AndOp::create(rewriter, loc, predicates, owner)
                              : owner;
    SmallVector<Value> masks;
    if (predicates)
      masks = unpackElements(rewriter, loc, predicates);

    AccessShape shape = getAccessShape(memElement.getIntOrFloatBitWidth(), width);
    SmallVector<Value> runMasks =
        checkRuns(rewriter, loc, op, checks, ptrs, masks, width,
                  memElement.getIntOrFloatBitWidth() / 8);
    for (size_t start = 0; start < ptrs.size(); start += width) {
      SmallVector<Value> operands = packWords(
          rewriter, loc, ArrayRef<Value>(values).slice(start, width), shape);
      unsigned n = shape.count;
      std::string constraints, inputs;
      for (unsigned w = 0; w < n; ++w) {
        constraints += (w ? "," : "") + shape.constraint().str();
        inputs += (w ? ", $" : "$") + std::to_string(w);
      }
      if (n > 1)
        inputs = "{ " + inputs + " }";
      operands.push_back(ptrs[start]);
      constraints += ",l";
      operands.push_back(runMasks.empty() ? trueConstant(rewriter, loc)
                                          : runMasks[start / width]);
      constraints += ",b";
      std::string asmText =
          llvm::formatv("@${0} st.global{1}{2}{3} [ ${4} + 0 ], {5};", n + 1,
                        cacheSuffix(op.getCache()), evictionSuffix(op.getEvict()),
                        shape.typeSuffix(), n, inputs)
              .str();
      // A string: no NVVM op stores under a predicate with cache and
      // eviction qualifiers.
      createInlineAsm(rewriter, loc, /*hasSideEffects=*/true,
                      LLVM::LLVMVoidType::get(context), operands, asmText, constraints);
    }
    rewriter.eraseOp(op);
    return success();
  }
  const AccessWidths &widths;
  LaunchShape launch;
  const AccessChecks &checks;
};

} // namespace

void mlir::kiln::gpu::populateMemoryOpToLLVMPatterns(
    KilnGPUToNVVMTypeConverter &converter, RewritePatternSet &patterns,
    const AccessWidths &widths, const LaunchShape &launch,
    const AccessChecks &checks) {
  patterns.add<LoadOpLowering>(converter, widths, checks);
  patterns.add<StoreOpLowering>(converter, widths, launch, checks);
}
