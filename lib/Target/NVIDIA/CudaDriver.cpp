//===- CudaDriver.cpp - The CUDA driver API, opened at run time -----------===//
//
// This file implements CudaDriver: it opens libcuda with dlopen on first use,
// resolves the driver entry points Kiln needs with dlsym (by the exact ABI
// names <cuda.h> maps them to, e.g. cuDeviceTotalMem_v2), calls cuInit, and
// wraps module loading, function attributes and cuLaunchKernel. Nothing here
// aborts: a missing library, a missing symbol or a failing call all become a
// Status whose message names the call and CUDA's error name and text.
//
// Contexts: Kiln uses each device's primary context, the one the CUDA runtime
// (and so torch) uses, so pointers and streams from torch are valid in it.
// Loading makes the primary context current when the thread has none; a
// launch from a thread with no current context re-enters the context the
// function was loaded into, so launching from a fresh Python thread works.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVIDIA/CudaDriver.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

using namespace kiln::runtime;

namespace {
/// The ELF magic: a cubin starts with it, PTX text does not.
constexpr char kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
/// Above this many bytes of dynamic shared memory a kernel must opt in.
constexpr int kDefaultSharedMemoryLimit = 48 * 1024;
} // namespace

struct CudaDriver::Impl {
  void *library = nullptr;
  bool available = false;
  std::string unavailableReason;

  // Entry points, typed from <cuda.h>; the names resolved are the ABI names
  // the header's macros select (the `_v2` variants where they exist).
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driverGetVersion = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuDeviceGetName) deviceGetName = nullptr;
  decltype(&::cuDeviceTotalMem) deviceTotalMem = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuCtxGetCurrent) ctxGetCurrent = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuCtxGetDevice) ctxGetDevice = nullptr;
  decltype(&::cuCtxSynchronize) ctxSynchronize = nullptr;
  decltype(&::cuModuleLoadDataEx) moduleLoadDataEx = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuFuncGetAttribute) funcGetAttribute = nullptr;
  decltype(&::cuFuncSetAttribute) funcSetAttribute = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  // Optional (drivers for CUDA 12 and later): only TMA kernels need it.
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled = nullptr;

  // Guards the maps below; never taken on the launch fast path unless the
  // thread has no current context.
  std::mutex mutex;
  std::unordered_map<int, CUcontext> primaryContexts;
  std::unordered_map<CUfunction, CUcontext> functionContexts;
  // A device's properties do not change while the process runs, and the
  // driver takes up to half a millisecond to answer one query: each device
  // is asked once.
  std::unordered_map<int, DeviceProperties> deviceProperties;

  void open();
  std::string describe(const char *call, CUresult result) const;
  Status check(const char *call, CUresult result) const {
    if (result == CUDA_SUCCESS)
      return Status::success();
    return Status::failure(describe(call, result));
  }
  Status unavailable() const {
    return Status::failure("no CUDA device found: " + unavailableReason);
  }
  Status retainPrimaryContext(int device, CUcontext &context);
};

std::string CudaDriver::Impl::describe(const char *call,
                                       CUresult result) const {
  const char *name = nullptr;
  const char *text = nullptr;
  if (getErrorName)
    getErrorName(result, &name);
  if (getErrorString)
    getErrorString(result, &text);
  std::string message = std::string(call) + " failed: ";
  // The toolkit's stub library cannot even name its own error.
  if (!name && result == CUDA_ERROR_STUB_LIBRARY)
    name = "CUDA_ERROR_STUB_LIBRARY (the CUDA stub library was loaded "
           "instead of the driver)";
  message += name ? name : "CUDA error " + std::to_string(int(result));
  if (text)
    message += std::string(": ") + text;
  return message;
}

