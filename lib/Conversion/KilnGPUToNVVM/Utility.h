//===- Utility.h - Shared pieces of the kiln_gpu -> LLVM lowering -*- C++ -*-===//
//
// The type converter (a block becomes the vector of elements one thread
// holds), per-thread layout arithmetic, and the pattern population entry
// points of each file of this conversion.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_CONVERSION_KILNGPUTONVVM_UTILITY_H
#define KILN_LIB_CONVERSION_KILNGPUTONVVM_UTILITY_H

#include "kiln/Conversion/LLVMCommon/VectorUtils.h"
#include "kiln/Dialect/KilnGPU/IR/Dialect.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::kiln::gpu {

/// Converts kiln types to their per-thread LLVM form: `!kiln.ptr<T, as>` to
/// `!llvm.ptr<as>`, and a block with a blocked layout to the vector of the
/// elements one thread holds.
class KilnGPUToNVVMTypeConverter : public LLVMTypeConverter {
public:
  explicit KilnGPUToNVVMTypeConverter(MLIRContext *context);
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

/// Whether the calling thread is thread 0 of its program (an i1): the one
/// that applies a scalar store or atomic, which stands for the program.
Value emitIsFirstThread(OpBuilder &builder, Location loc);

/// Coordinates of the calling thread in `layout`, per dimension: its lane
/// within the warp's threads and its warp within the CTA's warps.
struct ThreadCoordinates {
  SmallVector<Value> lane;
  SmallVector<Value> warp;
};
ThreadCoordinates emitThreadCoordinates(OpBuilder &builder, Location loc,
                                        BlockedEncodingAttr layout,
                                        const LaunchShape &launch);

//===----------------------------------------------------------------------===//
// Shared memory scratch
//
// Ops that move elements between threads (reductions across warps, scans,
// layout conversions) use the start of the kernel's dynamic shared memory
// as scratch, one op at a time: each use starts with a barrier (earlier
// readers are done) and puts one between its writes and its reads.
// kiln-gpu-allocate-shared-memory sizes the buffer for the largest use
// before conversion (AllocateSharedMemory.cpp).
//===----------------------------------------------------------------------===//

/// Bytes of scratch `op` needs (0 for none), from its unconverted types.
int64_t getScratchBytes(Operation *op, const LaunchShape &launch);

/// Bytes one element of `element` (a kiln scalar type) takes in shared
/// memory: booleans a byte, pointers eight.
int64_t getSharedElementBytes(Type element);

/// Elements a thread of `type`'s layout holds consecutively along the last
/// dimension, as one shared-memory access of at most 16 bytes: its
/// elements come in runs of that many (1 where the layout's fastest
/// dimension is another, or for booleans, which are stored as bytes).
int64_t getSharedRunWidth(RankedTensorType type);

/// Stores `value` at `address` in shared memory (booleans as bytes).
void storeShared(OpBuilder &builder, Location loc, Value value, Value address);

/// Loads a `type` stored by storeShared from `address`.
Value loadShared(OpBuilder &builder, Location loc, Type type, Value address);

/// The base of the scratch: a pointer in the shared address space.
Value getScratchBase(OpBuilder &builder, Location loc);

/// `base` advanced by `byteOffset` (an i32).
Value getSharedAddress(OpBuilder &builder, Location loc, Value base,
                       Value byteOffset);

/// Emits `body` under `condition` (an i1): a branch around it. Leaves the
/// insertion point at the start of the block after it.
void emitIf(ConversionPatternRewriter &rewriter, Location loc, Value condition,
            function_ref<void(OpBuilder &)> body);

/// Marks a barrier that orders shared-memory accesses only (scratch and
/// pipeline slots), not global ones: one that no shared access can precede
/// is dropped after the conversion (kiln-nvvm-erase-needless-barriers,
/// which also removes the mark).
inline constexpr StringLiteral kSharedOnlyBarrierAttr = "kiln.shared_only";

/// The named barriers besides the CTA's (0): the consumer warps' in a
/// warp-specialized kernel (kiln-nvvm-name-consumer-barriers), then one per
/// warpgroup for the warpgroups' turns (kiln_gpu.await_turn).
inline constexpr int32_t kConsumerBarrier = 1;
inline constexpr int32_t kFirstTurnBarrier = 2;

/// bar.sync 0, ordering shared-memory accesses only
/// (`kSharedOnlyBarrierAttr`).
void emitBarrier(OpBuilder &builder, Location loc);

/// fence.proxy.async.shared::cta: the executing thread's shared-memory
/// writes through the generic proxy (stores, cp.async) become visible to
/// its later accesses through the async proxy (wgmma), and the other way.
void emitAsyncProxyFence(OpBuilder &builder, Location loc);

/// Declares the scratch global (once) in `module` when the kernel needs
/// `bytes` > 0 of shared memory.
void declareScratch(ModuleOp module, int64_t bytes);

/// `value` (a scalar of any type) from the lane that a shfl.sync of `kind`
/// with `operand` reads, bit for bit.
Value emitShuffle(OpBuilder &builder, Location loc, Value value, Value operand,
                  NVVM::ShflKind kind);

/// Inline PTX `text` with `constraints`, returning `result`: the one way
/// the lowering writes PTX strings, for instructions no NVVM op expresses
/// (each call says why). Without side
/// effects LLVM may move, merge or drop it like any pure computation (for
/// instructions that touch no memory, such as mma.sync). A `result` of
/// LLVM's void type makes an instruction with no result (null returned).
Value createInlineAsm(OpBuilder &builder, Location loc, bool hasSideEffects,
                      Type result, ValueRange operands, StringRef text,
                      StringRef constraints);

/// Vector widths of each load and store, decided before conversion starts.
using AccessWidths = llvm::DenseMap<Operation *, int64_t>;

/// Per block compare, the constancy of its result along each dimension
/// (the axis-info analysis's), decided before conversion starts.
using ResultConstancy = llvm::DenseMap<Operation *, SmallVector<int64_t>>;

/// Lowers integer compares of blocks whose results are constant over runs
/// of a thread's elements to one compare per run (CompareOpToLLVM.cpp);
/// they take precedence over the upstream arith -> LLVM pattern.
void populateCompareOpToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                     RewritePatternSet &patterns,
                                     const ResultConstancy &constancy);

