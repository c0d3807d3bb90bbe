//===- IRBuilderControlFlow.cc - The Builder's ops with regions -----------===//
//
// kiln._C.ir.Builder methods creating scf.if, scf.for and scf.while, their
// terminators, and kiln.reduce / kiln.scan with their combine regions.
//
//===----------------------------------------------------------------------===//

#include "IRBinding.h"

namespace kiln::python::irbinding {

//===----------------------------------------------------------------------===//
// Scf
//===----------------------------------------------------------------------===//

PyIfOp PyBuilder::createIf(const PyValue &cond, const std::vector<PyType> &resultTypes,
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

PyIfOp PyBuilder::setIfResults(PyIfOp &old, const std::vector<PyType> &resultTypes) {
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

PyForOp PyBuilder::createFor(const PyValue &lb, const PyValue &ub, const PyValue &step,
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

PyWhileOp PyBuilder::createWhile(const std::vector<PyValue> &inits) {
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

void PyBuilder::createYield(const std::vector<PyValue> &values) {
  requireInsertionPoint();
  scf::YieldOp::create(builder, loc, unwrapValues(values));
}

PyCombineOp PyBuilder::createReduce(const std::vector<PyValue> &srcs, int axis) {
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

PyCombineOp PyBuilder::createScan(const std::vector<PyValue> &srcs, int axis, bool reverse) {
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

void PyBuilder::createCombineReturn(const std::vector<PyValue> &values) {
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

void PyBuilder::createCondition(const PyValue &cond, const std::vector<PyValue> &values) {
  requireInsertionPoint();
  Value c = checkValue(cond);
  if (!c.getType().isInteger(1))
    throw py::type_error("a while condition must be a scalar i1, got " +
                         toString(c.getType()));
  scf::ConditionOp::create(builder, loc, c, unwrapValues(values));
}

} // namespace kiln::python::irbinding
