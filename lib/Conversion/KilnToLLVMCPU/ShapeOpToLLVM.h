//===- ShapeOpToLLVM.h - CPU lowering of the shape ops ----------*- C++ -*-===//
//
// Pattern population entry point for the CPU lowering of kiln.reshape,
// trans, join, split, cat, flip, gather and histogram.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CONVERSION_KILNTOLLVMCPU_SHAPEOPTOLLVM_H
#define KILN_LIB_CONVERSION_KILNTOLLVMCPU_SHAPEOPTOLLVM_H

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {

/// Adds the CPU lowerings of the shape ops: a shufflevector per result for
/// the static permutations, a masked gather from a stack slot for
/// kiln.gather, a counting loop for kiln.histogram.
void populateShapeOpToLLVMCPUPatterns(const LLVMTypeConverter &converter,
                                      RewritePatternSet &patterns);

} // namespace mlir::kiln

#endif // KILN_LIB_CONVERSION_KILNTOLLVMCPU_SHAPEOPTOLLVM_H
