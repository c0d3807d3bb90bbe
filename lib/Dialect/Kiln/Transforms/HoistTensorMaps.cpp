//===- HoistTensorMaps.cpp - Descriptors made in the kernel as parameters --===//
//
// Implements kiln-hoist-tensor-maps. A tensor descriptor made in the kernel
// names its TMA tensor map with kiln.make_tensor_map, which nothing lowers:
// writing a map takes a global scratch buffer and proxy fences in every
// program. Most descriptors are made from the kernel's arguments alone
// (attention's `[Z * H * N_CTX, HEAD_DIM]` over a parameter), the same in
// every program, and those the launcher can encode as it encodes a host
// descriptor's: such a map becomes a kernel parameter, with the recipe of
// its shape and strides recorded for the launcher. Any other map is dropped,
// and its loads read through their pointers.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/AccessSites.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <optional>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNHOISTTENSORMAPS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Ops an expression may nest: a recipe is a few arithmetic ops deep.
constexpr unsigned kMaxDepth = 32;

/// A scalar computed from the kernel's arguments: the launcher's recipe for
/// it, and how many of its low bits are known to be zero in every launch
/// (its divisibility by a power of two).
struct Expression {
  Attribute recipe;
  unsigned knownZeroBits;
};

/// Writes the recipes of scalars computed from the arguments of `kernel`.
class ExpressionWriter {
public:
  explicit ExpressionWriter(FunctionOpInterface kernel)
      : kernel(kernel), builder(kernel.getContext()) {}

  /// The recipe of the integer scalar `value`, or nullopt where it is not
  /// computed from the kernel's arguments and constants alone.
  std::optional<Expression> describe(Value value, unsigned depth = 0) {
    auto type = dyn_cast<IntegerType>(value.getType());
    if (!type || depth > kMaxDepth)
      return std::nullopt;
    unsigned width = type.getWidth();
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      if (!isKernelArgument(arg))
        return std::nullopt;
      return Expression{node("arg", width, {index(arg.getArgNumber())}),
                        std::min(width, knownZeroBits(arg))};
    }
    Operation *op = value.getDefiningOp();
    if (!op)
      return std::nullopt;
    if (auto constant = dyn_cast<arith::ConstantIntOp>(op)) {
      APInt bits = cast<IntegerAttr>(constant.getValue()).getValue();
      return Expression{node("const", width, {index(bits.getSExtValue())}),
                        bits.isZero() ? width : bits.countr_zero()};
    }
    if (isa<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp>(op)) {
      auto operand = describe(op->getOperand(0), depth + 1);
      if (!operand)
        return std::nullopt;
      StringRef name = isa<arith::ExtSIOp>(op) ? "sext" : isa<arith::ExtUIOp>(op) ? "zext" : "trunc";
      return Expression{node(name, width, {operand->recipe}),
                        std::min(width, operand->knownZeroBits)};
    }
    if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op)) {
      auto lhs = describe(op->getOperand(0), depth + 1);
      auto rhs = lhs ? describe(op->getOperand(1), depth + 1) : std::nullopt;
      if (!rhs)
        return std::nullopt;
      // Wrapping keeps low zero bits: a product's add, a sum's is the fewer.
      unsigned zeros = isa<arith::MulIOp>(op)
                           ? std::min(width, lhs->knownZeroBits + rhs->knownZeroBits)
                           : std::min(lhs->knownZeroBits, rhs->knownZeroBits);
      StringRef name = isa<arith::AddIOp>(op) ? "add" : isa<arith::SubIOp>(op) ? "sub" : "mul";
      return Expression{node(name, width, {lhs->recipe, rhs->recipe}), zeros};
    }
    return std::nullopt;
  }

  /// Whether `arg` is one of the kernel's own arguments.
  bool isKernelArgument(BlockArgument arg) {
    return arg.getOwner() == &kernel.getFunctionBody().front();
  }

  /// Low bits of kernel argument `arg` that are zero in every launch.
  unsigned knownZeroBits(BlockArgument arg) {
    return getKnownZeroBits(kernel, arg.getArgNumber());
  }

  Attribute index(int64_t value) { return builder.getI64IntegerAttr(value); }

private:
  Attribute node(StringRef name, unsigned width, ArrayRef<Attribute> operands) {
    SmallVector<Attribute> parts{builder.getStringAttr(name), index(width)};
    parts.append(operands.begin(), operands.end());
    return builder.getArrayAttr(parts);
  }

  FunctionOpInterface kernel;
  Builder builder;
};

