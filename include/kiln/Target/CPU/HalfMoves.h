//===- HalfMoves.h - 16-bit float vectors moved as integers -----*- C++ -*-===//
//
// X86 instruction selection scales badly with wide shuffles and loads of
// bfloat vectors on processors without AVX512-BF16 (a batched bf16 dot took
// four minutes in `llc` at x86-64-v4, 0.3 s with the same data moved as
// i16). Moving the bits as integers means exactly the same, so the CPU JIT
// rewrites those moves before code generation.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CPU_HALFMOVES_H
#define KILN_TARGET_CPU_HALFMOVES_H

namespace llvm {
class Module;
} // namespace llvm

namespace mlir::kiln::cpu {

/// Rewrites the pure data movement of vectors of 16-bit floats (`bfloat`,
/// `half`) in `module` to act on vectors of i16 with bitcasts around it:
/// shufflevector, load, store and the masked load, store, gather and scatter
/// intrinsics; and the exact bfloat-to-float extension to integer shifts.
/// Other arithmetic and conversions are left as they are. Returns the
/// number of instructions rewritten.
unsigned moveHalfVectorsAsIntegers(llvm::Module &module);

} // namespace mlir::kiln::cpu

#endif // KILN_TARGET_CPU_HALFMOVES_H
