//===- Dialect.cpp - The kiln dialect --------------------------------------===//
//
// Registers the kiln dialect and implements its types' helpers, its op
// verifiers and folders.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kiln;

#include "kiln/Dialect/Kiln/IR/KilnDialect.cpp.inc"
#include "kiln/Dialect/Kiln/IR/KilnEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "kiln/Dialect/Kiln/IR/KilnTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Kiln/IR/KilnAttrs.cpp.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/Kiln/IR/KilnOps.cpp.inc"

namespace {
/// Every kiln op can be inlined: none depends on the function it is in.
struct KilnInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void KilnDialect::initialize() {
  addInterfaces<KilnInlinerInterface>();
  addTypes<
#define GET_TYPEDEF_LIST
#include "kiln/Dialect/Kiln/IR/KilnTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kiln/Dialect/Kiln/IR/KilnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/Kiln/IR/KilnOps.cpp.inc"
      >();
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  return arith::ConstantOp::materialize(builder, value, type, loc);
}

//===----------------------------------------------------------------------===//
// Type helpers
//===----------------------------------------------------------------------===//

Type mlir::kiln::getTypeWithElement(Type type, Type elementType) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return RankedTensorType::get(tensor.getShape(), elementType,
                                 tensor.getEncoding());
  return elementType;
}

Type mlir::kiln::getI1SameShape(Type type) {
  return getTypeWithElement(type, IntegerType::get(type.getContext(), 1));
}

unsigned mlir::kiln::getKnownZeroBits(FunctionOpInterface kernel, unsigned index) {
  auto divisibility =
      dyn_cast_if_present<IntegerAttr>(kernel.getArgAttr(index, "kiln.divisibility"));
  if (!divisibility || divisibility.getInt() <= 0)
    return 0;
  return llvm::countr_zero(uint64_t(divisibility.getInt()));
}

Type mlir::kiln::getPointeeType(Type ptrLike) {
  return cast<PointerType>(getElementTypeOrSelf(ptrLike)).getPointeeType();
}

static std::string shapeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    os << "[";
    llvm::interleaveComma(tensor.getShape(), os);
    os << "]";
  } else {
    os << "scalar";
  }
  return text;
}

//===----------------------------------------------------------------------===//
// MakeRangeOp
//===----------------------------------------------------------------------===//

LogicalResult MakeRangeOp::verify() {
  int64_t start = getStart(), end = getEnd();
  if (end <= start)
    return emitOpError() << "expected end > start, got start = " << start
                         << " and end = " << end;
  int64_t length = end - start;
  if (!llvm::isPowerOf2_64(length))
    return emitOpError() << "expected a power-of-two length, got " << length;
  auto type = getType();
  if (type.getRank() != 1 || type.getDimSize(0) != length)
    return emitOpError() << "expected result of shape [" << length
                         << "], got " << shapeString(type);
  return success();
}

//===----------------------------------------------------------------------===//
// SplatOp
//===----------------------------------------------------------------------===//

OpFoldResult SplatOp::fold(FoldAdaptor adaptor) {
  auto value = adaptor.getSrc();
  if (!value || isa<PointerType>(getSrc().getType()))
    return {};
  if (!isa<IntegerAttr, FloatAttr>(value))
    return {};
  return SplatElementsAttr::get(getType(), value);
}

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  auto srcType = getSrc().getType();
  auto resultType = getType();
  if (srcType.getRank() != resultType.getRank())
    return emitOpError() << "expected source and result of the same rank, got "
                         << shapeString(srcType) << " and "
                         << shapeString(resultType);
  for (auto [src, dst] : llvm::zip(srcType.getShape(), resultType.getShape()))
    if (src != dst && src != 1)
      return emitOpError() << "cannot broadcast shape " << shapeString(srcType)
                           << " to " << shapeString(resultType);
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getSrc()))
    return SplatElementsAttr::get(getType(), splat.getSplatValue<Attribute>());
  return {};
}

//===----------------------------------------------------------------------===//
// ExpandDimsOp
//===----------------------------------------------------------------------===//

LogicalResult ExpandDimsOp::verify() {
  auto srcType = getSrc().getType();
  int64_t axis = getAxis();
  if (axis < 0 || axis > srcType.getRank())
    return emitOpError() << "expected axis in [0, " << srcType.getRank()
                         << "], got " << axis;
  SmallVector<int64_t> shape(srcType.getShape());
  shape.insert(shape.begin() + axis, 1);
  if (getType().getShape() != ArrayRef<int64_t>(shape))
    return emitOpError() << "expected result of shape "
                         << shapeString(RankedTensorType::get(
                                shape, srcType.getElementType()))
                         << ", got " << shapeString(getType());
  return success();
}

