//===- cpu.cc - kiln._C.cpu: compiling and launching kernels on the host ---===//
//
// Binds the CPU backend: `compile(module, name, target)` JIT-compiles a
// module that went through the kiln-cpu-to-llvm pipeline into a `Kernel` for
// a target specification (TargetSpec.h; `parse_target` checks one), whose `launch`
// packs the arguments (ArgumentPacking.h codes; pointers are int addresses)
// and runs the grid on the host thread pool with the GIL released. A launch
// from the main thread watches for signals and ends in the signal handler's
// exception (KeyboardInterrupt for Ctrl-C).
//
//===----------------------------------------------------------------------===//

#include "ArgumentPacking.h"
#include "Diagnostics.h"
#include "IRModule.h"

#include "kiln/Target/CPU/JIT.h"
#include "kiln/Target/CPU/ObjectFile.h"
#include "kiln/Target/CPU/TargetSpec.h"

#include "llvm/ADT/StringExtras.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <thread>

#include <functional>
#include <memory>
#include <vector>

#include <pthread.h>

namespace py = pybind11;
using mlir::kiln::cpu::HostKernel;

namespace {

/// The parsed specification; a ValueError (its message) when it is invalid.
mlir::kiln::cpu::CPUTarget parseTarget(const std::string &spec) {
  auto target = mlir::kiln::cpu::parseCPUTarget(spec);
  if (!target)
    throw py::value_error(llvm::toString(target.takeError()));
  return std::move(*target);
}

/// (LLVM CPU name, feature changes, features the host lacks) of `spec`.
py::tuple describeTarget(const std::string &spec) {
  mlir::kiln::cpu::CPUTarget target = parseTarget(spec);
  return py::make_tuple(target.cpu, target.features,
                        mlir::kiln::cpu::missingHostFeatures(target));
}

/// (object file bytes, undefined symbols) of a CPU compile's optimized IR.
py::tuple emitObject(const std::string &llvmIR, const std::string &spec) {
  mlir::kiln::cpu::CPUTarget target = parseTarget(spec);
  auto object = mlir::kiln::cpu::emitObjectFile(llvmIR, target);
  if (!object)
    throw std::runtime_error(llvm::toString(object.takeError()));
  return py::make_tuple(py::bytes(object->bytes), object->undefined);
}

/// Whether kernels compiled for `spec` may use the LLVM feature `feature`.
bool targetHas(const std::string &spec, const std::string &feature) {
  return mlir::kiln::cpu::targetHasFeature(parseTarget(spec), feature);
}

std::shared_ptr<HostKernel> compileKernel(kiln::python::PyModule &module,
                                          const std::string &name,
                                          const std::string &target) {
  mlir::kiln::cpu::CPUTarget parsed = parseTarget(target);
  kiln::python::DiagnosticCapture capture(module.context.get());
  auto kernel = HostKernel::compile(module.get(), name, parsed);
  if (mlir::failed(kernel))
    capture.raise("CPU compilation");
  return std::shared_ptr<HostKernel>(std::move(*kernel));
}

/// The thread Python runs signal handlers in. A fork()ing thread is the
/// child's main thread, as in Python's own bookkeeping.
unsigned long mainThread = 0;

/// Whether the interpreter is shutting down: a thread that takes the GIL
/// then is ended by Python (pthread_exit).
bool isFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

/// Runs the main thread's pending signal handlers (the GIL taken for the
/// call); true if one raised, the exception then being set.
bool handlerRaised() {
  PyGILState_STATE state = PyGILState_Ensure();
  bool raised = PyErr_CheckSignals() != 0;
  PyGILState_Release(state);
  return raised;
}

unsigned readGridValue(py::handle value, const char *axis) {
  unsigned result;
  if (!kiln::python::readGrid(value.ptr(), axis, 0x7fffffffLL, result))
    throw py::error_already_set();
  return result;
}

void launch(const HostKernel &kernel, py::handle gx, py::handle gy,
            py::handle gz, const std::string &codes, py::tuple args,
            unsigned numThreads, py::object bounds) {
  // The frontend refuses first, naming the kernel; this is the last line
  // before an instruction the host lacks would kill the process.
  if (!kernel.getMissingFeatures().empty())
    throw py::value_error(
        "the kernel was compiled for a CPU with features this host lacks (" +
        llvm::join(kernel.getMissingFeatures(), ", ") + ")");
  unsigned x = readGridValue(gx, "x"), y = readGridValue(gy, "y"),
           z = readGridValue(gz, "z");
  Py_ssize_t count = Py_ssize_t(codes.size());
  if (PyTuple_GET_SIZE(args.ptr()) != count)
    throw py::value_error("launch: " + std::to_string(count) +
                          " argument codes for " +
                          std::to_string(PyTuple_GET_SIZE(args.ptr())) +
                          " arguments");
  std::vector<uint64_t> slots(count);
  std::vector<void *> params(count);
  Py_ssize_t used = 0;
  if (!kiln::python::packArguments(codes.c_str(), count, args.ptr(),
                                   slots.data(), params.data(), used))
    throw py::error_already_set();

  std::vector<int64_t> table;
  if (!bounds.is_none()) {
    for (py::handle entry : bounds) {
      auto pair = entry.cast<std::pair<int64_t, int64_t>>();
      table.push_back(pair.first);
      table.push_back(pair.second);
    }
  }
  std::optional<mlir::kiln::cpu::OutOfBounds> fault;
  std::string assertion;
  // Only the main thread runs signal handlers, so only its launches watch.
  std::function<bool()> interrupted = handlerRaised;
  bool onMainThread = PyThread_get_thread_ident() == mainThread;
  // Not py::gil_scoped_release: taking the GIL back may end this thread at
  // interpreter exit (a daemon thread), which unwinds the stack, and an
  // unwind out of that destructor (noexcept) aborts the process.
  PyThreadState *released = PyEval_SaveThread();
  fault = kernel.launch(x, y, z, params.data(), numThreads,
                        bounds.is_none() ? nullptr : &table, &assertion,
                        onMainThread ? &interrupted : nullptr);
  if (!onMainThread && isFinalizing()) {
    // Python would end this thread as it takes the GIL (the finalizing one,
    // the main thread, takes it back normally); rather than unwind through
    // frames holding Python objects without the GIL, wait here for the
    // process to exit.
    for (;;)
      std::this_thread::sleep_for(std::chrono::hours(1));
  }
  PyEval_RestoreThread(released);
  if (PyErr_Occurred()) // a signal handler raised: the launch was cut short
    throw py::error_already_set();
  if (!assertion.empty()) {
    // kiln.errors.DeviceAssertionError, an AssertionError.
    py::object error = py::module_::import("kiln.errors").attr("DeviceAssertionError");
    PyErr_SetObject(error.ptr(), py::str(assertion).ptr());
    throw py::error_already_set();
  }
  if (!fault)
    return;
  const auto &sites = kernel.getSites();
  std::string message = "out-of-bounds access";
  if (fault->site >= 0 && size_t(fault->site) < sites.size()) {
    const auto &site = sites[fault->site];
    int64_t size = 0;
    if (size_t(2 * site.parameter + 1) < table.size())
      size = table[2 * site.parameter + 1];
    message = site.location + ": out-of-bounds " +
              (site.store ? "store to" : "load from") + " parameter " +
              std::to_string(site.parameter) + " at element index " +
              std::to_string(fault->index) + " (the buffer has " +
              std::to_string(size / std::max(1, site.elementBytes)) +
              " elements)";
  }
  throw py::index_error(message);
}

} // namespace

