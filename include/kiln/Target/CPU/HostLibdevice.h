//===- HostLibdevice.h - Host versions of libdevice functions ---*- C++ -*-===//
//
// Kernels name libdevice functions (`__nv_expf`, ...) through
// kiln.extern_elementwise; on the CPU the JIT resolves those names to the
// host functions listed here, so one kernel means the same on both backends.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CPU_HOSTLIBDEVICE_H
#define KILN_TARGET_CPU_HOSTLIBDEVICE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::kiln::cpu {

/// A libdevice name and the address of its host implementation, which has
/// the same C signature.
struct HostFunction {
  llvm::StringRef name;
  void *address;
};

/// Every libdevice function the CPU backend implements.
llvm::ArrayRef<HostFunction> getHostLibdeviceFunctions();

} // namespace mlir::kiln::cpu

#endif // KILN_TARGET_CPU_HOSTLIBDEVICE_H
