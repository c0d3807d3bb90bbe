//===- IRBuilderArith.cc - The Builder's arith and math ops ---------------===//
//
// The arith/math op tables (the one place listing them: kBinaryOps,
// kUnaryOps, kCastOps) and the Builder methods that create ops from them,
// plus the element-wise ops beyond the tables.
//
//===----------------------------------------------------------------------===//

#include "IRBinding.h"

namespace kiln::python::irbinding {

namespace {

using BinaryBuild = Value (*)(OpBuilder &, Location, Value, Value);
using UnaryBuild = Value (*)(OpBuilder &, Location, Value);
using CastBuild = Value (*)(OpBuilder &, Location, Type, Value);

template <typename OpT>
Value buildBinary(OpBuilder &b, Location loc, Value x, Value y) {
  return OpT::create(b, loc, x, y).getResult();
}
template <typename OpT>
Value buildUnary(OpBuilder &b, Location loc, Value x) {
  return OpT::create(b, loc, x).getResult();
}
template <typename OpT>
Value buildCast(OpBuilder &b, Location loc, Type to, Value x) {
  return OpT::create(b, loc, to, x).getResult();
}

/// The high half of the full-width unsigned product (Triton's umulhi).
Value buildUnsignedMulHigh(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MulUIExtendedOp::create(b, loc, x, y).getHigh();
}

struct BinaryOpInfo {
  const char *name;
  Kind kind;
  BinaryBuild build;
};
const BinaryOpInfo kBinaryOps[] = {
    {"addi", Kind::Int, buildBinary<arith::AddIOp>},
    {"subi", Kind::Int, buildBinary<arith::SubIOp>},
    {"muli", Kind::Int, buildBinary<arith::MulIOp>},
    {"divsi", Kind::Int, buildBinary<arith::DivSIOp>},
    {"divui", Kind::Int, buildBinary<arith::DivUIOp>},
    {"remsi", Kind::Int, buildBinary<arith::RemSIOp>},
    {"remui", Kind::Int, buildBinary<arith::RemUIOp>},
    {"andi", Kind::Int, buildBinary<arith::AndIOp>},
    {"ori", Kind::Int, buildBinary<arith::OrIOp>},
    {"xori", Kind::Int, buildBinary<arith::XOrIOp>},
    {"shli", Kind::Int, buildBinary<arith::ShLIOp>},
    {"shrsi", Kind::Int, buildBinary<arith::ShRSIOp>},
    {"shrui", Kind::Int, buildBinary<arith::ShRUIOp>},
    {"maxsi", Kind::Int, buildBinary<arith::MaxSIOp>},
    {"minsi", Kind::Int, buildBinary<arith::MinSIOp>},
    {"maxui", Kind::Int, buildBinary<arith::MaxUIOp>},
    {"minui", Kind::Int, buildBinary<arith::MinUIOp>},
    {"addf", Kind::Float, buildBinary<arith::AddFOp>},
    {"subf", Kind::Float, buildBinary<arith::SubFOp>},
    {"mulf", Kind::Float, buildBinary<arith::MulFOp>},
    {"divf", Kind::Float, buildBinary<arith::DivFOp>},
    {"remf", Kind::Float, buildBinary<arith::RemFOp>},
    {"maxnumf", Kind::Float, buildBinary<arith::MaxNumFOp>},
    {"minnumf", Kind::Float, buildBinary<arith::MinNumFOp>},
    {"maximumf", Kind::Float, buildBinary<arith::MaximumFOp>},
    {"minimumf", Kind::Float, buildBinary<arith::MinimumFOp>},
    {"powf", Kind::Float, buildBinary<math::PowFOp>},
    {"umulhi", Kind::Int, buildUnsignedMulHigh},
};

struct UnaryOpInfo {
  const char *name;
  Kind kind;
  UnaryBuild build;
};
const UnaryOpInfo kUnaryOps[] = {
    {"negf", Kind::Float, buildUnary<arith::NegFOp>},
    {"exp", Kind::Float, buildUnary<math::ExpOp>},
    {"exp2", Kind::Float, buildUnary<math::Exp2Op>},
    {"log", Kind::Float, buildUnary<math::LogOp>},
    {"log2", Kind::Float, buildUnary<math::Log2Op>},
    {"sqrt", Kind::Float, buildUnary<math::SqrtOp>},
    {"rsqrt", Kind::Float, buildUnary<math::RsqrtOp>},
    {"sin", Kind::Float, buildUnary<math::SinOp>},
    {"cos", Kind::Float, buildUnary<math::CosOp>},
    {"tanh", Kind::Float, buildUnary<math::TanhOp>},
    {"erf", Kind::Float, buildUnary<math::ErfOp>},
    {"floor", Kind::Float, buildUnary<math::FloorOp>},
    {"ceil", Kind::Float, buildUnary<math::CeilOp>},
    {"absf", Kind::Float, buildUnary<math::AbsFOp>},
    {"absi", Kind::Int, buildUnary<math::AbsIOp>},
};

enum class Width { Wider, Narrower, Same, Any };

struct CastOpInfo {
  const char *name;
  Kind from, to;
  Width width;
  CastBuild build;
};
const CastOpInfo kCastOps[] = {
    {"extf", Kind::Float, Kind::Float, Width::Wider, buildCast<arith::ExtFOp>},
    {"truncf", Kind::Float, Kind::Float, Width::Narrower, buildCast<arith::TruncFOp>},
    {"extsi", Kind::Int, Kind::Int, Width::Wider, buildCast<arith::ExtSIOp>},
    {"extui", Kind::Int, Kind::Int, Width::Wider, buildCast<arith::ExtUIOp>},
    {"trunci", Kind::Int, Kind::Int, Width::Narrower, buildCast<arith::TruncIOp>},
    {"sitofp", Kind::Int, Kind::Float, Width::Any, buildCast<arith::SIToFPOp>},
    {"uitofp", Kind::Int, Kind::Float, Width::Any, buildCast<arith::UIToFPOp>},
    {"fptosi", Kind::Float, Kind::Int, Width::Any, buildCast<arith::FPToSIOp>},
    {"fptoui", Kind::Float, Kind::Int, Width::Any, buildCast<arith::FPToUIOp>},
    {"bitcast", Kind::Any, Kind::Any, Width::Same, buildCast<arith::BitcastOp>},
};

template <typename Entry, size_t N>
const Entry *lookup(const Entry (&table)[N], const std::string &name) {
  for (const Entry &entry : table)
    if (name == entry.name)
      return &entry;
  return nullptr;
}

template <typename Table>
std::string namesOf(const Table &table) {
  std::string names;
  for (const auto &entry : table)
    names += (names.empty() ? "" : ", ") + std::string(entry.name);
  return names;
}

} // namespace

std::string binaryOpNames() { return namesOf(kBinaryOps); }
std::string unaryOpNames() { return namesOf(kUnaryOps); }
std::string castOpNames() { return namesOf(kCastOps); }

//===----------------------------------------------------------------------===//
// Arith and math
//===----------------------------------------------------------------------===//

PyValue PyBuilder::binary(const std::string &name, const PyValue &lhs, const PyValue &rhs) {
  requireInsertionPoint();
  const auto *info = lookup(kBinaryOps, name);
  if (!info)
    throw py::value_error("unknown binary op '" + name + "'; known: " + namesOf(kBinaryOps));
  Value a = checkValue(lhs), b = checkValue(rhs);
  checkSameType(name, a, b);
  checkKind(name, a, info->kind);
  Value result = info->build(builder, loc, a, b);
  finish(result.getDefiningOp());
  return {result, owner};
}

PyValue PyBuilder::unary(const std::string &name, const PyValue &operand) {
  requireInsertionPoint();
  const auto *info = lookup(kUnaryOps, name);
  if (!info)
    throw py::value_error("unknown unary op '" + name + "'; known: " + namesOf(kUnaryOps));
  Value a = checkValue(operand);
  checkKind(name, a, info->kind);
  Value result = info->build(builder, loc, a);
  finish(result.getDefiningOp());
  return {result, owner};
}

PyValue PyBuilder::cmpi(const std::string &predicate, const PyValue &lhs, const PyValue &rhs) {
  requireInsertionPoint();
  auto pred = arith::symbolizeCmpIPredicate(predicate);
  if (!pred)
    throw py::value_error("unknown cmpi predicate '" + predicate + "'");
  Value a = checkValue(lhs), b = checkValue(rhs);
  checkSameType("cmpi", a, b);
  checkKind("cmpi", a, Kind::Int);
  return value(finish(arith::CmpIOp::create(builder, loc, *pred, a, b)));
}

PyValue PyBuilder::cmpf(const std::string &predicate, const PyValue &lhs, const PyValue &rhs) {
  requireInsertionPoint();
  auto pred = arith::symbolizeCmpFPredicate(predicate);
  if (!pred)
    throw py::value_error("unknown cmpf predicate '" + predicate + "'");
  Value a = checkValue(lhs), b = checkValue(rhs);
  checkSameType("cmpf", a, b);
  checkKind("cmpf", a, Kind::Float);
  return value(finish(arith::CmpFOp::create(builder, loc, *pred, a, b)));
}

PyValue PyBuilder::select(const PyValue &cond, const PyValue &lhs, const PyValue &rhs) {
  requireInsertionPoint();
  Value c = checkValue(cond), a = checkValue(lhs), b = checkValue(rhs);
  checkSameType("select", a, b);
  if (!getElementTypeOrSelf(c.getType()).isInteger(1) ||
      (isa<RankedTensorType>(c.getType()) && !sameShape(c.getType(), a.getType())))
    throw py::type_error("select condition must be i1 or a block of i1 shaped like " +
                         toString(a.getType()) + ", got " + toString(c.getType()));
  return value(finish(arith::SelectOp::create(builder, loc, c, a, b)));
}

PyValue PyBuilder::cast(const std::string &name, const PyValue &operand, const PyType &to) {
  requireInsertionPoint();
  const auto *info = lookup(kCastOps, name);
  if (!info)
    throw py::value_error("unknown cast '" + name + "'; known: " + namesOf(kCastOps));
  Value v = checkValue(operand);
  Type dst = checkType(to);
  if (!sameShape(v.getType(), dst))
    throw py::value_error(name + " cannot change the shape: " + toString(v.getType()) +
                          " to " + toString(dst));
  if (!elementHasKind(v.getType(), info->from) || !elementHasKind(dst, info->to))
    throw py::type_error(name + " casts " + kindName(info->from) + " to " +
                         kindName(info->to) + " values, got " + toString(v.getType()) +
                         " to " + toString(dst));
  unsigned from = getElementTypeOrSelf(v.getType()).getIntOrFloatBitWidth();
  unsigned toWidth = getElementTypeOrSelf(dst).getIntOrFloatBitWidth();
  bool widthOk = info->width == Width::Any ||
                 (info->width == Width::Wider && toWidth > from) ||
                 (info->width == Width::Narrower && toWidth < from) ||
                 (info->width == Width::Same && toWidth == from);
  if (!widthOk)
    throw py::type_error(name + " cannot cast " + toString(v.getType()) + " to " +
                         toString(dst) + " (bit widths " + std::to_string(from) +
                         " and " + std::to_string(toWidth) + ")");
  Value result = info->build(builder, loc, dst, v);
  finish(result.getDefiningOp());
  return {result, owner};
}

//===----------------------------------------------------------------------===//
// Element-wise math beyond the tables
//===----------------------------------------------------------------------===//

PyValue PyBuilder::fma(const PyValue &x, const PyValue &y, const PyValue &z) {
  requireInsertionPoint();
  Value a = checkValue(x), b = checkValue(y), c = checkValue(z);
  checkSameType("fma", a, b);
  checkSameType("fma", a, c);
  checkKind("fma", a, Kind::Float);
  return value(finish(math::FmaOp::create(builder, loc, a, b, c)));
}

PyValue PyBuilder::externElementwise(const std::string &symbol, const std::vector<PyValue> &args,
                                     const PyType &resultType) {
  requireInsertionPoint();
  SmallVector<Value> operands;
  for (const PyValue &arg : args)
    operands.push_back(checkValue(arg));
  Type result = checkType(resultType);
  for (Value operand : operands)
    if (!sameShape(operand.getType(), result))
      throw py::value_error("extern_elementwise '" + symbol + "' needs operands shaped like " +
                            toString(result) + ", got " + toString(operand.getType()));
  return value(finish(kd::ExternElementwiseOp::create(builder, loc, result,
                                                      builder.getStringAttr(symbol),
                                                      operands)));
}

std::vector<PyValue> PyBuilder::elementwiseInlineAsm(const std::string &text,
                                                     const std::string &constraints, bool pure,
                                                     int32_t pack, const std::vector<PyValue> &args,
                                                     const std::vector<PyType> &resultTypes) {
  requireInsertionPoint();
  SmallVector<Value> operands = unwrapValues(args);
  SmallVector<Type> results;
  for (const PyType &type : resultTypes)
    results.push_back(checkType(type));
  auto op = finish(kd::ElementwiseInlineAsmOp::create(
      builder, loc, results, builder.getStringAttr(text), builder.getStringAttr(constraints),
      builder.getBoolAttr(pure), builder.getI32IntegerAttr(pack), operands));
  return wrapValues(op->getResults(), owner);
}

} // namespace kiln::python::irbinding
