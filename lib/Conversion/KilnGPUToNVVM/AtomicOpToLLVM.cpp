//===- AtomicOpToLLVM.cpp - Lower atomics, hints and barriers to NVVM ------===//
//
// Lowers kiln.atomic_rmw and kiln.atomic_cas to predicated inline PTX, one
// `atom.global.<scope>.<sem>.<op>.<type>` (a compare-and-swap:
// `atom.global.<sem>.<scope>.cas.<type>`) per element a thread holds. The
// predicate is the element's mask and ownership: an element a thread holds
// only as a replica of another thread's (a block smaller than the layout's
// tile) is applied by its owner alone, and a scalar atomic by thread 0 of
// the program alone (after a CTA barrier, so that the whole program's
// earlier accesses precede it). Their old values then reach every thread
// that holds the element through a small shared-memory array of the op's
// own, between two CTA barriers. kiln.axis_hint lowers to its operand and
// kiln.debug_barrier to `bar.sync 0`.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Conversion/LLVMCommon/Patterns.h"
#include "kiln/Target/NVIDIA/TensorCores.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;
using namespace mlir::kiln::nvidia;

namespace {

StringRef getSemanticSuffix(MemSemantic sem) {
  switch (sem) {
  case MemSemantic::relaxed: return ".relaxed";
  case MemSemantic::acquire: return ".acquire";
  case MemSemantic::release: return ".release";
  case MemSemantic::acq_rel: return ".acq_rel";
  }
  return ".acq_rel";
}

StringRef getScopeSuffix(MemSyncScope scope) {
  switch (scope) {
  case MemSyncScope::gpu: return ".gpu";
  case MemSyncScope::cta: return ".cta";
  case MemSyncScope::sys: return ".sys";
  }
  return ".gpu";
}

/// The `.op.type` part of the atom instruction for `kind` on `element`.
std::string getOpAndType(RMWKind kind, Type element) {
  unsigned bits = element.getIntOrFloatBitWidth();
  std::string u = "u" + std::to_string(bits), s = "s" + std::to_string(bits),
              b = "b" + std::to_string(bits);
  std::string f = element.isBF16()  ? "noftz.bf16"
                  : element.isF16() ? "noftz.f16"
                                    : "f" + std::to_string(bits);
  switch (kind) {
  case RMWKind::add: return ".add." + u;
  case RMWKind::fadd: return ".add." + f;
  case RMWKind::max: return ".max." + s;
  case RMWKind::umax: return ".max." + u;
  case RMWKind::min: return ".min." + s;
  case RMWKind::umin: return ".min." + u;
  case RMWKind::And: return ".and." + b;
  case RMWKind::Or: return ".or." + b;
  case RMWKind::Xor: return ".xor." + b;
  case RMWKind::xchg: return ".exch." + b;
  // Lowered as two integer atomics (see lowerElement).
  case RMWKind::fmax: return ".max." + s;
  case RMWKind::fmin: return ".min." + s;
  }
  return "";
}

StringRef getConstraint(unsigned bits) {
  return bits == 16 ? "h" : bits == 32 ? "r" : "l";
}


/// Per element of an atomic's result, whether this thread applies it (null:
/// every element it holds) and its index in row-major order of the block.
struct ElementOwnership {
  Value owner;                  // i1 or vector<E x i1>, or null
  SmallVector<Value> linear;    // one i32 per element
  int64_t numElements = 1;
};

ElementOwnership getOwnership(OpBuilder &builder, Location loc, Type type,
                              const LaunchShape &launch) {
  ElementOwnership result;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor) {
    // A scalar: thread 0 of the program applies it.
    result.owner = emitIsFirstThread(builder, loc);
    result.linear.push_back(createI32Constant(builder, loc, 0));
    return result;
  }
  result.numElements = tensor.getNumElements();
  SmallVector<Value> coords =
      emitBlockCoordinates(builder, loc, tensor, launch, &result.owner);
  Value linear;
  int64_t stride = 1;
  for (int64_t d = tensor.getRank() - 1; d >= 0; --d) {
    auto vectorType = cast<VectorType>(coords[d].getType());
    Value scaled = LLVM::MulOp::create(
        builder, loc, coords[d],
        splatVector(builder, loc, vectorType, createI32Constant(builder, loc, stride)));
    linear = linear ? LLVM::AddOp::create(builder, loc, linear, scaled) : scaled;
    stride *= tensor.getDimSize(d);
  }
  result.linear = unpackElements(builder, loc, linear);
  return result;
}

