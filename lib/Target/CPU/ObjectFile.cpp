//===- ObjectFile.cpp - Ahead-of-time object files for the host ------------===//
//
// Code generation of the IR the JIT would compile, written to an object file
// instead of memory: the same processor and features (machineBuilderFor),
// position-independent so that the object links into executables and shared
// libraries alike.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/ObjectFile.h"

#include "kiln/Target/CPU/TargetSpec.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>

using namespace mlir::kiln::cpu;

llvm::Expected<ObjectFile>
mlir::kiln::cpu::emitObjectFile(llvm::StringRef llvmIR, const CPUTarget &target) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::LLVMContext context;
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module = llvm::parseIR(
      llvm::MemoryBufferRef(llvmIR, "kernel.ll"), diagnostic, context);
  if (!module) {
    std::string text;
    llvm::raw_string_ostream os(text);
    diagnostic.print("kernel.ll", os);
    return llvm::createStringError("cannot parse the kernel's LLVM IR: %s",
                                   text.c_str());
  }

  llvm::orc::JITTargetMachineBuilder builder = machineBuilderFor(target);
  builder.setRelocationModel(llvm::Reloc::PIC_);
  auto machine = builder.createTargetMachine();
  if (!machine)
    return machine.takeError();
  module->setTargetTriple((*machine)->getTargetTriple());
  module->setDataLayout((*machine)->createDataLayout());

  ObjectFile object;
  llvm::SmallString<0> buffer;
  {
    llvm::raw_svector_ostream stream(buffer);
    llvm::legacy::PassManager passes;
    if ((*machine)->addPassesToEmitFile(passes, stream, nullptr,
                                        llvm::CodeGenFileType::ObjectFile))
      return llvm::createStringError(
          "the target machine for CPU '%s' cannot emit object files",
          target.cpu.c_str());
    passes.run(*module);
  }
  object.bytes.assign(buffer.begin(), buffer.end());

  // From the object rather than the IR: code generation adds calls of its
  // own (a vector llvm.exp becomes calls of expf).
  auto parsed = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(object.bytes, "kernel.o"));
  if (!parsed)
    return parsed.takeError();
  for (const llvm::object::SymbolRef &symbol : (*parsed)->symbols()) {
    auto flags = symbol.getFlags();
    auto name = symbol.getName();
    if (!flags || !name)
      return llvm::createStringError("cannot read the object's symbols");
    if ((*flags & llvm::object::SymbolRef::SF_Undefined) &&
        *name != "_GLOBAL_OFFSET_TABLE_")
      object.undefined.push_back(name->str());
  }
  return object;
}
