//===- compiler.cc - kiln._C.compiler: pipelines and code generation -------===//
//
// Binds the registered pass pipelines (run from their textual form, so the
// exact string can be replayed with `kiln-opt --pass-pipeline=...`) and the
// LLVM IR / PTX generation of the NVIDIA target. Failures raise
// kiln._C.ir.MLIRError with the diagnostics located in the kernel source.
//
//===----------------------------------------------------------------------===//

#include "Diagnostics.h"
#include "IRModule.h"

#include "kiln/Target/NVIDIA/Libdevice.h"
#include "kiln/Target/NVIDIA/PTX.h"
#include "kiln/Target/Registration.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

namespace py = pybind11;
using kiln::python::DiagnosticCapture;
using kiln::python::PyModule;

/// Parses and runs `pipeline` (e.g. "builtin.module(kiln-nvidia-to-kiln-gpu{
/// num-warps=4 target=sm_90a})") on the module, in place.
static void runPassPipeline(PyModule &module, const std::string &pipeline) {
  mlir::MLIRContext *context = module.context.get();
  DiagnosticCapture capture(context);
  std::string parseErrors;
  llvm::raw_string_ostream errorStream(parseErrors);
  // The text names its anchor (builtin.module(...)), as kiln-opt's
  // --pass-pipeline does; parsing it whole keeps the two identical.
  mlir::FailureOr<mlir::OpPassManager> parsed =
      mlir::parsePassPipeline(pipeline, errorStream);
  if (mlir::failed(parsed))
    throw py::value_error("invalid pass pipeline '" + pipeline + "': " +
                          parseErrors);
  mlir::PassManager manager(context, parsed->getOpAnchorName());
  static_cast<mlir::OpPassManager &>(manager) = std::move(*parsed);
  if (mlir::failed(manager.run(module.get())) || capture.hasErrors())
    capture.raise("pass pipeline " + pipeline);
  // A pass that left invalid IR without a diagnostic is a compiler bug, but
  // it must still reach the user as an error, not a crash later.
  if (mlir::failed(mlir::verify(module.get())))
    capture.raise("verification after " + pipeline);
}

static py::tuple translateToPTX(PyModule &module, const std::string &chip,
                                bool enableFpFusion, bool enableReflectFtz) {
  DiagnosticCapture capture(module.context.get());
  mlir::kiln::nvidia::TranslationOptions options;
  options.enableFpFusion = enableFpFusion;
  options.flushDenormals = enableReflectFtz;
  auto output = mlir::kiln::nvidia::translateToPTX(module.get(), chip, options);
  if (mlir::failed(output))
    capture.raise("PTX generation");
  return py::make_tuple(output->llvmIR, output->ptx);
}

void initCompiler(py::module_ &m) {
  mlir::kiln::registerAllPasses();
  m.def("run_pass_pipeline", &runPassPipeline, py::arg("module"),
        py::arg("pipeline"),
        "Run a textual pass pipeline on a module in place (raises MLIRError)");
  m.def("translate_to_ptx", &translateToPTX, py::arg("module"), py::arg("chip"),
        py::arg("enable_fp_fusion") = true, py::arg("enable_reflect_ftz") = true,
        "Translate an LLVM-dialect module to (optimized LLVM IR, PTX) for chip; "
        "without enable_fp_fusion, no multiply and add fuse into an fma; with "
        "enable_reflect_ftz, libdevice's f32 functions flush denormals");
  m.def(
      "find_libdevice",
      []() -> std::optional<std::string> {
        llvm::Expected<std::string> path = mlir::kiln::nvidia::findLibdevice();
        if (!path) {
          llvm::consumeError(path.takeError());
          return std::nullopt;
        }
        return *path;
      },
      "The libdevice.10.bc that kernels calling math functions link, where "
      "the compiler would find one now (KILN_LIBDEVICE_PATH, the one bundled "
      "with kiln, the CUDA toolkit's), or None");
  m.def("is_valid_chip",
        [](const std::string &chip) { return mlir::kiln::nvidia::isValidChip(chip); },
        py::arg("chip"),
        "Whether LLVM's NVPTX backend knows this chip (sm_80, sm_90a, ...)");
}