void initCPU(py::module_ &m) {
  py::class_<HostKernel, std::shared_ptr<HostKernel>>(
      m, "Kernel", "A kernel compiled for the host by the CPU backend")
      .def_property_readonly("llvm_ir", &HostKernel::getLLVMIR,
                             "the optimized LLVM IR")
      .def_property_readonly(
          "missing_features", &HostKernel::getMissingFeatures,
          "the features of the kernel's target that this host lacks (then "
          "the kernel cannot be launched)")
      .def_property_readonly(
          "sites",
          [](const HostKernel &kernel) {
            py::list sites;
            for (const auto &site : kernel.getSites())
              sites.append(py::make_tuple(site.location, site.parameter, site.store));
            return sites;
          },
          "(location, parameter, is_store) of each checked access")
      .def("launch", &launch, py::arg("grid_x"), py::arg("grid_y"),
           py::arg("grid_z"), py::arg("codes"), py::arg("args"),
           py::arg("num_threads") = 0, py::arg("bounds") = py::none(),
           "Run every program of the grid on the host; raises IndexError for "
           "an out-of-bounds access of a checked kernel");
  m.def("live_kernels", &HostKernel::getLiveCount,
        "How many compiled CPU kernels exist (each holds its JIT'd code)");
  mainThread = py::module_::import("threading")
                   .attr("main_thread")()
                   .attr("ident")
                   .cast<unsigned long>();
  pthread_atfork(nullptr, nullptr, [] { mainThread = PyThread_get_thread_ident(); });
  m.def("compile", &compileKernel, py::arg("module"), py::arg("name"),
        py::arg("target") = "host",
        "JIT-compile a module lowered by kiln-cpu-to-llvm for a target "
        "specification (raises MLIRError, or ValueError for the target)");
  m.def("target_has", &targetHas, py::arg("spec"), py::arg("feature"),
        "whether kernels compiled for the target specification `spec` may "
        "use the LLVM feature `feature` (e.g. 'avx2'); ValueError for an "
        "invalid specification");
  m.def("emit_object", &emitObject, py::arg("llvm_ir"), py::arg("target") = "host",
        "(ELF object bytes, undefined symbol names) of the optimized LLVM IR "
        "of a CPU compile (asm['llir']) for a target specification, position "
        "independent (ValueError for the target, RuntimeError otherwise)");
  m.def("describe_target", &describeTarget, py::arg("spec"),
        "(cpu, feature changes, features the host lacks) of a target "
        "specification such as 'host', 'x86-64-v3' or "
        "'sapphirerapids,-avx512fp16'; ValueError for an invalid one");
}
