//===- ir.cc - Python bindings for building kiln IR -----------------------===//
//
// kiln._C.ir: contexts, modules, types, values and a Builder that creates
// the ops a Kiln kernel is made of (kiln, arith, math, scf, func). The
// binding is deliberately thin: the Python frontend decides types and
// promotions; this file only checks what would otherwise make MLIR assert
// and turns every failure into a Python exception.
//
// The ops exposed are listed in one place each: the tables kBinaryOps,
// kUnaryOps and kCastOps for arith/math, and the Builder methods for the
// kiln, scf and func ops. Every op the Builder creates is verified at once
// (non-recursively), so a mistake surfaces as kiln._C.ir.MLIRError at the
// source location the frontend set, not at the end of compilation.
//
//===----------------------------------------------------------------------===//

#include "Diagnostics.h"
#include "IRModule.h"

#include "kiln/Analysis/WrittenArguments.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"
#include "kiln/Target/Registration.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace mlir;
using ::kiln::python::DiagnosticCapture;
using ::kiln::python::Owner;
using ::kiln::python::PyModule;
namespace kd = mlir::kiln;

namespace {

//===----------------------------------------------------------------------===//
// Handles
//===----------------------------------------------------------------------===//

using ContextRef = std::shared_ptr<MLIRContext>;

struct PyType {
  Type type;
  ContextRef context;
};

struct PyValue {
  Value value;
  Owner owner;
};

struct PyBlock {
  Block *block;
  Owner owner;
};

struct PyFunction {
  mutable func::FuncOp op;
  Owner owner;
};

struct PyInsertPoint {
  OpBuilder::InsertPoint point;
  Owner owner;
};

struct PyIfOp {
  mutable scf::IfOp op;
  Owner owner;
};

struct PyForOp {
  mutable scf::ForOp op;
  Owner owner;
};

struct PyWhileOp {
  mutable scf::WhileOp op;
  Owner owner;
};

/// A kiln.reduce or kiln.scan whose combine region is being built.
struct PyCombineOp {
  Operation *op;
  Owner owner;
};

std::string toString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

std::vector<PyValue> wrapValues(ValueRange values, const Owner &owner) {
  std::vector<PyValue> result;
  for (Value v : values)
    result.push_back({v, owner});
  return result;
}

ContextRef makeContext() {
  // Every dialect a kernel may hold at any stage is registered (with its
  // translations and inliner interfaces, which the pipelines need); the ones
  // the frontend emits are loaded now, the rest when a pass needs them.
  DialectRegistry registry;
  mlir::kiln::registerAllDialects(registry);
  auto context = std::make_shared<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  context->loadDialect<kd::KilnDialect, kd::gpu::KilnGPUDialect, arith::ArithDialect,
                       math::MathDialect, scf::SCFDialect, cf::ControlFlowDialect,
                       func::FuncDialect>();
  return context;
}

//===----------------------------------------------------------------------===//
// Type predicates shared by the checks below
//===----------------------------------------------------------------------===//

bool isKilnFloat(Type t) { return t.isF16() || t.isBF16() || t.isF32() || t.isF64(); }
bool isKilnInt(Type t) {
  auto i = dyn_cast<IntegerType>(t);
  return i && i.isSignless() &&
         llvm::is_contained({1u, 8u, 16u, 32u, 64u}, i.getWidth());
}
bool isKilnScalar(Type t) {
  return isKilnFloat(t) || isKilnInt(t) || isa<kd::PointerType>(t);
}

enum class Kind { Int, Float, Any };

bool elementHasKind(Type t, Kind kind) {
  Type e = getElementTypeOrSelf(t);
  switch (kind) {
  case Kind::Int: return isKilnInt(e);
  case Kind::Float: return isKilnFloat(e);
  case Kind::Any: return isKilnInt(e) || isKilnFloat(e);
  }
  return false;
}

const char *kindName(Kind kind) {
  switch (kind) {
  case Kind::Int: return "integer";
  case Kind::Float: return "floating-point";
  case Kind::Any: return "integer or floating-point";
  }
  return "";
}

/// Types with the same shape (both scalars, or blocks of equal shape).
bool sameShape(Type a, Type b) {
  auto ta = dyn_cast<RankedTensorType>(a), tb = dyn_cast<RankedTensorType>(b);
  if (static_cast<bool>(ta) != static_cast<bool>(tb))
    return false;
  return !ta || ta.getShape() == tb.getShape();
}

//===----------------------------------------------------------------------===//
// The arith/math op tables: the one place listing them
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Builder
//===----------------------------------------------------------------------===//

class PyBuilder {
public:
  explicit PyBuilder(ContextRef context)
      : context(std::move(context)), builder(this->context.get()),
        loc(UnknownLoc::get(this->context.get())), owner(this->context) {}

  //--- Locations and insertion points -----------------------------------//

  void setLoc(const std::string &file, unsigned line, unsigned col) {
    loc = FileLineColLoc::get(context.get(), file, line, col);
  }
  void setUnknownLoc() { loc = UnknownLoc::get(context.get()); }
  py::object getLoc() const {
    if (auto file = dyn_cast<FileLineColLoc>(loc))
      return py::make_tuple(file.getFilename().str(), file.getLine(), file.getColumn());
    return py::none();
  }

  void setInsertionPointToStart(const PyBlock &block) {
    builder.setInsertionPointToStart(block.block);
    owner = block.owner;
  }
  void setInsertionPointToEnd(const PyBlock &block) {
    builder.setInsertionPointToEnd(block.block);
    owner = block.owner;
  }
  PyInsertPoint getInsertionPoint() const { return {builder.saveInsertionPoint(), owner}; }
  void restoreInsertionPoint(const PyInsertPoint &ip) {
    builder.restoreInsertionPoint(ip.point);
    owner = ip.owner;
  }
  std::optional<PyBlock> getInsertionBlock() const {
    if (Block *block = builder.getInsertionBlock())
      return PyBlock{block, owner};
    return std::nullopt;
  }

  //--- Types --------------------------------------------------------------//

  PyType wrap(Type t) const { return {t, context}; }
  PyType intType(unsigned width) const { return wrap(builder.getIntegerType(width)); }
  PyType f16() const { return wrap(builder.getF16Type()); }
  PyType bf16() const { return wrap(builder.getBF16Type()); }
  PyType f32() const { return wrap(builder.getF32Type()); }
  PyType f64() const { return wrap(builder.getF64Type()); }

  PyType ptrType(const PyType &pointee, int addressSpace) const {
    Type t = checkType(pointee);
    if (!isKilnInt(t) && !isKilnFloat(t) && !isa<kd::PointerType>(t))
      throw py::type_error("cannot point to " + toString(t));
    if (addressSpace < 0)
      throw py::value_error("address space must be >= 0");
    return wrap(kd::PointerType::get(t, addressSpace));
  }

  PyType blockType(const PyType &element, const std::vector<int64_t> &shape) const {
    Type t = checkType(element);
    if (!isKilnScalar(t))
      throw py::type_error("a block cannot hold elements of type " + toString(t));
    checkShape(shape);
    return wrap(RankedTensorType::get(shape, t));
  }