/// Makes the old values of `values` (one per element this thread holds,
/// meaningful where `owner` is set) known to every thread holding the
/// element, through a shared-memory array of one slot per block element.
SmallVector<Value> shareOwnerValues(ConversionPatternRewriter &rewriter,
                                    Location loc, Operation *op,
                                    ArrayRef<Value> values,
                                    const ElementOwnership &ownership) {
  MLIRContext *context = rewriter.getContext();
  auto module = op->getParentOfType<ModuleOp>();
  Type i64 = rewriter.getI64Type();
  auto arrayType = LLVM::LLVMArrayType::get(i64, ownership.numElements);
  std::string name;
  for (unsigned n = 0;; ++n) {
    name = llvm::formatv("kiln_atomic_exchange_{0}", n).str();
    if (!module.lookupSymbol(name))
      break;
  }
  LLVM::GlobalOp global;
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    // The module's location: see createGlobalCString.
    global = LLVM::GlobalOp::create(rewriter, module.getLoc(), arrayType,
                                    /*isConstant=*/false,
                                    LLVM::Linkage::Internal, name, Attribute(),
                                    /*alignment=*/8, /*addrSpace=*/3);
  }
  Value base = LLVM::AddressOfOp::create(rewriter, loc, global);
  auto ptrType = LLVM::LLVMPointerType::get(context, 3);
  SmallVector<Value> owners;
  if (isa<VectorType>(ownership.owner.getType()))
    owners = unpackElements(rewriter, loc, ownership.owner);
  else
    owners.assign(values.size(), ownership.owner);

  // The barrier before the atomic (see AtomicLowering::lower) keeps a
  // loop's next write from overtaking this round's reads. Only owners
  // store, behind a branch: non-owners writing one spare slot would be a
  // harmless race that racecheck reports.
  for (size_t i = 0; i < values.size(); ++i) {
    Value value = values[i], linear = ownership.linear[i];
    emitIf(rewriter, loc, owners[i], [&](OpBuilder &b) {
      Value address = LLVM::GEPOp::create(b, loc, ptrType, i64, base,
                                          ArrayRef<LLVM::GEPArg>{linear});
      Value wide = value.getType() == i64 ? value : LLVM::ZExtOp::create(b, loc, i64, value);
      LLVM::StoreOp::create(b, loc, wide, address);
    });
  }
  NVVM::Barrier0Op::create(rewriter, loc);
  SmallVector<Value> shared;
  for (auto [value, linear] : llvm::zip(values, ownership.linear)) {
    Value address = LLVM::GEPOp::create(rewriter, loc, ptrType, i64, base,
                                        ArrayRef<LLVM::GEPArg>{linear});
    Value wide = LLVM::LoadOp::create(rewriter, loc, i64, address);
    shared.push_back(value.getType() == i64
                         ? wide
                         : LLVM::TruncOp::create(rewriter, loc, value.getType(), wide));
  }
  return shared;
}

/// Shared by both atomics: per element predicates, the inline PTX built by
/// `emitElement(bits operands, predicate)`, and the old values' return.
template <typename OpTy>
struct AtomicLowering : public ConvertOpToLLVMPattern<OpTy> {
  AtomicLowering(const LLVMTypeConverter &converter, LaunchShape launch,
                 const AccessChecks &checks)
      : ConvertOpToLLVMPattern<OpTy>(converter), launch(launch), checks(checks) {}

