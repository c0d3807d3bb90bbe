//===- IRBinding.h - The pieces of kiln._C.ir ------------------ -*- C++ -*-===//
//
// Private to the ir*.cc binding files: the handle structs that kiln._C.ir's
// objects wrap, the type predicates the checks share, and the Builder class
// whose methods are defined by topic in IRBuilder*.cc. ir.cc registers them
// with pybind11.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PYTHON_IRBINDING_H
#define KILN_PYTHON_IRBINDING_H

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

namespace kiln::python::irbinding {

namespace py = pybind11;
using namespace mlir;
namespace kd = mlir::kiln;

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

std::string toString(Type type);
std::vector<PyValue> wrapValues(ValueRange values, const Owner &owner);
ContextRef makeContext();

//===----------------------------------------------------------------------===//
// Type predicates shared by the checks
//===----------------------------------------------------------------------===//

bool isKilnFloat(Type t);
bool isKilnInt(Type t);
bool isKilnScalar(Type t);

enum class Kind { Int, Float, Any };

bool elementHasKind(Type t, Kind kind);
const char *kindName(Kind kind);

/// Types with the same shape (both scalars, or blocks of equal shape).
bool sameShape(Type a, Type b);

/// The names in the arith/math op tables (IRBuilderArith.cc), comma-separated.
std::string binaryOpNames();
std::string unaryOpNames();
std::string castOpNames();

//===----------------------------------------------------------------------===//
// Builder
//===----------------------------------------------------------------------===//

class PyBuilder {
public:
  explicit PyBuilder(ContextRef context)
      : context(std::move(context)), builder(this->context.get()),
        loc(UnknownLoc::get(this->context.get())), owner(this->context) {}

  //--- Locations and insertion points -----------------------------------//

  void setLoc(const std::string &file, unsigned line, unsigned col);
  void setUnknownLoc() { loc = UnknownLoc::get(context.get()); }
  py::object getLoc() const;
  void setInsertionPointToStart(const PyBlock &block);
  void setInsertionPointToEnd(const PyBlock &block);
  PyInsertPoint getInsertionPoint() const { return {builder.saveInsertionPoint(), owner}; }
  void restoreInsertionPoint(const PyInsertPoint &ip);
  std::optional<PyBlock> getInsertionBlock() const;

  //--- Types --------------------------------------------------------------//

  PyType wrap(Type t) const { return {t, context}; }
  PyType intType(unsigned width) const { return wrap(builder.getIntegerType(width)); }
  PyType f16() const { return wrap(builder.getF16Type()); }
  PyType bf16() const { return wrap(builder.getBF16Type()); }
  PyType f32() const { return wrap(builder.getF32Type()); }
  PyType f64() const { return wrap(builder.getF64Type()); }

  PyType ptrType(const PyType &pointee, int addressSpace) const;
  PyType blockType(const PyType &element, const std::vector<int64_t> &shape) const;

  PyType functionType(const std::vector<PyType> &inputs,
                      const std::vector<PyType> &results) const;

  //--- Functions ----------------------------------------------------------//

  PyFunction createFunction(const std::shared_ptr<PyModule> &module,
                            const std::string &name,
                            const std::vector<PyType> &argTypes,
                            const std::vector<PyType> &resultTypes, bool isPublic);
  void createReturn(const std::vector<PyValue> &values);

  std::vector<PyValue> createCall(const PyFunction &callee,
                                  const std::vector<PyValue> &args);

  //--- Constants ----------------------------------------------------------//

  PyValue intConst(const py::int_ &value, const PyType &type);
  PyValue floatConst(double value, const PyType &type);

  //--- kiln ops -----------------------------------------------------------//

  PyValue programId(int axis);
  PyValue numPrograms(int axis);
  PyValue makeRange(int64_t start, int64_t end);
  PyValue splat(const PyValue &src, const std::vector<int64_t> &shape);
  PyValue broadcast(const PyValue &src, const std::vector<int64_t> &shape);
  PyValue expandDims(const PyValue &src, int axis);
  PyValue addptr(const PyValue &ptr, const PyValue &offset);