  PyType functionType(const std::vector<PyType> &inputs,
                      const std::vector<PyType> &results) const {
    return wrap(builder.getFunctionType(unwrapTypes(inputs), unwrapTypes(results)));
  }

  //--- Functions ----------------------------------------------------------//

  PyFunction createFunction(const std::shared_ptr<PyModule> &module,
                            const std::string &name,
                            const std::vector<PyType> &argTypes,
                            const std::vector<PyType> &resultTypes, bool isPublic) {
    if (module->context != context)
      throw py::value_error("the module belongs to another context");
    if (name.empty())
      throw py::value_error("function name must not be empty");
    if (SymbolTable::lookupSymbolIn(module->get(), name))
      throw py::value_error("the module already has a symbol named '" + name + "'");
    OpBuilder moduleBuilder(context.get());
    moduleBuilder.setInsertionPointToEnd(module->get().getBody());
    auto type = builder.getFunctionType(unwrapTypes(argTypes), unwrapTypes(resultTypes));
    auto fn = func::FuncOp::create(moduleBuilder, loc, name, type);
    fn.setVisibility(isPublic ? SymbolTable::Visibility::Public
                              : SymbolTable::Visibility::Private);
    return {fn, module};
  }

  void createReturn(const std::vector<PyValue> &values) {
    requireInsertionPoint();
    func::ReturnOp::create(builder, loc, unwrapValues(values));
  }

  std::vector<PyValue> createCall(const PyFunction &callee,
                                  const std::vector<PyValue> &args) {
    requireInsertionPoint();
    FunctionType type = callee.op.getFunctionType();
    SmallVector<Value> operands = unwrapValues(args);
    if (operands.size() != type.getNumInputs())
      throw py::value_error("'" + callee.op.getName().str() + "' takes " +
                            std::to_string(type.getNumInputs()) + " arguments, got " +
                            std::to_string(operands.size()));
    for (auto [i, v] : llvm::enumerate(operands))
      if (v.getType() != type.getInput(i))
        throw py::type_error("argument " + std::to_string(i) + " of '" +
                             callee.op.getName().str() + "' expects " +
                             toString(type.getInput(i)) + ", got " +
                             toString(v.getType()));
    auto call = finish(func::CallOp::create(builder, loc, callee.op, operands));
    return wrapValues(call.getResults(), owner);
  }

  //--- Constants ----------------------------------------------------------//

  PyValue intConst(const py::int_ &value, const PyType &type) {
    requireInsertionPoint();
    Type t = checkType(type);
    auto intType = dyn_cast<IntegerType>(getElementTypeOrSelf(t));
    if (!intType || !isKilnInt(intType))
      throw py::type_error("int_const needs an integer type, got " + toString(t));
    unsigned width = intType.getWidth();
    // Accept any value representable as a signed or an unsigned number of
    // this width; the constant keeps its two's complement bits.
    int overflow = 0;
    long long signedValue = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    uint64_t bits;
    bool fits;
    if (overflow == 0) {
      bits = static_cast<uint64_t>(signedValue);
      fits = width == 64 ||
             (signedValue >= -(1LL << (width - 1)) &&
              signedValue < (1LL << width));
      if (width == 1)
        fits = signedValue == 0 || signedValue == 1 || signedValue == -1;
    } else {
      PyErr_Clear();
      unsigned long long unsignedValue = PyLong_AsUnsignedLongLong(value.ptr());
      if (PyErr_Occurred()) {
        PyErr_Clear();
        fits = false;
        bits = 0;
      } else {
        bits = unsignedValue;
        fits = width == 64;
      }
    }
    if (!fits)
      throw py::value_error("integer constant " + py::str(value).cast<std::string>() +
                            " does not fit in " + toString(intType));
    APInt apValue(width, bits, /*isSigned=*/false, /*implicitTrunc=*/true);
    TypedAttr attr = IntegerAttr::get(intType, apValue);
    if (auto tensor = dyn_cast<RankedTensorType>(t))
      attr = DenseElementsAttr::get(tensor, apValue);
    return constant(attr);
  }

  PyValue floatConst(double value, const PyType &type) {
    requireInsertionPoint();
    Type t = checkType(type);
    Type element = getElementTypeOrSelf(t);
    if (!isKilnFloat(element))
      throw py::type_error("float_const needs a floating-point type, got " + toString(t));
    auto scalar = FloatAttr::get(element, value);
    TypedAttr attr = scalar;
    if (auto tensor = dyn_cast<RankedTensorType>(t))
      attr = DenseElementsAttr::get(tensor, ArrayRef<Attribute>{scalar});
    return constant(attr);
  }

  //--- kiln ops -----------------------------------------------------------//

  PyValue programId(int axis) {
    requireInsertionPoint();
    checkAxis(axis, "program_id");
    return value(finish(kd::ProgramIdOp::create(builder, loc, axis)));
  }

  PyValue numPrograms(int axis) {
    requireInsertionPoint();
    checkAxis(axis, "num_programs");
    return value(finish(kd::NumProgramsOp::create(builder, loc, axis)));
  }

