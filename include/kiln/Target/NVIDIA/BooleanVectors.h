//===- BooleanVectors.h - Per-lane operations on vectors of i1 --*- C++ -*-===//
//
// An LLVM IR pass of the NVIDIA translation: compares, selects, logic and
// shuffles on vectors of i1 (a block's masks) split into one operation per
// lane.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_NVIDIA_BOOLEANVECTORS_H
#define KILN_TARGET_NVIDIA_BOOLEANVECTORS_H

#include "llvm/IR/PassManager.h"

namespace mlir::kiln::nvidia {

/// Rewrites every compare, select with a vector condition, logical
/// operation, shuffle and extension whose operands or result are vectors of
/// i1 into one scalar operation per lane, gathered back into a vector with
/// insertelement (which InstCombine then folds into the users' extracts).
///
/// Why: the NVPTX backend has no vector predicates. It legalizes an
/// `<N x i1>` by packing its lanes into an integer and shifting each back
/// out where it is used, about five instructions per lane. LLVM's Scalarizer
/// does not help with the fragment size the translation gives it (at least
/// 32 bits, so that f16x2 and bf16x2 arithmetic stays packed): it keeps 32
/// lanes of i1 in one fragment, and leaves alone any compare or select whose
/// i1 fragments do not line up with those of its other operands, which is
/// every compare of 32-bit values. A masked load of a 16384-element row on
/// eight warps spent about 300 instructions a loop iteration on that.
///
/// Example, after the Scalarizer has split `%a`:
///
///   %m = icmp slt <4 x i32> %a, %n
///   %e = extractelement <4 x i1> %m, i64 2
///
/// becomes, once InstCombine has run,
///
///   %a.i2 = ...                      ; lane 2 of %a
///   %e = icmp slt i32 %a.i2, %n.i2
struct SplitBooleanVectorsPass
    : public llvm::PassInfoMixin<SplitBooleanVectorsPass> {
  llvm::PreservedAnalyses run(llvm::Function &function,
                              llvm::FunctionAnalysisManager &analyses);
};

} // namespace mlir::kiln::nvidia

#endif // KILN_TARGET_NVIDIA_BOOLEANVECTORS_H