/// Checked mode: what the bounds check of one access needs. `base`,
/// `bytes` and `record` are arguments that addCheckedParameters added to
/// the kernel (values of the unconverted IR).
struct AccessCheck {
  int64_t site;
  unsigned parameter;
  unsigned elementBytes;
  Value base, bytes, record;
};

/// The checked accesses of a module (none outside checked mode).
using AccessChecks = llvm::DenseMap<Operation *, AccessCheck>;

/// The module attribute listing the checked access sites, each a dictionary
/// of `loc`, `param`, `store` and `element_bytes`, in site-number order.
inline constexpr StringLiteral kCheckedSitesAttr = "kiln_gpu.checked_sites";

/// Checked mode: appends to each kernel one (i64 base, i64 bytes) pair per
/// pointer parameter, in order, and a pointer to the error record; numbers
/// every access whose parameter is known (`kCheckedSitesAttr`) and fills
/// `checks` (CheckedAccess.cpp).
LogicalResult addCheckedParameters(ModuleOp module, AccessChecks &checks);

/// Checked mode: compares each run (`runBytes` bytes from `addresses[i]`,
/// active where `predicates[i]` holds, or always when `predicates` is empty)
/// with the parameter's [base, base + bytes), records the first fault in the
/// error record and returns each run's predicate without the runs outside.
SmallVector<Value> emitAccessCheck(ConversionPatternRewriter &rewriter, Location loc,
                                   const AccessCheck &check, ArrayRef<Value> addresses,
                                   ArrayRef<Value> predicates, int64_t runBytes);

void populateMemoryOpToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                    RewritePatternSet &patterns,
                                    const AccessWidths &widths,
                                    const LaunchShape &launch,
                                    const AccessChecks &checks);
void populateBlockOpToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                   RewritePatternSet &patterns,
                                   const LaunchShape &launch);
void populateReduceScanOpToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                        RewritePatternSet &patterns,
                                        const LaunchShape &launch);

/// Lowers math ops that NVPTX cannot select to libdevice calls and PTX
/// approximations (MathToLibdevice.cpp); they take precedence over the
/// upstream math -> LLVM patterns.
void populateMathToLibdevicePatterns(const LLVMTypeConverter &converter,
                                     RewritePatternSet &patterns);

/// Atomics (predicated inline PTX), axis hints and debug barriers.
void populateAtomicOpToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                    RewritePatternSet &patterns,
                                    const LaunchShape &launch,
                                    const AccessChecks &checks);

/// The shape ops (reshape, trans, join, split, cat, flip, gather), through
/// the shared memory scratch (ShapeOpToLLVM.cpp).
void populateShapeOpToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                   RewritePatternSet &patterns,
                                   const LaunchShape &launch);

/// Bytes of scratch a shape op needs (0 for other ops): its operands'
/// elements, the source only for a gather.
int64_t getShapeOpScratchBytes(Operation *op);

/// kiln.dot: tensor cores (wgmma or mma.sync) for results in their
/// accumulator layouts, FMAs otherwise; operands through the shared memory
/// scratch, or from the pipeline slots that kiln_gpu.async_copy fills with
/// cp.async, the slots starting `pipelineStart` bytes into shared memory
/// (DotOpToLLVM.cpp).
void populateDotOpToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                 RewritePatternSet &patterns,
                                 const LaunchShape &launch, const AccessWidths &widths,
                                 int64_t pipelineStart);

/// Bytes of shared memory the pipeline slots of `module` take.
int64_t getPipelineBytes(ModuleOp module);

/// Bytes of scratch a dot needs for its operand tiles (0 for other ops).
int64_t getDotOpScratchBytes(Operation *op);

/// kiln.elementwise_inline_asm: one llvm.inline_asm per group of
/// `packed_element` elements a thread holds (InlineAsmToLLVM.cpp).
void populateInlineAsmToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                     RewritePatternSet &patterns);

/// kiln.f32_to_float8 on sm_90 and later: one cvt.rn.satfinite per pair of
/// elements a thread holds (Float8ConversionToLLVM.cpp).
void populateFloat8ConversionToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                            RewritePatternSet &patterns);

/// kiln_gpu.begin_turns, kiln_gpu.await_turn, kiln_gpu.pass_turn: named
/// barriers from kFirstTurnBarrier on, one per warpgroup
/// (WarpgroupTurnsToLLVM.cpp).
void populateWarpgroupTurnsToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                          RewritePatternSet &patterns,
                                          const LaunchShape &launch);

/// Device prints (vprintf) and device assertions (__assertfail).
void populateDebugOpToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                   RewritePatternSet &patterns,
                                   const LaunchShape &launch);

} // namespace mlir::kiln::gpu

#endif // KILN_LIB_CONVERSION_KILNGPUTONVVM_UTILITY_H
