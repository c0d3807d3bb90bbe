//===- IRHandles.cc - kiln._C.ir handles and type predicates --------------===//
//
// The helpers of kiln._C.ir's handle structs (printing types, wrapping values,
// making contexts) and the type predicates the Builder's checks share.
//
//===----------------------------------------------------------------------===//

#include "IRBinding.h"

namespace kiln::python::irbinding {

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
// Type predicates shared by the checks
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

bool sameShape(Type a, Type b) {
  auto ta = dyn_cast<RankedTensorType>(a), tb = dyn_cast<RankedTensorType>(b);
  if (static_cast<bool>(ta) != static_cast<bool>(tb))
    return false;
  return !ta || ta.getShape() == tb.getShape();
}

} // namespace kiln::python::irbinding