void CudaDriver::Impl::open() {
  // KILN_LIBCUDA_PATH lets tests point at another library (such as the
  // toolkit's stub) to exercise the failure paths.
  std::vector<std::string> candidates;
  if (const char *path = std::getenv("KILN_LIBCUDA_PATH"); path && *path)
    candidates.push_back(path);
  else
    candidates = {"libcuda.so.1", "libcuda.so"};
  std::string dlErrors;
  for (const std::string &candidate : candidates) {
    library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library)
      break;
    const char *error = dlerror();
    dlErrors += (dlErrors.empty() ? "" : "; ") +
                std::string(error ? error : candidate + ": cannot open");
  }
  if (!library) {
    unavailableReason = "cannot load the CUDA driver library (" + dlErrors +
                        "); is an NVIDIA driver installed?";
    return;
  }

  std::string missing;
  auto resolve = [&](auto &entry, const char *symbol) {
    entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(
        dlsym(library, symbol));
    if (!entry)
      missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  resolve(getErrorName, "cuGetErrorName");
  resolve(getErrorString, "cuGetErrorString");
  resolve(init, "cuInit");
  resolve(driverGetVersion, "cuDriverGetVersion");
  resolve(deviceGetCount, "cuDeviceGetCount");
  resolve(deviceGet, "cuDeviceGet");
  resolve(deviceGetAttribute, "cuDeviceGetAttribute");
  resolve(deviceGetName, "cuDeviceGetName");
  resolve(deviceTotalMem, "cuDeviceTotalMem_v2");
  resolve(primaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(ctxGetCurrent, "cuCtxGetCurrent");
  resolve(ctxSetCurrent, "cuCtxSetCurrent");
  resolve(ctxGetDevice, "cuCtxGetDevice");
  resolve(ctxSynchronize, "cuCtxSynchronize");
  resolve(moduleLoadDataEx, "cuModuleLoadDataEx");
  resolve(moduleUnload, "cuModuleUnload");
  resolve(moduleGetFunction, "cuModuleGetFunction");
  resolve(funcGetAttribute, "cuFuncGetAttribute");
  resolve(funcSetAttribute, "cuFuncSetAttribute");
  resolve(launchKernel, "cuLaunchKernel");
  tensorMapEncodeTiled = reinterpret_cast<decltype(tensorMapEncodeTiled)>(
      dlsym(library, "cuTensorMapEncodeTiled"));
  if (!missing.empty()) {
    unavailableReason =
        "the CUDA driver library lacks " + missing + "; the driver is too old";
    return;
  }

  if (Status status = check("cuInit", init(0)); !status.ok()) {
    unavailableReason = status.message();
    return;
  }
  int count = 0;
  if (Status status = check("cuDeviceGetCount", deviceGetCount(&count));
      !status.ok()) {
    unavailableReason = status.message();
    return;
  }
  if (count == 0) {
    unavailableReason = "the CUDA driver reports no devices";
    return;
  }
  available = true;
}

Status CudaDriver::Impl::retainPrimaryContext(int device, CUcontext &context) {
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = primaryContexts.find(device); it != primaryContexts.end()) {
    context = it->second;
    return Status::success();
  }
  CUdevice handle;
  if (Status status = check("cuDeviceGet", deviceGet(&handle, device));
      !status.ok())
    return status;
  // Retained once per device for the life of the process, like the CUDA
  // runtime does; releasing it would invalidate every loaded module.
  if (Status status =
          check("cuDevicePrimaryCtxRetain", primaryCtxRetain(&context, handle));
      !status.ok())
    return status;
  primaryContexts[device] = context;
  return Status::success();
}

CudaDriver &CudaDriver::get() {
  static CudaDriver driver;
  return driver;
}

CudaDriver::Impl *CudaDriver::impl() {
  static std::once_flag opened;
  std::call_once(opened, [this] {
    state = new Impl();
    state->open();
  });
  return state;
}

bool CudaDriver::isAvailable() { return impl()->available; }

std::string CudaDriver::unavailableReason() {
  return impl()->unavailableReason;
}

Status CudaDriver::getDeviceCount(int &count) {
  Impl *d = impl();
  count = 0;
  if (!d->available)
    return d->unavailable();
  return d->check("cuDeviceGetCount", d->deviceGetCount(&count));
}