  LogicalResult
  lower(OpTy op, ConversionPatternRewriter &rewriter, Value ptrs, Value mask,
        ArrayRef<Value> inputs,
        function_ref<Value(OpBuilder &, Value ptr, ArrayRef<Value> bits,
                           Value predicate, Type bitsType)>
            emitElement) const {
    Location loc = op.getLoc();
    Type resultType = this->getTypeConverter()->convertType(op.getType());
    Type element = getElementTypeOrSelf(resultType);
    Type bitsType = rewriter.getIntegerType(element.getIntOrFloatBitWidth());
    ElementOwnership ownership = getOwnership(rewriter, loc, op.getType(), launch);
    Value predicates = mask;
    if (ownership.owner) {
      Value owner = ownership.owner;
      if (mask && isa<VectorType>(mask.getType()) && !isa<VectorType>(owner.getType()))
        owner = splatVector(rewriter, loc, cast<VectorType>(mask.getType()), owner);
      predicates = predicates ? LLVM::AndOp::create(rewriter, loc, predicates, owner)
                              : owner;
    }
    SmallVector<Value> ptrList = unpackElements(rewriter, loc, ptrs);
    SmallVector<Value> predicateList;
    if (predicates)
      predicateList = unpackElements(rewriter, loc, predicates);
    // Checked mode: an element outside its parameter's memory is reported
    // and skipped.
    if (auto check = checks.find(op); check != checks.end())
      predicateList = emitAccessCheck(rewriter, loc, check->second, ptrList, predicateList,
                                      bitsType.getIntOrFloatBitWidth() / 8);
    SmallVector<SmallVector<Value>> inputLists;
    for (Value input : inputs)
      inputLists.push_back(unpackElements(rewriter, loc, input));

    // A scalar atomic stands for the whole program: every thread's earlier
    // accesses happen before it (so that a release publishes them), and
    // its old value comes back through shared memory, whose slots must not
    // be rewritten while a previous round still reads them.
    bool shareOld = ownership.owner && !op.getResult().use_empty();
    if (shareOld || !isa<RankedTensorType>(op.getType()))
      NVVM::Barrier0Op::create(rewriter, loc);
    SmallVector<Value> olds;
    for (size_t e = 0; e < ptrList.size(); ++e) {
      SmallVector<Value> bits;
      for (auto &list : inputLists)
        bits.push_back(list[e].getType() == bitsType
                           ? list[e]
                           : LLVM::BitcastOp::create(rewriter, loc, bitsType, list[e]));
      Value predicate = predicateList.empty()
                            ? LLVM::ConstantOp::create(rewriter, loc, rewriter.getI1Type(),
                                                       rewriter.getBoolAttr(true))
                            : predicateList[e];
      olds.push_back(emitElement(rewriter, ptrList[e], bits, predicate, bitsType));
    }
    if (shareOld)
      olds = shareOwnerValues(rewriter, loc, op, olds, ownership);
    for (Value &old : olds)
      if (old.getType() != element)
        old = LLVM::BitcastOp::create(rewriter, loc, element, old);
    rewriter.replaceOp(op, packElements(rewriter, loc, resultType, olds));
    return success();
  }

  LaunchShape launch;
  const AccessChecks &checks;
};