  PyValue makeRange(int64_t start, int64_t end) {
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

  PyValue splat(const PyValue &src, const std::vector<int64_t> &shape) {
    requireInsertionPoint();
    Value v = checkValue(src);
    if (!isKilnScalar(v.getType()))
      throw py::type_error("splat needs a scalar, got " + toString(v.getType()));
    checkShape(shape);
    auto type = RankedTensorType::get(shape, v.getType());
    return value(finish(kd::SplatOp::create(builder, loc, type, v)));
  }

  PyValue broadcast(const PyValue &src, const std::vector<int64_t> &shape) {
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

  PyValue expandDims(const PyValue &src, int axis) {
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

  PyValue addptr(const PyValue &ptr, const PyValue &offset) {
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

  PyValue load(const PyValue &ptr, std::optional<PyValue> mask,
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

  void store(const PyValue &ptr, const PyValue &val, std::optional<PyValue> mask,
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

  //--- arith and math -----------------------------------------------------//

  PyValue binary(const std::string &name, const PyValue &lhs, const PyValue &rhs) {
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

  PyValue unary(const std::string &name, const PyValue &operand) {
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

  PyValue cmpi(const std::string &predicate, const PyValue &lhs, const PyValue &rhs) {
    requireInsertionPoint();
    auto pred = arith::symbolizeCmpIPredicate(predicate);
    if (!pred)
      throw py::value_error("unknown cmpi predicate '" + predicate + "'");
    Value a = checkValue(lhs), b = checkValue(rhs);
    checkSameType("cmpi", a, b);
    checkKind("cmpi", a, Kind::Int);
    return value(finish(arith::CmpIOp::create(builder, loc, *pred, a, b)));
  }

  PyValue cmpf(const std::string &predicate, const PyValue &lhs, const PyValue &rhs) {
    requireInsertionPoint();
    auto pred = arith::symbolizeCmpFPredicate(predicate);
    if (!pred)
      throw py::value_error("unknown cmpf predicate '" + predicate + "'");
    Value a = checkValue(lhs), b = checkValue(rhs);
    checkSameType("cmpf", a, b);
    checkKind("cmpf", a, Kind::Float);
    return value(finish(arith::CmpFOp::create(builder, loc, *pred, a, b)));
  }

  PyValue select(const PyValue &cond, const PyValue &lhs, const PyValue &rhs) {
    requireInsertionPoint();
    Value c = checkValue(cond), a = checkValue(lhs), b = checkValue(rhs);
    checkSameType("select", a, b);
    if (!getElementTypeOrSelf(c.getType()).isInteger(1) ||
        (isa<RankedTensorType>(c.getType()) && !sameShape(c.getType(), a.getType())))
      throw py::type_error("select condition must be i1 or a block of i1 shaped like " +
                           toString(a.getType()) + ", got " + toString(c.getType()));
    return value(finish(arith::SelectOp::create(builder, loc, c, a, b)));
  }

  PyValue cast(const std::string &name, const PyValue &operand, const PyType &to) {
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

  //--- element-wise math beyond the tables -------------------------------//

  PyValue fma(const PyValue &x, const PyValue &y, const PyValue &z) {
    requireInsertionPoint();
    Value a = checkValue(x), b = checkValue(y), c = checkValue(z);
    checkSameType("fma", a, b);
    checkSameType("fma", a, c);
    checkKind("fma", a, Kind::Float);
    return value(finish(math::FmaOp::create(builder, loc, a, b, c)));
  }

  /// kiln.extern_elementwise: `symbol` applied to each element of `args`
  /// (all of one shape), giving `resultType`.
  PyValue externElementwise(const std::string &symbol, const std::vector<PyValue> &args,
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

  /// kiln.elementwise_inline_asm: `text` run on `args` (broadcast to one
  /// shape, or scalars), `pack` elements per run, giving `resultTypes`.
  std::vector<PyValue> elementwiseInlineAsm(const std::string &text,
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

  //--- scf ----------------------------------------------------------------//

  PyIfOp createIf(const PyValue &cond, const std::vector<PyType> &resultTypes,
                  bool withElse) {
    requireInsertionPoint();
    Value c = checkValue(cond);
    if (!c.getType().isInteger(1))
      throw py::type_error("an if condition must be a scalar i1, got " +
                           toString(c.getType()));
    if (!resultTypes.empty() && !withElse)
      throw py::value_error("an if with results needs an else block");
    auto op = scf::IfOp::create(builder, loc, unwrapTypes(resultTypes), c,
                                /*addThenBlock=*/true, /*addElseBlock=*/withElse);
    // Python always ends the blocks itself with create_yield.
    dropTerminator(op.thenBlock());
    if (withElse)
      dropTerminator(op.elseBlock());
    return {op, owner};
  }

  /// Re-creates `old` (which has no results yet) with `resultTypes`, moving
  /// its blocks over. The frontend learns which variables an if defines only
  /// after generating both branches, and an op's results cannot change.
  PyIfOp setIfResults(PyIfOp &old, const std::vector<PyType> &resultTypes) {
    if (!old.op)
      throw py::value_error("this if op was already replaced");
    if (old.op->getNumResults() != 0)
      throw py::value_error("set_if_results needs an if without results");
    SmallVector<Type> types = unwrapTypes(resultTypes);
    if (!types.empty() && old.op.getElseRegion().empty())
      throw py::value_error("an if with results needs an else block");
    OpBuilder b(context.get());
    b.setInsertionPoint(old.op);
    auto op = scf::IfOp::create(b, old.op.getLoc(), types, old.op.getCondition(),
                                /*addThenBlock=*/false, /*addElseBlock=*/false);
    op.getThenRegion().takeBody(old.op.getThenRegion());
    op.getElseRegion().takeBody(old.op.getElseRegion());
    old.op->erase();
    old.op = nullptr;
    return {op, old.owner};
  }

  PyForOp createFor(const PyValue &lb, const PyValue &ub, const PyValue &step,
                    const std::vector<PyValue> &inits) {
    requireInsertionPoint();
    Value l = checkValue(lb), u = checkValue(ub), s = checkValue(step);
    if (!isKilnInt(l.getType()) || l.getType() != u.getType() || l.getType() != s.getType())
      throw py::type_error("for bounds and step must be scalar integers of one type, got " +
                           toString(l.getType()) + ", " + toString(u.getType()) + ", " +
                           toString(s.getType()));
    auto op = scf::ForOp::create(builder, loc, l, u, s, unwrapValues(inits));
    dropTerminator(op.getBody());
    return {op, owner};
  }

  PyWhileOp createWhile(const std::vector<PyValue> &inits) {
    requireInsertionPoint();
    SmallVector<Value> values = unwrapValues(inits);
    SmallVector<Type> types;
    for (Value v : values)
      types.push_back(v.getType());
    auto op = scf::WhileOp::create(builder, loc, types, values);
    SmallVector<Location> locs(types.size(), loc);
    builder.createBlock(&op.getBefore(), {}, types, locs);
    builder.createBlock(&op.getAfter(), {}, types, locs);
    builder.setInsertionPointAfter(op);
    return {op, owner};
  }

  void createYield(const std::vector<PyValue> &values) {
    requireInsertionPoint();
    scf::YieldOp::create(builder, loc, unwrapValues(values));
  }

  /// kiln.reduce over `axis` of `srcs`, with an empty combine block taking
  /// (accumulated..., new...) scalars; the caller fills it and ends it with
  /// createCombineReturn. The builder is left after the op.
  PyCombineOp createReduce(const std::vector<PyValue> &srcs, int axis) {
    requireInsertionPoint();
    SmallVector<Value> values = combineOperands(srcs, axis);
    SmallVector<Type> resultTypes;
    for (Value v : values) {
      auto type = llvm::cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape.erase(shape.begin() + axis);
      resultTypes.push_back(shape.empty() ? type.getElementType()
                                          : Type(RankedTensorType::get(shape, type.getElementType())));
    }
    auto op = kd::ReduceOp::create(builder, loc, resultTypes, values, axis);
    addCombineBlock(op.getCombineOp(), values);
    builder.setInsertionPointAfter(op);
    return {op.getOperation(), owner};
  }

  /// kiln.scan over `axis` of `srcs`; see createReduce.
  PyCombineOp createScan(const std::vector<PyValue> &srcs, int axis, bool reverse) {
    requireInsertionPoint();
    SmallVector<Value> values = combineOperands(srcs, axis);
    SmallVector<Type> resultTypes;
    for (Value v : values)
      resultTypes.push_back(v.getType());
    auto op = kd::ScanOp::create(builder, loc, resultTypes, values, axis, reverse);
    addCombineBlock(op.getCombineOp(), values);
    builder.setInsertionPointAfter(op);
    return {op.getOperation(), owner};
  }

  /// Ends the combine block the builder is in, then verifies the whole
  /// reduce or scan (now that its region is complete).
  void createCombineReturn(const std::vector<PyValue> &values) {
    requireInsertionPoint();
    Operation *parent = builder.getInsertionBlock()->getParentOp();
    SmallVector<Value> results = unwrapValues(values);
    if (isa_and_present<kd::ReduceOp>(parent))
      kd::ReduceReturnOp::create(builder, loc, results);
    else if (isa_and_present<kd::ScanOp>(parent))
      kd::ScanReturnOp::create(builder, loc, results);
    else
      throw py::value_error("the builder is not in the combine block of a reduce or scan");
    DiagnosticCapture capture(context.get());
    if (failed(mlir::verify(parent)))
      capture.raise("building '" + parent->getName().getStringRef().str() + "'");
  }

  void createCondition(const PyValue &cond, const std::vector<PyValue> &values) {
    requireInsertionPoint();
    Value c = checkValue(cond);
    if (!c.getType().isInteger(1))
      throw py::type_error("a while condition must be a scalar i1, got " +
                           toString(c.getType()));
    scf::ConditionOp::create(builder, loc, c, unwrapValues(values));
  }

  //--- atomics, hints and debugging -------------------------------------//

  PyValue atomicRMW(const std::string &kind, const PyValue &ptr, const PyValue &val,
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

  PyValue atomicCAS(const PyValue &ptr, const PyValue &cmp, const PyValue &val,
                    const std::string &sem, const std::string &scope) {
    requireInsertionPoint();
    Value p = checkValue(ptr), c = checkValue(cmp), v = checkValue(val);
    if (!isa<kd::PointerType>(getElementTypeOrSelf(p.getType())))
      throw py::type_error("atomic_cas needs a pointer, got " + toString(p.getType()));
    checkSameType("atomic_cas", c, v);
    return value(finish(kd::AtomicCASOp::create(builder, loc, v.getType(), p, c, v,
                                                  memSemantic(sem), memSyncScope(scope))));
  }

  PyValue axisHint(const PyValue &src, const std::vector<int64_t> &divisibility,
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

  void debugBarrier() {
    requireInsertionPoint();
    finish(kd::DebugBarrierOp::create(builder, loc));
  }

  void print(const std::string &prefix, const std::vector<PyValue> &args,
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

  void deviceAssert(const PyValue &cond, const std::string &message, const std::string &file,
                    int line, const std::string &function) {
    requireInsertionPoint();
    Value c = checkValue(cond);
    if (!getElementTypeOrSelf(c.getType()).isInteger(1))
      throw py::type_error("device_assert needs an i1 condition, got " + toString(c.getType()));
    finish(kd::AssertOp::create(builder, loc, c, message, file, line, function));
  }

  void assume(const PyValue &cond) {
    requireInsertionPoint();
    Value c = checkValue(cond);
    if (!getElementTypeOrSelf(c.getType()).isInteger(1))
      throw py::type_error("assume needs an i1 condition, got " + toString(c.getType()));
    finish(kd::AssumeOp::create(builder, loc, c));
  }

  //--- shape ops ----------------------------------------------------------//
  // Result types follow from the operands; the op verifiers check the rest.

  PyValue reshape(const PyValue &src, const std::vector<int64_t> &shape) {
    requireInsertionPoint();
    RankedTensorType srcType = blockOperand(src, "reshape");
    checkShape(shape);
    auto type = RankedTensorType::get(shape, srcType.getElementType());
    return value(finish(kd::ReshapeOp::create(builder, loc, type, checkValue(src))));
  }

  PyValue trans(const PyValue &src, const std::vector<int32_t> &order) {
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

  PyValue join(const PyValue &lhs, const PyValue &rhs) {
    requireInsertionPoint();
    RankedTensorType lhsType = blockOperand(lhs, "join");
    blockOperand(rhs, "join");
    SmallVector<int64_t> shape(lhsType.getShape());
    shape.push_back(2);
    auto type = RankedTensorType::get(shape, lhsType.getElementType());
    return value(finish(kd::JoinOp::create(builder, loc, type, checkValue(lhs),
                                           checkValue(rhs))));
  }

  std::vector<PyValue> split(const PyValue &src) {
    requireInsertionPoint();
    RankedTensorType srcType = blockOperand(src, "split");
    auto type = RankedTensorType::get(srcType.getShape().drop_back(),
                                      srcType.getElementType());
    auto op = finish(kd::SplitOp::create(builder, loc, type, type, checkValue(src)));
    return wrapValues(op->getResults(), owner);
  }

  PyValue cat(const PyValue &lhs, const PyValue &rhs) {
    requireInsertionPoint();
    RankedTensorType lhsType = blockOperand(lhs, "cat");
    blockOperand(rhs, "cat");
    SmallVector<int64_t> shape(lhsType.getShape());
    shape[0] *= 2;
    auto type = RankedTensorType::get(shape, lhsType.getElementType());
    return value(finish(kd::CatOp::create(builder, loc, type, checkValue(lhs),
                                          checkValue(rhs))));
  }

  PyValue flip(const PyValue &src, int axis) {
    requireInsertionPoint();
    RankedTensorType srcType = blockOperand(src, "flip");
    return value(finish(kd::FlipOp::create(builder, loc, srcType, checkValue(src),
                                           static_cast<uint32_t>(axis))));
  }

  PyValue gather(const PyValue &src, const PyValue &index, int axis) {
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

  //--- matrix products -----------------------------------------------------//

  /// `a_fp8` and `b_fp8`, both empty or both set, name the 8-bit float
  /// formats ("e4m3", "e5m2") of i8 operands.
  PyValue dot(const PyValue &a, const PyValue &b, const PyValue &acc,
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

  /// Decodes i8 bytes holding 8-bit floats of `format` into f32, exactly.
  PyValue float8ToF32(const PyValue &bytes, const std::string &format) {
    requireInsertionPoint();
    Value v = checkValue(bytes);
    if (!getElementTypeOrSelf(v.getType()).isInteger(8))
      throw py::type_error("fp8_to_f32 decodes i8 bytes, got " + toString(v.getType()));
    return {kd::createFloat8ToF32(builder, loc, v, float8Format(format)), owner};
  }

private:
  static kd::Float8Format float8Format(const std::string &name) {
    std::optional<kd::Float8Format> format = kd::symbolizeFloat8Format(name);
    if (!format)
      throw py::value_error("unknown 8-bit float format '" + name + "' (expected e4m3 or e5m2)");
    return *format;
  }

  ContextRef context;
  mutable OpBuilder builder;
  Location loc;
  Owner owner;

  SmallVector<Value> combineOperands(const std::vector<PyValue> &srcs, int axis) {
    SmallVector<Value> values = unwrapValues(srcs);
    if (values.empty())
      throw py::value_error("a reduce or scan needs at least one block");
    for (Value v : values) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type)
        throw py::type_error("a reduce or scan takes blocks, got " + toString(v.getType()));
      if (axis < 0 || axis >= type.getRank())
        throw py::value_error("axis " + std::to_string(axis) + " is out of range for a block of rank " +
                              std::to_string(type.getRank()));
    }
    return values;
  }

  void addCombineBlock(Region &region, ValueRange srcs) {
    SmallVector<Type> types;
    for (int twice = 0; twice < 2; ++twice)
      for (Value v : srcs)
        types.push_back(getElementTypeOrSelf(v.getType()));
    SmallVector<Location> locs(types.size(), loc);
    builder.createBlock(&region, {}, types, locs);
  }

  RankedTensorType blockOperand(const PyValue &v, const char *what) const {
    auto type = dyn_cast<RankedTensorType>(checkValue(v).getType());
    if (!type)
      throw py::type_error(std::string(what) + " needs a block, got " +
                           toString(checkValue(v).getType()));
    return type;
  }

  void requireInsertionPoint() const {
    if (!builder.getInsertionBlock())
      throw py::value_error("the builder has no insertion point; set one first");
  }

  Type checkType(const PyType &t) const {
    if (!t.type)
      throw py::value_error("null type");
    if (t.type.getContext() != context.get())
      throw py::value_error("the type belongs to another context");
    return t.type;
  }

  Value checkValue(const PyValue &v) const {
    if (!v.value)
      throw py::value_error("null value");
    if (v.value.getContext() != context.get())
      throw py::value_error("the value belongs to another context");
    return v.value;
  }

  SmallVector<Type> unwrapTypes(const std::vector<PyType> &types) const {
    SmallVector<Type> result;
    for (const PyType &t : types)
      result.push_back(checkType(t));
    return result;
  }

  SmallVector<Value> unwrapValues(const std::vector<PyValue> &values) const {
    SmallVector<Value> result;
    for (const PyValue &v : values)
      result.push_back(checkValue(v));
    return result;
  }

  static std::string shapeString(ArrayRef<int64_t> shape) {
    std::string text = "[";
    for (auto [i, d] : llvm::enumerate(shape))
      text += (i ? ", " : "") + std::to_string(d);
    return text + "]";
  }

  static void checkShape(const std::vector<int64_t> &shape) {
    if (shape.empty())
      throw py::value_error("a block shape needs at least one dimension");
    for (int64_t d : shape)
      if (d <= 0)
        throw py::value_error("block dimensions must be positive, got " + shapeString(shape));
  }

  static void checkAxis(int axis, const char *op) {
    if (axis < 0 || axis > 2)
      throw py::value_error(std::string(op) + " axis must be 0, 1 or 2, got " +
                            std::to_string(axis));
  }

  static void checkSameType(const std::string &op, Value a, Value b) {
    if (a.getType() != b.getType())
      throw py::type_error(op + " needs operands of one type, got " + toString(a.getType()) +
                           " and " + toString(b.getType()));
  }

  static void checkKind(const std::string &op, Value v, Kind kind) {
    if (!elementHasKind(v.getType(), kind))
      throw py::type_error(op + " needs " + kindName(kind) + " operands, got " +
                           toString(v.getType()));
  }

  Value checkMask(const PyValue &mask, Type ptrType, const char *op) const {
    Value m = checkValue(mask);
    if (m.getType() != kd::getI1SameShape(ptrType))
      throw py::type_error(std::string(op) + " mask must have type " +
                           toString(kd::getI1SameShape(ptrType)) + ", got " +
                           toString(m.getType()));
    return m;
  }

  static kd::CacheModifier cacheModifier(const std::string &name) {
    if (name.empty())
      return kd::CacheModifier::none;
    if (auto c = kd::symbolizeCacheModifier(name))
      return *c;
    throw py::value_error("unknown cache modifier '" + name +
                          "'; expected one of none, ca, cg, cs, wb, wt, cv");
  }

  static kd::EvictionPolicy evictionPolicy(const std::string &name) {
    if (name.empty())
      return kd::EvictionPolicy::normal;
    if (auto e = kd::symbolizeEvictionPolicy(name))
      return *e;
    throw py::value_error("unknown eviction policy '" + name +
                          "'; expected one of normal, evict_first, evict_last");
  }

  static kd::MemSemantic memSemantic(const std::string &name) {
    if (auto s = kd::symbolizeMemSemantic(name))
      return *s;
    throw py::value_error("unknown memory semantic '" + name +
                          "'; expected one of relaxed, acquire, release, acq_rel");
  }

  static kd::MemSyncScope memSyncScope(const std::string &name) {
    if (auto s = kd::symbolizeMemSyncScope(name))
      return *s;
    throw py::value_error("unknown memory scope '" + name + "'; expected one of gpu, cta, sys");
  }

  static void dropTerminator(Block *block) {
    if (!block->empty() && block->back().hasTrait<OpTrait::IsTerminator>())
      block->back().erase();
  }

  PyValue constant(TypedAttr attr) {
    return value(finish(arith::ConstantOp::create(builder, loc, attr)));
  }

  template <typename OpT>
  PyValue value(OpT op) {
    return {op->getResult(0), owner};
  }

  /// Verifies a freshly created op (not its regions); on failure erases it
  /// and raises MLIRError with the verifier's located messages.
  template <typename OpT>
  OpT finish(OpT op) {
    Operation *operation = op;
    DiagnosticCapture capture(context.get());
    if (failed(mlir::verify(operation, /*verifyRecursively=*/false))) {
      std::string name = operation->getName().getStringRef().str();
      operation->erase();
      capture.raise("building '" + name + "'");
    }
    return op;
  }
};

//===----------------------------------------------------------------------===//
// Module helpers
//===----------------------------------------------------------------------===//

std::shared_ptr<PyModule> createModule(const ContextRef &context) {
  auto module = std::make_shared<PyModule>();
  module->context = context;
  module->module = ModuleOp::create(UnknownLoc::get(context.get()));
  return module;
}

std::shared_ptr<PyModule> parseModule(const ContextRef &context, const std::string &text) {
  DiagnosticCapture capture(context.get());
  auto parsed = parseSourceString<ModuleOp>(text, ParserConfig(context.get()));
  if (!parsed)
    capture.raise("parsing");
  auto module = std::make_shared<PyModule>();
  module->context = context;
  module->module = std::move(parsed);
  return module;
}

std::string printModule(const PyModule &module, bool debugInfo) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.enableDebugInfo(debugInfo, /*prettyForm=*/false);
  // Arguments named after their parameters print as %name, not %argN.
  flags.printNameLocAsPrefix(true);
  module.get()->print(os, flags);
  return text;
}

void verifyModule(const PyModule &module) {
  DiagnosticCapture capture(module.context.get());
  if (failed(mlir::verify(module.get())))
    capture.raise("verification");
}

std::optional<PyFunction> getFunction(const std::shared_ptr<PyModule> &module,
                                      const std::string &name) {
  if (auto fn = module->get().lookupSymbol<func::FuncOp>(name))
    return PyFunction{fn, module};
  return std::nullopt;
}

void checkLive(const PyIfOp &o) {
  if (!o.op)
    throw py::value_error("this if op was replaced by set_if_results");
}

PyBlock entryBlock(const PyFunction &fn) {
  if (fn.op.getBody().empty())
    throw py::value_error("function '" + fn.op.getName().str() + "' has no body yet");
  return {&fn.op.getBody().front(), fn.owner};
}

} // namespace

void initIR(py::module_ &m) {
  ::kiln::python::registerMLIRError(m);

  py::class_<MLIRContext, ContextRef>(m, "Context",
                                      "An MLIR context with Kiln's dialects loaded")
      .def(py::init(&makeContext));

  py::class_<PyType>(m, "Type", "An MLIR type (scalar, !kiln.ptr or block)")
      .def("__str__", [](const PyType &t) { return toString(t.type); })
      .def("__repr__", [](const PyType &t) { return "ir.Type(" + toString(t.type) + ")"; })
      .def("__eq__", [](const PyType &a, const PyType &b) { return a.type == b.type; })
      .def("__hash__", [](const PyType &t) {
        return std::hash<const void *>()(t.type.getAsOpaquePointer());
      })
      .def("is_block", [](const PyType &t) { return isa<RankedTensorType>(t.type); })
      .def_property_readonly("shape", [](const PyType &t) {
        if (auto tensor = dyn_cast<RankedTensorType>(t.type))
          return std::vector<int64_t>(tensor.getShape().begin(), tensor.getShape().end());
        return std::vector<int64_t>();
      })
      .def_property_readonly("element_type", [](const PyType &t) {
        return PyType{getElementTypeOrSelf(t.type), t.context};
      })
      .def("is_ptr", [](const PyType &t) { return isa<kd::PointerType>(t.type); })
      .def_property_readonly("pointee", [](const PyType &t) {
        auto ptr = dyn_cast<kd::PointerType>(t.type);
        if (!ptr)
          throw py::type_error(toString(t.type) + " is not a pointer");
        return PyType{ptr.getPointeeType(), t.context};
      })
      .def_property_readonly("address_space", [](const PyType &t) {
        auto ptr = dyn_cast<kd::PointerType>(t.type);
        if (!ptr)
          throw py::type_error(toString(t.type) + " is not a pointer");
        return ptr.getAddressSpace();
      })
      .def("is_int", [](const PyType &t) { return isKilnInt(t.type); })
      .def("int_width", [](const PyType &t) {
        if (!isa<IntegerType>(t.type))
          throw py::type_error(toString(t.type) + " is not an integer type");
        return t.type.getIntOrFloatBitWidth();
      })
      .def("is_float", [](const PyType &t) { return isKilnFloat(t.type); })
      .def("is_function", [](const PyType &t) { return isa<FunctionType>(t.type); });

  py::class_<PyValue>(m, "Value", "An SSA value")
      .def_property_readonly("type", [](const PyValue &v) {
        return PyType{v.value.getType(),
                      // Types only need the context; find it from the value.
                      std::shared_ptr<MLIRContext>(v.owner, v.value.getContext())};
      })
      .def("__eq__", [](const PyValue &a, const PyValue &b) { return a.value == b.value; })
      .def("__hash__", [](const PyValue &v) {
        return std::hash<const void *>()(v.value.getAsOpaquePointer());
      })
      .def("__str__", [](const PyValue &v) {
        std::string text;
        llvm::raw_string_ostream os(text);
        v.value.print(os);
        return text;
      });

  py::class_<PyBlock>(m, "Block", "A block of operations")
      .def_property_readonly("args", [](const PyBlock &b) {
        return wrapValues(b.block->getArguments(), b.owner);
      })
      .def("arg", [](const PyBlock &b, unsigned i) {
        if (i >= b.block->getNumArguments())
          throw py::index_error("block has " + std::to_string(b.block->getNumArguments()) +
                                " arguments");
        return PyValue{b.block->getArgument(i), b.owner};
      })
      .def_property_readonly("num_args", [](const PyBlock &b) { return b.block->getNumArguments(); })
      .def("has_terminator", [](const PyBlock &b) {
        return !b.block->empty() && b.block->back().hasTrait<OpTrait::IsTerminator>();
      })
      .def("__eq__", [](const PyBlock &a, const PyBlock &b) { return a.block == b.block; });

  py::class_<PyInsertPoint>(m, "InsertPoint", "A saved builder position");

  py::class_<PyFunction>(m, "Function", "A func.func operation")
      .def_property_readonly("name", [](const PyFunction &f) { return f.op.getName().str(); })
      .def_property_readonly("type", [](const PyFunction &f) {
        return PyType{f.op.getFunctionType(),
                      std::shared_ptr<MLIRContext>(f.owner, f.op.getContext())};
      })
      .def_property_readonly("num_args", [](const PyFunction &f) { return f.op.getNumArguments(); })
      .def("add_entry_block", [](const PyFunction &f) {
        if (!f.op.getBody().empty())
          throw py::value_error("function '" + f.op.getName().str() + "' already has a body");
        return PyBlock{f.op.addEntryBlock(), f.owner};
      })
      .def_property_readonly("entry_block", &entryBlock)
      .def("arg", [](const PyFunction &f, unsigned i) {
        PyBlock block = entryBlock(f);
        if (i >= block.block->getNumArguments())
          throw py::index_error("function has " + std::to_string(block.block->getNumArguments()) +
                                " arguments");
        return PyValue{block.block->getArgument(i), f.owner};
      })
      .def("set_arg_attr", [](const PyFunction &f, unsigned i, const std::string &name, int64_t value) {
        if (i >= f.op.getNumArguments())
          throw py::index_error("function has " + std::to_string(f.op.getNumArguments()) +
                                " arguments");
        Builder b(f.op.getContext());
        f.op.setArgAttr(i, name, b.getI32IntegerAttr(static_cast<int32_t>(value)));
      }, py::arg("index"), py::arg("name"), py::arg("value"),
         "Sets an i32 attribute on argument `index` (e.g. kiln.divisibility)")
      .def("set_arg_name", [](const PyFunction &f, unsigned i, const std::string &name) {
        if (f.op.getBody().empty() || i >= f.op.getNumArguments())
          throw py::index_error("function has no entry block argument " + std::to_string(i));
        BlockArgument arg = f.op.getArgument(i);
        // Printed as the argument's SSA name (see printModule); the source
        // position stays inside the NameLoc for diagnostics.
        arg.setLoc(NameLoc::get(StringAttr::get(f.op.getContext(), name), arg.getLoc()));
      }, py::arg("index"), py::arg("name"),
         "Names entry block argument `index` after a source parameter (a NameLoc)")
      .def("set_unit_attr", [](const PyFunction &f, const std::string &name) {
        f.op->setAttr(name, UnitAttr::get(f.op.getContext()));
      })
      .def("set_result_types", [](const PyFunction &f, const std::vector<PyType> &results) {
        SmallVector<Type> types;
        for (const PyType &t : results) {
          if (t.type.getContext() != f.op.getContext())
            throw py::value_error("the type belongs to another context");
          types.push_back(t.type);
        }
        f.op.setType(FunctionType::get(f.op.getContext(), f.op.getArgumentTypes(), types));
      }, "Sets the result types once the body (and its returns) is known");

  py::class_<PyIfOp>(m, "IfOp", "An scf.if operation")
      .def_property_readonly("then_block", [](const PyIfOp &o) {
        checkLive(o);
        return PyBlock{o.op.thenBlock(), o.owner};
      })
      .def_property_readonly("else_block", [](const PyIfOp &o) -> std::optional<PyBlock> {
        checkLive(o);
        if (o.op.getElseRegion().empty())
          return std::nullopt;
        return PyBlock{o.op.elseBlock(), o.owner};
      })
      .def_property_readonly("results", [](const PyIfOp &o) {
        checkLive(o);
        return wrapValues(o.op.getResults(), o.owner);
      });

  py::class_<PyForOp>(m, "ForOp", "An scf.for operation")
      .def_property_readonly("body", [](const PyForOp &o) { return PyBlock{o.op.getBody(), o.owner}; })
      .def_property_readonly("induction_var", [](const PyForOp &o) {
        return PyValue{o.op.getInductionVar(), o.owner};
      })
      .def_property_readonly("iter_args", [](const PyForOp &o) {
        return wrapValues(o.op.getRegionIterArgs(), o.owner);
      })
      .def_property_readonly("results", [](const PyForOp &o) {
        return wrapValues(o.op.getResults(), o.owner);
      })
      .def("set_num_stages", [](const PyForOp &o, int64_t stages) {
        Builder b(o.op.getContext());
        o.op->setAttr("kiln.num_stages", b.getI32IntegerAttr(static_cast<int32_t>(stages)));
      }, py::arg("stages"), "The loop's own software-pipelining depth (kl.range's num_stages)");

  py::class_<PyWhileOp>(m, "WhileOp", "An scf.while operation")
      .def_property_readonly("before", [](const PyWhileOp &o) {
        return PyBlock{&o.op.getBefore().front(), o.owner};
      })
      .def_property_readonly("after", [](const PyWhileOp &o) {
        return PyBlock{&o.op.getAfter().front(), o.owner};
      })
      .def_property_readonly("results", [](const PyWhileOp &o) {
        return wrapValues(o.op.getResults(), o.owner);
      });

  py::class_<PyCombineOp>(m, "CombineOp", "A kiln.reduce or kiln.scan")
      .def_property_readonly("block", [](const PyCombineOp &o) {
        return PyBlock{&o.op->getRegion(0).front(), o.owner};
      })
      .def_property_readonly("results", [](const PyCombineOp &o) {
        return wrapValues(o.op->getResults(), o.owner);
      });

  py::class_<PyModule, std::shared_ptr<PyModule>>(m, "Module", "A builtin.module")
      .def_static("create", &createModule, py::arg("context"))
      .def_static("parse", &parseModule, py::arg("context"), py::arg("text"))
      .def("str", &printModule, py::arg("debug_info") = false)
      .def("__str__", [](const PyModule &mod) { return printModule(mod, false); })
      .def("verify", &verifyModule)
      .def("int_attr", [](const PyModule &mod, const std::string &name) -> std::optional<int64_t> {
        auto attr = mod.get()->getAttrOfType<IntegerAttr>(name);
        if (!attr)
          return std::nullopt;
        return attr.getInt();
      }, py::arg("name"), "The module's integer attribute `name`, or None")
      .def("dict_array_attr", [](const PyModule &mod, const std::string &name) -> py::object {
        // A table the lowering leaves for the runtime (checked mode's
        // access sites): a list of dicts of strings, bools and integers.
        auto array = mod.get()->getAttrOfType<ArrayAttr>(name);
        if (!array)
          return py::none();
        py::list result;
        for (Attribute entry : array) {
          py::dict row;
          if (auto dict = dyn_cast<DictionaryAttr>(entry)) {
            for (NamedAttribute field : dict) {
              py::str key(field.getName().str());
              Attribute value = field.getValue();
              if (auto text = dyn_cast<StringAttr>(value))
                row[key] = py::str(text.str());
              else if (auto flag = dyn_cast<BoolAttr>(value))
                row[key] = py::bool_(flag.getValue());
              else if (auto number = dyn_cast<IntegerAttr>(value))
                row[key] = py::int_(number.getInt());
            }
          }
          result.append(row);
        }
        return result;
      }, py::arg("name"),
         "The module's array-of-dictionaries attribute `name` as a list of dicts, or None")
      .def("kernel_arg_arrays", [](const PyModule &mod, const std::string &name) {
        // By argument index: the integer-array attribute `name` of the
        // kernel's arguments that have one.
        py::dict result;
        mod.get()->walk([&](FunctionOpInterface function) {
          if (!function->hasAttr("kiln.kernel"))
            return;
          for (unsigned i = 0; i < function.getNumArguments(); ++i)
            if (auto attr = function.getArgAttrOfType<DenseI64ArrayAttr>(i, name))
              result[py::int_(i)] = py::cast(std::vector<int64_t>(attr.asArrayRef()));
        });
        return result;
      }, py::arg("name"),
         "The kernel's arguments' integer-array attributes `name`, by argument index")
      .def("written_kernel_arguments", [](const PyModule &mod) {
        std::vector<unsigned> result;
        mod.get()->walk([&](FunctionOpInterface function) {
          if (function->hasAttr("kiln.kernel")) {
            auto indices = mlir::kiln::writtenKernelArguments(mod.get(), function);
            result.assign(indices.begin(), indices.end());
          }
        });
        return result;
      }, "The indices of the kernel's arguments it may write through (stores, atomics)")
      .def("get_function", &getFunction, py::arg("name"))
      .def_property_readonly("context", [](const PyModule &mod) { return mod.context; });

  py::class_<PyBuilder>(m, "Builder", "Creates ops at an insertion point and location")
      .def(py::init<ContextRef>(), py::arg("context"))
      .def("set_loc", &PyBuilder::setLoc, py::arg("filename"), py::arg("line"), py::arg("col"))
      .def("set_unknown_loc", &PyBuilder::setUnknownLoc)
      .def("get_loc", &PyBuilder::getLoc)
      .def("set_insertion_point_to_start", &PyBuilder::setInsertionPointToStart)
      .def("set_insertion_point_to_end", &PyBuilder::setInsertionPointToEnd)
      .def("get_insertion_point", &PyBuilder::getInsertionPoint)
      .def("restore_insertion_point", &PyBuilder::restoreInsertionPoint)
      .def("get_insertion_block", &PyBuilder::getInsertionBlock)
      // Types.
      .def("i1_type", [](const PyBuilder &b) { return b.intType(1); })
      .def("i8_type", [](const PyBuilder &b) { return b.intType(8); })
      .def("i16_type", [](const PyBuilder &b) { return b.intType(16); })
      .def("i32_type", [](const PyBuilder &b) { return b.intType(32); })
      .def("i64_type", [](const PyBuilder &b) { return b.intType(64); })
      .def("f16_type", &PyBuilder::f16)
      .def("bf16_type", &PyBuilder::bf16)
      .def("f32_type", &PyBuilder::f32)
      .def("f64_type", &PyBuilder::f64)
      .def("ptr_type", &PyBuilder::ptrType, py::arg("pointee"), py::arg("addr_space") = 1)
      .def("block_type", &PyBuilder::blockType, py::arg("element"), py::arg("shape"))
      .def("function_type", &PyBuilder::functionType, py::arg("inputs"), py::arg("results"))
      // func.
      .def("create_function", &PyBuilder::createFunction, py::arg("module"), py::arg("name"),
           py::arg("arg_types"), py::arg("result_types"), py::arg("public"))
      .def("create_return", &PyBuilder::createReturn, py::arg("values"))
      .def("create_call", &PyBuilder::createCall, py::arg("function"), py::arg("args"))
      // Constants.
      .def("int_const", &PyBuilder::intConst, py::arg("value"), py::arg("type"))
      .def("float_const", &PyBuilder::floatConst, py::arg("value"), py::arg("type"))
      // kiln.
      .def("program_id", &PyBuilder::programId, py::arg("axis"))
      .def("num_programs", &PyBuilder::numPrograms, py::arg("axis"))
      .def("make_range", &PyBuilder::makeRange, py::arg("start"), py::arg("end"))
      .def("splat", &PyBuilder::splat, py::arg("value"), py::arg("shape"))
      .def("broadcast", &PyBuilder::broadcast, py::arg("value"), py::arg("shape"))
      .def("expand_dims", &PyBuilder::expandDims, py::arg("value"), py::arg("axis"))
      .def("addptr", &PyBuilder::addptr, py::arg("ptr"), py::arg("offset"))
      .def("load", &PyBuilder::load, py::arg("ptr"), py::arg("mask"), py::arg("other"),
           py::arg("cache") = "", py::arg("evict") = "", py::arg("is_volatile") = false,
           py::arg("tensor_map") = std::nullopt,
           py::arg("tensor_coords") = std::vector<PyValue>{})
      .def("store", &PyBuilder::store, py::arg("ptr"), py::arg("value"), py::arg("mask"),
           py::arg("cache") = "", py::arg("evict") = "")
      // Atomics, hints and debugging.
      .def("atomic_rmw", &PyBuilder::atomicRMW, py::arg("kind"), py::arg("ptr"), py::arg("val"),
           py::arg("mask"), py::arg("sem") = "acq_rel", py::arg("scope") = "gpu")
      .def("atomic_cas", &PyBuilder::atomicCAS, py::arg("ptr"), py::arg("cmp"), py::arg("val"),
           py::arg("sem") = "acq_rel", py::arg("scope") = "gpu")
      .def("axis_hint", &PyBuilder::axisHint, py::arg("value"), py::arg("divisibility"),
           py::arg("contiguity"), py::arg("constancy"))
      .def("debug_barrier", &PyBuilder::debugBarrier)
      .def("assume", &PyBuilder::assume, py::arg("cond"))
      .def("print", &PyBuilder::print, py::arg("prefix"), py::arg("args"), py::arg("is_signed"),
           py::arg("hex"))
      .def("device_assert", &PyBuilder::deviceAssert, py::arg("cond"), py::arg("message"),
           py::arg("file"), py::arg("line"), py::arg("function"))
      // arith and math, by name.
      .def("binary", &PyBuilder::binary, py::arg("name"), py::arg("lhs"), py::arg("rhs"))
      .def("unary", &PyBuilder::unary, py::arg("name"), py::arg("operand"))
      .def("cmpi", &PyBuilder::cmpi, py::arg("predicate"), py::arg("lhs"), py::arg("rhs"))
      .def("cmpf", &PyBuilder::cmpf, py::arg("predicate"), py::arg("lhs"), py::arg("rhs"))
      .def("select", &PyBuilder::select, py::arg("cond"), py::arg("lhs"), py::arg("rhs"))
      .def("cast", &PyBuilder::cast, py::arg("name"), py::arg("value"), py::arg("type"))
      .def("fma", &PyBuilder::fma, py::arg("x"), py::arg("y"), py::arg("z"))
      .def("extern_elementwise", &PyBuilder::externElementwise, py::arg("symbol"),
           py::arg("args"), py::arg("result_type"))
      .def("elementwise_inline_asm", &PyBuilder::elementwiseInlineAsm, py::arg("asm"),
           py::arg("constraints"), py::arg("pure"), py::arg("pack"), py::arg("args"),
           py::arg("result_types"))
      // scf.
      .def("create_if", &PyBuilder::createIf, py::arg("cond"), py::arg("result_types"),
           py::arg("with_else"))
      .def("create_for", &PyBuilder::createFor, py::arg("lb"), py::arg("ub"), py::arg("step"),
           py::arg("init_values"))
      .def("create_while", &PyBuilder::createWhile, py::arg("init_values"))
      .def("set_if_results", &PyBuilder::setIfResults, py::arg("if_op"), py::arg("result_types"))
      .def("create_yield", &PyBuilder::createYield, py::arg("values"))
      .def("create_condition", &PyBuilder::createCondition, py::arg("cond"), py::arg("values"))
      .def("create_reduce", &PyBuilder::createReduce, py::arg("srcs"), py::arg("axis"))
      .def("create_scan", &PyBuilder::createScan, py::arg("srcs"), py::arg("axis"), py::arg("reverse"))
      .def("create_combine_return", &PyBuilder::createCombineReturn, py::arg("values"))
      // Shape ops.
      .def("reshape", &PyBuilder::reshape, py::arg("value"), py::arg("shape"))
      .def("trans", &PyBuilder::trans, py::arg("value"), py::arg("order"))
      .def("join", &PyBuilder::join, py::arg("lhs"), py::arg("rhs"))
      .def("split", &PyBuilder::split, py::arg("value"))
      .def("cat", &PyBuilder::cat, py::arg("lhs"), py::arg("rhs"))
      .def("flip", &PyBuilder::flip, py::arg("value"), py::arg("axis"))
      .def("gather", &PyBuilder::gather, py::arg("src"), py::arg("index"), py::arg("axis"))
      // Matrix products.
      .def("dot", &PyBuilder::dot, py::arg("a"), py::arg("b"), py::arg("acc"),
           py::arg("input_precision"), py::arg("max_num_imprecise_acc"), py::arg("a_fp8") = "",
           py::arg("b_fp8") = "")
      .def("fp8_to_f32", &PyBuilder::float8ToF32, py::arg("bytes"), py::arg("format"));

  m.attr("BINARY_OPS") = py::cast(namesOf(kBinaryOps));
  m.attr("UNARY_OPS") = py::cast(namesOf(kUnaryOps));
  m.attr("CAST_OPS") = py::cast(namesOf(kCastOps));
}