//===----------------------------------------------------------------------===//
// AddPtrOp
//===----------------------------------------------------------------------===//

OpFoldResult AddPtrOp::fold(FoldAdaptor adaptor) {
  if (matchPattern(adaptor.getOffset(), m_Zero()))
    return getPtr();
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getOffset()))
    if (splat.getSplatValue<APInt>().isZero())
      return getPtr();
  return {};
}

//===----------------------------------------------------------------------===//
// PtrToIntOp, IntToPtrOp and PtrBitcastOp
//===----------------------------------------------------------------------===//

// An address that goes through an integer and back, or through pointers of
// other element types, is the value it started from: the chain folds to
// it where the types agree.

OpFoldResult PtrToIntOp::fold(FoldAdaptor) {
  if (auto pointer = getSrc().getDefiningOp<IntToPtrOp>())
    if (pointer.getSrc().getType() == getType())
      return pointer.getSrc();
  return {};
}

OpFoldResult IntToPtrOp::fold(FoldAdaptor) {
  if (auto address = getSrc().getDefiningOp<PtrToIntOp>())
    if (address.getSrc().getType() == getType())
      return address.getSrc();
  return {};
}

LogicalResult PtrBitcastOp::verify() {
  auto from = cast<PointerType>(getElementTypeOrSelf(getSrc().getType()));
  auto to = cast<PointerType>(getElementTypeOrSelf(getType()));
  if (from.getAddressSpace() != to.getAddressSpace())
    return emitOpError() << "expected pointers of one address space, got "
                         << from << " and " << to;
  return success();
}

OpFoldResult PtrBitcastOp::fold(FoldAdaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  auto inner = getSrc().getDefiningOp<PtrBitcastOp>();
  if (!inner)
    return {};
  if (inner.getSrc().getType() == getType())
    return inner.getSrc();
  // A cast of a cast is one cast of the first source.
  getSrcMutable().assign(inner.getSrc());
  return getResult();
}

//===----------------------------------------------------------------------===//
// LoadOp and StoreOp
//===----------------------------------------------------------------------===//

void LoadOp::build(OpBuilder &builder, OperationState &state, Value ptr,
                   Value mask, Value other) {
  Type resultType = getTypeWithElement(ptr.getType(), getPointeeType(ptr.getType()));
  build(builder, state, resultType, ptr, mask, other, /*tensorMap=*/Value(),
        /*tensorCoords=*/ValueRange(), CacheModifier::none, EvictionPolicy::normal,
        /*isVolatile=*/false);
}

/// Memory holds numbers: neither lowering loads or stores pointer values
/// (a `**fp32` kernel signature is the way to ask for that). Refused here,
/// with the op's kernel line, instead of reaching a lowering that cannot
/// size the element.
static LogicalResult verifyNumericPointee(Operation *op, Type ptrType) {
  if (isa<PointerType>(getPointeeType(ptrType)))
    return op->emitOpError()
           << "cannot access memory that holds pointers (" << ptrType
           << "): loads and stores of pointer values are not supported";
  return success();
}

/// Checks that `op`'s cache modifier is one of `allowed` (or none): a load
/// takes ca, cg or cv, a store wb, cg, cs or wt, on every target (PTX's
/// ld and st qualifiers, which the CPU backend accepts and ignores).
static LogicalResult verifyCacheModifier(Operation *op, CacheModifier cache,
                                         ArrayRef<CacheModifier> allowed, StringRef access) {
  if (cache == CacheModifier::none || llvm::is_contained(allowed, cache))
    return success();
  InFlightDiagnostic diag = op->emitOpError()
                            << "cache modifier '" << stringifyCacheModifier(cache)
                            << "' is not valid for a " << access << "; expected one of ";
  llvm::interleaveComma(allowed, diag, [&](CacheModifier c) {
    diag << "'" << stringifyCacheModifier(c) << "'";
  });
  return diag;
}

LogicalResult LoadOp::verify() {
  if (failed(verifyNumericPointee(*this, getPtr().getType())))
    return failure();
  if (failed(verifyCacheModifier(*this, getCache(),
                                 {CacheModifier::ca, CacheModifier::cg, CacheModifier::cv},
                                 "load")))
    return failure();
  Type expected = getTypeWithElement(getPtr().getType(),
                                     getPointeeType(getPtr().getType()));
  if (getType() != expected)
    return emitOpError() << "expected result type " << expected << ", got "
                         << getType();
  // The shapes of mask and other are checked by the op's type constraints.
  if (getTensorMap()) {
    auto blockType = dyn_cast<RankedTensorType>(getType());
    if (!blockType)
      return emitOpError("a load through a tensor map must load a block");
    if (int64_t(getTensorCoords().size()) != blockType.getRank())
      return emitOpError() << "expected " << blockType.getRank()
                           << " tensor map coordinates (one per dimension), got "
                           << getTensorCoords().size();
  } else if (!getTensorCoords().empty()) {
    return emitOpError("tensor map coordinates without a tensor map");
  }
  return success();
}

void LoadOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), &getPtrMutable(),
                       SideEffects::DefaultResource::get());
  // A volatile load must not be removed or merged with another.
  if (getIsVolatile())
    effects.emplace_back(MemoryEffects::Write::get(),
                         SideEffects::DefaultResource::get());
}

LogicalResult MakeTensorMapOp::verify() {
  auto base = getBase().getType();
  if (base.getAddressSpace() != 1)
    return emitOpError() << "expected a pointer to global memory, got " << base;
  if (failed(verifyNumericPointee(*this, base)))
    return failure();
  // The TMA unit's tensors have 1 to 5 dimensions.
  size_t rank = getShape().size();
  if (rank < 1 || rank > 5)
    return emitOpError() << "expected 1 to 5 dimensions, got " << rank;
  if (getStrides().size() != rank - 1)
    return emitOpError() << "expected " << rank - 1
                         << " strides (one per dimension but the contiguous last), got "
                         << getStrides().size();
  return success();
}

LogicalResult StoreOp::verify() {
  if (failed(verifyNumericPointee(*this, getPtr().getType())))
    return failure();
  if (failed(verifyCacheModifier(
          *this, getCache(),
          {CacheModifier::wb, CacheModifier::cg, CacheModifier::cs, CacheModifier::wt}, "store")))
    return failure();
  Type expected = getTypeWithElement(getPtr().getType(),
                                     getPointeeType(getPtr().getType()));
  if (getValue().getType() != expected)
    return emitOpError() << "expected value of type " << expected << ", got "
                         << getValue().getType();
  return success();
}

void StoreOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  effects.emplace_back(MemoryEffects::Write::get(), &getPtrMutable(),
                       SideEffects::DefaultResource::get());
}

//===----------------------------------------------------------------------===//
// ReduceOp and ScanOp
//===----------------------------------------------------------------------===//

/// Checks what reductions and scans share: operands of one shape and an
/// axis within it.
static LogicalResult verifyCombineOperands(Operation *op, ValueRange srcs,
                                           int64_t axis) {
  if (srcs.empty())
    return op->emitOpError("expected at least one operand");
  auto first = cast<RankedTensorType>(srcs.front().getType());
  for (Value src : srcs.drop_front())
    if (cast<RankedTensorType>(src.getType()).getShape() != first.getShape())
      return op->emitOpError() << "expected operands of one shape, got "
                               << shapeString(first) << " and "
                               << shapeString(cast<RankedTensorType>(src.getType()));
  if (axis < 0 || axis >= first.getRank())
    return op->emitOpError() << "expected axis in [0, " << first.getRank()
                             << "), got " << axis;
  return success();
}

/// Checks a combine region: (accumulated..., new...) scalars of the operands'
/// element types in, one scalar of each out.
static LogicalResult verifyCombineRegion(Operation *op, Region &region,
                                         ValueRange srcs) {
  Block &block = region.front();
  size_t n = srcs.size();
  if (block.getNumArguments() != 2 * n)
    return op->emitOpError() << "expected a combine function of " << 2 * n
                             << " arguments, got " << block.getNumArguments();
  for (size_t i = 0; i < 2 * n; ++i) {
    Type expected = getElementTypeOrSelf(srcs[i % n].getType());
    if (block.getArgument(i).getType() != expected)
      return op->emitOpError() << "expected combine argument " << i
                               << " of type " << expected << ", got "
                               << block.getArgument(i).getType();
  }
  Operation *terminator = block.getTerminator();
  if (terminator->getNumOperands() != n)
    return op->emitOpError() << "expected the combine function to return " << n
                             << " values, got " << terminator->getNumOperands();
  for (size_t i = 0; i < n; ++i) {
    Type expected = getElementTypeOrSelf(srcs[i].getType());
    if (terminator->getOperand(i).getType() != expected)
      return op->emitOpError() << "expected combine result " << i << " of type "
                               << expected << ", got "
                               << terminator->getOperand(i).getType();
  }
  return success();
}

