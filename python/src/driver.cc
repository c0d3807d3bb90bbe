//===- driver.cc - kiln._C.driver: the CUDA driver for Python --------------===//
//
// Binds kiln::runtime::CudaDriver as kiln._C.driver: device queries, loading
// a compiled kernel, and the launch fast path. `launch` is a raw CPython
// METH_FASTCALL function rather than a pybind11 one because it runs on every
// kernel call: pybind11's overload dispatch and argument casting would cost
// more than the rest of the launch. It packs the kernel arguments according
// to a per-kernel code string (one character per bound parameter) into
// 8-byte slots and calls cuLaunchKernel once.
//
// The argument codes are those of ArgumentPacking.h.
//
//===----------------------------------------------------------------------===//

#include "ArgumentPacking.h"
#include "DirectLaunch.h"

#include "kiln/Target/NVIDIA/CudaDriver.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <Python.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace py = pybind11;
using kiln::runtime::CudaDriver;
using kiln::runtime::DeviceProperties;
using kiln::runtime::LoadedKernel;
using kiln::python::KnownAddresses;
using kiln::python::kMaxCudaGrid;
using kiln::python::packArguments;
using kiln::python::readInt64;
using kiln::python::readUInt64;
using kiln::python::readGrid;
using kiln::runtime::Status;
using kiln::runtime::TensorMapRequest;

namespace {

/// Raises RuntimeError with the status message when the call failed.
void throwIfFailed(const Status &status) {
  if (!status.ok())
    throw std::runtime_error(status.message());
}

/// Packs the `count` arguments at `items` by `codes` and launches `function`
/// over `grid` (nothing for an empty grid, as with CUDA). Returns false with
/// a Python exception set.
bool packAndLaunch(void *function, const unsigned grid[3], unsigned blockX,
                   unsigned shared, void *stream, const char *codes,
                   Py_ssize_t count, PyObject *const *items,
                   const KnownAddresses *known) {
  // Small kernels pack on the stack; only unusually long signatures allocate.
  constexpr Py_ssize_t kInline = 64;
  uint64_t inlineSlots[kInline];
  void *inlineParams[kInline];
  std::vector<uint64_t> heapSlots;
  std::vector<void *> heapParams;
  uint64_t *slots = inlineSlots;
  void **params = inlineParams;
  if (count > kInline) {
    heapSlots.resize(count);
    heapParams.resize(count);
    slots = heapSlots.data();
    params = heapParams.data();
  }
  Py_ssize_t used;
  if (!packArguments(codes, count, items, known, slots, params, used))
    return false;
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return true;
  Status status;
  Py_BEGIN_ALLOW_THREADS;
  status = CudaDriver::get().launch(function, grid[0], grid[1], grid[2], blockX,
                                    shared, stream, params);
  Py_END_ALLOW_THREADS;
  if (!status.ok()) {
    PyErr_SetString(PyExc_RuntimeError, status.message().c_str());
    return false;
  }
  return true;
}

/// launch(grid_x, grid_y, grid_z, num_warps, shared_mem, stream,
///        function_handle, arg_codes, args) -> None
PyObject *launch(PyObject *, PyObject *const *argv, Py_ssize_t argc) {
  if (argc != 9) {
    PyErr_Format(PyExc_TypeError,
                 "launch() takes 9 arguments (grid_x, grid_y, grid_z, "
                 "num_warps, shared_mem, stream, function, arg_codes, args), "
                 "got %zd",
                 argc);
    return nullptr;
  }
  unsigned grid[3];
  if (!readGrid(argv[0], "x", kMaxCudaGrid[0], grid[0]) ||
      !readGrid(argv[1], "y", kMaxCudaGrid[1], grid[1]) ||
      !readGrid(argv[2], "z", kMaxCudaGrid[2], grid[2]))
    return nullptr;
  long long numWarps, shared;
  if (!readInt64(argv[3], numWarps) || numWarps < 1 || numWarps > 32) {
    PyErr_Clear();
    PyErr_SetString(PyExc_ValueError,
                    "num_warps must be an int between 1 and 32");
    return nullptr;
  }
  if (!readInt64(argv[4], shared) || shared < 0 || shared > 0x7fffffffLL) {
    PyErr_Clear();
    PyErr_SetString(PyExc_ValueError,
                    "shared_mem must be a non-negative int");
    return nullptr;
  }
  unsigned long long stream = 0, function = 0;
  if (argv[5] != Py_None && !readUInt64(argv[5], stream)) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "stream must be an int handle or None");
    return nullptr;
  }
  if (!readUInt64(argv[6], function) || function == 0) {
    PyErr_Clear();
    PyErr_SetString(PyExc_ValueError,
                    "function must be a handle returned by load_binary");
    return nullptr;
  }
  if (!PyUnicode_Check(argv[7]) || !PyTuple_Check(argv[8])) {
    PyErr_SetString(PyExc_TypeError,
                    "arg_codes must be a str and args a tuple");
    return nullptr;
  }
  Py_ssize_t codeCount;
  const char *codes = PyUnicode_AsUTF8AndSize(argv[7], &codeCount);
  if (!codes)
    return nullptr;
  PyObject *args = argv[8];
  if (PyTuple_GET_SIZE(args) != codeCount) {
    PyErr_Format(PyExc_TypeError,
                 "kernel takes %zd arguments, got %zd", codeCount,
                 PyTuple_GET_SIZE(args));
    return nullptr;
  }
  if (!packAndLaunch(reinterpret_cast<void *>(uintptr_t(function)), grid,
                     unsigned(32 * numWarps), unsigned(shared),
                     reinterpret_cast<void *>(uintptr_t(stream)), codes, codeCount,
                     reinterpret_cast<PyTupleObject *>(args)->ob_item, nullptr))
    return nullptr;
  Py_RETURN_NONE;
}

