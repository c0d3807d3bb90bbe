//===- CudaDriver.h - The CUDA driver API, opened at run time ---*- C++ -*-===//
//
// Kiln talks to the GPU through the CUDA driver API only. libcuda is opened
// with dlopen on first use, so that the library (and `import kiln`) works on
// machines without a GPU or a driver; every entry point is resolved once, and
// every failure comes back as a Status carrying the CUDA error's name and
// text instead of aborting. The header is free of <cuda.h>: handles travel as
// opaque pointers so that users of this library need no CUDA headers.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDADRIVER_H
#define KILN_RUNTIME_CUDADRIVER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

/// Opaque driver handles (CUmodule, CUfunction, CUstream, CUcontext).
using ModuleHandle = void *;
using FunctionHandle = void *;
using StreamHandle = void *;
using ContextHandle = void *;

/// The outcome of a driver call: success, or a message naming the call and
/// CUDA's error name and description ("cuModuleLoadData failed:
/// CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid").
class Status {
public:
  static Status success() { return Status(); }
  static Status failure(std::string message) {
    Status status;
    status.failed = true;
    status.text = std::move(message);
    return status;
  }
  bool ok() const { return !failed; }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return text; }

private:
  bool failed = false;
  std::string text;
};

/// The properties of one device that the compiler and the launcher need.
struct DeviceProperties {
  std::string name;
  int computeCapabilityMajor = 0;
  int computeCapabilityMinor = 0;
  int multiprocessorCount = 0;
  int warpSize = 0;
  int maxThreadsPerBlock = 0;
  int maxSharedMemoryPerBlock = 0;      // without opting in (48 KB)
  int maxSharedMemoryPerBlockOptin = 0; // with cuFuncSetAttribute
  int maxRegistersPerBlock = 0;
  bool hasClockRates = false; // whether the two below were asked for
  int clockRateKHz = 0;
  int memoryClockRateKHz = 0;
  int memoryBusWidthBits = 0;
  int l2CacheBytes = 0;
  std::size_t totalMemoryBytes = 0;
};

/// A kernel loaded into a device's primary context.
struct LoadedKernel {
  ModuleHandle module = nullptr;
  FunctionHandle function = nullptr;
  int numRegisters = 0;
  int numSpills = 0; // bytes of local memory per thread, as Triton reports
  int maxThreadsPerBlock = 0;
};

/// A tiled TMA tensor map over a row-major tensor (dimensions outermost
/// first, as a kernel indexes them).
struct TensorMapRequest {
  std::uint64_t address = 0;
  std::vector<std::uint64_t> shape;       // elements
  std::vector<std::uint64_t> strideBytes; // the innermost one is the element
  std::vector<std::uint32_t> box;         // elements a copy moves per dimension
  int elementBytes = 2;
  bool bfloat16 = false;   // 2-byte elements: bf16 rather than f16
  int swizzleBytes = 0;    // 0, 32, 64 or 128
  bool nanFill = false;    // out-of-bounds floats read as NaN, not zero
};

/// The process-wide driver. All methods are thread-safe; the first call of
/// any of them opens libcuda and calls cuInit.
class CudaDriver {
public:
  static CudaDriver &get();

  /// True when libcuda was opened, initialised, and sees at least one device.
  bool isAvailable();
  /// Why isAvailable() is false (empty when it is true).
  std::string unavailableReason();

  Status getDeviceCount(int &count);
  /// The device of the calling thread's current context, or 0 when no
  /// context is current.
  Status getCurrentDevice(int &device);
  /// The device's properties, asked of the driver on the first call for
  /// each device and kept. The clock rates, slow for the driver to answer,
  /// only when `clockRates` is true (a launch needs none).
  Status getDeviceProperties(int device, DeviceProperties &properties,
                             bool clockRates = true);

  /// Makes `device`'s primary context current on the calling thread if no
  /// context is current there, and returns the primary context.
  Status ensureContext(int device, ContextHandle &context);

  /// Loads a cubin (or NUL-terminated PTX) image on `device`, looks up the
  /// kernel `name`, reads its register and spill counts, and allows
  /// `sharedBytes` of dynamic shared memory (opting in above 48 KB).
  Status loadBinary(const std::string &name, const void *image,
                    std::size_t size, int sharedBytes, int device,
                    LoadedKernel &kernel);
  Status unloadModule(ModuleHandle module);

  /// Launches `function` over the grid on `stream` (which must belong to the
  /// function's device), in the context the function was loaded into: when
  /// another context is current, it is current again after the launch; when
  /// none is (a fresh thread), the function's stays current.
  Status launch(FunctionHandle function, unsigned gridX, unsigned gridY,
                unsigned gridZ, unsigned blockX, unsigned sharedBytes,
                StreamHandle stream, void **params);

  /// Encodes `request` into the 128 bytes at `tensorMap` (a CUtensorMap),
  /// which a kernel takes by value.
  Status encodeTensorMap(const TensorMapRequest &request, void *tensorMap);

  /// Waits for all work in the current context (used by tests and tools).
  Status synchronize();

  CudaDriver(const CudaDriver &) = delete;
  CudaDriver &operator=(const CudaDriver &) = delete;

private:
  CudaDriver() = default;
  /// Asks the driver for getDeviceProperties's answer (which keeps it).
  Status queryDeviceProperties(int device, bool clockRates,
                               DeviceProperties &properties);
  struct Impl;
  Impl *impl();
  Impl *state = nullptr;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_CUDADRIVER_H
