//===- PTX.cpp - LLVM IR and PTX generation for NVIDIA GPUs ----------------===//
//
// Translates the LLVM + NVVM dialects to LLVM IR, links libdevice when the
// kernel calls it, runs LLVM's O3 pipeline with the NVPTX target machine,
// and prints PTX.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVIDIA/PTX.h"

#include "kiln/Target/NVIDIA/BooleanVectors.h"
#include "kiln/Target/NVIDIA/Libdevice.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"
#include "llvm/Transforms/Scalar/DCE.h"
#include "llvm/Transforms/Scalar/EarlyCSE.h"
#include "llvm/Transforms/Scalar/Scalarizer.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>

using namespace mlir;

static const char *kTriple = "nvptx64-nvidia-cuda";

/// The registered NVPTX target (initialized on first use), or null with
/// `error` set.
static const llvm::Target *nvptxTarget(std::string &error) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  return llvm::TargetRegistry::lookupTarget(llvm::Triple(kTriple), error);
}

/// PTX ISA version to emit for `chip`: 8.0 covers sm_90a and everything
/// before it, and every CUDA 12+ ptxas and driver reads it.
static std::string ptxFeatures(StringRef chip) {
  (void)chip;
  return "+ptx80";
}

static std::unique_ptr<llvm::TargetMachine>
createTargetMachine(StringRef chip, std::string &error, bool enableFpFusion = true) {
  const llvm::Target *target = nvptxTarget(error);
  if (!target)
    return nullptr;
  llvm::Triple triple(kTriple);
  llvm::TargetOptions options;
  // As Triton (enable_fp_fusion, on by default): a * b + c may become one
  // fma, rounded once. Otherwise the backend emits mul.rn/add.rn, which
  // also keeps ptxas from fusing them.
  options.AllowFPOpFusion =
      enableFpFusion ? llvm::FPOpFusion::Fast : llvm::FPOpFusion::Strict;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, chip, ptxFeatures(chip), options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
}

/// Whether the NVPTX backend of `machine` knows `chip`.
static bool knowsChip(const llvm::TargetMachine &machine, StringRef chip) {
  return machine.getMCSubtargetInfo()->isCPUStringValid(chip);
}

bool mlir::kiln::nvidia::isValidChip(StringRef chip) {
  // The subtarget table alone: a whole target machine costs about a
  // millisecond, which a launch choosing its backend would pay.
  std::string error;
  const llvm::Target *target = nvptxTarget(error);
  if (!target)
    return false;
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(llvm::Triple(kTriple), "", ""));
  return info && info->isCPUStringValid(chip);
}

FailureOr<kiln::nvidia::PTXOutput>
mlir::kiln::nvidia::translateToPTX(ModuleOp module, StringRef chip,
                                   const TranslationOptions &options) {
  std::string error;
  auto machine = createTargetMachine(chip, error, options.enableFpFusion);
  if (!machine)
    return module.emitError() << "cannot create the NVPTX target: " << error;
  if (!knowsChip(*machine, chip))
    return module.emitError() << "expected an NVIDIA chip such as sm_80 or "
                                 "sm_90a, got '" << chip << "'";

  // The translations are registered here, not only by whoever created the
  // context, so that any module in the LLVM + NVVM dialects translates.
  MLIRContext *context = module.getContext();
  registerBuiltinDialectTranslation(*context);
  registerLLVMDialectTranslation(*context);
  registerNVVMDialectTranslation(*context);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "kiln");
  if (!llvmModule)
    return module.emitError() << "translation to LLVM IR failed";
  llvmModule->setTargetTriple(machine->getTargetTriple());
  llvmModule->setDataLayout(machine->createDataLayout());

  // Math functions come from libdevice, linked before optimizing so that
  // they inline and what is unused disappears.
  if (nvidia::callsLibdevice(*llvmModule)) {
    llvm::Expected<std::string> libdevice = nvidia::findLibdevice();
    if (!libdevice)
      return module.emitError() << llvm::toString(libdevice.takeError());
    if (llvm::Error linkError = nvidia::linkLibdevice(
            *llvmModule, *libdevice, options.flushDenormals))
      return module.emitError() << llvm::toString(std::move(linkError));
  }

  // LLVM's standard O3 pipeline, with the NVPTX machine's cost model, then
  // vectors split.
  {
    llvm::LoopAnalysisManager loopAnalyses;
    llvm::FunctionAnalysisManager functionAnalyses;
    llvm::CGSCCAnalysisManager cgsccAnalyses;
    llvm::ModuleAnalysisManager moduleAnalyses;
    llvm::PassBuilder builder(machine.get());
    builder.registerModuleAnalyses(moduleAnalyses);
    builder.registerCGSCCAnalyses(cgsccAnalyses);
    builder.registerFunctionAnalyses(functionAnalyses);
    builder.registerLoopAnalyses(loopAnalyses);
    builder.crossRegisterProxies(loopAnalyses, functionAnalyses, cgsccAnalyses,
                                 moduleAnalyses);
    llvm::ModulePassManager passes =
        builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    passes.run(*llvmModule, moduleAnalyses);

    // Blocks are LLVM vectors, which a GPU thread has no use for beyond
    // 32-bit packed pairs (f16x2) and wide memory accesses. Left whole, the
    // NVPTX backend legalizes vectors of i1 (a block's masks) by packing
    // them into integers and shifting them back out: 54 of the 196
    // instructions of the tutorial matmul's loop. Split into fragments of
    // at least 32 bits (loads and stores kept whole), the masks into single
    // lanes (which that fragment size leaves whole; BooleanVectors.h), then
    // cleaned up.
    llvm::ScalarizerPassOptions scalarizer;
    scalarizer.ScalarizeLoadStore = false;
    scalarizer.ScalarizeMinBits = 32;
    llvm::FunctionPassManager cleanup;
    cleanup.addPass(llvm::ScalarizerPass(scalarizer));
    cleanup.addPass(nvidia::SplitBooleanVectorsPass());
    cleanup.addPass(llvm::InstCombinePass());
    cleanup.addPass(llvm::EarlyCSEPass());
    cleanup.addPass(llvm::DCEPass());
    llvm::ModulePassManager split;
    split.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(cleanup)));
    split.run(*llvmModule, moduleAnalyses);
  }
  std::string verifyErrors;
  llvm::raw_string_ostream verifyStream(verifyErrors);
  if (llvm::verifyModule(*llvmModule, &verifyStream))
    return module.emitError() << "optimized LLVM IR is invalid: " << verifyErrors;

  PTXOutput output;
  {
    llvm::raw_string_ostream os(output.llvmIR);
    llvmModule->print(os, nullptr);
  }
  {
    llvm::SmallString<0> ptx;
    llvm::raw_svector_ostream os(ptx);
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                     llvm::CodeGenFileType::AssemblyFile))
      return module.emitError() << "the NVPTX backend cannot emit assembly";
    codegen.run(*llvmModule);
    output.ptx = ptx.str().str();
  }
  return output;
}
