//===- Dialect.cpp - The kiln_gpu dialect ----------------------------------===//
//
// Registers the kiln_gpu dialect and implements the blocked layout's
// arithmetic (tile shape, elements per thread) and verifier.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kiln::gpu;

#include "kiln/Dialect/KilnGPU/IR/KilnGPUDialect.cpp.inc"
#include "kiln/Dialect/KilnGPU/IR/KilnGPUEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/KilnGPU/IR/KilnGPUAttrs.cpp.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnGPU/IR/KilnGPUOps.cpp.inc"

namespace {
/// Prints layouts as `#blocked`, `#blocked1`, ... aliases: a kernel repeats
/// the same few layouts on every value.
struct KilnGPUOpAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (isa<BlockedEncodingAttr>(attr)) {
      os << "blocked";
      return AliasResult::FinalAlias;
    }
    if (isa<SliceEncodingAttr>(attr)) {
      os << "slice";
      return AliasResult::FinalAlias;
    }
    return AliasResult::NoAlias;
  }
};
} // namespace

void KilnGPUDialect::initialize() {
  addInterfaces<KilnGPUOpAsmInterface>();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kiln/Dialect/KilnGPU/IR/KilnGPUAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnGPU/IR/KilnGPUOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// BlockedEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult
BlockedEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            ArrayRef<unsigned> sizePerThread,
                            ArrayRef<unsigned> threadsPerWarp,
                            ArrayRef<unsigned> warpsPerCTA,
                            ArrayRef<unsigned> order) {
  size_t rank = order.size();
  if (sizePerThread.size() != rank || threadsPerWarp.size() != rank ||
      warpsPerCTA.size() != rank)
    return emitError() << "expected sizePerThread, threadsPerWarp, warpsPerCTA "
                          "and order of the same rank, got "
                       << sizePerThread.size() << ", " << threadsPerWarp.size()
                       << ", " << warpsPerCTA.size() << " and " << rank;
  SmallVector<bool> seen(rank, false);
  for (unsigned dim : order) {
    if (dim >= rank || seen[dim])
      return emitError() << "expected order to be a permutation of [0, "
                         << rank << ")";
    seen[dim] = true;
  }
  for (ArrayRef<unsigned> values : {sizePerThread, threadsPerWarp, warpsPerCTA})
    for (unsigned value : values)
      if (!llvm::isPowerOf2_32(value))
        return emitError() << "expected powers of two, got " << value;
  return success();
}

SmallVector<int64_t> BlockedEncodingAttr::getShapePerCTATile() const {
  SmallVector<int64_t> shape;
  for (unsigned d = 0; d < getRank(); ++d)
    shape.push_back(int64_t(getSizePerThread()[d]) * getThreadsPerWarp()[d] *
                    getWarpsPerCTA()[d]);
  return shape;
}

int64_t BlockedEncodingAttr::getElementsPerThread(ArrayRef<int64_t> shape) const {
  SmallVector<int64_t> tile = getShapePerCTATile();
  int64_t count = 1;
  for (unsigned d = 0; d < getRank(); ++d) {
    int64_t repeats = std::max<int64_t>(1, shape[d] / tile[d]);
    // A dimension smaller than one thread's share holds it only once.
    count *= repeats * std::min<int64_t>(getSizePerThread()[d], shape[d]);
  }
  return count;
}

BlockedEncodingAttr mlir::kiln::gpu::getDefaultBlockedEncoding(
    MLIRContext *context, ArrayRef<int64_t> shape, ArrayRef<unsigned> order,
    unsigned sizePerThread, int numWarps, int threadsPerWarp) {
  size_t rank = shape.size();
  SmallVector<unsigned> perThread(rank, 1), threads(rank, 1), warps(rank, 1);
  perThread[order[0]] = std::min<int64_t>(sizePerThread, shape[order[0]]);
  unsigned threadsLeft = threadsPerWarp, warpsLeft = numWarps;
  for (size_t i = 0; i < rank; ++i) {
    unsigned dim = order[i];
    bool last = i + 1 == rank;
    int64_t room = std::max<int64_t>(1, shape[dim] / perThread[dim]);
    threads[dim] = last ? threadsLeft : std::min<int64_t>(threadsLeft, room);
    threadsLeft /= threads[dim];
  }
  for (size_t i = 0; i < rank; ++i) {
    unsigned dim = order[i];
    bool last = i + 1 == rank;
    int64_t room =
        std::max<int64_t>(1, shape[dim] / (perThread[dim] * threads[dim]));
    warps[dim] = last ? warpsLeft : std::min<int64_t>(warpsLeft, room);
    warpsLeft /= warps[dim];
  }
  return BlockedEncodingAttr::get(context, perThread, threads, warps, order);
}