PyMethodDef launchDefinition = {
    "launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void *>(launch)),
    METH_FASTCALL,
    "launch(grid_x, grid_y, grid_z, num_warps, shared_mem, stream, function, "
    "arg_codes, args)\n--\n\n"
    "Launches a loaded kernel with 32 * num_warps threads per program on the "
    "given stream handle (0 or None: the default stream). arg_codes has one "
    "character per element of args (see driver.cc); '-' skips a constexpr. "
    "An empty grid launches nothing. Raises RuntimeError naming the CUDA "
    "error."};

/// A CUDA kernel's launch for the native path (DirectLaunch.h).
struct CudaDirectLaunch {
  PyObject_HEAD
  void *function;
  std::string *codes;
  unsigned blockX;
  unsigned shared;
  PyObject *device;       // int, what the stream source takes
  PyObject *streamSource; // the module whose current_stream(device) gives the stream
};

PyTypeObject *CudaDirectLaunchType = nullptr;
PyObject *currentStreamName = nullptr;

void directLaunchDealloc(PyObject *self) {
  auto *direct = reinterpret_cast<CudaDirectLaunch *>(self);
  delete direct->codes;
  Py_XDECREF(direct->device);
  Py_XDECREF(direct->streamSource);
  PyTypeObject *type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type); // instances of heap types hold a reference to it
}

PyType_Slot directLaunchSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void *>(directLaunchDealloc)},
    {Py_tp_doc, const_cast<char *>(
                    "A loaded CUDA kernel's launch, run by the native launch path "
                    "without Python code")},
    {0, nullptr}};

PyType_Spec directLaunchSpec = {"kiln._C.driver.DirectLaunch", sizeof(CudaDirectLaunch), 0,
                                Py_TPFLAGS_DEFAULT, directLaunchSlots};

/// The raw handle of the current stream on the kernel's device: the stream
/// source module's current_stream(device), read per launch (it rebinds
/// itself to torch's entry point on first use, and tests replace it).
bool currentStream(CudaDirectLaunch *direct, void *&stream) {
  PyObject *source = PyObject_GetAttr(direct->streamSource, currentStreamName);
  if (!source)
    return false;
  PyObject *handle = PyObject_CallOneArg(source, direct->device);
  Py_DECREF(source);
  if (!handle)
    return false;
  unsigned long long value = 0;
  bool ok = handle == Py_None || readUInt64(handle, value);
  Py_DECREF(handle);
  if (!ok) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "current_stream() must return an int handle or None");
    return false;
  }
  stream = reinterpret_cast<void *>(uintptr_t(value));
  return true;
}

