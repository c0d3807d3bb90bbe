//===- IRBuilder.cc - The Builder's state, types, functions and checks ----===//
//
// kiln._C.ir.Builder: locations and insertion points, types, func.func
// creation and calls, constants, and the checks every op method runs on
// its arguments before MLIR sees them.
//
//===----------------------------------------------------------------------===//

#include "IRBinding.h"

namespace kiln::python::irbinding {

//===----------------------------------------------------------------------===//
// Locations and insertion points
//===----------------------------------------------------------------------===//

void PyBuilder::setLoc(const std::string &file, unsigned line, unsigned col) {
  loc = FileLineColLoc::get(context.get(), file, line, col);
}

py::object PyBuilder::getLoc() const {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return py::make_tuple(file.getFilename().str(), file.getLine(), file.getColumn());
  return py::none();
}

void PyBuilder::setInsertionPointToStart(const PyBlock &block) {
  builder.setInsertionPointToStart(block.block);
  owner = block.owner;
}

void PyBuilder::setInsertionPointToEnd(const PyBlock &block) {
  builder.setInsertionPointToEnd(block.block);
  owner = block.owner;
}

void PyBuilder::restoreInsertionPoint(const PyInsertPoint &ip) {
  builder.restoreInsertionPoint(ip.point);
  owner = ip.owner;
}

std::optional<PyBlock> PyBuilder::getInsertionBlock() const {
  if (Block *block = builder.getInsertionBlock())
    return PyBlock{block, owner};
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

PyType PyBuilder::ptrType(const PyType &pointee, int addressSpace) const {
  Type t = checkType(pointee);
  if (!isKilnInt(t) && !isKilnFloat(t) && !isa<kd::PointerType>(t))
    throw py::type_error("cannot point to " + toString(t));
  if (addressSpace < 0)
    throw py::value_error("address space must be >= 0");
  return wrap(kd::PointerType::get(t, addressSpace));
}

PyType PyBuilder::blockType(const PyType &element, const std::vector<int64_t> &shape) const {
  Type t = checkType(element);
  if (!isKilnScalar(t))
    throw py::type_error("a block cannot hold elements of type " + toString(t));
  checkShape(shape);
  return wrap(RankedTensorType::get(shape, t));
}

PyType PyBuilder::functionType(const std::vector<PyType> &inputs,
                               const std::vector<PyType> &results) const {
  return wrap(builder.getFunctionType(unwrapTypes(inputs), unwrapTypes(results)));
}

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

PyFunction PyBuilder::createFunction(const std::shared_ptr<PyModule> &module,
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

void PyBuilder::createReturn(const std::vector<PyValue> &values) {
  requireInsertionPoint();
  func::ReturnOp::create(builder, loc, unwrapValues(values));
}

std::vector<PyValue> PyBuilder::createCall(const PyFunction &callee,
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

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

PyValue PyBuilder::intConst(const py::int_ &value, const PyType &type) {
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

PyValue PyBuilder::floatConst(double value, const PyType &type) {
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

//===----------------------------------------------------------------------===//
// Checks and helpers
//===----------------------------------------------------------------------===//

kd::Float8Format PyBuilder::float8Format(const std::string &name) {
  std::optional<kd::Float8Format> format = kd::symbolizeFloat8Format(name);
  if (!format)
    throw py::value_error("unknown 8-bit float format '" + name + "' (expected e4m3 or e5m2)");
  return *format;
}

SmallVector<Value> PyBuilder::combineOperands(const std::vector<PyValue> &srcs, int axis) {
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

void PyBuilder::addCombineBlock(Region &region, ValueRange srcs) {
  SmallVector<Type> types;
  for (int twice = 0; twice < 2; ++twice)
    for (Value v : srcs)
      types.push_back(getElementTypeOrSelf(v.getType()));
  SmallVector<Location> locs(types.size(), loc);
  builder.createBlock(&region, {}, types, locs);
}

RankedTensorType PyBuilder::blockOperand(const PyValue &v, const char *what) const {
  auto type = dyn_cast<RankedTensorType>(checkValue(v).getType());
  if (!type)
    throw py::type_error(std::string(what) + " needs a block, got " +
                         toString(checkValue(v).getType()));
  return type;
}

void PyBuilder::requireInsertionPoint() const {
  if (!builder.getInsertionBlock())
    throw py::value_error("the builder has no insertion point; set one first");
}

Type PyBuilder::checkType(const PyType &t) const {
  if (!t.type)
    throw py::value_error("null type");
  if (t.type.getContext() != context.get())
    throw py::value_error("the type belongs to another context");
  return t.type;
}

Value PyBuilder::checkValue(const PyValue &v) const {
  if (!v.value)
    throw py::value_error("null value");
  if (v.value.getContext() != context.get())
    throw py::value_error("the value belongs to another context");
  return v.value;
}

SmallVector<Type> PyBuilder::unwrapTypes(const std::vector<PyType> &types) const {
  SmallVector<Type> result;
  for (const PyType &t : types)
    result.push_back(checkType(t));
  return result;
}

SmallVector<Value> PyBuilder::unwrapValues(const std::vector<PyValue> &values) const {
  SmallVector<Value> result;
  for (const PyValue &v : values)
    result.push_back(checkValue(v));
  return result;
}

std::string PyBuilder::shapeString(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    text += (i ? ", " : "") + std::to_string(d);
  return text + "]";
}

void PyBuilder::checkShape(const std::vector<int64_t> &shape) {
  if (shape.empty())
    throw py::value_error("a block shape needs at least one dimension");
  for (int64_t d : shape)
    if (d <= 0)
      throw py::value_error("block dimensions must be positive, got " + shapeString(shape));
}

void PyBuilder::checkAxis(int axis, const char *op) {
  if (axis < 0 || axis > 2)
    throw py::value_error(std::string(op) + " axis must be 0, 1 or 2, got " +
                          std::to_string(axis));
}

void PyBuilder::checkSameType(const std::string &op, Value a, Value b) {
  if (a.getType() != b.getType())
    throw py::type_error(op + " needs operands of one type, got " + toString(a.getType()) +
                         " and " + toString(b.getType()));
}

void PyBuilder::checkKind(const std::string &op, Value v, Kind kind) {
  if (!elementHasKind(v.getType(), kind))
    throw py::type_error(op + " needs " + kindName(kind) + " operands, got " +
                         toString(v.getType()));
}

Value PyBuilder::checkMask(const PyValue &mask, Type ptrType, const char *op) const {
  Value m = checkValue(mask);
  if (m.getType() != kd::getI1SameShape(ptrType))
    throw py::type_error(std::string(op) + " mask must have type " +
                         toString(kd::getI1SameShape(ptrType)) + ", got " +
                         toString(m.getType()));
  return m;
}

kd::CacheModifier PyBuilder::cacheModifier(const std::string &name) {
  if (name.empty())
    return kd::CacheModifier::none;
  if (auto c = kd::symbolizeCacheModifier(name))
    return *c;
  throw py::value_error("unknown cache modifier '" + name +
                        "'; expected one of none, ca, cg, cs, wb, wt, cv");
}

kd::EvictionPolicy PyBuilder::evictionPolicy(const std::string &name) {
  if (name.empty())
    return kd::EvictionPolicy::normal;
  if (auto e = kd::symbolizeEvictionPolicy(name))
    return *e;
  throw py::value_error("unknown eviction policy '" + name +
                        "'; expected one of normal, evict_first, evict_last");
}

kd::MemSemantic PyBuilder::memSemantic(const std::string &name) {
  if (auto s = kd::symbolizeMemSemantic(name))
    return *s;
  throw py::value_error("unknown memory semantic '" + name +
                        "'; expected one of relaxed, acquire, release, acq_rel");
}

kd::MemSyncScope PyBuilder::memSyncScope(const std::string &name) {
  if (auto s = kd::symbolizeMemSyncScope(name))
    return *s;
  throw py::value_error("unknown memory scope '" + name + "'; expected one of gpu, cta, sys");
}

void PyBuilder::dropTerminator(Block *block) {
  if (!block->empty() && block->back().hasTrait<OpTrait::IsTerminator>())
    block->back().erase();
}

PyValue PyBuilder::constant(TypedAttr attr) {
  return value(finish(arith::ConstantOp::create(builder, loc, attr)));
}

} // namespace kiln::python::irbinding