LogicalResult
SliceEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          unsigned dim, BlockedEncodingAttr parent) {
  if (!parent || dim >= parent.getRank())
    return emitError() << "expected dim < " << (parent ? parent.getRank() : 0)
                       << " (the parent's rank), got " << dim;
  return success();
}

std::optional<ThreadLayout>
mlir::kiln::gpu::getThreadLayout(RankedTensorType type) {
  Attribute encoding = type.getEncoding();
  if (auto blocked = dyn_cast_if_present<BlockedEncodingAttr>(encoding))
    return ThreadLayout{blocked, SmallVector<int64_t>(type.getShape()), -1};
  if (auto slice = dyn_cast_if_present<SliceEncodingAttr>(encoding)) {
    SmallVector<int64_t> shape(type.getShape());
    shape.insert(shape.begin() + slice.getDim(), 1);
    return ThreadLayout{slice.getParent(), shape, int64_t(slice.getDim())};
  }
  return std::nullopt;
}

BlockedEncodingAttr mlir::kiln::gpu::getMmaAccumulatorLayout(
    MLIRContext *context, ArrayRef<int64_t> shape, int numWarps,
    int threadsPerWarp) {
  if ((shape.size() != 2 && shape.size() != 3) || threadsPerWarp != 32)
    return {};
  int64_t m = shape[shape.size() - 2], n = shape.back();
  // Split the warps over rows and columns, each time halving the larger
  // extent a warp covers, while whole instruction tiles remain.
  unsigned warpsM = 1, warpsN = 1;
  while (int64_t(warpsM) * warpsN < numWarps) {
    bool canSplitM = m % (16 * warpsM * 2) == 0;
    bool canSplitN = n % (8 * warpsN * 2) == 0;
    if (canSplitM && (m / warpsM >= n / warpsN || !canSplitN))
      warpsM *= 2;
    else if (canSplitN)
      warpsN *= 2;
    else
      break;
  }
  if (m % (16 * warpsM) != 0 || n % (8 * warpsN) != 0)
    return {};
  // More warps than instruction tiles: the others repeat the tiles along
  // the columns (the layout's warps then cover more columns than the block
  // has and wrap around onto the same elements).
  warpsN *= numWarps / (warpsM * warpsN);
  if (shape.size() == 3) // each batch in turn, every warp on each
    return BlockedEncodingAttr::get(context, {1, 1, 2}, {1, 8, 4}, {1, warpsM, warpsN},
                                    {2, 1, 0});
  return BlockedEncodingAttr::get(context, {1, 2}, {8, 4}, {warpsM, warpsN},
                                  {1, 0});
}

BlockedEncodingAttr mlir::kiln::gpu::getWgmmaAccumulatorLayout(
    MLIRContext *context, ArrayRef<int64_t> shape, int numWarps,
    int threadsPerWarp) {
  if (shape.size() != 2 || threadsPerWarp != 32 || numWarps % 4 != 0)
    return {};
  int64_t m = shape[0], n = shape[1];
  // An N-major B is read in blocks of 64 columns (128-byte swizzled
  // rows), or, 16 or 32 columns wide, as one block of 32- or 64-byte
  // swizzled rows (a 16-bit B; others are K-major, any N rows).
  if (m % (16 * numWarps) != 0 || !(n % 64 == 0 || n == 16 || n == 32) || n > 256)
    return {};
  return BlockedEncodingAttr::get(context, {1, 2}, {8, 4},
                                  {unsigned(numWarps), 1u}, {1, 0});
}

