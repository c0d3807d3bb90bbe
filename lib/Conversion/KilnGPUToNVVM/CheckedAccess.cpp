//===- CheckedAccess.cpp - Bounds checks of checked mode on the GPU --------===//
//
// In checked mode each kernel receives, after its own parameters, the extent
// of every pointer parameter's memory as two i64 (its lowest address and
// its size in bytes) and a pointer to a two-word error record in device
// memory. Each run of elements an access moves at once is compared with its
// parameter's extent; a run outside is dropped from the access's predicate
// (nothing outside is touched) and, once per access and thread, the first
// bad element is recorded:
//   record[0] = (parameter << 32) | (site + 1), set by compare-and-swap from
//               0, so the first faulting site wins;
//   record[1] = the smallest element index that site faulted at (atomic
//               min; the host resets it to INT64_MAX).
// The runtime reads the record after the launch.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Analysis/AccessSites.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

/// A pointer into global memory: the parameters that get an extent. A TMA
/// tensor map (`!kiln.ptr<i8, 0>`, 128 bytes in the parameter space) is not
/// one: the launcher passes no extent for it, and the copies it describes
/// are bounded by the tensor map's own global shape.
static bool isGlobalPointer(Type type) {
  auto pointer = dyn_cast<PointerType>(type);
  return pointer && pointer.getAddressSpace() != 0;
}

LogicalResult mlir::kiln::gpu::addCheckedParameters(ModuleOp module,
                                                    AccessChecks &checks) {
  MLIRContext *context = module.getContext();
  Builder builder(context);
  Type i64 = builder.getI64Type();
  // The record is global memory, as the kernel's pointers are.
  Type recordType = LLVM::LLVMPointerType::get(context, 1);
  SmallVector<AccessSite> sites = collectAccessSites(module);
  for (auto function : module.getOps<func::FuncOp>()) {
    if (!function->hasAttr("kiln.kernel"))
      continue;
    unsigned own = function.getNumArguments();
    SmallVector<unsigned> pointers;
    for (unsigned i = 0; i < own; ++i)
      if (isGlobalPointer(function.getArgumentTypes()[i]))
        pointers.push_back(i);
    unsigned added = 2 * pointers.size() + 1;
    SmallVector<unsigned> indices(added, own);
    SmallVector<Type> types(added - 1, i64);
    types.push_back(recordType);
    SmallVector<DictionaryAttr> attrs(added, DictionaryAttr::get(context));
    SmallVector<Location> locs(added, function.getLoc());
    if (failed(function.insertArguments(indices, types, attrs, locs)))
      return failure();
    DenseMap<unsigned, unsigned> extentOf; // parameter -> its base argument
    for (auto [k, parameter] : llvm::enumerate(pointers))
      extentOf[parameter] = own + 2 * k;
    Value record = function.getArgument(own + added - 1);
    for (auto [id, site] : llvm::enumerate(sites)) {
      if (site.op->getParentOfType<func::FuncOp>() != function)
        continue;
      auto found = extentOf.find(site.parameter);
      if (found == extentOf.end())
        continue;
      checks[site.op] = {int64_t(id), site.parameter, site.elementBytes,
                         function.getArgument(found->second),
                         function.getArgument(found->second + 1), record};
    }
  }
  SmallVector<Attribute> table;
  for (const AccessSite &site : sites)
    table.push_back(builder.getDictionaryAttr({
        builder.getNamedAttr("loc", builder.getStringAttr(site.location)),
        builder.getNamedAttr("param", builder.getI32IntegerAttr(site.parameter)),
        builder.getNamedAttr("store", builder.getBoolAttr(site.writes)),
        builder.getNamedAttr("element_bytes", builder.getI32IntegerAttr(site.elementBytes)),
    }));
  module->setAttr(kCheckedSitesAttr, builder.getArrayAttr(table));
  return success();
}

SmallVector<Value> mlir::kiln::gpu::emitAccessCheck(
    ConversionPatternRewriter &rewriter, Location loc, const AccessCheck &check,
    ArrayRef<Value> addresses, ArrayRef<Value> predicates, int64_t runBytes) {
  Type i64 = rewriter.getI64Type();
  Type i1 = rewriter.getI1Type();
  auto constant = [&](Type type, int64_t value) -> Value {
    return LLVM::ConstantOp::create(rewriter, loc, type,
                                    rewriter.getIntegerAttr(type, value));
  };
  Value base = rewriter.getRemappedValue(check.base);
  Value bytes = rewriter.getRemappedValue(check.bytes);
  Value record = rewriter.getRemappedValue(check.record);
  Value zero = constant(i64, 0), width = constant(i64, runBytes);
  Value elementBytes = constant(i64, check.elementBytes);
  Value none = constant(i64, INT64_MAX), yes = constant(i1, 1);
  Value anyBad = constant(i1, 0), first = none;
  SmallVector<Value> narrowed;
  for (auto [r, address] : llvm::enumerate(addresses)) {
    Value offset = LLVM::SubOp::create(
        rewriter, loc, LLVM::PtrToIntOp::create(rewriter, loc, i64, address), base);
    Value end = LLVM::AddOp::create(rewriter, loc, offset, width);
    Value below = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::slt, offset, zero);
    Value inside = LLVM::AndOp::create(
        rewriter, loc, LLVM::XOrOp::create(rewriter, loc, below, yes),
        LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::sle, end, bytes));
    Value outside = LLVM::XOrOp::create(rewriter, loc, inside, yes);
    Value bad = outside;
    if (predicates.empty()) {
      narrowed.push_back(inside);
    } else {
      narrowed.push_back(LLVM::AndOp::create(rewriter, loc, predicates[r], inside));
      bad = LLVM::AndOp::create(rewriter, loc, predicates[r], outside);
    }
    // The run's first element outside: its first one below the extent, or
    // the one at the extent's end (or its first, when it starts past it).
    Value past = LLVM::SMaxOp::create(rewriter, loc, offset, bytes);
    Value at = LLVM::SelectOp::create(rewriter, loc, below, offset, past);
    Value index = LLVM::SDivOp::create(rewriter, loc, at, elementBytes);
    Value smaller = LLVM::SMinOp::create(rewriter, loc, first, index);
    first = LLVM::SelectOp::create(rewriter, loc, bad, smaller, first);
    anyBad = LLVM::OrOp::create(rewriter, loc, anyBad, bad);
  }
  int64_t key = (int64_t(check.parameter) << 32) | (check.site + 1);
  emitIf(rewriter, loc, anyBad, [&](OpBuilder &builder) {
    auto ordering = LLVM::AtomicOrdering::monotonic;
    Value keyValue = constant(i64, key);
    auto exchange = LLVM::AtomicCmpXchgOp::create(builder, loc, record, zero, keyValue,
                                                  ordering, ordering);
    Value old = LLVM::ExtractValueOp::create(builder, loc, exchange, 0);
    // The winning site's index, and later faults of that site, lower the
    // recorded index; other sites' faults leave it (min with INT64_MAX).
    Value ours = LLVM::OrOp::create(
        builder, loc,
        LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::eq, old, zero),
        LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::eq, old, keyValue));
    Value index = LLVM::SelectOp::create(builder, loc, ours, first, none);
    Value slot = LLVM::GEPOp::create(builder, loc, record.getType(), i64, record,
                                     ArrayRef<LLVM::GEPArg>{1});
    LLVM::AtomicRMWOp::create(builder, loc, LLVM::AtomicBinOp::min, slot, index, ordering);
  });
  return narrowed;
}