Status CudaDriver::getCurrentDevice(int &device) {
  Impl *d = impl();
  device = 0;
  if (!d->available)
    return d->unavailable();
  CUcontext context = nullptr;
  if (Status status = d->check("cuCtxGetCurrent", d->ctxGetCurrent(&context));
      !status.ok())
    return status;
  if (!context)
    return Status::success();
  CUdevice handle;
  if (Status status = d->check("cuCtxGetDevice", d->ctxGetDevice(&handle));
      !status.ok())
    return status;
  device = int(handle);
  return Status::success();
}

Status CudaDriver::getDeviceProperties(int device, DeviceProperties &properties,
                                       bool clockRates) {
  Impl *d = impl();
  if (!d->available)
    return d->unavailable();
  {
    std::lock_guard<std::mutex> lock(d->mutex);
    auto known = d->deviceProperties.find(device);
    if (known != d->deviceProperties.end() &&
        (known->second.hasClockRates || !clockRates)) {
      properties = known->second;
      return Status::success();
    }
  }
  if (Status status = queryDeviceProperties(device, clockRates, properties);
      !status.ok())
    return status;
  std::lock_guard<std::mutex> lock(d->mutex);
  d->deviceProperties.insert_or_assign(device, properties);
  return Status::success();
}

Status CudaDriver::queryDeviceProperties(int device, bool clockRates,
                                         DeviceProperties &properties) {
  Impl *d = impl();
  int count = 0;
  if (Status status = getDeviceCount(count); !status.ok())
    return status;
  if (device < 0 || device >= count)
    return Status::failure("invalid device " + std::to_string(device) +
                           ": there are " + std::to_string(count) +
                           " CUDA devices");
  CUdevice handle;
  if (Status status = d->check("cuDeviceGet", d->deviceGet(&handle, device));
      !status.ok())
    return status;

  char name[256] = {0};
  if (Status status = d->check("cuDeviceGetName",
                               d->deviceGetName(name, sizeof(name) - 1, handle));
      !status.ok())
    return status;
  properties.name = name;
  if (Status status = d->check(
          "cuDeviceTotalMem",
          d->deviceTotalMem(&properties.totalMemoryBytes, handle));
      !status.ok())
    return status;

  struct Query {
    CUdevice_attribute attribute;
    int *field;
  };
  std::vector<Query> queries = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
       &properties.computeCapabilityMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
       &properties.computeCapabilityMinor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
       &properties.multiprocessorCount},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &properties.warpSize},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
       &properties.maxThreadsPerBlock},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
       &properties.maxSharedMemoryPerBlock},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       &properties.maxSharedMemoryPerBlockOptin},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
       &properties.maxRegistersPerBlock},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
       &properties.memoryBusWidthBits},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &properties.l2CacheBytes},
  };
  // Each clock rate costs the driver about half a millisecond to answer
  // (on an H100), more than the rest of a first launch from a warm cache.
  if (clockRates)
    queries.insert(queries.end(),
                   {{CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &properties.clockRateKHz},
                    {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &properties.memoryClockRateKHz}});
  for (const Query &query : queries)
    if (Status status = d->check(
            "cuDeviceGetAttribute",
            d->deviceGetAttribute(query.field, query.attribute, handle));
        !status.ok())
      return status;
  properties.hasClockRates = clockRates;
  return Status::success();
}

Status CudaDriver::ensureContext(int device, ContextHandle &context) {
  Impl *d = impl();
  if (!d->available)
    return d->unavailable();
  CUcontext primary = nullptr;
  if (Status status = d->retainPrimaryContext(device, primary); !status.ok())
    return status;
  context = primary;
  CUcontext current = nullptr;
  if (Status status = d->check("cuCtxGetCurrent", d->ctxGetCurrent(&current));
      !status.ok())
    return status;
  // A context someone else made current (torch, or the user) stays: changing
  // it would silently change the CUDA runtime's notion of the current device.
  if (!current)
    return d->check("cuCtxSetCurrent", d->ctxSetCurrent(primary));
  return Status::success();
}

