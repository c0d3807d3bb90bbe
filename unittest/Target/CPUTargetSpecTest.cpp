//===- CPUTargetSpecTest.cpp - KILN_CPU_TARGET specifications --------------===//

#include "kiln/Target/CPU/TargetSpec.h"

#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace mlir::kiln::cpu;

namespace {

std::string errorOf(llvm::StringRef spec) {
  auto target = parseCPUTarget(spec);
  if (target)
    return "";
  return llvm::toString(target.takeError());
}

bool contains(const std::vector<std::string> &list, llvm::StringRef item) {
  return std::find(list.begin(), list.end(), item.str()) != list.end();
}

bool isX86Host() {
  return llvm::Triple(llvm::sys::getProcessTriple()).getArch() ==
         llvm::Triple::x86_64;
}

TEST(CPUTargetSpec, EmptyAndHostMeanTheHost) {
  for (llvm::StringRef spec : {"", "host", " host "}) {
    auto target = parseCPUTarget(spec);
    ASSERT_TRUE(bool(target)) << llvm::toString(target.takeError());
    EXPECT_TRUE(target->host);
    EXPECT_EQ(target->cpu, llvm::sys::getHostCPUName().str());
    EXPECT_TRUE(missingHostFeatures(*target).empty());
  }
}

TEST(CPUTargetSpec, FeatureChangesAreKeptInOrder) {
  if (!isX86Host())
    GTEST_SKIP() << "x86-64 processor names";
  auto target = parseCPUTarget("x86-64-v3, +avx512f,-fma");
  ASSERT_TRUE(bool(target)) << llvm::toString(target.takeError());
  EXPECT_FALSE(target->host);
  EXPECT_EQ(target->cpu, "x86-64-v3");
  EXPECT_EQ(target->features, (std::vector<std::string>{
                                  "+avx512f", "-fma",
                                  "-fast-variable-crosslane-shuffle",
                                  "-avx512bf16"}));
}

TEST(CPUTargetSpec, MiscompilingFeaturesAreClearedUnlessNamed) {
  if (!isX86Host())
    GTEST_SKIP() << "x86-64 features";
  const std::vector<std::string> cleared = {"fast-variable-crosslane-shuffle",
                                            "avx512bf16"};
  for (llvm::StringRef spec : {"host", "x86-64-v4", "sapphirerapids,-amx-tile"}) {
    auto target = parseCPUTarget(spec);
    ASSERT_TRUE(bool(target)) << llvm::toString(target.takeError());
    EXPECT_EQ(target->clearedFeatures, cleared) << spec.str();
    ASSERT_GE(target->features.size(), 2u) << spec.str();
    EXPECT_EQ(std::vector<std::string>(target->features.end() - 2,
                                       target->features.end()),
              (std::vector<std::string>{"-fast-variable-crosslane-shuffle",
                                        "-avx512bf16"}))
        << spec.str();
  }
  // The tuning flag is no instruction set: the processor's own features
  // stay, but for AVX512-BF16, which Sapphire Rapids loses.
  auto v4 = parseCPUTarget("x86-64-v4");
  ASSERT_TRUE(bool(v4));
  EXPECT_TRUE(targetHasFeature(*v4, "avx512vl"));
  auto spr = parseCPUTarget("sapphirerapids");
  ASSERT_TRUE(bool(spr));
  EXPECT_TRUE(targetHasFeature(*spr, "avx512fp16"));
  EXPECT_FALSE(targetHasFeature(*spr, "avx512bf16"));
  // Named, a cleared feature keeps the specification's choice.
  auto named = parseCPUTarget("sapphirerapids,+avx512bf16,-fast-variable-crosslane-shuffle");
  ASSERT_TRUE(bool(named)) << llvm::toString(named.takeError());
  EXPECT_TRUE(named->clearedFeatures.empty());
  EXPECT_EQ(named->features.size(), 2u);
  EXPECT_TRUE(targetHasFeature(*named, "avx512bf16"));
  for (llvm::StringRef spec : {"x86-64-v4,+fast-variable-crosslane-shuffle",
                               "znver4,-fast-variable-crosslane-shuffle"}) {
    auto target = parseCPUTarget(spec);
    ASSERT_TRUE(bool(target)) << llvm::toString(target.takeError());
    EXPECT_EQ(target->clearedFeatures, std::vector<std::string>{"avx512bf16"})
        << spec.str();
    EXPECT_EQ(target->features.size(), 2u) << spec.str();
  }
}

TEST(CPUTargetSpec, UnknownNamesListTheValidOnes) {
  std::string error = errorOf("pentium-9000");
  EXPECT_NE(error.find("unknown CPU 'pentium-9000'"), std::string::npos) << error;
  EXPECT_NE(error.find("'host'"), std::string::npos) << error;
  if (isX86Host()) {
    for (const char *name : {"x86-64, ", "x86-64-v2", "x86-64-v3", "x86-64-v4",
                             "sapphirerapids", "znver4"})
      EXPECT_NE(error.find(name), std::string::npos) << name << ": " << error;
  }
  error = errorOf("host,+no-such-feature");
  EXPECT_NE(error.find("unknown CPU feature 'no-such-feature'"), std::string::npos)
      << error;
  error = errorOf("host,avx2");
  EXPECT_NE(error.find("'avx2' is not a feature change"), std::string::npos) << error;
  error = errorOf("+avx2");
  EXPECT_NE(error.find("unknown CPU '+avx2'"), std::string::npos) << error;
}

TEST(CPUTargetSpec, MissingFeaturesAreTheOnesTheHostLacks) {
  if (!isX86Host())
    GTEST_SKIP() << "x86-64 processor names";
  // A host (as getHostCPUFeatures reports one) with AVX2 but no AVX-512 and
  // no AVX-512 FP16 or AMX: an AMD EPYC of the Zen 3 kind.
  llvm::StringMap<bool> host;
  for (const char *name : {"sse4.2", "popcnt", "avx", "avx2", "fma", "bmi", "bmi2",
                           "f16c", "lzcnt", "movbe", "xsave", "cx16"})
    host[name] = true;
  for (const char *name : {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd",
                           "avx512fp16", "amx-tile"})
    host[name] = false;

  auto v3 = parseCPUTarget("x86-64-v3");
  ASSERT_TRUE(bool(v3));
  EXPECT_TRUE(missingFeatures(*v3, host).empty());

  auto v4 = parseCPUTarget("x86-64-v4");
  ASSERT_TRUE(bool(v4));
  std::vector<std::string> missing = missingFeatures(*v4, host);
  EXPECT_TRUE(contains(missing, "avx512f"));
  EXPECT_TRUE(contains(missing, "avx512bw"));
  EXPECT_FALSE(contains(missing, "avx2"));
  EXPECT_FALSE(contains(missing, "avx512fp16")); // v4 does not enable it

  auto spr = parseCPUTarget("sapphirerapids");
  ASSERT_TRUE(bool(spr));
  missing = missingFeatures(*spr, host);
  EXPECT_TRUE(contains(missing, "avx512fp16"));
  EXPECT_TRUE(contains(missing, "amx-tile"));
  // Tuning flags are not features a host reports or lacks.
  EXPECT_FALSE(contains(missing, "prefer-256-bit"));

  // Removing what the host lacks leaves nothing missing.
  auto trimmed = parseCPUTarget("sapphirerapids,-avx512f,-avx512fp16,-amx-tile");
  ASSERT_TRUE(bool(trimmed));
  missing = missingFeatures(*trimmed, host);
  EXPECT_FALSE(contains(missing, "avx512f"));
  EXPECT_FALSE(contains(missing, "avx512bw")); // implied by avx512f, removed with it
  EXPECT_FALSE(contains(missing, "avx512fp16"));
  EXPECT_FALSE(contains(missing, "amx-tile"));
}

} // namespace
