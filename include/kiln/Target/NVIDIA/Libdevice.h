//===- Libdevice.h - Linking NVIDIA's libdevice into kernels ----*- C++ -*-===//
//
// Kernels call libdevice's math functions (`__nv_expf`, ...) by name; the
// NVIDIA target links the bitcode library into the kernel's LLVM module
// before optimizing it, so the calls inline like any other code.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_NVIDIA_LIBDEVICE_H
#define KILN_TARGET_NVIDIA_LIBDEVICE_H

#include "llvm/Support/Error.h"

#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace mlir::kiln::nvidia {

/// The libdevice bitcode file: `$KILN_LIBDEVICE_PATH` if set, else the copy
/// a wheel bundles (`lib/libdevice.10.bc` beside the binary this code is
/// linked into, the extension kiln._C), else `nvvm/libdevice/libdevice.10.bc`
/// under `$CUDA_HOME`, `$CUDA_PATH` or `/usr/local/cuda`, the first that
/// exists. The error lists where it looked.
llvm::Expected<std::string> findLibdevice();

/// Whether `module` calls a libdevice function (declares an `__nv_` one).
bool callsLibdevice(const llvm::Module &module);

/// Links the libdevice functions `module` calls from the bitcode at `path`,
/// makes them internal (so the optimizer drops what it inlined), and
/// resolves libdevice's configuration queries (`__nvvm_reflect`):
/// single-precision functions flush denormal inputs and results to zero
/// when `flushDenormals` (`__CUDA_FTZ`, Triton's enable_reflect_ftz), square
/// roots are IEEE-rounded. `__CUDA_ARCH` is left to LLVM's NVVMReflect
/// pass, which knows the target chip.
llvm::Error linkLibdevice(llvm::Module &module, const std::string &path,
                          bool flushDenormals);

} // namespace mlir::kiln::nvidia

#endif // KILN_TARGET_NVIDIA_LIBDEVICE_H
