//===- Utility.h - Shared pieces of the kiln_gpu -> LLVM lowering -*- C++ -*-===//
//
// The type converter (a block becomes the vector of elements one thread
// holds), per-thread layout arithmetic, and the pattern population entry
// points of each file of this conversion.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CONVERSION_KILNGPUTOLLVM_UTILITY_H
#define KILN_LIB_CONVERSION_KILNGPUTOLLVM_UTILITY_H

#include "kiln/Conversion/LLVMCommon/VectorUtils.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::kiln::gpu {

/// Converts kiln types to their per-thread LLVM form: `!kiln.ptr<T, as>` to
/// `!llvm.ptr<as>`, and a block with a blocked layout to the vector of the
/// elements one thread holds.
class KilnGPUToLLVMTypeConverter : public LLVMTypeConverter {
public:
  explicit KilnGPUToLLVMTypeConverter(MLIRContext *context);
};

/// Launch shape of the module being lowered.
struct LaunchShape {
  int numWarps;
  int threadsPerWarp;
};

/// Emits, for every element a thread holds of a block with `layout` and
/// `shape`, its coordinate along each dimension (one vector<E x i32> per
/// dimension). If `isOwner` is given, it receives a vector<E x i1> that is
/// false for elements this thread holds only as a replica of another
/// thread's (when the block is smaller than the layout's tile), or null when
/// there are no replicas.
SmallVector<Value> emitElementCoordinates(OpBuilder &builder, Location loc,
                                          BlockedEncodingAttr layout,
                                          ArrayRef<int64_t> shape,
                                          const LaunchShape &launch,
                                          Value *isOwner = nullptr);

/// Per element a thread holds of a block with `layout` and `shape`, its
/// offset from the thread's first element along each dimension (before
/// wrapping around the block): offsets[dim][element]. The same for every
/// thread.
SmallVector<SmallVector<int32_t>> getElementOffsets(BlockedEncodingAttr layout,
                                                   ArrayRef<int64_t> shape);

/// emitElementCoordinates for a block type with a blocked or slice layout,
/// one vector per dimension of the block itself.
SmallVector<Value> emitBlockCoordinates(OpBuilder &builder, Location loc,
                                        RankedTensorType type,
                                        const LaunchShape &launch,
                                        Value *isOwner = nullptr);

/// Vector widths of each load and store, decided before conversion starts.
using AccessWidths = llvm::DenseMap<Operation *, int64_t>;

void populateMemoryOpToLLVMPatterns(KilnGPUToLLVMTypeConverter &converter,
                                    RewritePatternSet &patterns,
                                    const AccessWidths &widths,
                                    const LaunchShape &launch);
void populateBlockOpToLLVMPatterns(KilnGPUToLLVMTypeConverter &converter,
                                   RewritePatternSet &patterns,
                                   const LaunchShape &launch);
/// Atomics (predicated inline PTX), axis hints and debug barriers.
void populateAtomicOpToLLVMPatterns(KilnGPUToLLVMTypeConverter &converter,
                                    RewritePatternSet &patterns,
                                    const LaunchShape &launch);

/// Device prints (vprintf) and device assertions (__assertfail).
void populateDebugOpToLLVMPatterns(KilnGPUToLLVMTypeConverter &converter,
                                   RewritePatternSet &patterns,
                                   const LaunchShape &launch);

} // namespace mlir::kiln::gpu

#endif // KILN_LIB_CONVERSION_KILNGPUTOLLVM_UTILITY_H
