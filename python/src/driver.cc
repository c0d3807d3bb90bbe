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
// Argument codes:
//   p  pointer: an int address, or an object with data_ptr() (torch tensor)
//   b  i1 (bool)       c  i8     B  u8     h  i16    H  u16
//   i  i32             I  u32    l  i64    L  u64
//   f  fp32            d  fp64
//   -  skipped (a constexpr parameter, compiled into the kernel)
// Each value is stored zero-extended (sign-extended for signed codes) in its
// own 8-byte slot, so the driver reads the right value whatever the
// parameter's width in the kernel (i1 parameters may be 1 or 4 bytes).
//
//===----------------------------------------------------------------------===//

#include "kiln/Runtime/CudaDriver.h"

#include <pybind11/pybind11.h>

#include <Python.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace py = pybind11;
using kiln::runtime::CudaDriver;
using kiln::runtime::DeviceProperties;
using kiln::runtime::LoadedKernel;
using kiln::runtime::Status;

namespace {

/// Raises RuntimeError with the status message when the call failed.
void throwIfFailed(const Status &status) {
  if (!status.ok())
    throw std::runtime_error(status.message());
}

/// Reads a Python integer (anything with __index__) as a signed 64-bit value;
/// returns false with an exception set when it is not one or is too large.
bool readInt64(PyObject *object, long long &value) {
  if (PyLong_CheckExact(object)) {
    value = PyLong_AsLongLong(object);
    return !(value == -1 && PyErr_Occurred());
  }
  PyObject *index = PyNumber_Index(object);
  if (!index)
    return false;
  value = PyLong_AsLongLong(index);
  Py_DECREF(index);
  return !(value == -1 && PyErr_Occurred());
}

/// Reads an unsigned 64-bit integer; negative values are rejected.
bool readUInt64(PyObject *object, unsigned long long &value) {
  PyObject *index = PyLong_CheckExact(object) ? (Py_INCREF(object), object)
                                              : PyNumber_Index(object);
  if (!index)
    return false;
  value = PyLong_AsUnsignedLongLong(index);
  Py_DECREF(index);
  return !(value == (unsigned long long)-1 && PyErr_Occurred());
}

/// Raises OverflowError naming the argument position and the code's range.
bool overflow(Py_ssize_t position, const char *type) {
  PyErr_Format(PyExc_OverflowError,
               "kernel argument %zd does not fit in %s", position, type);
  return false;
}

/// Reads a signed integer for argument `position` and checks its range.
bool readSigned(PyObject *object, Py_ssize_t position, long long lo,
                long long hi, const char *type, uint64_t &slot) {
  long long value;
  if (!readInt64(object, value)) {
    if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
      PyErr_Clear();
      return overflow(position, type);
    }
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "kernel argument %zd must be an integer (%s), got %s",
                 position, type, Py_TYPE(object)->tp_name);
    return false;
  }
  if (value < lo || value > hi)
    return overflow(position, type);
  slot = uint64_t(value);
  return true;
}

/// Reads an unsigned integer for argument `position` and checks its range.
bool readUnsigned(PyObject *object, Py_ssize_t position, unsigned long long hi,
                  const char *type, uint64_t &slot) {
  unsigned long long value;
  if (!readUInt64(object, value)) {
    if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
      PyErr_Clear();
      return overflow(position, type);
    }
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "kernel argument %zd must be an integer (%s), got %s",
                 position, type, Py_TYPE(object)->tp_name);
    return false;
  }
  if (value > hi)
    return overflow(position, type);
  slot = uint64_t(value);
  return true;
}

/// Reads a pointer argument: an int address or obj.data_ptr().
bool readPointer(PyObject *object, Py_ssize_t position, uint64_t &slot) {
  static PyObject *dataPtrName = PyUnicode_InternFromString("data_ptr");
  if (PyLong_Check(object)) {
    unsigned long long address = PyLong_AsUnsignedLongLong(object);
    if (address == (unsigned long long)-1 && PyErr_Occurred()) {
      PyErr_Clear();
      PyErr_Format(PyExc_ValueError,
                   "kernel argument %zd: a pointer must be a non-negative "
                   "64-bit address",
                   position);
      return false;
    }
    slot = address;
    return true;
  }
  PyObject *address = PyObject_CallMethodNoArgs(object, dataPtrName);
  if (!address) {
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError,
                   "kernel argument %zd must be a tensor or an int address, "
                   "got %s",
                   position, Py_TYPE(object)->tp_name);
    }
    return false;
  }
  unsigned long long value = PyLong_AsUnsignedLongLong(address);
  Py_DECREF(address);
  if (value == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "kernel argument %zd: data_ptr() did not return an address",
                 position);
    return false;
  }
  slot = value;
  return true;
}

