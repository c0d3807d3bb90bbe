//===- main.cc - The kiln._C extension module ------------------------------===//
//
// Entry point of the extension: one submodule per concern, each defined in
// its own file.
//
//===----------------------------------------------------------------------===//

#include <pybind11/pybind11.h>

namespace py = pybind11;

void initIR(py::module_ &m);
void initCompiler(py::module_ &m);
void initDriver(py::module_ &m);
void initCPU(py::module_ &m);
void initLaunch(py::module_ &m);

PYBIND11_MODULE(_C, m) {
  m.doc() = "Kiln's C++ core: IR building, compilation and the CUDA runtime";
  auto ir = m.def_submodule("ir", "Building kiln-dialect IR");
  initIR(ir);
  auto compiler = m.def_submodule("compiler", "Pass pipelines and code generation");
  initCompiler(compiler);
  auto driver = m.def_submodule("driver", "The CUDA driver, opened at run time");
  initDriver(driver);
  auto cpu = m.def_submodule("cpu", "The CPU backend: host JIT and launcher");
  initCPU(cpu);
  auto launch = m.def_submodule("launch", "kernel[grid](...): the native launch path");
  initLaunch(launch);
}
