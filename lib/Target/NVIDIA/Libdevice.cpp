//===- Libdevice.cpp - Linking NVIDIA's libdevice into kernels -------------===//
//
// Finds libdevice.10.bc, links the functions a kernel module needs from it,
// internalizes them, and folds the reflect queries libdevice makes about
// the compilation mode.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVIDIA/Libdevice.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Transforms/IPO/Internalize.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace mlir::kiln;

static constexpr const char *kLibdeviceFile = "libdevice.10.bc";

/// Where a wheel bundles libdevice: `lib/libdevice.10.bc` beside the binary
/// this code is linked into (the extension kiln._C). Empty if the binary's
/// path is unknown.
static std::string bundledLibdevice() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&nvidia::findLibdevice), &info) ||
      !info.dli_fname || !*info.dli_fname)
    return {};
  llvm::SmallString<256> path(info.dli_fname);
  if (llvm::sys::fs::make_absolute(path))
    return {};
  llvm::sys::path::remove_filename(path);
  llvm::sys::path::append(path, "lib", kLibdeviceFile);
  return std::string(path);
}

llvm::Expected<std::string> nvidia::findLibdevice() {
  if (const char *path = std::getenv("KILN_LIBDEVICE_PATH"); path && *path) {
    if (llvm::sys::fs::exists(path))
      return std::string(path);
    return llvm::createStringError(
        "KILN_LIBDEVICE_PATH is '%s', which does not exist; set it to the "
        "path of %s",
        path, kLibdeviceFile);
  }
  std::string tried;
  if (std::string bundled = bundledLibdevice(); !bundled.empty()) {
    if (llvm::sys::fs::exists(bundled))
      return bundled;
    tried = bundled;
  }
  std::vector<std::string> candidates;
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *home = std::getenv(variable); home && *home)
      candidates.push_back(home);
  candidates.push_back("/usr/local/cuda");
  for (const std::string &home : candidates) {
    llvm::SmallString<256> path(home);
    llvm::sys::path::append(path, "nvvm", "libdevice", kLibdeviceFile);
    if (llvm::sys::fs::exists(path))
      return std::string(path);
    tried += (tried.empty() ? "" : ", ") + std::string(path);
  }
  return llvm::createStringError(
      "cannot find %s, which kernels calling math functions need (looked "
      "for %s); install the CUDA toolkit or set KILN_LIBDEVICE_PATH",
      kLibdeviceFile, tried.c_str());
}

bool nvidia::callsLibdevice(const llvm::Module &module) {
  for (const llvm::Function &function : module)
    if (function.isDeclaration() && function.getName().starts_with("__nv_"))
      return true;
  return false;
}

/// The name a `__nvvm_reflect` call asks about, if it is a constant string.
static std::optional<llvm::StringRef> reflectQuery(llvm::CallInst *call) {
  if (call->arg_size() != 1)
    return std::nullopt;
  auto *global = llvm::dyn_cast<llvm::GlobalVariable>(
      call->getArgOperand(0)->stripPointerCasts());
  if (!global || !global->hasInitializer())
    return std::nullopt;
  auto *data =
      llvm::dyn_cast<llvm::ConstantDataSequential>(global->getInitializer());
  if (!data || !data->isCString())
    return std::nullopt;
  return data->getAsCString();
}

/// Whether `function` is one of the correctly rounded division and square
/// root (`kl.div_rn`, `fdiv(ieee_rounding=True)`, `libdevice.sqrt_rn`): as
/// in Triton 3.6, these keep denormals whatever the kernel's FTZ choice, so
/// that asking for IEEE rounding gets IEEE results.
static bool isIEEERounded(const llvm::Function &function) {
  return function.getName() == "__nv_fdiv_rn" ||
         function.getName() == "__nv_fsqrt_rn";
}

/// Answers libdevice's questions about the compilation mode: whether
/// single-precision functions flush denormals (`__CUDA_FTZ`, the kernel's
/// choice, except in isIEEERounded functions) and that square roots are
/// IEEE-rounded (`__CUDA_PREC_SQRT` = 1). Other queries stay for
/// NVVMReflect. Runs right after linking, before inlining, so each query
/// still sits in the libdevice function that asks it.
static void foldReflectQueries(llvm::Module &module, bool flushDenormals) {
  llvm::Function *reflect = module.getFunction("__nvvm_reflect");
  if (!reflect)
    return;
  llvm::SmallVector<llvm::CallInst *> calls;
  for (llvm::User *user : reflect->users())
    if (auto *call = llvm::dyn_cast<llvm::CallInst>(user))
      calls.push_back(call);
  for (llvm::CallInst *call : calls) {
    std::optional<llvm::StringRef> query = reflectQuery(call);
    if (!query)
      continue;
    int value;
    if (*query == "__CUDA_FTZ")
      value = flushDenormals && !isIEEERounded(*call->getFunction()) ? 1 : 0;
    else if (*query == "__CUDA_PREC_SQRT")
      value = 1;
    else
      continue;
    call->replaceAllUsesWith(llvm::ConstantInt::get(call->getType(), value));
    call->eraseFromParent();
  }
}

llvm::Error nvidia::linkLibdevice(llvm::Module &module, const std::string &path,
                                  bool flushDenormals) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read %s: %s",
                                   path.c_str(),
                                   buffer.getError().message().c_str());
  // Lazily: the linker materializes only the functions the kernel calls
  // (and theirs), not all of libdevice's ~500, which halves the cost of a
  // compile that uses one math function.
  auto library =
      llvm::getOwningLazyBitcodeModule(std::move(*buffer), module.getContext());
  if (!library)
    return llvm::createStringError(
        "cannot parse %s: %s", path.c_str(),
        llvm::toString(library.takeError()).c_str());
  (*library)->setTargetTriple(module.getTargetTriple());
  (*library)->setDataLayout(module.getDataLayout());

  // What the kernel module defines itself stays visible; everything linked
  // in becomes internal, so unused and inlined functions are dropped.
  llvm::StringSet<> own;
  for (const llvm::GlobalValue &value : module.global_values())
    if (!value.isDeclaration())
      own.insert(value.getName());
  if (llvm::Linker::linkModules(module, std::move(*library),
                                llvm::Linker::Flags::LinkOnlyNeeded))
    return llvm::createStringError("cannot link %s into the kernel module",
                                   path.c_str());
  llvm::internalizeModule(module, [&](const llvm::GlobalValue &value) {
    return value.isDeclaration() || own.contains(value.getName());
  });
  foldReflectQueries(module, flushDenormals);
  module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz",
                       uint32_t(flushDenormals ? 1 : 0));
  return llvm::Error::success();
}