bool mlir::kiln::gpu::hasMmaAccumulatorLayout(RankedTensorType type,
                                              int numWarps, int threadsPerWarp) {
  BlockedEncodingAttr layout = getMmaAccumulatorLayout(
      type.getContext(), type.getShape(), numWarps, threadsPerWarp);
  return layout && type.getEncoding() == layout;
}

int mlir::kiln::gpu::getNumWarps(ModuleOp module) {
  if (auto attr = module->getAttrOfType<IntegerAttr>(
          KilnGPUDialect::getNumWarpsAttrName()))
    return attr.getInt();
  return 1;
}

int mlir::kiln::gpu::getThreadsPerWarp(ModuleOp module) {
  if (auto attr = module->getAttrOfType<IntegerAttr>(
          KilnGPUDialect::getThreadsPerWarpAttrName()))
    return attr.getInt();
  return 32;
}

bool mlir::kiln::gpu::hasSeveralWarpgroups(int numWarps) { return numWarps >= 8 && numWarps % 4 == 0; }

//===----------------------------------------------------------------------===//
// Target
//===----------------------------------------------------------------------===//

std::optional<std::pair<unsigned, bool>> mlir::kiln::gpu::parseChipName(StringRef name) {
  if (!name.consume_front("sm_"))
    return std::nullopt;
  bool archSpecific = name.consume_back("a");
  unsigned capability = 0;
  // Two or three digits: sm_80, sm_90a, sm_100a.
  if (name.size() < 2 || name.size() > 3 || name.getAsInteger(10, capability) ||
      !llvm::all_of(name, llvm::isDigit) || capability < 10)
    return std::nullopt;
  return std::make_pair(capability, archSpecific);
}

TargetAttr TargetAttr::getFromName(MLIRContext *context, StringRef name) {
  std::optional<std::pair<unsigned, bool>> chip = parseChipName(name);
  if (!chip)
    return {};
  return TargetAttr::get(context, chip->first, chip->second);
}

std::string TargetAttr::getName() const {
  return "sm_" + std::to_string(getCapability()) + (getArchSpecific() ? "a" : "");
}

Attribute TargetAttr::parse(AsmParser &parser, Type) {
  StringRef name;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&name) || parser.parseGreater())
    return {};
  TargetAttr target = getFromName(parser.getContext(), name);
  if (!target)
    parser.emitError(loc) << "expected an NVIDIA chip such as sm_80 or sm_90a, got '"
                          << name << "'";
  return target;
}

void TargetAttr::print(AsmPrinter &printer) const { printer << "<" << getName() << ">"; }

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 unsigned capability, bool archSpecific) {
  if (capability < 10 || capability > 999)
    return emitError() << "expected a compute capability of two or three digits, got "
                       << capability;
  return success();
}

LogicalResult KilnGPUDialect::verifyOperationAttribute(Operation *op, NamedAttribute attribute) {
  if (attribute.getName() == getTargetAttrName() && !isa<TargetAttr>(attribute.getValue()))
    return op->emitError() << "expected " << getTargetAttrName()
                           << " to be a #kiln_gpu.target<...>, got " << attribute.getValue();
  return success();
}

//===----------------------------------------------------------------------===//
// ConvertLayoutOp
//===----------------------------------------------------------------------===//

OpFoldResult ConvertLayoutOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getSrc()))
    return SplatElementsAttr::get(getType(), splat.getSplatValue<Attribute>());
  // A conversion of a conversion converts the original block once.
  if (auto inner = getSrc().getDefiningOp<ConvertLayoutOp>()) {
    if (inner.getSrc().getType() == getType())
      return inner.getSrc();
    getSrcMutable().assign(inner.getSrc());
    return getResult();
  }
  return {};
}

Operation *KilnGPUDialect::materializeConstant(OpBuilder &builder,
                                               Attribute value, Type type,
                                               Location loc) {
  return arith::ConstantOp::materialize(builder, value, type, loc);
}

//===----------------------------------------------------------------------===//
// Layout assignment helper
//===----------------------------------------------------------------------===//

