//===- TargetSpec.cpp - Which processor the CPU backend compiles for -------===//
//
// Parses KILN_CPU_TARGET-style specifications against LLVM's own tables of
// processors and features for the host's architecture, and compares the
// features a target enables with the ones the host processor has.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/TargetSpec.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <memory>
#include <mutex>

using namespace mlir::kiln::cpu;

namespace {

/// The first word of a specification that means "this machine".
constexpr llvm::StringLiteral kHost = "host";

/// X86 features that every target clears unless its specification names
/// them: with each, LLVM 22's X86 code generator gets some kernels wrong.
/// - `fast-variable-crosslane-shuffle`, a tuning flag (not an instruction
///   set): with AVX-512, the shuffle lowering under it extracts the wrong
///   lane of a wide vector (row 1 of a 2-D tile gets row 0's address; see
///   docs/design/cpu_backend.md for the reproducer). Without it, variable
///   cross-lane shuffles are merely costed as slow.
/// - `avx512bf16` (AVX512-BF16's conversions to bf16 and its dot
///   products): instruction selection stops the process ("LLVM ERROR:
///   Cannot select") on some kernels that convert or compare bf16 blocks,
///   found by the fuzzer on a Sapphire Rapids host. The JIT now does those
///   itself with integer and float instructions (HalfMoves.h); the feature
///   stays off so that no bf16 operation HalfMoves leaves alone meets that
///   instruction selection.
constexpr llvm::StringLiteral kClearedFeatures[] = {
    "fast-variable-crosslane-shuffle", "avx512bf16"};

/// The host's detected features as "+name"/"-name", in a stable order.
std::vector<std::string> hostFeatureList() {
  std::vector<std::string> features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    features.push_back((feature.second ? "+" : "-") + feature.first().str());
  llvm::sort(features);
  return features;
}

/// LLVM's processor and feature tables for the host's architecture, from a
/// subtarget with no processor chosen.
std::unique_ptr<llvm::MCSubtargetInfo>
createSubtarget(llvm::StringRef cpu, llvm::StringRef features) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  return std::unique_ptr<llvm::MCSubtargetInfo>(
      target->createMCSubtargetInfo(triple, cpu, features));
}

llvm::Error specError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Expected<CPUTarget> mlir::kiln::cpu::parseCPUTarget(llvm::StringRef spec) {
  llvm::SmallVector<llvm::StringRef> words;
  spec.split(words, ',');
  for (llvm::StringRef &word : words)
    word = word.trim();
  if (words.empty() || words.front().empty())
    words.front() = kHost;

  std::unique_ptr<llvm::MCSubtargetInfo> tables = createSubtarget("", "");
  if (!tables)
    return specError("LLVM has no target for this host (" +
                     llvm::sys::getProcessTriple() + ")");

  CPUTarget result;
  llvm::StringRef cpu = words.front();
  if (cpu == kHost) {
    result.host = true;
    result.cpu = llvm::sys::getHostCPUName().str();
    result.features = hostFeatureList();
  } else if (cpu.starts_with("+") || cpu.starts_with("-") ||
             !tables->isCPUStringValid(cpu)) {
    std::string valid;
    for (const llvm::SubtargetSubTypeKV &processor :
         tables->getAllProcessorDescriptions())
      valid += std::string(valid.empty() ? "" : ", ") + processor.Key;
    return specError("unknown CPU '" + cpu + "'; it must be 'host' or one of " +
                     llvm::Triple(llvm::sys::getProcessTriple()).getArchName() +
                     "'s processor names (" + valid +
                     "), optionally followed by ',+feature' or ',-feature' changes");
  } else {
    result.cpu = cpu.str();
  }

  for (llvm::StringRef word : llvm::drop_begin(words)) {
    if (word.size() < 2 || (word[0] != '+' && word[0] != '-'))
      return specError("'" + word + "' is not a feature change; write '+name' "
                       "to add a feature or '-name' to remove one");
    llvm::StringRef name = word.drop_front();
    bool known = llvm::any_of(tables->getAllProcessorFeatures(),
                              [&](const llvm::SubtargetFeatureKV &feature) {
                                return name == feature.Key;
                              });
    if (!known)
      return specError("unknown CPU feature '" + name + "' (in '" + word +
                       "'); LLVM's feature names are used, such as avx2, "
                       "avx512f, avx512fp16, amx-tile, fma");
    result.features.push_back(word.str());
  }

  // A specification that names a cleared feature itself keeps its choice.
  for (llvm::StringRef cleared : kClearedFeatures) {
    bool named = llvm::any_of(llvm::drop_begin(words), [&](llvm::StringRef word) {
      return word.drop_front() == cleared;
    });
    bool exists = llvm::any_of(
        tables->getAllProcessorFeatures(),
        [&](const llvm::SubtargetFeatureKV &feature) { return cleared == feature.Key; });
    if (exists && !named) {
      result.features.push_back(("-" + cleared).str());
      result.clearedFeatures.push_back(cleared.str());
    }
  }
  return result;
}

bool mlir::kiln::cpu::targetHasFeature(const CPUTarget &target,
                                       llvm::StringRef feature) {
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget =
      createSubtarget(target.cpu, llvm::join(target.features, ","));
  return subtarget && subtarget->checkFeatures(("+" + feature).str());
}

std::vector<std::string>
mlir::kiln::cpu::missingFeatures(const CPUTarget &target,
                                 const llvm::StringMap<bool> &hostFeatures) {
  std::vector<std::string> missing;
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget =
      createSubtarget(target.cpu, llvm::join(target.features, ","));
  if (!subtarget)
    return missing;
  for (const llvm::SubtargetFeatureKV &feature :
       subtarget->getAllProcessorFeatures()) {
    if (!subtarget->getFeatureBits().test(feature.Value))
      continue;
    auto reported = hostFeatures.find(feature.Key);
    if (reported != hostFeatures.end() && !reported->second)
      missing.push_back(feature.Key);
  }
  llvm::sort(missing);
  return missing;
}

std::vector<std::string>
mlir::kiln::cpu::missingHostFeatures(const CPUTarget &target) {
  llvm::StringMap<bool> host;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    host[feature.first()] = feature.second;
  return missingFeatures(target, host);
}

llvm::orc::JITTargetMachineBuilder
mlir::kiln::cpu::machineBuilderFor(const CPUTarget &target) {
  llvm::orc::JITTargetMachineBuilder builder{
      llvm::Triple(llvm::sys::getProcessTriple())};
  builder.setCPU(target.cpu);
  builder.addFeatures(target.features);
  builder.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  return builder;
}
