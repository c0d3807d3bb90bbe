//===- Rematerializer.h - Recomputing blocks under another layout -*- C++ -*-===//
//
// Shared by the layout passes: a block needed under another layout is
// recomputed there when its producers are cheap to clone (ranges, splats,
// element-wise ops, loads), and converted through shared memory only when
// they are not.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_DIALECT_KILNGPU_TRANSFORMS_REMATERIALIZER_H
#define KILN_LIB_DIALECT_KILNGPU_TRANSFORMS_REMATERIALIZER_H

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::kiln::gpu {

/// Recomputes values under another layout, once per (value, layout).
class Rematerializer {
public:
  /// With `convertWhenStuck`, a value whose producer cannot be recomputed
  /// is converted (kiln_gpu.convert_layout); without it, get() fails
  /// quietly there instead.
  explicit Rematerializer(bool convertWhenStuck)
      : convertWhenStuck(convertWhenStuck) {}

  /// `value` with encoding `encoding`: itself, or a clone of its producer
  /// (and, recursively, of the producers of its block operands).
  FailureOr<Value> get(Value value, Attribute encoding);

  /// The layout `op`'s block operands need for its result to have
  /// `encoding`, if there is one: shape changes need a blocked result.
  static std::optional<Attribute> operandLayout(Operation *op, Attribute encoding);

  /// Whether `op` computes each result element from the operand elements at
  /// the same position, in any layout.
  static bool isLayoutFreeElementwise(Operation *op);

  /// Whether a clone of `op` in another layout computes the same block:
  /// index and shape ops, layout-free element-wise ops, and with `loads`
  /// (reading memory again is acceptable) non-volatile loads.
  static bool isRecomputable(Operation *op, bool loads);

private:
  bool convertWhenStuck;
  DenseMap<std::pair<Value, Attribute>, Value> memo;
};

/// A store of a converted block stores the unconverted block instead, with
/// its pointers and mask recomputed under that block's layout, when they can
/// be: no data moves between threads. Stores that `keepConversion` accepts
/// are left as they are, and so are those whose conversion lets them store
/// wider vectors.
void storeWithoutConversion(
    ModuleOp module, llvm::function_ref<bool(StoreOp, ConvertLayoutOp)> keepConversion = nullptr);

/// Whether `type` has one of the tensor-core accumulator layouts.
bool isTensorCoreLayout(RankedTensorType type, int numWarps, int threadsPerWarp);

/// storeWithoutConversion for the tensor-core accumulators: a store of a
/// converted accumulator keeps the conversion when the converted layout
/// writes wider vectors. An accumulator holds pairs of columns, and stored
/// from there a tile takes many narrow stores, each with its own address
/// and mask; converted, through shared memory, it takes a few wide ones.
void storeAccumulatorsWithoutConversion(ModuleOp module);

} // namespace mlir::kiln::gpu

#endif // KILN_LIB_DIALECT_KILNGPU_TRANSFORMS_REMATERIALIZER_H