Status CudaDriver::loadBinary(const std::string &name, const void *image,
                              std::size_t size, int sharedBytes, int device,
                              LoadedKernel &kernel) {
  Impl *d = impl();
  if (!d->available)
    return d->unavailable();
  DeviceProperties properties;
  if (Status status = getDeviceProperties(device, properties, /*clockRates=*/false);
      !status.ok())
    return status;
  if (sharedBytes < 0)
    return Status::failure("invalid shared memory size " +
                           std::to_string(sharedBytes));
  if (sharedBytes > properties.maxSharedMemoryPerBlockOptin)
    return Status::failure(
        "kernel " + name + " needs " + std::to_string(sharedBytes) +
        " bytes of shared memory, but device " + std::to_string(device) +
        " allows at most " +
        std::to_string(properties.maxSharedMemoryPerBlockOptin));

  ContextHandle context;
  if (Status status = ensureContext(device, context); !status.ok())
    return status;
  CUcontext current = nullptr;
  d->ctxGetCurrent(&current);
  // Load into the device's primary context even when another context is
  // current, then restore the caller's context.
  bool switched = current != static_cast<CUcontext>(context);
  if (switched)
    if (Status status = d->check("cuCtxSetCurrent",
                                 d->ctxSetCurrent(static_cast<CUcontext>(context)));
        !status.ok())
      return status;
  auto restore = [&] {
    if (switched)
      d->ctxSetCurrent(current);
  };

  // PTX must be NUL-terminated; a cubin is passed as is.
  std::string ptx;
  const void *data = image;
  bool isCubin = size >= 4 && std::memcmp(image, kElfMagic, 4) == 0;
  if (!isCubin) {
    ptx.assign(static_cast<const char *>(image), size);
    data = ptx.c_str();
  }
  // Ask for the JIT's error log so a bad PTX image says why.
  std::vector<char> errorLog(8192, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {errorLog.data(),
                    reinterpret_cast<void *>(uintptr_t(errorLog.size() - 1))};
  CUmodule module = nullptr;
  CUresult result = d->moduleLoadDataEx(&module, data, 2, options, values);
  if (result != CUDA_SUCCESS) {
    restore();
    // Named as the function lookup's failure is: a process loads many.
    std::string message = d->describe("cuModuleLoadData", result) + " (kernel " + name + ")";
    if (errorLog[0])
      message += "\n" + std::string(errorLog.data());
    return Status::failure(message);
  }

  auto fail = [&](Status status) {
    d->moduleUnload(module);
    restore();
    return status;
  };
  CUfunction function = nullptr;
  if (Status status =
          d->check("cuModuleGetFunction",
                   d->moduleGetFunction(&function, module, name.c_str()));
      !status.ok())
    return fail(Status::failure(status.message() + " (kernel " + name + ")"));

  auto attribute = [&](CUfunction_attribute which, int &value) {
    return d->check("cuFuncGetAttribute",
                    d->funcGetAttribute(&value, which, function));
  };
  int staticShared = 0;
  if (Status status = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS, kernel.numRegisters);
      !status.ok())
    return fail(status);
  if (Status status =
          attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, kernel.numSpills);
      !status.ok())
    return fail(status);
  if (Status status = attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                kernel.maxThreadsPerBlock);
      !status.ok())
    return fail(status);
  if (Status status = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, staticShared);
      !status.ok())
    return fail(status);

  if (sharedBytes > kDefaultSharedMemoryLimit) {
    int dynamicLimit = properties.maxSharedMemoryPerBlockOptin - staticShared;
    if (sharedBytes > dynamicLimit)
      return fail(Status::failure(
          "kernel " + name + " needs " + std::to_string(sharedBytes) +
          " bytes of dynamic shared memory plus " +
          std::to_string(staticShared) + " static, but device " +
          std::to_string(device) + " allows at most " +
          std::to_string(properties.maxSharedMemoryPerBlockOptin)));
    if (Status status = d->check(
            "cuFuncSetAttribute",
            d->funcSetAttribute(function,
                                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                dynamicLimit));
        !status.ok())
      return fail(status);
  }

  {
    std::lock_guard<std::mutex> lock(d->mutex);
    d->functionContexts[function] = static_cast<CUcontext>(context);
  }
  restore();
  kernel.module = module;
  kernel.function = function;
  return Status::success();
}