py::dict propertiesToDict(const DeviceProperties &p) {
  py::dict d;
  d["name"] = p.name;
  d["capability"] = py::make_tuple(p.computeCapabilityMajor,
                                   p.computeCapabilityMinor);
  d["multiprocessor_count"] = p.multiprocessorCount;
  d["warp_size"] = p.warpSize;
  d["max_threads_per_block"] = p.maxThreadsPerBlock;
  // Triton's name for the opt-in limit, which is what kernels may use.
  d["max_shared_mem"] = p.maxSharedMemoryPerBlockOptin;
  d["max_shared_mem_per_block"] = p.maxSharedMemoryPerBlock;
  d["max_num_regs"] = p.maxRegistersPerBlock;
  if (p.hasClockRates) {
    d["sm_clock_rate"] = p.clockRateKHz;
    d["mem_clock_rate"] = p.memoryClockRateKHz;
  }
  d["mem_bus_width"] = p.memoryBusWidthBits;
  d["l2_cache_size"] = p.l2CacheBytes;
  d["total_memory"] = p.totalMemoryBytes;
  return d;
}

} // namespace

namespace kiln::python {

bool isDirectLaunch(PyObject *object) {
  return CudaDirectLaunchType && Py_TYPE(object) == CudaDirectLaunchType;
}

bool launchDirectly(PyObject *object, const unsigned grid[3], PyObject *const *args,
                    Py_ssize_t count, const KnownAddresses &known) {
  auto *direct = reinterpret_cast<CudaDirectLaunch *>(object);
  if (Py_ssize_t(direct->codes->size()) != count) {
    PyErr_Format(PyExc_TypeError, "kernel takes %zd arguments, got %zd",
                 Py_ssize_t(direct->codes->size()), count);
    return false;
  }
  void *stream = nullptr;
  if (!currentStream(direct, stream))
    return false;
  return packAndLaunch(direct->function, grid, direct->blockX, direct->shared, stream,
                       direct->codes->data(), count, args, &known);
}

} // namespace kiln::python

