//===- ShapeOps.cpp - Verifiers and element maps of the shape ops ----------===//
//
// Implements the verifiers and folders of kiln.reshape, trans, join, split,
// cat, flip and gather, and getElementSources: for each of them, the affine
// map from a result element's coordinates to the row-major index of the
// operand element it takes. Both lowerings read the map, so the meaning of
// each op is written down once.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::kiln;

static std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

SmallVector<int64_t> mlir::kiln::getRowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

//===----------------------------------------------------------------------===//
// Verifiers and folders
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  int64_t srcCount = getSrc().getType().getNumElements();
  int64_t resultCount = getType().getNumElements();
  if (srcCount != resultCount)
    return emitOpError() << "expected a result of " << srcCount
                         << " elements, got " << resultCount << " (shape "
                         << shapeText(getType().getShape()) << ")";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  return {};
}

LogicalResult TransOp::verify() {
  ArrayRef<int64_t> srcShape = getSrc().getType().getShape();
  ArrayRef<int32_t> order = getOrder();
  SmallVector<bool> seen(srcShape.size(), false);
  bool isPermutation = order.size() == srcShape.size();
  for (int32_t d : order) {
    if (!isPermutation || d < 0 || d >= int32_t(srcShape.size()) || seen[d]) {
      isPermutation = false;
      break;
    }
    seen[d] = true;
  }
  if (!isPermutation) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::interleaveComma(order, os);
    return emitOpError() << "expected order to be a permutation of the "
                         << srcShape.size() << " source dimensions, got ["
                         << text << "]";
  }
  SmallVector<int64_t> expected;
  for (int32_t d : order)
    expected.push_back(srcShape[d]);
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "expected result of shape " << shapeText(expected)
                         << ", got " << shapeText(getType().getShape());
  return success();
}

OpFoldResult TransOp::fold(FoldAdaptor) {
  for (auto [i, d] : llvm::enumerate(getOrder()))
    if (int64_t(i) != d)
      return {};
  if (getSrc().getType() != getType())
    return {};
  return getSrc();
}

LogicalResult JoinOp::verify() {
  SmallVector<int64_t> expected(getLhs().getType().getShape());
  expected.push_back(2);
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "expected result of shape " << shapeText(expected)
                         << ", got " << shapeText(getType().getShape());
  return success();
}

LogicalResult SplitOp::verify() {
  ArrayRef<int64_t> srcShape = getSrc().getType().getShape();
  if (srcShape.size() < 2 || srcShape.back() != 2)
    return emitOpError() << "expected a source of rank two or more whose last "
                            "dimension is 2, got shape "
                         << shapeText(srcShape);
  ArrayRef<int64_t> expected = srcShape.drop_back();
  if (getLhs().getType().getShape() != expected ||
      getRhs().getType().getShape() != expected)
    return emitOpError() << "expected results of shape " << shapeText(expected)
                         << ", got " << shapeText(getLhs().getType().getShape())
                         << " and " << shapeText(getRhs().getType().getShape());
  return success();
}

LogicalResult CatOp::verify() {
  SmallVector<int64_t> expected(getLhs().getType().getShape());
  expected[0] *= 2;
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "expected result of shape " << shapeText(expected)
                         << ", got " << shapeText(getType().getShape());
  return success();
}

LogicalResult FlipOp::verify() {
  int64_t rank = getSrc().getType().getRank();
  if (getAxis() < 0 || getAxis() >= rank)
    return emitOpError() << "expected axis in [0, " << rank << "), got "
                         << getAxis();
  return success();
}

