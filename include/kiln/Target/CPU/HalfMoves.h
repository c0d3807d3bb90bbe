//===- HalfMoves.h - 16-bit float vectors moved as integers -----*- C++ -*-===//
//
// X86 instruction selection scales badly with wide shuffles and loads of
// bfloat vectors on processors without AVX512-BF16 (a batched bf16 dot took
// four minutes in `llc` at x86-64-v4, 0.3 s with the same data moved as
// i16), and with conversions to and from bfloat vectors (a fuzzer kernel
// converting 512-element integer blocks to bfloat: over 100 s, 1 s as
// integer rounding). Moving the bits as integers means exactly the same,
// and rounding with integer instructions is what PyTorch does, so the CPU
// JIT rewrites both before code generation.
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
/// shufflevector, select, load, store and the masked load, store, gather
/// and scatter intrinsics. Conversions from bfloat (scalars and vectors)
/// become the exact extension to float by integer shifts, then the rest of
/// the conversion from float; conversions to bfloat first go to float (from
/// double or an integer, as PyTorch narrows), then round to nearest even
/// with integer instructions, a NaN kept a quiet NaN. Comparisons of bfloat
/// and its minimum and maximum intrinsics act on the exact float extensions
/// (a minimum or maximum, one of its operands, rounds back exactly). Other
/// arithmetic and conversions are left as they are. Returns the number of
/// instructions rewritten.
unsigned moveHalfVectorsAsIntegers(llvm::Module &module);

} // namespace mlir::kiln::cpu

#endif // KILN_TARGET_CPU_HALFMOVES_H