void initDriver(py::module_ &m) {
  m.def(
      "is_available", [] { return CudaDriver::get().isAvailable(); },
      "True when libcuda could be opened and sees at least one device.");
  m.def(
      "unavailable_reason",
      [] { return CudaDriver::get().unavailableReason(); },
      "Why is_available() is False; empty when it is True.");
  m.def(
      "device_count",
      [] {
        // No driver means no devices, not an error: callers ask to decide.
        if (!CudaDriver::get().isAvailable())
          return 0;
        int count = 0;
        throwIfFailed(CudaDriver::get().getDeviceCount(count));
        return count;
      },
      "The number of CUDA devices (0 when the driver is unavailable).");
  m.def(
      "current_device",
      [] {
        int device = 0;
        throwIfFailed(CudaDriver::get().getCurrentDevice(device));
        return device;
      },
      "The device of the thread's current CUDA context (0 if none).");
  m.def(
      "get_device_properties",
      [](int device, bool clockRates) {
        DeviceProperties properties;
        throwIfFailed(CudaDriver::get().getDeviceProperties(device, properties,
                                                            clockRates));
        return propertiesToDict(properties);
      },
      py::arg("device"), py::arg("clock_rates") = true,
      "A dict of the device's properties: name, capability (major, minor), "
      "multiprocessor_count, max_shared_mem (opt-in bytes per block), ...; "
      "sm_clock_rate and mem_clock_rate (kHz) unless clock_rates is False "
      "(the driver takes about a millisecond to tell them).");
  m.def(
      "set_current_device",
      [](int device) {
        void *context = nullptr;
        throwIfFailed(CudaDriver::get().ensureContext(device, context));
      },
      py::arg("device"),
      "Makes the device's primary context current if none is current.");
  m.def(
      "load_binary",
      [](const std::string &name, py::object image, int shared, int device) {
        char *data = nullptr;
        Py_ssize_t size = 0;
        std::string text;
        if (PyBytes_Check(image.ptr())) {
          PyBytes_AsStringAndSize(image.ptr(), &data, &size);
        } else if (PyUnicode_Check(image.ptr())) {
          text = image.cast<std::string>();
          data = text.data();
          size = Py_ssize_t(text.size());
        } else {
          throw py::type_error("load_binary: the image must be bytes (a "
                               "cubin) or str (PTX), got " +
                               std::string(Py_TYPE(image.ptr())->tp_name));
        }
        if (size == 0)
          throw py::value_error("load_binary: the image is empty");
        LoadedKernel kernel;
        Status status;
        {
          py::gil_scoped_release release;
          status = CudaDriver::get().loadBinary(name, data, size_t(size),
                                                shared, device, kernel);
        }
        throwIfFailed(status);
        return py::make_tuple(uintptr_t(kernel.module),
                              uintptr_t(kernel.function), kernel.numRegisters,
                              kernel.numSpills);
      },
      py::arg("name"), py::arg("cubin"), py::arg("shared"), py::arg("device"),
      "Loads a cubin (bytes) or PTX (str) on the device and returns "
      "(module_handle, function_handle, n_regs, n_spills).");
  m.def(
      "encode_tensor_map",
      [](uint64_t address, const std::vector<uint64_t> &shape,
         const std::vector<uint64_t> &strideBytes, const std::vector<uint32_t> &box,
         int elementBytes, bool bfloat16, int swizzleBytes, bool nanFill) {
        TensorMapRequest request;
        request.address = address;
        request.shape = shape;
        request.strideBytes = strideBytes;
        request.box = box;
        request.elementBytes = elementBytes;
        request.bfloat16 = bfloat16;
        request.swizzleBytes = swizzleBytes;
        request.nanFill = nanFill;
        // A CUtensorMap: 128 bytes, 64-byte aligned.
        alignas(64) unsigned char map[128] = {};
        throwIfFailed(CudaDriver::get().encodeTensorMap(request, map));
        return py::bytes(reinterpret_cast<const char *>(map), sizeof(map));
      },
      py::arg("address"), py::arg("shape"), py::arg("stride_bytes"), py::arg("box"),
      py::arg("element_bytes"), py::arg("bfloat16"), py::arg("swizzle_bytes"),
      py::arg("nan_fill"),
      "Encodes a tiled TMA tensor map (cuTensorMapEncodeTiled) over a row-major "
      "tensor, dimensions outermost first; returns its 128 bytes, which a "
      "kernel's tensor-map parameter takes (launch code 'T').");
  m.def(
      "unload_module",
      [](uintptr_t module) {
        throwIfFailed(
            CudaDriver::get().unloadModule(reinterpret_cast<void *>(module)));
      },
      py::arg("module"), "Unloads a module returned by load_binary.");
  m.def(
      "synchronize",
      [] {
        py::gil_scoped_release release;
        throwIfFailed(CudaDriver::get().synchronize());
      },
      "Waits for all work in the current context.");

  PyObject *function = PyCFunction_NewEx(&launchDefinition, nullptr,
                                         m.attr("__name__").ptr());
  if (!function)
    throw py::error_already_set();
  m.attr("launch") = py::reinterpret_steal<py::object>(function);

  CudaDirectLaunchType = reinterpret_cast<PyTypeObject *>(PyType_FromSpec(&directLaunchSpec));
  if (!CudaDirectLaunchType)
    throw py::error_already_set();
  currentStreamName = PyUnicode_InternFromString("current_stream");
  m.attr("DirectLaunch") = py::reinterpret_borrow<py::object>(
      reinterpret_cast<PyObject *>(CudaDirectLaunchType));
  m.def(
      "direct_launch",
      [](uintptr_t function, const std::string &codes, int numWarps, int shared, int device,
         py::object streamSource) {
        if (function == 0)
          throw py::value_error("direct_launch: function must be a handle returned by load_binary");
        if (numWarps < 1 || numWarps > 32)
          throw py::value_error("direct_launch: num_warps must be between 1 and 32");
        if (shared < 0)
          throw py::value_error("direct_launch: shared must be non-negative");
        if (codes.find('T') != std::string::npos)
          throw py::value_error("direct_launch: tensor maps are encoded per launch in Python");
        auto *direct = PyObject_New(CudaDirectLaunch, CudaDirectLaunchType);
        if (!direct)
          throw py::error_already_set();
        direct->function = reinterpret_cast<void *>(function);
        direct->codes = new std::string(codes);
        direct->blockX = unsigned(32 * numWarps);
        direct->shared = unsigned(shared);
        direct->device = PyLong_FromLong(device);
        direct->streamSource = streamSource.inc_ref().ptr();
        return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject *>(direct));
      },
      py::arg("function"), py::arg("codes"), py::arg("num_warps"), py::arg("shared"),
      py::arg("device"), py::arg("stream_source"),
      "A DirectLaunch of a loaded kernel: the native launch path launches it "
      "from C++ (codes as launch()'s, without 'T'; the stream is "
      "stream_source.current_stream(device) at each launch).");
}