Status CudaDriver::unloadModule(ModuleHandle module) {
  Impl *d = impl();
  if (!d->available)
    return d->unavailable();
  return d->check("cuModuleUnload",
                  d->moduleUnload(static_cast<CUmodule>(module)));
}

Status CudaDriver::launch(FunctionHandle function, unsigned gridX,
                          unsigned gridY, unsigned gridZ, unsigned blockX,
                          unsigned sharedBytes, StreamHandle stream,
                          void **params) {
  Impl *d = impl();
  if (!d->available)
    return d->unavailable();
  CUcontext current = nullptr;
  d->ctxGetCurrent(&current);
  // A function runs in the context of the device its module was loaded on:
  // a kernel whose tensors are on cuda:1 launches there whatever device is
  // current, and the caller's context is restored after.
  CUcontext owner = nullptr;
  {
    std::lock_guard<std::mutex> lock(d->mutex);
    auto it = d->functionContexts.find(static_cast<CUfunction>(function));
    if (it != d->functionContexts.end())
      owner = it->second;
  }
  if (!owner && !current)
    return Status::failure("cuLaunchKernel failed: no CUDA context is "
                           "current and the function handle is unknown");
  bool switched = owner && owner != current;
  if (switched)
    if (Status status = d->check("cuCtxSetCurrent", d->ctxSetCurrent(owner));
        !status.ok())
      return status;
  Status launched = d->check(
      "cuLaunchKernel",
      d->launchKernel(static_cast<CUfunction>(function), gridX, gridY, gridZ,
                      blockX, 1, 1, sharedBytes, static_cast<CUstream>(stream),
                      params, nullptr));
  // With no context current before, the kernel's stays current (torch and
  // later launches find it), as the CUDA runtime's first call would leave it.
  if (switched && current)
    d->ctxSetCurrent(current);
  return launched;
}

Status CudaDriver::encodeTensorMap(const TensorMapRequest &request, void *tensorMap) {
  Impl *d = impl();
  if (!d->available)
    return d->unavailable();
  if (!d->tensorMapEncodeTiled)
    return Status::failure("the CUDA driver library lacks cuTensorMapEncodeTiled; the driver "
                           "is too old for TMA tensor maps");
  size_t rank = request.shape.size();
  if (rank < 1 || rank > 5 || request.strideBytes.size() != rank ||
      request.box.size() != rank)
    return Status::failure("a tensor map needs 1 to 5 dimensions, with a stride and a box "
                           "size for each");
  CUtensorMapDataType type;
  switch (request.elementBytes) {
  case 1:
    type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
    break;
  case 2:
    type = request.bfloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    break;
  case 4:
    type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    break;
  default:
    return Status::failure("tensor maps take 1, 2 or 4-byte elements, got " +
                           std::to_string(request.elementBytes));
  }
  CUtensorMapSwizzle swizzle;
  switch (request.swizzleBytes) {
  case 0:
    swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
    break;
  case 32:
    swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
    break;
  case 64:
    swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
    break;
  case 128:
    swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    break;
  default:
    return Status::failure("a tensor map swizzles 0, 32, 64 or 128 bytes, got " +
                           std::to_string(request.swizzleBytes));
  }
  // The driver counts dimensions innermost first; the innermost stride is
  // the element itself and is not passed.
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], elementStrides[5];
  for (size_t i = 0; i < rank; ++i) {
    size_t from = rank - 1 - i;
    dims[i] = request.shape[from];
    box[i] = request.box[from];
    elementStrides[i] = 1;
    if (i > 0)
      strides[i - 1] = request.strideBytes[from];
  }
  auto *map = static_cast<CUtensorMap *>(tensorMap);
  return d->check("cuTensorMapEncodeTiled",
                  d->tensorMapEncodeTiled(
                      map, type, cuuint32_t(rank), reinterpret_cast<void *>(request.address),
                      dims, strides, box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                      request.nanFill ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                      : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

Status CudaDriver::synchronize() {
  Impl *d = impl();
  if (!d->available)
    return d->unavailable();
  return d->check("cuCtxSynchronize", d->ctxSynchronize());
}
