//===- JIT.h - Compiling and running kernels on the host --------*- C++ -*-===//
//
// The CPU backend's binary and launcher: a kernel module in the LLVM dialect
// is optimized and compiled in process by LLVM's ORC JIT, and a launch runs
// every program of the grid through the kernel's entry function on a pool
// of host threads.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CPU_JIT_H
#define KILN_TARGET_CPU_JIT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace mlir::kiln::cpu {

struct CPUTarget;

/// A load or store that checked mode bounds-checks.
struct AccessSite {
  std::string location; // file:line:col of the access in the kernel source
  int parameter;        // the kernel parameter whose buffer it reads or writes
  bool store;
  int elementBytes; // size of one element in memory
};

/// The first out-of-bounds access of a checked launch.
struct OutOfBounds {
  int site;
  int64_t index; // element index relative to the parameter's buffer
};

/// The entry every kernel has: its parameters' slots, then the program id
/// and the number of programs along each axis.
using EntryFunction = void (*)(void **params, int32_t x, int32_t y, int32_t z,
                               int32_t nx, int32_t ny, int32_t nz);

/// A kernel compiled for the host, alive as long as this object.
class HostKernel {
public:
  ~HostKernel();

  /// How many kernels are compiled and not yet destroyed: each holds a JIT
  /// session with its code.
  static int64_t getLiveCount();

  /// Optimizes and JIT-compiles `module` (LLVM dialect, from the
  /// kiln-cpu-to-llvm pipeline) for `target` and finds
  /// `<kernelName>.kiln_entry`. A target the host cannot run is compiled
  /// too (its IR can be read); getMissingFeatures then names what the host
  /// lacks, and the kernel must not be launched. Failures are reported as
  /// diagnostics on the module.
  static FailureOr<std::unique_ptr<HostKernel>>
  compile(ModuleOp module, StringRef kernelName, const CPUTarget &target);

  /// The optimized LLVM IR.
  const std::string &getLLVMIR() const { return llvmIR; }
  const std::vector<AccessSite> &getSites() const { return sites; }
  /// The features the kernel's target enables that the host lacks: empty
  /// unless the kernel was compiled for another processor, and then it must
  /// not run here (its first such instruction would be SIGILL).
  const std::vector<std::string> &getMissingFeatures() const { return missing; }

  /// Runs programs (0..gx) x (0..gy) x (0..gz) on `numThreads` threads (0:
  /// one per core). `bounds` holds (base address, size in bytes) per kernel
  /// parameter for checked kernels, or is null. Returns the first
  /// out-of-bounds access a checked kernel reported; the first failed
  /// device assertion's report goes to `assertion`, if given.
  ///
  /// `interrupted`, if given, is called every few milliseconds from the
  /// calling thread while the launch runs; once it returns true, no new
  /// program starts, running programs return at their next loop iteration,
  /// and the launch returns early.
  std::optional<OutOfBounds>
  launch(unsigned gx, unsigned gy, unsigned gz, void **params,
         unsigned numThreads, const std::vector<int64_t> *bounds,
         std::string *assertion = nullptr,
         const std::function<bool()> *interrupted = nullptr) const;

private:
  HostKernel() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  EntryFunction entry = nullptr;
  bool pollsCancellation = false; // whether its loops poll __kiln_cpu_cancel
  std::string llvmIR;
  std::vector<AccessSite> sites;
  std::vector<std::string> missing;
};

} // namespace mlir::kiln::cpu

#endif // KILN_TARGET_CPU_JIT_H