  /// kiln.ptr_to_int, kiln.int_to_ptr and kiln.ptr_bitcast of `value` (a
  /// scalar or a block) to `type` (of its shape).
  PyValue ptrToInt(const PyValue &ptr, const PyType &type);
  PyValue intToPtr(const PyValue &address, const PyType &type);
  PyValue ptrBitcast(const PyValue &ptr, const PyType &type);

  PyValue load(const PyValue &ptr, std::optional<PyValue> mask,
               std::optional<PyValue> other, const std::string &cache,
               const std::string &evict, bool isVolatile,
               std::optional<PyValue> tensorMap, const std::vector<PyValue> &tensorCoords);

  /// The tensor map of a descriptor made in the kernel (kiln.make_tensor_map).
  PyValue makeTensorMap(const PyValue &base, const std::vector<PyValue> &shape,
                        const std::vector<PyValue> &strides, bool nanPadding);

  void store(const PyValue &ptr, const PyValue &val, std::optional<PyValue> mask,
             const std::string &cache, const std::string &evict);

  //--- arith and math -----------------------------------------------------//

  PyValue binary(const std::string &name, const PyValue &lhs, const PyValue &rhs);
  PyValue unary(const std::string &name, const PyValue &operand);
  PyValue cmpi(const std::string &predicate, const PyValue &lhs, const PyValue &rhs);
  PyValue cmpf(const std::string &predicate, const PyValue &lhs, const PyValue &rhs);
  PyValue select(const PyValue &cond, const PyValue &lhs, const PyValue &rhs);
  PyValue cast(const std::string &name, const PyValue &operand, const PyType &to);

  //--- element-wise math beyond the tables -------------------------------//

  PyValue fma(const PyValue &x, const PyValue &y, const PyValue &z);

  /// kiln.extern_elementwise: `symbol` applied to each element of `args`
  /// (all of one shape), giving `resultType`.
  PyValue externElementwise(const std::string &symbol, const std::vector<PyValue> &args,
                            const PyType &resultType);

  /// kiln.elementwise_inline_asm: `text` run on `args` (broadcast to one
  /// shape, or scalars), `pack` elements per run, giving `resultTypes`.
  std::vector<PyValue> elementwiseInlineAsm(const std::string &text,
                                            const std::string &constraints, bool pure,
                                            int32_t pack, const std::vector<PyValue> &args,
                                            const std::vector<PyType> &resultTypes);

  //--- scf ----------------------------------------------------------------//

  PyIfOp createIf(const PyValue &cond, const std::vector<PyType> &resultTypes,
                  bool withElse);

  /// Re-creates `old` (which has no results yet) with `resultTypes`, moving
  /// its blocks over. The frontend learns which variables an if defines only
  /// after generating both branches, and an op's results cannot change.
  PyIfOp setIfResults(PyIfOp &old, const std::vector<PyType> &resultTypes);

  PyForOp createFor(const PyValue &lb, const PyValue &ub, const PyValue &step,
                    const std::vector<PyValue> &inits);
  PyWhileOp createWhile(const std::vector<PyValue> &inits);
  void createYield(const std::vector<PyValue> &values);

  /// kiln.reduce over `axis` of `srcs`, with an empty combine block taking
  /// (accumulated..., new...) scalars; the caller fills it and ends it with
  /// createCombineReturn. The builder is left after the op.
  PyCombineOp createReduce(const std::vector<PyValue> &srcs, int axis);

  /// kiln.scan over `axis` of `srcs`; see createReduce.
  PyCombineOp createScan(const std::vector<PyValue> &srcs, int axis, bool reverse);

  /// Ends the combine block the builder is in, then verifies the whole
  /// reduce or scan (now that its region is complete).
  void createCombineReturn(const std::vector<PyValue> &values);
  void createCondition(const PyValue &cond, const std::vector<PyValue> &values);

