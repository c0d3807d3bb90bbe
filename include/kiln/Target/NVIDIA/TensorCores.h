//===- TensorCores.h - NVIDIA tensor-core and target choices ----*- C++ -*-===//
//
// What an NVIDIA target offers a kernel and how its dots use the tensor
// cores: the compute capability of the module's target (kiln_gpu.target),
// whether it has wgmma and cp.async, the PTX operand types of a dot, and
// the instruction family (mma.sync or wgmma) each dot lowers to. The
// kiln_gpu transforms and the NVIDIA lowering ask these; the kiln dialect
// and the shared analyses do not.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_NVIDIA_TENSORCORES_H
#define KILN_TARGET_NVIDIA_TENSORCORES_H

#include "kiln/Dialect/KilnGPU/IR/Dialect.h"

#include <cstdint>

#include <optional>

namespace mlir::NVVM {
// Declared, not defined, here: NVVMDialect.h brings mlir::gpu, which the
// kiln_gpu transforms that include this header would then find ambiguous.
enum class MMATypes : uint32_t;
} // namespace mlir::NVVM

namespace mlir::kiln::nvidia {

using gpu::TensorCores;

/// The compute capability of `module`'s target (kiln_gpu.target), or 0
/// when it has none (or `module` is null).
int getComputeCapability(ModuleOp module);

/// The compute capability of the NVIDIA chip `name` ("sm_80", "sm_90a"),
/// or 0 if it names none.
int getComputeCapability(StringRef name);

/// Whether a chip of compute capability `capability` converts f32 pairs to
/// 8-bit floats in one instruction (cvt.rn.satfinite.{e4m3,e5m2}x2.f32):
/// sm_90 and later. (sm_89 has the instruction too, but from PTX 8.1 on,
/// and Kiln emits PTX 8.0.)
bool hasFloat8Conversions(int capability);

/// Whether `module`'s target has the warpgroup MMA (wgmma): sm_90a only
/// (not sm_90, not later chips).
bool hasWarpgroupMma(ModuleOp module);

/// Whether `module`'s target has asynchronous copies from global to shared
/// memory (cp.async): sm_80 and later.
bool hasAsyncCopy(ModuleOp module);

/// What the tensor cores take of a dot's operands.
struct TensorCoreOperands {
  /// The operand types of the instructions (A's, B's): f16, bf16, tf32, s8,
  /// or for 8-bit floats e4m3 or e5m2, which may differ between A and B.
  NVVM::MMATypes aType;
  NVVM::MMATypes bType;
  int64_t elementBytes = 2;
  /// tf32x3: each f32 operand is split into a high and a low tf32 part,
  /// multiplied three times (mma.sync only: wgmma reads shared memory).
  bool split = false;
  /// An i32 accumulator (s8 operands).
  bool integer = false;

  /// Whether B lies K-major ([N][K]) in shared memory: where the
  /// instructions need it (needsKMajorB), or where B's copies come K-major
  /// from global memory (a K-major pipeline slot).
  bool kMajorB = false;

  /// K of one mma.sync or wgmma instruction: 32 bytes of a row of A.
  int64_t instructionK() const { return 32 / elementBytes; }
  /// Whether B must lie K-major in shared memory: wgmma transposes only
  /// 16-bit operands, ldmatrix only 16-bit elements.
  bool needsKMajorB() const { return elementBytes != 2; }
  bool isKMajorB() const { return kMajorB; }
  /// Whether tf32 operands are rounded to nearest (cvt.rna) on their way
  /// through registers, as the CPU backend rounds them; tensor cores given
  /// f32 bits would truncate. (tf32x3 splits them instead; tf32 is the
  /// only 4-byte operand type.)
  bool roundsToTf32() const { return elementBytes == 4 && !split; }
  /// Whether operand `index` (0: A, 1: B) can be copied from global memory
  /// straight into shared memory (cp.async), given whether its elements are
  /// contiguous along K there: not f32, which registers round or split; A
  /// row-major; B K-major (into a K-major slot), or N-major where the
  /// instructions take it so, since the copies cannot transpose.
  bool canCopyAsync(unsigned index, bool contiguousAlongK) const {
    if (elementBytes == 4)
      return false;
    if (index == 0)
      return contiguousAlongK;
    return contiguousAlongK || !needsKMajorB();
  }
};

/// The tensor-core operands of `dot`, or std::nullopt where tensor cores
/// cannot compute it: 2-D or batched 3-D, f16 or bf16, f32 with tf32 or
/// tf32x3 precision, i8 into i32, or 8-bit floats (wgmma only: see
/// canUseWarpgroupMma), and K a multiple of the instruction's.
std::optional<TensorCoreOperands> getTensorCoreOperands(DotOp dot);

/// The tensor-core instructions a dot lowers to, from its operand types,
/// its result layout and the module's target: wgmma, mma (mma.sync), or
/// nullopt for FMAs.
std::optional<TensorCores> getDotTensorCores(DotOp dot, int numWarps, int threadsPerWarp);

/// Whether wgmma can compute `dot` (its operands and its N), given the
/// accumulator layout: 2-D, neither tf32x3, nor s8 with N over 224.
bool canUseWarpgroupMma(DotOp dot);

/// Whether a wgmma `dot` reads its A operand from registers instead of
/// shared memory: 16-bit A in the wgmma accumulator layout (the result of
/// an earlier dot, narrowed), where each thread already holds the
/// instruction's A fragment.
bool readsWgmmaAFromRegisters(DotOp dot, int numWarps, int threadsPerWarp);

/// Whether the lowering of `dot` stores its A (B) operand into the shared
/// scratch, between CTA barriers, before multiplying: an operand that is
/// neither in a pipeline slot (kiln_gpu.shared_operand) nor, for A, read
/// from registers (readsWgmmaAFromRegisters).
bool storesAInScratch(DotOp dot, int numWarps, int threadsPerWarp);
bool storesBInScratch(DotOp dot);

} // namespace mlir::kiln::nvidia

#endif // KILN_TARGET_NVIDIA_TENSORCORES_H