void mlir::kiln::gpu::setBlockEncodings(
    Operation *root, function_ref<Attribute(RankedTensorType)> encodingFor) {
  auto convert = [&](Type type) -> Type {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return type;
    Attribute encoding = encodingFor(tensor);
    if (!encoding)
      return type;
    return RankedTensorType::get(tensor.getShape(), tensor.getElementType(),
                                 encoding);
  };
  root->walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(convert(arg.getType()));
    for (OpResult result : op->getResults())
      result.setType(convert(result.getType()));
    if (auto constant = dyn_cast<arith::ConstantOp>(op))
      if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()))
        constant.setValueAttr(dense.reshape(
            cast<ShapedType>(constant.getResult().getType())));
    if (auto function = dyn_cast<FunctionOpInterface>(op)) {
      auto type = cast<FunctionType>(function.getFunctionType());
      SmallVector<Type> inputs, results;
      for (Type t : type.getInputs())
        inputs.push_back(convert(t));
      for (Type t : type.getResults())
        results.push_back(convert(t));
      function.setType(FunctionType::get(op->getContext(), inputs, results));
    }
  });
}

//===----------------------------------------------------------------------===//
// Pipelined dot operands
//===----------------------------------------------------------------------===//

LogicalResult
OperandBufferAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          unsigned operand, TensorCoresAttr tensorCores, int64_t offset,
                          int64_t slotBytes, unsigned slots, bool kMajor) {
  if (operand > 1)
    return emitError() << "expected operand 0 (A) or 1 (B), got " << operand;
  if (kMajor && operand != 1)
    return emitError() << "expected a K-major slot for operand B only";
  if (!tensorCores)
    return emitError() << "expected tensorCores";
  // wgmma's swizzle phase comes from the address bits above 128 bytes.
  if (offset < 0 || slotBytes <= 0 || offset % 1024 || slotBytes % 1024)
    return emitError() << "expected offset and slotBytes to be multiples of 1024, got "
                       << offset << " and " << slotBytes;
  if (slots == 0)
    return emitError() << "expected at least one slot";
  return success();
}

LogicalResult BlockBufferAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t offset,
                                      int64_t slotBytes, unsigned slots) {
  // 16-byte copies need 16-byte aligned destinations.
  if (offset < 0 || slotBytes <= 0 || offset % 16 || slotBytes % 16)
    return emitError() << "expected offset and slotBytes to be multiples of 16, got " << offset
                       << " and " << slotBytes;
  if (slots == 0)
    return emitError() << "expected at least one slot";
  return success();
}

/// Whether a block of `type` (elements of `element`) fits a slot of
/// `buffer`, its elements 4 or 8 bytes wide (cp.async copies no less
/// than 4 bytes, and a thread's run of narrower elements may be shorter).
static LogicalResult verifyBlockSlot(Operation *op, BlockBufferAttr buffer, RankedTensorType type,
                                     Type element) {
  unsigned bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 0;
  if (bits != 32 && bits != 64)
    return op->emitOpError("expected 32- or 64-bit elements, got ") << element;
  int64_t bytes = type.getNumElements() * bits / 8;
  if (bytes > buffer.getSlotBytes())
    return op->emitOpError("expected the block (") << bytes << " bytes) to fit a slot of "
                                                   << buffer.getSlotBytes() << " bytes";
  return success();
}

/// Whether a block of `element`s of `buffer`'s operand is a 2-D tile of a
/// type the tensor cores read as copied (f16, bf16 or i8; for B in an
/// N-major slot, 16-bit only: the tensor cores read other B K-major, which
/// the copies cannot transpose) that fits in a slot.
static LogicalResult verifySlotTile(Operation *op, OperandBufferAttr buffer,
                                    RankedTensorType type, Type element) {
  if (type.getRank() != 2)
    return op->emitOpError("expected a 2-D block, got rank ") << type.getRank();
  int64_t bytes = element.isF16() || element.isBF16() ? 2 : element.isInteger(8) ? 1 : 0;
  if (!bytes)
    return op->emitOpError("expected f16, bf16 or i8 elements, got ") << element;
  if (buffer.getOperand() == 1 && bytes != 2 && !buffer.getKMajor())
    return op->emitOpError("expected f16 or bf16 elements for an N-major operand B, got ")
           << element;
  if (type.getNumElements() * bytes > buffer.getSlotBytes())
    return op->emitOpError("expected the ")
           << type.getNumElements() * bytes << "-byte tile to fit in a slot of "
           << buffer.getSlotBytes() << " bytes";
  return success();
}