LogicalResult GatherOp::verify() {
  ArrayRef<int64_t> srcShape = getSrc().getType().getShape();
  ArrayRef<int64_t> indexShape = getIndex().getType().getShape();
  int64_t rank = srcShape.size(), axis = getAxis();
  if (int64_t(indexShape.size()) != rank)
    return emitOpError() << "expected an index of rank " << rank << ", got "
                         << shapeText(indexShape);
  if (axis < 0 || axis >= rank)
    return emitOpError() << "expected axis in [0, " << rank << "), got "
                         << axis;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && srcShape[d] != indexShape[d])
      return emitOpError() << "expected index and source of one size along "
                              "every dimension but "
                           << axis << ", got " << shapeText(indexShape)
                           << " and " << shapeText(srcShape);
  if (getType().getShape() != indexShape ||
      getType().getElementType() != getSrc().getType().getElementType())
    return emitOpError() << "expected a result of the index's shape and the "
                            "source's element type, got "
                         << getType();
  return success();
}

LogicalResult HistogramOp::verify() {
  ArrayRef<int64_t> srcShape = getSrc().getType().getShape();
  if (srcShape.size() != 1)
    return emitOpError() << "expected a 1-D source, got " << shapeText(srcShape);
  if (getMask() && getMask().getType().getShape() != srcShape)
    return emitOpError() << "expected a mask of the source's shape "
                         << shapeText(srcShape) << ", got "
                         << shapeText(getMask().getType().getShape());
  ArrayRef<int64_t> resultShape = getType().getShape();
  if (resultShape.size() != 1 || !llvm::isPowerOf2_64(uint64_t(resultShape[0])))
    return emitOpError() << "expected a 1-D result of a power-of-two length, got "
                         << shapeText(resultShape);
  return success();
}

//===----------------------------------------------------------------------===//
// Element sources
//===----------------------------------------------------------------------===//

/// The source that reads a block of `shape` in row-major order.
static ElementSource identitySource(ArrayRef<int64_t> shape) {
  return {getRowMajorStrides(shape), 0};
}

std::optional<SmallVector<ElementSource>>
mlir::kiln::getElementSources(Operation *op) {
  auto shapeOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  return llvm::TypeSwitch<Operation *, std::optional<SmallVector<ElementSource>>>(op)
      .Case<ReshapeOp, CatOp>([&](auto op) -> std::optional<SmallVector<ElementSource>> {
        // Row-major order is kept; cat's second operand follows its first.
        return SmallVector<ElementSource>{identitySource(shapeOf(op.getResult()))};
      })
      .Case<TransOp>([&](TransOp op) -> std::optional<SmallVector<ElementSource>> {
        SmallVector<int64_t> srcStrides = getRowMajorStrides(shapeOf(op.getSrc()));
        ElementSource source;
        for (int32_t d : op.getOrder())
          source.coefficients.push_back(srcStrides[d]);
        return SmallVector<ElementSource>{source};
      })
      .Case<JoinOp>([&](JoinOp op) -> std::optional<SmallVector<ElementSource>> {
        ElementSource source = identitySource(shapeOf(op.getLhs()));
        source.coefficients.push_back(op.getLhs().getType().getNumElements());
        return SmallVector<ElementSource>{source};
      })
      .Case<SplitOp>([&](SplitOp op) -> std::optional<SmallVector<ElementSource>> {
        SmallVector<int64_t> strides = getRowMajorStrides(shapeOf(op.getSrc()));
        strides.pop_back();
        return SmallVector<ElementSource>{{strides, 0}, {strides, 1}};
      })
      .Case<FlipOp>([&](FlipOp op) -> std::optional<SmallVector<ElementSource>> {
        ArrayRef<int64_t> shape = shapeOf(op.getSrc());
        ElementSource source = identitySource(shape);
        int64_t axis = op.getAxis();
        source.offset = (shape[axis] - 1) * source.coefficients[axis];
        source.coefficients[axis] = -source.coefficients[axis];
        return SmallVector<ElementSource>{source};
      })
      .Case<GatherOp>([&](GatherOp op) -> std::optional<SmallVector<ElementSource>> {
        ElementSource source{getRowMajorStrides(shapeOf(op.getSrc())), 0};
        source.coefficients[op.getAxis()] = 0;
        return SmallVector<ElementSource>{source};
      })
      .Default([](Operation *) { return std::nullopt; });
}