LogicalResult ReduceOp::verify() {
  if (failed(verifyCombineOperands(*this, getSrcs(), getAxis())))
    return failure();
  if (getNumResults() != getSrcs().size())
    return emitOpError() << "expected " << getSrcs().size() << " results, got "
                         << getNumResults();
  for (auto [src, result] : llvm::zip(getSrcs(), getResult())) {
    auto srcType = cast<RankedTensorType>(src.getType());
    SmallVector<int64_t> shape(srcType.getShape());
    shape.erase(shape.begin() + getAxis());
    auto resultType = dyn_cast<RankedTensorType>(result.getType());
    bool ok = shape.empty()
                  ? result.getType() == srcType.getElementType()
                  : resultType && resultType.getShape() == ArrayRef(shape) &&
                        resultType.getElementType() == srcType.getElementType();
    if (!ok)
      return emitOpError() << "expected a result of shape "
                           << (shape.empty() ? std::string("()")
                                             : shapeString(RankedTensorType::get(
                                                   shape, srcType.getElementType())))
                           << " and element type " << srcType.getElementType()
                           << ", got " << result.getType();
  }
  return success();
}

LogicalResult ReduceOp::verifyRegions() {
  return verifyCombineRegion(*this, getCombineOp(), getSrcs());
}

LogicalResult ScanOp::verify() {
  if (failed(verifyCombineOperands(*this, getSrcs(), getAxis())))
    return failure();
  if (getNumResults() != getSrcs().size())
    return emitOpError() << "expected " << getSrcs().size() << " results, got "
                         << getNumResults();
  for (auto [src, result] : llvm::zip(getSrcs(), getResult()))
    if (cast<RankedTensorType>(src.getType()).getShape() !=
            cast<RankedTensorType>(result.getType()).getShape() ||
        getElementTypeOrSelf(src) != getElementTypeOrSelf(result))
      return emitOpError() << "expected each result of its operand's type, got "
                           << result.getType() << " for " << src.getType();
  return success();
}

LogicalResult ScanOp::verifyRegions() {
  return verifyCombineRegion(*this, getCombineOp(), getSrcs());
}

//===----------------------------------------------------------------------===//
// ExternElementwiseOp
//===----------------------------------------------------------------------===//

LogicalResult ExternElementwiseOp::verify() {
  if (getSymbol().empty())
    return emitOpError() << "expected a function name, got an empty symbol";
  // The callee works on numbers; pointers have no element-wise meaning here.
  auto isNumber = [](Type type) {
    return isa<FloatType, IntegerType>(getElementTypeOrSelf(type));
  };
  for (Value src : getSrcs())
    if (!isNumber(src.getType()))
      return emitOpError() << "expected operands of number type, got "
                           << src.getType();
  if (!isNumber(getType()))
    return emitOpError() << "expected a result of number type, got "
                         << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// ElementwiseInlineAsmOp
//===----------------------------------------------------------------------===//

LogicalResult ElementwiseInlineAsmOp::verify() {
  int32_t pack = getPackedElement();
  if (pack < 1)
    return emitOpError() << "expected a positive packed_element, got " << pack;
  if (getNumResults() == 0)
    return emitOpError() << "expected at least one result";
  // Every operand and result has one shape (or all are scalars): the
  // frontend broadcasts them, and each run of the text takes the same
  // elements of each.
  Type first = getNumOperands() ? getArgs().front().getType()
                                : getResult().front().getType();
  auto shapeOf = [](Type type) -> std::optional<ArrayRef<int64_t>> {
    if (auto block = dyn_cast<RankedTensorType>(type))
      return block.getShape();
    return std::nullopt;
  };
  // Elements narrower than a register are packed into 32-bit registers, so
  // a run must fill whole registers or fit in one.
  auto checkElement = [&](Type type, StringRef what) -> LogicalResult {
    if (shapeOf(type) != shapeOf(first))
      return emitOpError() << "expected operands and results of one shape, got "
                           << type << " and " << first;
    Type element = getElementTypeOrSelf(type);
    if (element.isInteger(1))
      return emitOpError() << "expected " << what
                           << " of a type other than i1, got " << type;
    if (isa<PointerType>(element))
      return what == "results"
                 ? emitOpError() << "expected results of number type, got "
                                 << type
                 : success();
    unsigned width = element.getIntOrFloatBitWidth();
    if (width < 32 && !llvm::isPowerOf2_32(pack))
      return emitOpError() << "expected a power-of-two packed_element for "
                           << width << "-bit elements, got " << pack;
    return success();
  };
  for (Value arg : getArgs())
    if (failed(checkElement(arg.getType(), "operands")))
      return failure();
  for (Type type : getResultTypes())
    if (failed(checkElement(type, "results")))
      return failure();
  return success();
}

void ElementwiseInlineAsmOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  // Impure text may touch any memory: it is neither removed, merged nor
  // moved across other memory accesses.
  if (getPure())
    return;
  effects.emplace_back(MemoryEffects::Read::get(),
                       SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(),
                       SideEffects::DefaultResource::get());
}

Speculation::Speculatability ElementwiseInlineAsmOp::getSpeculatability() {
  return getPure() ? Speculation::Speculatable : Speculation::NotSpeculatable;
}