/// Reads one grid dimension: a non-negative int at most `limit`.
bool readGrid(PyObject *object, const char *axis, long long limit,
              unsigned &value) {
  long long read;
  if (!readInt64(object, read)) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "grid %s must be an int, got %s", axis,
                 Py_TYPE(object)->tp_name);
    return false;
  }
  if (read < 0 || read > limit) {
    PyErr_Format(PyExc_ValueError, "grid %s is %lld; expected 0 <= %s <= %lld",
                 axis, read, axis, limit);
    return false;
  }
  value = unsigned(read);
  return true;
}

/// Packs `args` by `codes` into `slots`; returns false with an exception set.
bool packArguments(const char *codes, Py_ssize_t count, PyObject *args,
                   uint64_t *slots, void **params, Py_ssize_t &used) {
  used = 0;
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject *object = PyTuple_GET_ITEM(args, i);
    uint64_t &slot = slots[used];
    slot = 0;
    bool ok = true;
    switch (codes[i]) {
    case '-':
      continue;
    case 'p':
      ok = readPointer(object, i, slot);
      break;
    case 'b': {
      int truth = PyObject_IsTrue(object);
      if (truth < 0)
        return false;
      slot = uint64_t(truth);
      break;
    }
    case 'c':
      ok = readSigned(object, i, INT8_MIN, INT8_MAX, "i8", slot);
      break;
    case 'B':
      ok = readUnsigned(object, i, UINT8_MAX, "u8", slot);
      break;
    case 'h':
      ok = readSigned(object, i, INT16_MIN, INT16_MAX, "i16", slot);
      break;
    case 'H':
      ok = readUnsigned(object, i, UINT16_MAX, "u16", slot);
      break;
    case 'i':
      ok = readSigned(object, i, INT32_MIN, INT32_MAX, "i32", slot);
      break;
    case 'I':
      ok = readUnsigned(object, i, UINT32_MAX, "u32", slot);
      break;
    case 'l':
      ok = readSigned(object, i, INT64_MIN, INT64_MAX, "i64", slot);
      break;
    case 'L':
      ok = readUnsigned(object, i, UINT64_MAX, "u64", slot);
      break;
    case 'f':
    case 'd': {
      double value = PyFloat_AsDouble(object);
      if (value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "kernel argument %zd must be a float, got %s", i,
                     Py_TYPE(object)->tp_name);
        return false;
      }
      if (codes[i] == 'f') {
        float single = float(value);
        std::memcpy(&slot, &single, sizeof(single));
      } else {
        std::memcpy(&slot, &value, sizeof(value));
      }
      break;
    }
    default:
      PyErr_Format(PyExc_ValueError,
                   "unknown argument code '%c' at position %zd", codes[i], i);
      return false;
    }
    if (!ok)
      return false;
    params[used] = &slot;
    ++used;
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
  if (!readGrid(argv[0], "x", 0x7fffffffLL, grid[0]) ||
      !readGrid(argv[1], "y", 65535, grid[1]) ||
      !readGrid(argv[2], "z", 65535, grid[2]))
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

  // Small kernels pack on the stack; only unusually long signatures allocate.
  constexpr Py_ssize_t kInline = 64;
  uint64_t inlineSlots[kInline];
  void *inlineParams[kInline];
  std::vector<uint64_t> heapSlots;
  std::vector<void *> heapParams;
  uint64_t *slots = inlineSlots;
  void **params = inlineParams;
  if (codeCount > kInline) {
    heapSlots.resize(codeCount);
    heapParams.resize(codeCount);
    slots = heapSlots.data();
    params = heapParams.data();
  }
  Py_ssize_t used;
  if (!packArguments(codes, codeCount, args, slots, params, used))
    return nullptr;

  // As with CUDA, an empty grid launches nothing.
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    Py_RETURN_NONE;

  Status status;
  Py_BEGIN_ALLOW_THREADS;
  status = CudaDriver::get().launch(
      reinterpret_cast<void *>(uintptr_t(function)), grid[0], grid[1],
      grid[2], unsigned(32 * numWarps), unsigned(shared),
      reinterpret_cast<void *>(uintptr_t(stream)), params);
  Py_END_ALLOW_THREADS;
  if (!status.ok()) {
    PyErr_SetString(PyExc_RuntimeError, status.message().c_str());
    return nullptr;
  }
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
  d["sm_clock_rate"] = p.clockRateKHz;
  d["mem_clock_rate"] = p.memoryClockRateKHz;
  d["mem_bus_width"] = p.memoryBusWidthBits;
  d["l2_cache_size"] = p.l2CacheBytes;
  d["total_memory"] = p.totalMemoryBytes;
  return d;
}

} // namespace

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
      [](int device) {
        DeviceProperties properties;
        throwIfFailed(
            CudaDriver::get().getDeviceProperties(device, properties));
        return propertiesToDict(properties);
      },
      py::arg("device"),
      "A dict of the device's properties: name, capability (major, minor), "
      "multiprocessor_count, max_shared_mem (opt-in bytes per block), ...");
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
}