  //--- atomics, hints and debugging -------------------------------------//

  PyValue atomicRMW(const std::string &kind, const PyValue &ptr, const PyValue &val,
                    std::optional<PyValue> mask, const std::string &sem,
                    const std::string &scope);

  PyValue atomicCAS(const PyValue &ptr, const PyValue &cmp, const PyValue &val,
                    const std::string &sem, const std::string &scope);

  PyValue axisHint(const PyValue &src, const std::vector<int64_t> &divisibility,
                   const std::vector<int64_t> &contiguity,
                   const std::vector<int64_t> &constancy);
  void debugBarrier();

  void print(const std::string &prefix, const std::vector<PyValue> &args,
             const std::vector<bool> &isSigned, bool hex);

  void deviceAssert(const PyValue &cond, const std::string &message, const std::string &file,
                    int line, const std::string &function);
  void assume(const PyValue &cond);

  //--- shape ops ----------------------------------------------------------//
  // Result types follow from the operands; the op verifiers check the rest.

  PyValue reshape(const PyValue &src, const std::vector<int64_t> &shape);
  PyValue trans(const PyValue &src, const std::vector<int32_t> &order);
  PyValue join(const PyValue &lhs, const PyValue &rhs);
  std::vector<PyValue> split(const PyValue &src);
  PyValue cat(const PyValue &lhs, const PyValue &rhs);
  PyValue flip(const PyValue &src, int axis);
  PyValue gather(const PyValue &src, const PyValue &index, int axis);
  PyValue histogram(const PyValue &src, std::optional<PyValue> mask, int64_t numBins);

  //--- matrix products -----------------------------------------------------//

  /// `a_fp8` and `b_fp8`, both empty or both set, name the 8-bit float
  /// formats ("e4m3", "e5m2") of i8 operands.
  PyValue dot(const PyValue &a, const PyValue &b, const PyValue &acc,
              const std::string &inputPrecision, int maxNumImpreciseAcc,
              const std::string &aFloat8, const std::string &bFloat8);

  /// Decodes i8 bytes holding 8-bit floats of `format` into f32, exactly.
  PyValue float8ToF32(const PyValue &bytes, const std::string &format);

  /// Rounds f32 values to 8-bit floats of `format` (kiln.f32_to_float8):
  /// to nearest even, saturating, NaN to NaN; returns their i8 bytes.
  PyValue f32ToFloat8(const PyValue &value, const std::string &format);

private:
  static kd::Float8Format float8Format(const std::string &name);
  ContextRef context;
  mutable OpBuilder builder;
  Location loc;
  Owner owner;
  SmallVector<Value> combineOperands(const std::vector<PyValue> &srcs, int axis);
  void addCombineBlock(Region &region, ValueRange srcs);
  RankedTensorType blockOperand(const PyValue &v, const char *what) const;
  void requireInsertionPoint() const;
  Type checkType(const PyType &t) const;
  Value checkValue(const PyValue &v) const;
  SmallVector<Type> unwrapTypes(const std::vector<PyType> &types) const;
  SmallVector<Value> unwrapValues(const std::vector<PyValue> &values) const;
  static std::string shapeString(ArrayRef<int64_t> shape);
  static void checkShape(const std::vector<int64_t> &shape);
  static void checkAxis(int axis, const char *op);
  static void checkSameType(const std::string &op, Value a, Value b);
  static void checkKind(const std::string &op, Value v, Kind kind);
  Value checkMask(const PyValue &mask, Type ptrType, const char *op) const;
  static kd::CacheModifier cacheModifier(const std::string &name);
  static kd::EvictionPolicy evictionPolicy(const std::string &name);
  static kd::MemSemantic memSemantic(const std::string &name);
  static kd::MemSyncScope memSyncScope(const std::string &name);
  static void dropTerminator(Block *block);
  PyValue constant(TypedAttr attr);

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

} // namespace kiln::python::irbinding

#endif // KILN_PYTHON_IRBINDING_H