LogicalResult AsyncCopyOp::verify() {
  RankedTensorType type = getPtr().getType();
  if (Value mask = getMask())
    if (cast<RankedTensorType>(mask.getType()).getShape() != type.getShape())
      return emitOpError("expected the mask to have the pointers' shape");
  Type pointee = cast<PointerType>(type.getElementType()).getPointeeType();
  if (!getTransposed())
    return verifySlotTile(*this, getBuffer(), type, pointee);
  OperandBufferAttr buffer = getBuffer();
  if (buffer.getOperand() != 1 || !buffer.getKMajor())
    return emitOpError("expected a K-major slot of operand B for transposed pointers");
  // The operand as the dot reads it.
  if (type.getRank() != 2)
    return emitOpError("expected a 2-D block, got rank ") << type.getRank();
  return verifySlotTile(*this, buffer,
                        RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, pointee),
                        pointee);
}

LogicalResult AsyncCopyBlockOp::verify() {
  RankedTensorType type = getPtr().getType();
  if (Value mask = getMask())
    if (cast<RankedTensorType>(mask.getType()).getShape() != type.getShape())
      return emitOpError("expected the mask to have the pointers' shape");
  return verifyBlockSlot(*this, getBuffer(), type,
                         cast<PointerType>(type.getElementType()).getPointeeType());
}

LogicalResult LoadBlockOp::verify() {
  return verifyBlockSlot(*this, getBuffer(), getType(), getType().getElementType());
}

SlotBytes mlir::kiln::gpu::getSlotBytes(OperandBufferAttr buffer) {
  return {buffer.getOffset(), buffer.getEnd()};
}

std::optional<SlotBytes> mlir::kiln::gpu::getWrittenSlotBytes(Operation *op) {
  if (auto copy = dyn_cast<AsyncCopyOp>(op))
    return getSlotBytes(copy.getBuffer());
  if (auto copy = dyn_cast<AsyncTmaCopyOp>(op))
    return getSlotBytes(copy.getBuffer());
  if (auto copy = dyn_cast<AsyncCopyBlockOp>(op))
    return SlotBytes{copy.getBuffer().getOffset(), copy.getBuffer().getEnd()};
  if (auto init = dyn_cast<InitTmaBarriersOp>(op))
    return SlotBytes{int64_t(init.getOffset()),
                     int64_t(init.getOffset()) + 8 * int64_t(init.getCount())};
  return std::nullopt;
}

std::optional<TmaBox> mlir::kiln::gpu::getTmaBox(OperandBufferAttr buffer,
                                                 ArrayRef<int64_t> tileShape,
                                                 int64_t elementBytes) {
  if (!buffer.isWgmma() || tileShape.size() != 2)
    return std::nullopt;
  // wgmma slots hold rows wider than 128 bytes as consecutive 128-byte
  // blocks of columns.
  int64_t rowBytes = std::min<int64_t>(tileShape[1] * elementBytes, 128);
  if (rowBytes != 32 && rowBytes != 64 && rowBytes != 128)
    return std::nullopt;
  int64_t rows = buffer.getOperand() == 0 ? 8 : tileShape[0];
  if (rows > 256 || tileShape[0] % rows)
    return std::nullopt;
  return TmaBox{rows, rowBytes / elementBytes, rowBytes};
}

LogicalResult InitTmaBarriersOp::verify() {
  if (getOffset() % 8)
    return emitOpError("expected an 8-byte aligned offset, got ") << getOffset();
  return success();
}

/// The mbarriers a TMA op names are 8-byte words.
static LogicalResult verifyBarriersOffset(Operation *op, uint64_t barriers) {
  if (barriers % 8)
    return op->emitOpError("expected 8-byte aligned barriers, got offset ") << barriers;
  return success();
}

