//===- ExpandTensorMapLoads.cpp - Loads through maps, as the TMA unit reads -===//
//
// Implements kiln-expand-tensor-map-loads. A load that names a map made in
// the kernel reads, on a GPU whose TMA unit copies it, the box of the map's
// tensor at its coordinates, zero (or NaN) outside the tensor, whatever its
// own pointers say. This pass makes a target without the TMA unit read the
// same elements: each such load reads through pointers and a mask computed
// from the map's base, shape and strides and the load's coordinates. The
// CPU backend runs it where kiln-tensor-map-pointer-loads ran, so that the
// program's check and the maps' coordinates are tested where there is no
// GPU.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNEXPANDTENSORMAPLOADS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Replaces `load`, which names the tensor of `map`, by a load of the same
/// elements through pointers and a mask: element `i` of the box is the
/// tensor's element at `coordinates + i`, read where that lies in the
/// tensor's shape.
void expand(LoadOp load, MakeTensorMapOp map) {
  OpBuilder builder(load);
  Location loc = load.getLoc();
  auto type = cast<RankedTensorType>(load.getType());
  unsigned rank = type.getRank();
  Type i64 = builder.getI64Type();
  auto blockOf = [&](Type element) { return RankedTensorType::get(type.getShape(), element); };
  Value offsets, inside;
  for (unsigned d = 0; d < rank; ++d) {
    // The box's coordinates along d, as a block of rank `rank` (one element
    // along every other dimension), then broadcast.
    int64_t size = type.getDimSize(d);
    Value range = MakeRangeOp::create(builder, loc, RankedTensorType::get({size}, builder.getI32Type()), 0,
                                      int32_t(size));
    // expand_dims one axis at a time, the range staying at position d.
    Value index = range;
    SmallVector<int64_t> shape{size};
    for (unsigned axis = 0; axis < rank; ++axis) {
      if (axis == d)
        continue;
      shape.insert(shape.begin() + axis, 1);
      index = ExpandDimsOp::create(builder, loc, RankedTensorType::get(shape, builder.getI32Type()), index,
                                   int32_t(axis));
    }
    auto narrow = RankedTensorType::get(shape, i64);
    index = arith::ExtSIOp::create(builder, loc, narrow, index);
    Value coordinate = arith::ExtSIOp::create(builder, loc, i64, load.getTensorCoords()[d]);
    index = arith::AddIOp::create(builder, loc, index, SplatOp::create(builder, loc, narrow, coordinate));
    index = BroadcastOp::create(builder, loc, blockOf(i64), index);
    Value zero = SplatOp::create(builder, loc, blockOf(i64),
                                 arith::ConstantIntOp::create(builder, loc, i64, 0));
    Value extent = SplatOp::create(builder, loc, blockOf(i64), map.getShape()[d]);
    Value within = arith::AndIOp::create(
        builder, loc, arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, index, zero),
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, index, extent));
    inside = inside ? arith::AndIOp::create(builder, loc, inside, within).getResult() : within;
    // The last dimension is contiguous; the others have their strides.
    if (d + 1 < rank)
      index = arith::MulIOp::create(builder, loc, index,
                                    SplatOp::create(builder, loc, blockOf(i64), map.getStrides()[d]));
    offsets = offsets ? arith::AddIOp::create(builder, loc, offsets, index).getResult() : index;
  }
  auto pointerType = cast<RankedTensorType>(load.getPtr().getType());
  Value base = SplatOp::create(builder, loc, pointerType, map.getBase());
  Value pointers = AddPtrOp::create(builder, loc, pointerType, base, offsets);
  Type element = type.getElementType();
  TypedAttr fill = map.getNanPadding() && isa<FloatType>(element)
                       ? TypedAttr(builder.getFloatAttr(
                             element, APFloat::getNaN(cast<FloatType>(element).getFloatSemantics())))
                       : builder.getZeroAttr(element);
  Value other = SplatOp::create(builder, loc, type, arith::ConstantOp::create(builder, loc, fill));
  auto replacement = LoadOp::create(builder, loc, type, pointers, inside, other, Value(), ValueRange{},
                                    load.getCache(), load.getEvict(), load.getIsVolatile());
  load.getResult().replaceAllUsesWith(replacement.getResult());
  load.erase();
}

struct KilnExpandTensorMapLoads
    : public kiln::impl::KilnExpandTensorMapLoadsBase<KilnExpandTensorMapLoads> {
  void runOnOperation() override {
    SmallVector<std::pair<LoadOp, MakeTensorMapOp>> loads;
    getOperation().walk([&](LoadOp load) {
      if (auto map = load.getTensorMap() ? load.getTensorMap().getDefiningOp<MakeTensorMapOp>() : nullptr)
        if (isa<RankedTensorType>(load.getType()))
          loads.push_back({load, map});
    });
    for (auto [load, map] : loads)
      expand(load, map);
  }
};

} // namespace
