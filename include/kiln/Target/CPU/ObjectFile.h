//===- ObjectFile.h - Ahead-of-time object files for the host ---*- C++ -*-===//
//
// The ahead-of-time path of the CPU backend: the optimized LLVM IR a CPU
// compile produced (CompiledKernel.asm["llir"]) made into a relocatable
// object file for a target specification, to link into a C program.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CPU_OBJECTFILE_H
#define KILN_TARGET_CPU_OBJECTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::kiln::cpu {

struct CPUTarget;

/// An object file and the symbols it needs from elsewhere.
struct ObjectFile {
  std::string bytes;                   // ELF, position independent
  std::vector<std::string> undefined;  // functions and globals it calls or reads
};

/// Parses `llvmIR` (the optimized IR of a CPU compile, which code generation
/// takes as it is) and emits a position-independent object file for
/// `target`. Errors name what failed (parsing, the target machine, emission).
llvm::Expected<ObjectFile> emitObjectFile(llvm::StringRef llvmIR,
                                          const CPUTarget &target);

} // namespace mlir::kiln::cpu

#endif // KILN_TARGET_CPU_OBJECTFILE_H