struct AtomicRMWOpLowering : public AtomicLowering<AtomicRMWOp> {
  using AtomicLowering::AtomicLowering;
  LogicalResult
  matchAndRewrite(AtomicRMWOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type element = getElementTypeOrSelf(op.getVal().getType());
    // atom.add.noftz.bf16 needs sm_90; before, a compare-and-swap loop.
    bool bf16Loop = element.isBF16() && op.getKind() == RMWKind::fadd &&
                    getComputeCapability(op->getParentOfType<ModuleOp>()) < 90;
    // Strings: NVVM has no atomic ops, and an LLVM atomicrmw would need a
    // branch where PTX takes the mask as a predicate.
    // ptxas takes the qualifiers in any order; this is the order Triton's
    // PTX has, so that a check written against Triton's output finds it.
    std::string prefix = ("atom.global" + getScopeSuffix(op.getScope()) +
                          getSemanticSuffix(op.getSem()))
                             .str();
    RMWKind kind = op.getKind();
    Location loc = op.getLoc();
    return lower(
        op, rewriter, adaptor.getPtr(), adaptor.getMask(), {adaptor.getVal()},
        [&](OpBuilder &builder, Value ptr, ArrayRef<Value> bits, Value predicate,
            Type bitsType) -> Value {
          unsigned width = bitsType.getIntOrFloatBitWidth();
          std::string c = getConstraint(width).str();
          std::string mov = llvm::formatv("mov.b{0} $0, 0;\n\t", width).str();
          if (bf16Loop) {
            // Widen both to f32 (a bf16 is the high half of an f32), add,
            // round back, and retry until no other thread intervened.
            std::string text =
                "{\n\t"
                ".reg .pred %retry;\n\t"
                ".reg .b16 %assumed, %sum;\n\t"
                ".reg .b32 %wide, %addend;\n\t"
                "mov.b16 $0, 0;\n\t"
                "@!$3 bra.uni kiln_bf16_add_done_${:uid};\n\t"
                "ld.volatile.global.b16 $0, [ $1 + 0 ];\n\t"
                "cvt.u32.u16 %addend, $2;\n\t"
                "shl.b32 %addend, %addend, 16;\n"
                "kiln_bf16_add_retry_${:uid}:\n\t"
                "mov.b16 %assumed, $0;\n\t"
                "cvt.u32.u16 %wide, %assumed;\n\t"
                "shl.b32 %wide, %wide, 16;\n\t"
                "add.f32 %wide, %wide, %addend;\n\t"
                "cvt.rn.bf16.f32 %sum, %wide;\n\t" +
                prefix +
                ".cas.b16 $0, [ $1 + 0 ], %assumed, %sum;\n\t"
                "setp.ne.b16 %retry, $0, %assumed;\n\t"
                "@%retry bra.uni kiln_bf16_add_retry_${:uid};\n"
                "kiln_bf16_add_done_${:uid}:\n\t"
                "}";
            return createInlineAsm(builder, loc, /*hasSideEffects=*/true, bitsType,
                                   ValueRange{ptr, bits[0], predicate}, text,
                                   "=&h,l,h,b");
          }
          if (kind != RMWKind::fmax && kind != RMWKind::fmin) {
            std::string text =
                mov + llvm::formatv("@$3 {0}{1} $0, [ $1 + 0 ], $2;", prefix,
                                    getOpAndType(kind, element))
                          .str();
            return createInlineAsm(builder, loc, /*hasSideEffects=*/true, bitsType,
                                   ValueRange{ptr, bits[0], predicate}, text,
                                   "=" + c + ",l," + c + ",b");
          }
          // Floats of one sign order like their bits: as signed integers
          // when non-negative, reversed as unsigned ones when negative.
          Value zero = LLVM::ConstantOp::create(builder, loc, bitsType,
                                                builder.getIntegerAttr(bitsType, 0));
          Value negative = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::slt,
                                                bits[0], zero);
          Value notNegative = LLVM::XOrOp::create(
              builder, loc, negative,
              LLVM::ConstantOp::create(builder, loc, builder.getI1Type(),
                                       builder.getBoolAttr(true)));
          Value onPositive = LLVM::AndOp::create(builder, loc, predicate, notNegative);
          Value onNegative = LLVM::AndOp::create(builder, loc, predicate, negative);
          bool isMax = kind == RMWKind::fmax;
          std::string text =
              mov + llvm::formatv("@$3 {0}.{1}.s{2} $0, [ $1 + 0 ], $2;\n\t"
                                  "@$4 {0}.{3}.u{2} $0, [ $1 + 0 ], $2;",
                                  prefix, isMax ? "max" : "min", width,
                                  isMax ? "min" : "max")
                        .str();
          return createInlineAsm(builder, loc, /*hasSideEffects=*/true, bitsType,
                                 ValueRange{ptr, bits[0], onPositive, onNegative},
                                 text, "=" + c + ",l," + c + ",b,b");
        });
  }
};

struct AtomicCASOpLowering : public AtomicLowering<AtomicCASOp> {
  using AtomicLowering::AtomicLowering;
  LogicalResult
  matchAndRewrite(AtomicCASOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Triton's order again (see AtomicRMWOpLowering), which for a
    // compare-and-swap puts the semantics before the scope.
    std::string prefix = ("atom.global" + getSemanticSuffix(op.getSem()) +
                          getScopeSuffix(op.getScope()))
                             .str();
    Location loc = op.getLoc();
    return lower(
        op, rewriter, adaptor.getPtr(), Value(), {adaptor.getCmp(), adaptor.getVal()},
        [&](OpBuilder &builder, Value ptr, ArrayRef<Value> bits, Value predicate,
            Type bitsType) -> Value {
          unsigned width = bitsType.getIntOrFloatBitWidth();
          std::string c = getConstraint(width).str();
          std::string text =
              llvm::formatv("mov.b{0} $0, 0;\n\t"
                            "@$4 {1}.cas.b{0} $0, [ $1 + 0 ], $2, $3;",
                            width, prefix)
                  .str();
          return createInlineAsm(builder, loc, /*hasSideEffects=*/true, bitsType,
                                 ValueRange{ptr, bits[0], bits[1], predicate}, text,
                                 "=" + c + ",l," + c + "," + c + ",b");
        });
  }
};

struct DebugBarrierOpLowering : public ConvertOpToLLVMPattern<DebugBarrierOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(DebugBarrierOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::Barrier0Op>(op);
    return success();
  }
};

} // namespace

void mlir::kiln::gpu::populateAtomicOpToLLVMPatterns(
    KilnGPUToNVVMTypeConverter &converter, RewritePatternSet &patterns,
    const LaunchShape &launch, const AccessChecks &checks) {
  patterns.add<AtomicRMWOpLowering, AtomicCASOpLowering>(converter, launch, checks);
  patterns.add<DebugBarrierOpLowering>(converter);
  populateHintOpToLLVMPatterns(converter, patterns);
}
