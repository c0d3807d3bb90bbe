/* A stand-in for libcuda.so, for testing Kiln's CUDA driver code on a machine
 * without a GPU: two devices of compute capability 9.0, one primary context
 * each, modules and functions as handles, and launches that do nothing but
 * write a line to the file named by $FAKE_CUDA_LOG: the function, the
 * current context, the grid, the block, the shared memory, the stream and
 * the first $FAKE_CUDA_PARAMS parameters read as 8-byte words (Kiln packs
 * each parameter into an 8-byte slot). Loads and context switches are
 * logged too. A module image that starts with "FAIL" fails to load.
 *
 * Built by test_cuda_driver_fake.py with the system C compiler. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;

enum { kDevices = 2, kInvalidValue = 1, kInvalidContext = 201, kInvalidImage = 200 };

typedef struct {
  int context;
} Module;

typedef struct {
  int context;
  char name[128];
} Function;

static char contexts[kDevices]; /* a context handle is &contexts[device] */
static __thread CUcontext current;

static void logLine(const char *format, ...) __attribute__((format(printf, 1, 2)));

#include <stdarg.h>
static void logLine(const char *format, ...) {
  const char *path = getenv("FAKE_CUDA_LOG");
  if (!path)
    return;
  FILE *file = fopen(path, "a");
  if (!file)
    return;
  va_list args;
  va_start(args, format);
  vfprintf(file, format, args);
  va_end(args);
  fputc('\n', file);
  fclose(file);
}

static int contextIndex(CUcontext context) {
  return context ? (int)((char *)context - contexts) : -1;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  *name = error == kInvalidImage ? "CUDA_ERROR_INVALID_IMAGE" : "CUDA_ERROR_FAKE";
  return 0;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  *text = error == kInvalidImage ? "device kernel image is invalid" : "a fake error";
  return 0;
}

CUresult cuInit(unsigned flags) { return 0; }

CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return 0;
}

CUresult cuDeviceGetCount(int *count) {
  *count = kDevices;
  return 0;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal < 0 || ordinal >= kDevices)
    return kInvalidValue;
  *device = ordinal;
  return 0;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
  if (attribute == 13 && getenv("FAKE_CUDA_LOG_QUERIES"))
    logLine("clock rate of device %d", device);
  switch (attribute) {
  case 1: *value = 1024; break;        /* max threads per block */
  case 8: *value = 49152; break;       /* shared memory per block */
  case 10: *value = 32; break;         /* warp size */
  case 12: *value = 65536; break;      /* registers per block */
  case 13: *value = 1980000; break;    /* clock rate, kHz */
  case 16: *value = 132; break;        /* multiprocessors */
  case 36: *value = 2619000; break;    /* memory clock rate, kHz */
  case 37: *value = 6144; break;       /* memory bus width */
  case 75: *value = 9; break;          /* compute capability major */
  case 76: *value = 0; break;          /* minor */
  case 97: *value = 232448; break;     /* opt-in shared memory per block */
  default: *value = 0; break;
  }
  return 0;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
  /* Only when asked: the other tests compare the log's lines in order. */
  if (getenv("FAKE_CUDA_LOG_QUERIES"))
    logLine("name of device %d", device);
  snprintf(name, length, "Fake GPU %d", device);
  return 0;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
  *bytes = (size_t)80 << 30;
  return 0;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  *context = &contexts[device];
  return 0;
}

CUresult cuCtxGetCurrent(CUcontext *context) {
  *context = current;
  return 0;
}

CUresult cuCtxSetCurrent(CUcontext context) {
  current = context;
  logLine("set context %d", contextIndex(context));
  return 0;
}

CUresult cuCtxGetDevice(CUdevice *device) {
  if (!current)
    return kInvalidContext;
  *device = contextIndex(current);
  return 0;
}

CUresult cuCtxSynchronize(void) { return current ? 0 : kInvalidContext; }

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned count, void *options,
                            void **values) {
  if (!current)
    return kInvalidContext;
  if (!strncmp((const char *)image, "FAIL", 4))
    return kInvalidImage;
  Module *loaded = malloc(sizeof(Module));
  loaded->context = contextIndex(current);
  *module = loaded;
  logLine("load context %d", loaded->context);
  return 0;
}

CUresult cuModuleUnload(void *module) {
  free(module);
  return 0;
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  Function *found = malloc(sizeof(Function));
  found->context = ((Module *)module)->context;
  snprintf(found->name, sizeof(found->name), "%s", name);
  *function = found;
  return 0;
}

CUresult cuFuncGetAttribute(int *value, int attribute, void *function) {
  *value = attribute == 4 ? 40 : 0; /* 40 registers, no spills */
  return 0;
}

CUresult cuFuncSetAttribute(void *function, int attribute, int value) { return 0; }

CUresult cuLaunchKernel(void *function, unsigned gridX, unsigned gridY, unsigned gridZ,
                        unsigned blockX, unsigned blockY, unsigned blockZ, unsigned shared,
                        CUstream stream, void **params, void **extra) {
  Function *f = function;
  if (contextIndex(current) != f->context)
    return kInvalidContext; /* as CUDA: a function runs in its own context */
  char words[1024] = "";
  const char *count = getenv("FAKE_CUDA_PARAMS");
  for (int i = 0, n = count ? atoi(count) : 0; i < n && strlen(words) < 900; ++i) {
    uint64_t word;
    memcpy(&word, params[i], sizeof(word));
    snprintf(words + strlen(words), sizeof(words) - strlen(words), "%s%llx", i ? "," : "",
             (unsigned long long)word);
  }
  logLine("launch %s context %d grid %u,%u,%u block %u,%u,%u shared %u stream %llx params %s", f->name,
          f->context, gridX, gridY, gridZ, blockX, blockY, blockZ, shared,
          (unsigned long long)(uintptr_t)stream, words);
  return 0;
}
