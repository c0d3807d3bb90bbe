//===- TargetSpec.h - Which processor the CPU backend compiles for -*- C++ -*-===//
//
// The CPU backend compiles for the host processor by default; a target
// specification (KILN_CPU_TARGET) names another one, so that the code, and
// the tests' results, do not depend on the machine they run on:
//
//   host | x86-64 | x86-64-v2 | x86-64-v3 | x86-64-v4 | <LLVM CPU name>
//
// optionally followed by comma-separated feature changes, as in
// `sapphirerapids,-avx512fp16,-amx-tile` or `x86-64-v3,+avx512f`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CPU_TARGETSPEC_H
#define KILN_TARGET_CPU_TARGETSPEC_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace llvm::orc {
class JITTargetMachineBuilder;
} // namespace llvm::orc

namespace mlir::kiln::cpu {

/// A parsed and validated target specification.
struct CPUTarget {
  /// The LLVM processor name: the host's own name for `host`.
  std::string cpu;
  /// Feature changes ("+name" or "-name"): the host's detected features
  /// for `host`, then the specification's own, in order.
  std::vector<std::string> features;
  /// Whether the specification started with `host`.
  bool host = false;
  /// The features that the last feature changes clear because LLVM 22's
  /// X86 code generator gets kernels wrong with them (TargetSpec.cpp says
  /// which and why), in that order; a feature the specification names
  /// itself is not among them.
  std::vector<std::string> clearedFeatures;
};

/// Parses `spec` (empty means `host`). Unknown processor names are errors
/// that list the valid ones; unknown features are errors too, rather than
/// LLVM's warning on stderr.
llvm::Expected<CPUTarget> parseCPUTarget(llvm::StringRef spec);

/// Whether code for `target` may use `feature` (an LLVM feature name such
/// as "avx2"): its processor's features with the target's changes applied.
bool targetHasFeature(const CPUTarget &target, llvm::StringRef feature);

/// The names of the features that `target` enables and `hostFeatures`
/// (as llvm::sys::getHostCPUFeatures reports them) says the host lacks,
/// sorted. Only features the host report names are compared: the others
/// are tuning choices (such as prefer-256-bit), not instructions.
std::vector<std::string>
missingFeatures(const CPUTarget &target,
                const llvm::StringMap<bool> &hostFeatures);

/// missingFeatures against this process's host.
std::vector<std::string> missingHostFeatures(const CPUTarget &target);

/// A JIT target machine builder for `target`, optimizing aggressively.
llvm::orc::JITTargetMachineBuilder machineBuilderFor(const CPUTarget &target);

} // namespace mlir::kiln::cpu

#endif // KILN_TARGET_CPU_TARGETSPEC_H