/// The recipe of `map`'s tensor, or null where it is not computed from
/// `kernel`'s arguments alone or some launch could make a stride that the
/// TMA unit refuses (not a multiple of 16 bytes).
DictionaryAttr describeMap(MakeTensorMapOp map, FunctionOpInterface kernel) {
  ExpressionWriter writer(kernel);
  auto base = dyn_cast<BlockArgument>(map.getBase());
  // The TMA unit reads from a base aligned to 16 bytes.
  if (!base || !writer.isKernelArgument(base) || writer.knownZeroBits(base) < 4)
    return {};
  Type element = map.getBase().getType().getPointeeType();
  unsigned bits = element.getIntOrFloatBitWidth();
  if (bits < 8 || bits > 64 || !llvm::isPowerOf2_32(bits))
    return {};
  unsigned elementZeroBits = llvm::countr_zero(bits / 8);
  SmallVector<Attribute> shape, strides;
  for (Value extent : map.getShape()) {
    auto expression = writer.describe(extent);
    if (!expression)
      return {};
    shape.push_back(expression->recipe);
  }
  for (Value stride : map.getStrides()) {
    auto expression = writer.describe(stride);
    if (!expression || expression->knownZeroBits + elementZeroBits < 4)
      return {};
    strides.push_back(expression->recipe);
  }
  Builder builder(map.getContext());
  SmallVector<NamedAttribute> fields{
      builder.getNamedAttr("base", writer.index(base.getArgNumber())),
      builder.getNamedAttr("element_bits", writer.index(bits)),
      builder.getNamedAttr("bfloat16", builder.getBoolAttr(element.isBF16())),
      builder.getNamedAttr("nan", builder.getBoolAttr(map.getNanPadding())),
      builder.getNamedAttr("shape", builder.getArrayAttr(shape)),
      builder.getNamedAttr("strides", builder.getArrayAttr(strides)),
      builder.getNamedAttr("loc", builder.getStringAttr(describeLocation(map.getLoc()))),
  };
  // A map the kernel checks before reading it (kiln-tensor-map-pointer-loads).
  if (map->hasAttr(kGuardedTensorMapAttr))
    fields.push_back(builder.getNamedAttr("guarded", builder.getBoolAttr(true)));
  return builder.getDictionaryAttr(fields);
}

/// Takes `map` away: its loads keep their pointers and mask, and any other
/// use (a loop carrying the descriptor) sees a null map that no load can
/// name as a parameter.
void dropMap(MakeTensorMapOp map) {
  for (OpOperand &use : llvm::make_early_inc_range(map.getResult().getUses())) {
    auto load = dyn_cast<LoadOp>(use.getOwner());
    if (load && load.getTensorMap() == map.getResult())
      load.dropTensorMap();
  }
  if (!map.getResult().use_empty()) {
    OpBuilder builder(map);
    Value zero = arith::ConstantIntOp::create(builder, map.getLoc(), builder.getI64Type(), 0);
    map.getResult().replaceAllUsesWith(
        IntToPtrOp::create(builder, map.getLoc(), map.getType(), zero));
  }
  map.erase();
}

struct KilnHoistTensorMaps : public kiln::impl::KilnHoistTensorMapsBase<KilnHoistTensorMaps> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<MakeTensorMapOp> maps;
    module.walk([&](MakeTensorMapOp map) { maps.push_back(map); });
    SmallVector<Attribute> recipes;
    for (MakeTensorMapOp map : maps) {
      auto kernel = map->getParentOfType<FunctionOpInterface>();
      DictionaryAttr recipe;
      if (hoist && kernel && kernel->hasAttr("kiln.kernel"))
        recipe = describeMap(map, kernel);
      if (!recipe) {
        dropMap(map);
        continue;
      }
      Builder builder(map.getContext());
      unsigned position = kernel.getNumArguments();
      auto marker = builder.getDictionaryAttr(
          {builder.getNamedAttr("kiln.tensor_map", builder.getI64IntegerAttr(1))});
      if (failed(kernel.insertArgument(position, map.getType(), marker, map.getLoc()))) {
        map.emitOpError("cannot add the tensor map's kernel parameter");
        return signalPassFailure();
      }
      map.getResult().replaceAllUsesWith(kernel.getArgument(position));
      map.erase();
      SmallVector<NamedAttribute> fields(recipe.getValue());
      fields.push_back(builder.getNamedAttr("arg", builder.getI64IntegerAttr(position)));
      recipes.push_back(builder.getDictionaryAttr(fields));
    }
    if (!recipes.empty())
      module->setAttr(kDerivedTensorMapsAttr, ArrayAttr::get(module.getContext(), recipes));
  }
};

} // namespace