LogicalResult AsyncTmaCopyOp::verify() {
  auto tile = cast<RankedTensorType>(getTile());
  if (tile.getRank() != 2 || getCoords().size() != 2)
    return emitOpError("expected a 2-D tile and two coordinates");
  if (failed(verifyBarriersOffset(*this, getBarriers())))
    return failure();
  OperandBufferAttr buffer = getBuffer();
  // The tile as the dot reads it: a K-major slot holds B transposed.
  RankedTensorType operand = tile;
  if (buffer.getKMajor())
    operand = RankedTensorType::get({tile.getDimSize(1), tile.getDimSize(0)},
                                    tile.getElementType());
  if (failed(verifySlotTile(*this, buffer, operand, tile.getElementType())))
    return failure();
  if (!getTmaBox(buffer, tile.getShape(), tile.getElementType().getIntOrFloatBitWidth() / 8))
    return emitOpError("expected a wgmma slot whose rows the TMA unit can write (rows of 32, "
                       "64 or 128 bytes per block, at most 256 rows a box), got ")
           << tile;
  return success();
}

LogicalResult WaitTmaBarrierOp::verify() {
  if (failed(verifyBarriersOffset(*this, getBarriers())))
    return failure();
  // The CTA barrier of a wait without `perThread` is met by every warp.
  if (getWarp() && !getPerThread())
    return emitOpError("expected 'perThread' with 'warp': only a per-thread wait can leave the "
                       "other warps out");
  // Every thread copies into such a slot, and every thread reads it.
  if (getWarp() && getThreadCopies())
    return emitOpError("expected no 'warp' with 'threadCopies': every thread waits for the "
                       "copies of every thread");
  return success();
}

LogicalResult AsyncCopyArriveOp::verify() { return verifyBarriersOffset(*this, getBarriers()); }

LogicalResult ReleaseSlotOp::verify() {
  if (failed(verifyBarriersOffset(*this, getBarriers())))
    return failure();
  return success();
}

/// The turn ops pass turns round the ring of the kernel's warpgroups:
/// there must be at least two whole ones.
static LogicalResult verifyTurnOp(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  int numWarps = module ? getNumWarps(module) : 1;
  if (!hasSeveralWarpgroups(numWarps))
    return op->emitOpError("expected a kernel of two or more whole warpgroups (kiln_gpu.num_warps a "
                           "multiple of 4, at least 8), got ")
           << numWarps << " warps";
  return success();
}

LogicalResult BeginTurnsOp::verify() { return verifyTurnOp(*this); }
LogicalResult AwaitTurnOp::verify() { return verifyTurnOp(*this); }
LogicalResult PassTurnOp::verify() { return verifyTurnOp(*this); }

LogicalResult ProducerOp::verify() {
  if (!isa_and_present<FunctionOpInterface>((*this)->getParentOp()))
    return emitOpError("expected to be directly in a kernel function");
  // setmaxnreg is per warpgroup, in steps of 8 registers between 24 and 256.
  for (std::optional<uint32_t> registers : {getProducerRegisters(), getConsumerRegisters()}) {
    if (!registers)
      continue;
    if (getWarps() % 4)
      return emitOpError("expected whole warpgroups of producer warps to set their registers, got ")
             << getWarps() << " warps";
    if (*registers < 24 || *registers > 256 || *registers % 8)
      return emitOpError("expected a register count that is a multiple of 8 from 24 to 256, got ")
             << *registers;
  }
  // The producer warps have no place in the blocks' layouts.
  WalkResult blocks = getBody().walk([](Operation *op) {
    auto isBlock = [](Type type) { return isa<RankedTensorType>(type); };
    return llvm::any_of(op->getOperandTypes(), isBlock) || llvm::any_of(op->getResultTypes(), isBlock)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (blocks.wasInterrupted())
    return emitOpError("expected only scalar code in the producer region, no blocks");
  return success();
}

LogicalResult SharedOperandOp::verify() {
  unsigned operand = getBuffer().getOperand();
  for (OpOperand &use : getResult().getUses())
    if (!isa<DotOp>(use.getOwner()) || use.getOperandNumber() != operand)
      return emitOpError("expected every user to be a kiln.dot reading the block as operand ")
             << (operand == 0 ? "A" : "B");
  return verifySlotTile(*this, getBuffer(), getType(), getType().getElementType());
}
