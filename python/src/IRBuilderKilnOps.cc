//===- IRBuilderKilnOps.cc - The Builder's kiln-dialect ops ---------------===//
//
// kiln._C.ir.Builder methods creating kiln ops: program ids, ranges, splats
// and broadcasts, pointer arithmetic and casts, loads and stores, atomics,
// hints, debugging, shape ops and matrix products.
//
//===----------------------------------------------------------------------===//

#include "IRBinding.h"

namespace kiln::python::irbinding {

//===----------------------------------------------------------------------===//
// Kiln ops
//===----------------------------------------------------------------------===//

PyValue PyBuilder::programId(int axis) {
  requireInsertionPoint();
  checkAxis(axis, "program_id");
  return value(finish(kd::ProgramIdOp::create(builder, loc, axis)));
}

PyValue PyBuilder::numPrograms(int axis) {
  requireInsertionPoint();
  checkAxis(axis, "num_programs");
  return value(finish(kd::NumProgramsOp::create(builder, loc, axis)));
}

PyValue PyBuilder::makeRange(int64_t start, int64_t end) {
  requireInsertionPoint();
  if (start < 0 || end > INT32_MAX || end <= start)
    throw py::value_error("make_range needs 0 <= start < end < 2**31, got [" +
                          std::to_string(start) + ", " + std::to_string(end) + ")");
  if (!llvm::isPowerOf2_64(end - start))
    throw py::value_error("make_range needs a power-of-two length, got " +
                          std::to_string(end - start));
  auto type = RankedTensorType::get({end - start}, builder.getI32Type());
  return value(finish(kd::MakeRangeOp::create(builder, loc, type, start, end)));
}

PyValue PyBuilder::splat(const PyValue &src, const std::vector<int64_t> &shape) {
  requireInsertionPoint();
  Value v = checkValue(src);
  if (!isKilnScalar(v.getType()))
    throw py::type_error("splat needs a scalar, got " + toString(v.getType()));
  checkShape(shape);
  auto type = RankedTensorType::get(shape, v.getType());
  return value(finish(kd::SplatOp::create(builder, loc, type, v)));
}

PyValue PyBuilder::broadcast(const PyValue &src, const std::vector<int64_t> &shape) {
  requireInsertionPoint();
  Value v = checkValue(src);
  auto srcType = dyn_cast<RankedTensorType>(v.getType());
  if (!srcType)
    throw py::type_error("broadcast needs a block, got " + toString(v.getType()));
  checkShape(shape);
  bool ok = srcType.getRank() == static_cast<int64_t>(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i)
    ok = srcType.getDimSize(i) == shape[i] || srcType.getDimSize(i) == 1;
  if (!ok)
    throw py::value_error("cannot broadcast " + toString(srcType) + " to shape " +
                          shapeString(shape));
  auto type = RankedTensorType::get(shape, srcType.getElementType());
  return value(finish(kd::BroadcastOp::create(builder, loc, type, v)));
}

PyValue PyBuilder::expandDims(const PyValue &src, int axis) {
  requireInsertionPoint();
  Value v = checkValue(src);
  auto srcType = dyn_cast<RankedTensorType>(v.getType());
  if (!srcType)
    throw py::type_error("expand_dims needs a block, got " + toString(v.getType()));
  if (axis < 0 || axis > srcType.getRank())
    throw py::value_error("expand_dims axis must be in [0, " +
                          std::to_string(srcType.getRank()) + "], got " +
                          std::to_string(axis));
  SmallVector<int64_t> shape(srcType.getShape());
  shape.insert(shape.begin() + axis, 1);
  auto type = RankedTensorType::get(shape, srcType.getElementType());
  return value(finish(kd::ExpandDimsOp::create(builder, loc, type, v,
                                                 static_cast<uint32_t>(axis))));
}

PyValue PyBuilder::addptr(const PyValue &ptr, const PyValue &offset) {
  requireInsertionPoint();
  Value p = checkValue(ptr), o = checkValue(offset);
  if (!isa<kd::PointerType>(getElementTypeOrSelf(p.getType())))
    throw py::type_error("addptr needs a pointer, got " + toString(p.getType()));
  if (!elementHasKind(o.getType(), Kind::Int))
    throw py::type_error("addptr needs an integer offset, got " + toString(o.getType()));
  if (!sameShape(p.getType(), o.getType()))
    throw py::value_error("addptr needs pointer and offset of the same shape, got " +
                          toString(p.getType()) + " and " + toString(o.getType()));
  return value(finish(kd::AddPtrOp::create(builder, loc, p.getType(), p, o)));
}

// The pointer casts: their verifiers (types, shapes, address spaces) are
// the checks, raised as Python errors by finish.

PyValue PyBuilder::ptrToInt(const PyValue &ptr, const PyType &type) {
  requireInsertionPoint();
  Value p = checkValue(ptr);
  return value(finish(kd::PtrToIntOp::create(builder, loc, checkType(type), p)));
}

PyValue PyBuilder::intToPtr(const PyValue &address, const PyType &type) {
  requireInsertionPoint();
  Value a = checkValue(address);
  return value(finish(kd::IntToPtrOp::create(builder, loc, checkType(type), a)));
}

PyValue PyBuilder::ptrBitcast(const PyValue &ptr, const PyType &type) {
  requireInsertionPoint();
  Value p = checkValue(ptr);
  return value(finish(kd::PtrBitcastOp::create(builder, loc, checkType(type), p)));
}

PyValue PyBuilder::load(const PyValue &ptr, std::optional<PyValue> mask,
                        std::optional<PyValue> other, const std::string &cache,
                        const std::string &evict, bool isVolatile,
                        std::optional<PyValue> tensorMap, const std::vector<PyValue> &tensorCoords) {
  requireInsertionPoint();
  Value p = checkValue(ptr);
  if (!isa<kd::PointerType>(getElementTypeOrSelf(p.getType())))
    throw py::type_error("load needs a pointer, got " + toString(p.getType()));
  Type resultType =
      kd::getTypeWithElement(p.getType(), kd::getPointeeType(p.getType()));
  Value m = mask ? checkMask(*mask, p.getType(), "load") : Value();
  Value o;
  if (other) {
    o = checkValue(*other);
    if (o.getType() != resultType)
      throw py::type_error("load 'other' must have type " + toString(resultType) +
                           ", got " + toString(o.getType()));
  }
  // A tensor map names the same block for the TMA unit (see kiln.load).
  Value map;
  SmallVector<Value> coords;
  if (tensorMap) {
    map = checkValue(*tensorMap);
    auto mapType = dyn_cast<kd::PointerType>(map.getType());
    if (!mapType || mapType.getAddressSpace() != 0)
      throw py::type_error("load's tensor map must be a !kiln.ptr<i8, 0>, got " +
                           toString(map.getType()));
    auto blockType = dyn_cast<RankedTensorType>(resultType);
    if (!blockType || size_t(blockType.getRank()) != tensorCoords.size())
      throw py::value_error("load through a tensor map needs a block and one coordinate per "
                            "dimension");
    for (const PyValue &coord : tensorCoords) {
      Value c = checkValue(coord);
      if (!c.getType().isInteger(32))
        throw py::type_error("tensor map coordinates must be i32, got " + toString(c.getType()));
      coords.push_back(c);
    }
  } else if (!tensorCoords.empty()) {
    throw py::value_error("tensor map coordinates need a tensor map");
  }
  return value(finish(kd::LoadOp::create(builder, loc, resultType, p, m, o, map, coords,
                                           cacheModifier(cache), evictionPolicy(evict),
                                           isVolatile)));
}

PyValue PyBuilder::makeTensorMap(const PyValue &base, const std::vector<PyValue> &shape,
                                 const std::vector<PyValue> &strides, bool nanPadding) {
  requireInsertionPoint();
  // The op's verifier checks the base, the operands' types and the rank.
  auto map = kd::MakeTensorMapOp::create(builder, loc, kd::PointerType::get(builder.getI8Type(), 0),
                                         checkValue(base), unwrapValues(shape), unwrapValues(strides),
                                         nanPadding);
  return value(finish(map));
}

void PyBuilder::store(const PyValue &ptr, const PyValue &val, std::optional<PyValue> mask,
                      const std::string &cache, const std::string &evict) {
  requireInsertionPoint();
  Value p = checkValue(ptr), v = checkValue(val);
  if (!isa<kd::PointerType>(getElementTypeOrSelf(p.getType())))
    throw py::type_error("store needs a pointer, got " + toString(p.getType()));
  Type expected =
      kd::getTypeWithElement(p.getType(), kd::getPointeeType(p.getType()));
  if (v.getType() != expected)
    throw py::type_error("store to " + toString(p.getType()) + " needs a value of type " +
                         toString(expected) + ", got " + toString(v.getType()));
  Value m = mask ? checkMask(*mask, p.getType(), "store") : Value();
  finish(kd::StoreOp::create(builder, loc, p, v, m, cacheModifier(cache),
                               evictionPolicy(evict)));
}

//===----------------------------------------------------------------------===//
// Atomics, hints and debugging
//===----------------------------------------------------------------------===//

PyValue PyBuilder::atomicRMW(const std::string &kind, const PyValue &ptr, const PyValue &val,
                             std::optional<PyValue> mask, const std::string &sem,
                             const std::string &scope) {
  requireInsertionPoint();
  auto rmwKind = kd::symbolizeRMWKind(kind);
  if (!rmwKind)
    throw py::value_error("unknown atomic kind '" + kind + "'");
  Value p = checkValue(ptr), v = checkValue(val);
  if (!isa<kd::PointerType>(getElementTypeOrSelf(p.getType())))
    throw py::type_error("atomic_rmw needs a pointer, got " + toString(p.getType()));
  Value m = mask ? checkMask(*mask, p.getType(), "atomic_rmw") : Value();
  return value(finish(kd::AtomicRMWOp::create(builder, loc, v.getType(), *rmwKind, p, v, m,
                                                memSemantic(sem), memSyncScope(scope))));
}

PyValue PyBuilder::atomicCAS(const PyValue &ptr, const PyValue &cmp, const PyValue &val,
                             const std::string &sem, const std::string &scope) {
  requireInsertionPoint();
  Value p = checkValue(ptr), c = checkValue(cmp), v = checkValue(val);
  if (!isa<kd::PointerType>(getElementTypeOrSelf(p.getType())))
    throw py::type_error("atomic_cas needs a pointer, got " + toString(p.getType()));
  checkSameType("atomic_cas", c, v);
  return value(finish(kd::AtomicCASOp::create(builder, loc, v.getType(), p, c, v,
                                                memSemantic(sem), memSyncScope(scope))));
}

PyValue PyBuilder::axisHint(const PyValue &src, const std::vector<int64_t> &divisibility,
                            const std::vector<int64_t> &contiguity,
                            const std::vector<int64_t> &constancy) {
  requireInsertionPoint();
  Value v = checkValue(src);
  if (!elementHasKind(v.getType(), Kind::Int))
    throw py::type_error("axis hints need an integer value, got " + toString(v.getType()));
  auto array = [&](const std::vector<int64_t> &values) -> DenseI64ArrayAttr {
    return values.empty() ? DenseI64ArrayAttr() : builder.getDenseI64ArrayAttr(values);
  };
  return value(finish(kd::AxisHintOp::create(builder, loc, v.getType(), v, array(divisibility),
                                               array(contiguity), array(constancy))));
}

void PyBuilder::debugBarrier() {
  requireInsertionPoint();
  finish(kd::DebugBarrierOp::create(builder, loc));
}

void PyBuilder::print(const std::string &prefix, const std::vector<PyValue> &args,
                      const std::vector<bool> &isSigned, bool hex) {
  requireInsertionPoint();
  SmallVector<Value> values = unwrapValues(args);
  if (values.size() != isSigned.size())
    throw py::value_error("print needs one is_signed flag per argument");
  for (Value v : values)
    if (!isKilnScalar(getElementTypeOrSelf(v.getType())))
      throw py::type_error("cannot print a value of type " + toString(v.getType()));
  SmallVector<int32_t> flags(isSigned.begin(), isSigned.end());
  finish(kd::PrintOp::create(builder, loc, values, prefix, hex, flags));
}

void PyBuilder::deviceAssert(const PyValue &cond, const std::string &message, const std::string &file,
                             int line, const std::string &function) {
  requireInsertionPoint();
  Value c = checkValue(cond);
  if (!getElementTypeOrSelf(c.getType()).isInteger(1))
    throw py::type_error("device_assert needs an i1 condition, got " + toString(c.getType()));
  finish(kd::AssertOp::create(builder, loc, c, message, file, line, function));
}

void PyBuilder::assume(const PyValue &cond) {
  requireInsertionPoint();
  Value c = checkValue(cond);
  if (!getElementTypeOrSelf(c.getType()).isInteger(1))
    throw py::type_error("assume needs an i1 condition, got " + toString(c.getType()));
  finish(kd::AssumeOp::create(builder, loc, c));
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

PyValue PyBuilder::reshape(const PyValue &src, const std::vector<int64_t> &shape) {
  requireInsertionPoint();
  RankedTensorType srcType = blockOperand(src, "reshape");
  checkShape(shape);
  auto type = RankedTensorType::get(shape, srcType.getElementType());
  return value(finish(kd::ReshapeOp::create(builder, loc, type, checkValue(src))));
}

PyValue PyBuilder::trans(const PyValue &src, const std::vector<int32_t> &order) {
  requireInsertionPoint();
  RankedTensorType srcType = blockOperand(src, "trans");
  SmallVector<int64_t> shape;
  for (int32_t d : order) {
    if (d < 0 || d >= srcType.getRank())
      throw py::value_error("trans order " + std::to_string(d) +
                            " is out of range for " + toString(srcType));
    shape.push_back(srcType.getDimSize(d));
  }
  auto type = RankedTensorType::get(shape, srcType.getElementType());
  return value(finish(kd::TransOp::create(builder, loc, type, checkValue(src), order)));
}

PyValue PyBuilder::join(const PyValue &lhs, const PyValue &rhs) {
  requireInsertionPoint();
  RankedTensorType lhsType = blockOperand(lhs, "join");
  blockOperand(rhs, "join");
  SmallVector<int64_t> shape(lhsType.getShape());
  shape.push_back(2);
  auto type = RankedTensorType::get(shape, lhsType.getElementType());
  return value(finish(kd::JoinOp::create(builder, loc, type, checkValue(lhs),
                                         checkValue(rhs))));
}

std::vector<PyValue> PyBuilder::split(const PyValue &src) {
  requireInsertionPoint();
  RankedTensorType srcType = blockOperand(src, "split");
  auto type = RankedTensorType::get(srcType.getShape().drop_back(),
                                    srcType.getElementType());
  auto op = finish(kd::SplitOp::create(builder, loc, type, type, checkValue(src)));
  return wrapValues(op->getResults(), owner);
}

PyValue PyBuilder::cat(const PyValue &lhs, const PyValue &rhs) {
  requireInsertionPoint();
  RankedTensorType lhsType = blockOperand(lhs, "cat");
  blockOperand(rhs, "cat");
  SmallVector<int64_t> shape(lhsType.getShape());
  shape[0] *= 2;
  auto type = RankedTensorType::get(shape, lhsType.getElementType());
  return value(finish(kd::CatOp::create(builder, loc, type, checkValue(lhs),
                                        checkValue(rhs))));
}

PyValue PyBuilder::flip(const PyValue &src, int axis) {
  requireInsertionPoint();
  RankedTensorType srcType = blockOperand(src, "flip");
  return value(finish(kd::FlipOp::create(builder, loc, srcType, checkValue(src),
                                         static_cast<uint32_t>(axis))));
}

PyValue PyBuilder::gather(const PyValue &src, const PyValue &index, int axis) {
  requireInsertionPoint();
  RankedTensorType srcType = blockOperand(src, "gather");
  RankedTensorType indexType = blockOperand(index, "gather");
  if (!isa<IntegerType>(indexType.getElementType()))
    throw py::type_error("gather needs an integer index, got " + toString(indexType));
  auto type = RankedTensorType::get(indexType.getShape(), srcType.getElementType());
  return value(finish(kd::GatherOp::create(builder, loc, type, checkValue(src),
                                           checkValue(index),
                                           static_cast<uint32_t>(axis))));
}

PyValue PyBuilder::histogram(const PyValue &src, std::optional<PyValue> mask,
                             int64_t numBins) {
  requireInsertionPoint();
  blockOperand(src, "histogram");
  Value maskValue;
  if (mask) {
    blockOperand(*mask, "histogram");
    maskValue = checkValue(*mask);
  }
  auto type = RankedTensorType::get({numBins}, builder.getI32Type());
  return value(finish(kd::HistogramOp::create(builder, loc, type, checkValue(src), maskValue)));
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

PyValue PyBuilder::dot(const PyValue &a, const PyValue &b, const PyValue &acc,
                       const std::string &inputPrecision, int maxNumImpreciseAcc,
                       const std::string &aFloat8, const std::string &bFloat8) {
  requireInsertionPoint();
  blockOperand(a, "dot");
  blockOperand(b, "dot");
  RankedTensorType accType = blockOperand(acc, "dot");
  std::optional<kd::InputPrecision> precision = kd::symbolizeInputPrecision(inputPrecision);
  if (!precision)
    throw py::value_error("unknown input precision '" + inputPrecision +
                          "' (expected ieee, tf32 or tf32x3)");
  kd::Float8FormatAttr aFormat, bFormat;
  if (!aFloat8.empty())
    aFormat = kd::Float8FormatAttr::get(builder.getContext(), float8Format(aFloat8));
  if (!bFloat8.empty())
    bFormat = kd::Float8FormatAttr::get(builder.getContext(), float8Format(bFloat8));
  return value(finish(kd::DotOp::create(builder, loc, accType, checkValue(a), checkValue(b),
                                        checkValue(acc), *precision, maxNumImpreciseAcc,
                                        aFormat, bFormat)));
}

PyValue PyBuilder::float8ToF32(const PyValue &bytes, const std::string &format) {
  requireInsertionPoint();
  Value v = checkValue(bytes);
  if (!getElementTypeOrSelf(v.getType()).isInteger(8))
    throw py::type_error("fp8_to_f32 decodes i8 bytes, got " + toString(v.getType()));
  return {kd::createFloat8ToF32(builder, loc, v, float8Format(format)), owner};
}

PyValue PyBuilder::f32ToFloat8(const PyValue &value, const std::string &format) {
  requireInsertionPoint();
  Value v = checkValue(value);
  if (!getElementTypeOrSelf(v.getType()).isF32())
    throw py::type_error("f32_to_fp8 rounds f32 values, got " + toString(v.getType()));
  Type bytes = kd::getTypeWithElement(v.getType(), builder.getI8Type());
  return {kd::F32ToFloat8Op::create(builder, loc, bytes, v,
                                    kd::Float8FormatAttr::get(builder.getContext(),
                                                              float8Format(format))),
          owner};
}

} // namespace kiln::python::irbinding
