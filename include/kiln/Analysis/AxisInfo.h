//===- AxisInfo.h - Contiguity, divisibility and constancy ------*- C++ -*-===//
//
// The axis-info analysis tells, for each integer or pointer value and each of
// its dimensions, how long its runs of consecutive values are (contiguity),
// what power of two divides its first element of each run (divisibility, in
// elements for integers and bytes for pointers), and how long its runs of
// equal values are (constancy). Layout assignment and load/store lowering
// use it to prove that a thread's accesses are contiguous and aligned, and
// that a mask is uniform over them, so they can be single wide instructions.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ANALYSIS_AXISINFO_H
#define KILN_ANALYSIS_AXISINFO_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::kiln {

/// What is known of one value. Scalars have one dimension of length one.
struct AxisInfo {
  /// Largest divisibility the analysis claims (2^30): large enough for any
  /// alignment question, small enough to multiply without overflow.
  static constexpr int64_t kMaxDivisibility = int64_t(1) << 30;

  llvm::SmallVector<int64_t> contiguity;
  llvm::SmallVector<int64_t> divisibility;
  llvm::SmallVector<int64_t> constancy;
  /// The value of every element, when it is a known constant.
  std::optional<int64_t> constantValue;

  /// Nothing known: runs of length one, divisible by one.
  static AxisInfo unknown(int64_t rank);
  /// A constant of `rank` dimensions of the given shape.
  static AxisInfo constant(int64_t value, llvm::ArrayRef<int64_t> shape);
  int64_t getRank() const { return contiguity.size(); }
};

/// Runs the analysis over every function in `module` and answers queries.
/// Values defined by ops it does not model, and block arguments other than
/// function arguments, get conservative answers.
class AxisInfoAnalysis {
public:
  explicit AxisInfoAnalysis(Operation *root);

  /// The information of `value`, computed on first request.
  const AxisInfo &getAxisInfo(Value value);

  /// Number of consecutive elements along `dim` that one access to `ptr` may
  /// cover: contiguous, aligned to the access size, at most `maxBytes`.
  int64_t getPtrVectorWidth(Value ptr, int64_t dim, int64_t maxBytes = 16);

  /// Length of the runs of equal values of a mask along `dim` (one for no
  /// mask is never asked: callers treat an absent mask as fully constant).
  int64_t getMaskConstancy(Value mask, int64_t dim);

  /// Widest run of elements one access of a thread may move for `ptr` (a
  /// block) and `mask` (may be null) along dimension `dim`, where each thread
  /// holds runs of `elementsPerThread` consecutive elements: as many as are
  /// proven contiguous, aligned and uniformly masked, within that run. (The
  /// run comes from a target's layout: gpu::getAccessWidth reads it.)
  int64_t getAccessWidth(Value ptr, Value mask, int64_t dim, int64_t elementsPerThread);

private:
  AxisInfo compute(Value value);
  AxisInfo computeFromDefinition(Value value);
  /// A value a loop carries: what holds for its initial value and for every
  /// value the body yields for it, found by iterating from the initial
  /// value's information.
  AxisInfo computeLoopCarried(Operation *loop, unsigned index);
  llvm::DenseMap<Value, AxisInfo> cache;
};

/// Largest power of two dividing `value` (kMaxDivisibility for zero).
int64_t highestPowerOf2Divisor(int64_t value);

} // namespace mlir::kiln

#endif // KILN_ANALYSIS_AXISINFO_H
