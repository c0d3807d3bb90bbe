/* The driver's floor for bench/launch.py: host time per cuLaunchKernel of an
 * empty kernel with two parameters (a pointer and an int), then of one with
 * twenty (ten pointers, ten ints, as bench/launch.py's args20), called from C
 * in a loop, with nothing else per launch. Timed as bench/launch.py times
 * Python loops: bursts of BURST launches, the GPU drained between bursts and
 * not timed; prints each kernel's best round's mean µs per launch, on one
 * line.
 *
 * libcuda is opened at run time; no CUDA header is needed.
 *
 *   cc -O2 -o launch_floor bench/launch_floor.c -ldl && ./launch_floor [launches] [rounds] [burst]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;

/* Empty kernels taking (u64, u32) and (10 x u64, 10 x u32), as PTX for any
 * sm_50 or later GPU. */
static const char kEmptyKernels[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry empty(.param .u64 p, .param .u32 n) { ret; }\n"
    ".visible .entry empty20(.param .u64 p0, .param .u64 p1, .param .u64 p2, .param .u64 p3,\n"
    "    .param .u64 p4, .param .u64 p5, .param .u64 p6, .param .u64 p7, .param .u64 p8,\n"
    "    .param .u64 p9, .param .u32 n0, .param .u32 n1, .param .u32 n2, .param .u32 n3,\n"
    "    .param .u32 n4, .param .u32 n5, .param .u32 n6, .param .u32 n7, .param .u32 n8,\n"
    "    .param .u32 n9) { ret; }\n";

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#define LOAD(name)                                                              \
  name##_t name = (name##_t)dlsym(cuda, #name);                                 \
  if (!name) {                                                                  \
    fprintf(stderr, "libcuda has no %s\n", #name);                              \
    return 1;                                                                   \
  }
#define CHECK(call)                                                             \
  do {                                                                          \
    CUresult status_ = (call);                                                  \
    if (status_ != 0) {                                                         \
      fprintf(stderr, "%s failed: CUDA error %d\n", #call, status_);            \
      return 1;                                                                 \
    }                                                                           \
  } while (0)

typedef CUresult (*cuInit_t)(unsigned);
typedef CUresult (*cuDeviceGet_t)(int *, int);
typedef CUresult (*cuDevicePrimaryCtxRetain_t)(CUcontext *, int);
typedef CUresult (*cuCtxSetCurrent_t)(CUcontext);
typedef CUresult (*cuModuleLoadData_t)(CUmodule *, const void *);
typedef CUresult (*cuModuleGetFunction_t)(CUfunction *, CUmodule, const char *);
typedef CUresult (*cuLaunchKernel_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*cuCtxSynchronize_t)(void);

int main(int argc, char **argv) {
  long launches = argc > 1 ? atol(argv[1]) : 20000;
  int rounds = argc > 2 ? atoi(argv[2]) : 3;
  long burst = argc > 3 ? atol(argv[3]) : 200;
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cuda) {
    fprintf(stderr, "cannot open libcuda.so.1: %s\n", dlerror());
    return 1;
  }
  LOAD(cuInit) LOAD(cuDeviceGet) LOAD(cuDevicePrimaryCtxRetain) LOAD(cuCtxSetCurrent)
  LOAD(cuModuleLoadData) LOAD(cuModuleGetFunction) LOAD(cuLaunchKernel) LOAD(cuCtxSynchronize)
  int device;
  CUcontext context;
  CUmodule module;
  CUfunction function;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  CHECK(cuModuleLoadData(&module, kEmptyKernels));
  unsigned long long pointers[10] = {0};
  unsigned ints[10] = {16, 16, 16, 16, 16, 16, 16, 16, 16, 16};
  void *params20[20];
  for (int i = 0; i < 10; ++i) {
    params20[i] = &pointers[i];
    params20[10 + i] = &ints[i];
  }
  const char *names[] = {"empty", "empty20"};
  void *params2[] = {&pointers[0], &ints[0]};
  void **params[] = {params2, params20};
  for (int kernel = 0; kernel < 2; ++kernel) {
    CHECK(cuModuleGetFunction(&function, module, names[kernel]));
    for (long i = 0; i < 1000; ++i)
      CHECK(cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, NULL, params[kernel], NULL));
    CHECK(cuCtxSynchronize());
    double best = 1e30;
    for (int round = 0; round < rounds; ++round) {
      double total = 0;
      for (long done = 0; done < launches; done += burst) {
        double start = now_us();
        for (long i = 0; i < burst; ++i)
          CHECK(cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, NULL, params[kernel], NULL));
        total += now_us() - start;
        CHECK(cuCtxSynchronize());
      }
      double mean = total / ((launches + burst - 1) / burst * burst);
      if (mean < best)
        best = mean;
    }
    printf(kernel ? " %.3f\n" : "%.3f", best);
  }
  return 0;
}
