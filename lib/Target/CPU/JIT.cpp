//===- JIT.cpp - Compiling and running kernels on the host -----------------===//
//
// Translates a CPU kernel module to LLVM IR, optimizes it at O3 for the host
// processor, moves 16-bit float vectors as integers (HalfMoves.h), compiles
// it with ORC's LLJIT, and runs launches on a persistent pool of threads that share the grid's programs through an atomic counter.
// Checked kernels call back into this file for their launch's bounds table
// and to report out-of-bounds accesses; kernels call back to print lines
// (device_print) and to report failed device assertions. An interrupted
// launch sets a flag that workers check between programs and that kernels'
// long loops poll. The pool survives fork() (the child starts a new one).
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/JIT.h"

#include "kiln/Target/CPU/HalfMoves.h"
#include "kiln/Target/CPU/HostLibdevice.h"
#include "kiln/Target/CPU/TargetSpec.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <new>
#include <thread>

#include <pthread.h>

using namespace mlir;
using namespace mlir::kiln::cpu;

//===----------------------------------------------------------------------===//
// Checked-mode callbacks
//===----------------------------------------------------------------------===//

namespace {

/// What one launch's workers share for checked mode.
struct CheckState {
  const int64_t *bounds = nullptr;
  std::mutex mutex;
  std::optional<OutOfBounds> first;
};

thread_local CheckState *currentCheck = nullptr;

/// The program this thread runs, for device_print and device_assert.
thread_local int32_t currentProgram[3] = {0, 0, 0};

/// The first failed device_assert of a launch (its report), shared by the
/// launch's workers.
struct AssertState {
  std::mutex mutex;
  std::optional<std::string> first;
};

thread_local AssertState *currentAssert = nullptr;

/// Set when a launch is interrupted: workers stop taking programs, and the
/// kernels' long loops, which poll it as `__kiln_cpu_cancel`
/// (CancellationPoints.cpp), return. Launches run one at a time, so one
/// flag serves them all; each launch clears it first.
std::atomic<int32_t> cancelRequested{0};
static_assert(sizeof(cancelRequested) == sizeof(int32_t),
              "kernels load the flag as an i32");

/// Kernels compiled and not yet destroyed (their JIT sessions hold code).
std::atomic<int64_t> liveKernels{0};

/// One lock for all kernels' printed lines, so that lines never interleave.
std::mutex &printMutex() {
  static std::mutex mutex;
  return mutex;
}

std::string formatIndex(int32_t rank, int32_t c0, int32_t c1, int32_t c2) {
  int32_t coords[3] = {c0, c1, c2};
  std::string text;
  for (int32_t d = 0; d < rank && d < 3; ++d)
    text += (d ? ", " : "") + std::to_string(coords[d]);
  return text;
}

} // namespace

extern "C" {
/// The running launch's (base, size) table, indexed by kernel parameter.
static const int64_t *kilnCpuBounds() {
  return currentCheck ? currentCheck->bounds : nullptr;
}

/// Called by checked kernels after each access; `any` is whether an active
/// lane was outside its buffer, `index` the smallest such element index.
static void kilnCpuCheck(int32_t site, bool any, int64_t index) {
  if (!any || !currentCheck)
    return;
  std::lock_guard<std::mutex> lock(currentCheck->mutex);
  if (!currentCheck->first)
    currentCheck->first = OutOfBounds{site, index};
}
}

//===----------------------------------------------------------------------===//
// device_print and device_assert callbacks
//===----------------------------------------------------------------------===//

/// Kinds of value __kiln_cpu_print receives in its 64 bits.
enum PrintKind : int32_t { SignedInt = 0, UnsignedInt = 1, Float = 2, Pointer = 3 };

extern "C" {
/// Prints one element as `pid (x, y, z) idx (i, ...) <prefix>[(operand k) ]<value>`;
/// `bits` holds the integer (of `byteWidth` bytes), the double value of a
/// float, or, with `hex`, a float's own `byteWidth` bytes.
static void kilnCpuPrint(const char *prefix, int32_t rank, int32_t c0, int32_t c1,
                         int32_t c2, int32_t operand, int32_t numOperands,
                         int32_t kind, int64_t bits, int32_t byteWidth,
                         int32_t hex) {
  char value[64];
  uint64_t mask = byteWidth >= 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * byteWidth)) - 1;
  if (kind == Float && !hex) {
    double number;
    std::memcpy(&number, &bits, sizeof(number));
    std::snprintf(value, sizeof(value), "%f", number);
  } else if (hex || kind == Pointer) {
    std::snprintf(value, sizeof(value), "0x%0*llx", 2 * byteWidth,
                  static_cast<unsigned long long>(uint64_t(bits) & mask));
  } else if (kind == UnsignedInt) {
    std::snprintf(value, sizeof(value), "%llu",
                  static_cast<unsigned long long>(uint64_t(bits) & mask));
  } else {
    std::snprintf(value, sizeof(value), "%lld", static_cast<long long>(bits));
  }
  std::string line = "pid (" + std::to_string(currentProgram[0]) + ", " +
                     std::to_string(currentProgram[1]) + ", " +
                     std::to_string(currentProgram[2]) + ") idx (" +
                     formatIndex(rank, c0, c1, c2) + ") " + prefix;
  if (numOperands > 1)
    line += "(operand " + std::to_string(operand) + ") ";
  line += value;
  line += "\n";
  std::lock_guard<std::mutex> lock(printMutex());
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

/// Records the launch's first failed assertion; the program goes on and
/// the launch reports it when every program has finished.
static void kilnCpuAssertFail(const char *message, const char *file,
                              int32_t line, const char *function, int32_t rank,
                              int32_t c0, int32_t c1, int32_t c2) {
  if (!currentAssert)
    return;
  std::lock_guard<std::mutex> lock(currentAssert->mutex);
  if (currentAssert->first)
    return;
  currentAssert->first =
      std::string(file) + ":" + std::to_string(line) + ": " + function +
      ": device-side assertion failed: " + message + " (pid (" +
      std::to_string(currentProgram[0]) + ", " + std::to_string(currentProgram[1]) +
      ", " + std::to_string(currentProgram[2]) + ") idx (" +
      formatIndex(rank, c0, c1, c2) + "))";
}
}

//===----------------------------------------------------------------------===//
// Half-precision conversions
//===----------------------------------------------------------------------===//

// LLVM lowers some fp16/bf16 conversions to compiler-rt's library calls,
// which a process need not contain; the JIT resolves them here. Narrowing
// from double goes through float, as PyTorch's own conversions do.
namespace {
uint16_t roundToBFloat16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it a quiet NaN
    return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even
  return uint16_t(bits >> 16);
}

__bf16 toBFloat16(float value) {
  uint16_t bits = roundToBFloat16Bits(value);
  __bf16 result;
  std::memcpy(&result, &bits, sizeof(bits));
  return result;
}
} // namespace

extern "C" {
static _Float16 kilnTruncSFHF2(float value) { return _Float16(value); }
static _Float16 kilnTruncDFHF2(double value) { return _Float16(float(value)); }
static float kilnExtendHFSF2(_Float16 value) { return float(value); }
static __bf16 kilnTruncSFBF2(float value) { return toBFloat16(value); }
static __bf16 kilnTruncDFBF2(double value) { return toBFloat16(float(value)); }
}

//===----------------------------------------------------------------------===//
// Thread pool
//===----------------------------------------------------------------------===//

namespace {

/// Waits a short while, without sleeping, for `ready()`: a launch that
/// follows another, or a worker finishing its share, is then seen in well
/// under a microsecond instead of after a futex wake-up (tens of
/// microseconds on a virtual machine). Returns whether `ready()` became true.
template <typename Ready>
static bool spinBriefly(Ready ready) {
  constexpr auto budget = std::chrono::microseconds(50);
  auto start = std::chrono::steady_clock::now();
  for (unsigned i = 1;; ++i) {
    if (ready())
      return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
    if (i % 256 == 0 && std::chrono::steady_clock::now() - start > budget)
      return false;
  }
}

/// How often a waiting launcher asks whether the launch was interrupted.
constexpr auto kInterruptPollInterval = std::chrono::milliseconds(20);

/// Persistent worker threads; `run` executes a job on N of them and returns
/// when all have finished it.
///
/// The pool is never destroyed: a thread may still be launching while the
/// process exits. After fork() the child has none of the parent's threads,
/// and any lock one of them held stays held, so the child replaces the pool
/// with a new one (the old one's memory is left alone).
class WorkerPool {
public:
  static WorkerPool &get() {
    static std::once_flag created;
    std::call_once(created, [] {
      instance = new WorkerPool();
      pthread_atfork(nullptr, nullptr, afterForkInChild);
    });
    return *instance;
  }

  /// Runs `job` on `workers` threads: the caller and workers - 1 of the
  /// pool's if `callerRuns`, else `workers` of the pool's while the caller
  /// waits. While it waits the caller calls `interrupted` (if given) every
  /// few milliseconds; once that returns true the cancellation flag is set
  /// and the job is expected to wind down.
  void run(unsigned workers, bool callerRuns, const std::function<void()> &job,
           const std::function<bool()> *interrupted) {
    std::lock_guard<std::mutex> serial(launchMutex);
    cancelRequested.store(0, std::memory_order_relaxed);
    if (callerRuns && workers <= 1) {
      job();
      return;
    }
    unsigned pooled = callerRuns ? workers - 1 : workers;
    ensureThreads(pooled);
    {
      std::lock_guard<std::mutex> lock(mutex);
      current = &job;
      active = pooled;
      remaining.store(pooled, std::memory_order_relaxed);
      generation.fetch_add(1, std::memory_order_release);
    }
    wake.notify_all();
    if (callerRuns)
      job();
    auto finished = [&] { return remaining.load(std::memory_order_acquire) == 0; };
    if (!spinBriefly(finished)) {
      std::unique_lock<std::mutex> lock(mutex);
      for (;;) {
        if (!interrupted || cancelRequested.load(std::memory_order_relaxed)) {
          done.wait(lock, finished);
          break;
        }
        if (done.wait_for(lock, kInterruptPollInterval, finished))
          break;
        // Asked without the pool's lock: the question may take the GIL.
        lock.unlock();
        if ((*interrupted)())
          cancelRequested.store(1, std::memory_order_relaxed);
        lock.lock();
      }
    }
    std::lock_guard<std::mutex> lock(mutex);
    current = nullptr;
  }

private:
  static void afterForkInChild() {
    instance = new WorkerPool();
    new (&printMutex()) std::mutex();
    cancelRequested.store(0, std::memory_order_relaxed);
  }

  void ensureThreads(unsigned count) {
    while (threads.size() < count) {
      unsigned index = threads.size();
      threads.emplace_back([this, index] { workerLoop(index); });
      threads.back().detach(); // the pool lives as long as the process
    }
  }

  void workerLoop(unsigned index) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void()> *job;
      spinBriefly([&] { return generation.load(std::memory_order_acquire) != seen; });
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return generation.load(std::memory_order_relaxed) != seen; });
        seen = generation.load(std::memory_order_relaxed);
        if (index >= active)
          continue;
        job = current;
      }
      (*job)();
      // The last one out wakes the caller if it stopped spinning; the lock
      // orders the wake-up after the caller's check of `remaining`.
      if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex);
        done.notify_one();
      }
    }
  }

  std::mutex launchMutex; // one launch at a time on the pool
  std::mutex mutex;
  std::condition_variable wake, done;
  std::vector<std::thread> threads;
  const std::function<void()> *current = nullptr;
  unsigned active = 0;
  std::atomic<unsigned> remaining{0};
  std::atomic<uint64_t> generation{0};
  static WorkerPool *instance;
};

WorkerPool *WorkerPool::instance = nullptr;

} // namespace

//===----------------------------------------------------------------------===//
// HostKernel
//===----------------------------------------------------------------------===//

HostKernel::~HostKernel() {
  if (jit)
    liveKernels.fetch_sub(1, std::memory_order_relaxed);
}

int64_t HostKernel::getLiveCount() {
  return liveKernels.load(std::memory_order_relaxed);
}

static std::string errorText(llvm::Error error) {
  return llvm::toString(std::move(error));
}

FailureOr<std::unique_ptr<HostKernel>>
HostKernel::compile(ModuleOp module, StringRef kernelName,
                    const CPUTarget &target) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto kernel = std::unique_ptr<HostKernel>(new HostKernel());

  if (auto sites = module->getAttrOfType<ArrayAttr>("kiln_cpu.sites"))
    for (Attribute attr : sites) {
      auto site = cast<DictionaryAttr>(attr);
      kernel->sites.push_back(
          {cast<StringAttr>(site.get("loc")).str(),
           int(cast<IntegerAttr>(site.get("param")).getInt()),
           cast<BoolAttr>(site.get("store")).getValue(),
           int(cast<IntegerAttr>(site.get("element_bytes")).getInt())});
    }

  // An explicit processor and feature list, rather than whatever LLVM
  // detects, so that the code (and any LLVM bug it meets) is chosen, not
  // inherited from the machine; `target` is the host's by default.
  kernel->missing = missingHostFeatures(target);
  std::optional<llvm::orc::JITTargetMachineBuilder> machineBuilder =
      machineBuilderFor(target);
  auto machine = machineBuilder->createTargetMachine();
  if (!machine)
    return module.emitError() << "cannot create the target machine for CPU '"
                              << target.cpu << "': "
                              << errorText(machine.takeError());

  MLIRContext *context = module.getContext();
  registerBuiltinDialectTranslation(*context);
  registerLLVMDialectTranslation(*context);
  auto llvmContext = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, *llvmContext, "kiln");
  if (!llvmModule)
    return module.emitError() << "translation to LLVM IR failed";
  kernel->pollsCancellation = llvmModule->getNamedGlobal("__kiln_cpu_cancel") != nullptr;
  llvmModule->setTargetTriple((*machine)->getTargetTriple());
  llvmModule->setDataLayout((*machine)->createDataLayout());
  {
    llvm::LoopAnalysisManager loops;
    llvm::FunctionAnalysisManager functions;
    llvm::CGSCCAnalysisManager cgscc;
    llvm::ModuleAnalysisManager modules;
    llvm::PassBuilder builder(machine->get());
    builder.registerModuleAnalyses(modules);
    builder.registerCGSCCAnalyses(cgscc);
    builder.registerFunctionAnalyses(functions);
    builder.registerLoopAnalyses(loops);
    builder.crossRegisterProxies(loops, functions, cgscc, modules);
    builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3)
        .run(*llvmModule, modules);
  }
  // After the optimizer, so that asm["llir"] is exactly what code
  // generation gets (and `llc` reproduces it).
  moveHalfVectorsAsIntegers(*llvmModule);
  {
    llvm::raw_string_ostream os(kernel->llvmIR);
    llvmModule->print(os, nullptr);
  }

  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(*machineBuilder))
                 .create();
  if (!jit)
    return module.emitError() << "cannot create the JIT: "
                              << errorText(jit.takeError());
  llvm::orc::JITDylib &library = (*jit)->getMainJITDylib();
  // Kernels may call the C math library (expf, ...) and the checked-mode
  // callbacks of this file.
  auto processSymbols = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!processSymbols)
    return module.emitError() << "cannot search the process's symbols: "
                              << errorText(processSymbols.takeError());
  library.addGenerator(std::move(*processSymbols));
  llvm::orc::SymbolMap callbacks;
  callbacks[(*jit)->mangleAndIntern("__kiln_cpu_bounds")] = {
      llvm::orc::ExecutorAddr::fromPtr(&kilnCpuBounds),
      llvm::JITSymbolFlags::Exported};
  callbacks[(*jit)->mangleAndIntern("__kiln_cpu_check")] = {
      llvm::orc::ExecutorAddr::fromPtr(&kilnCpuCheck),
      llvm::JITSymbolFlags::Exported};
  auto addRuntime = [&](StringRef name, auto *function) {
    callbacks[(*jit)->mangleAndIntern(name)] = {
        llvm::orc::ExecutorAddr::fromPtr(function),
        llvm::JITSymbolFlags::Exported};
  };
  callbacks[(*jit)->mangleAndIntern("__kiln_cpu_cancel")] = {
      llvm::orc::ExecutorAddr::fromPtr(&cancelRequested),
      llvm::JITSymbolFlags::Exported};
  addRuntime("__kiln_cpu_print", &kilnCpuPrint);
  addRuntime("__kiln_cpu_assert_fail", &kilnCpuAssertFail);
  addRuntime("__truncsfhf2", &kilnTruncSFHF2);
  addRuntime("__truncdfhf2", &kilnTruncDFHF2);
  addRuntime("__extendhfsf2", &kilnExtendHFSF2);
  addRuntime("__gnu_h2f_ieee", &kilnExtendHFSF2);
  addRuntime("__truncsfbf2", &kilnTruncSFBF2);
  addRuntime("__truncdfbf2", &kilnTruncDFBF2);
  // libdevice names (kiln.extern_elementwise) run their host versions; a
  // name without one is an error here rather than a failed lookup later.
  llvm::StringSet<> hostLibdevice;
  for (const HostFunction &function : getHostLibdeviceFunctions()) {
    hostLibdevice.insert(function.name);
    addRuntime(function.name, function.address);
  }
  for (const llvm::Function &function : *llvmModule)
    if (function.isDeclaration() && function.getName().starts_with("__nv_") &&
        !hostLibdevice.contains(function.getName()))
      return module.emitError()
             << "libdevice function '" << function.getName()
             << "' has no host version; the CPU backend cannot run it";
  if (auto error = library.define(llvm::orc::absoluteSymbols(callbacks)))
    return module.emitError() << "cannot define the runtime callbacks: "
                              << errorText(std::move(error));
  if (auto error = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(
          std::move(llvmModule), std::move(llvmContext))))
    return module.emitError() << "cannot add the kernel to the JIT: "
                              << errorText(std::move(error));
  auto address = (*jit)->lookup((kernelName + ".kiln_entry").str());
  if (!address)
    return module.emitError() << "cannot compile kernel '" << kernelName
                              << "': " << errorText(address.takeError());
  kernel->entry = address->toPtr<EntryFunction>();
  kernel->jit = std::move(*jit);
  liveKernels.fetch_add(1, std::memory_order_relaxed);
  return kernel;
}

std::optional<OutOfBounds>
HostKernel::launch(unsigned gx, unsigned gy, unsigned gz, void **params,
                   unsigned numThreads, const std::vector<int64_t> *bounds,
                   std::string *assertion,
                   const std::function<bool()> *interrupted) const {
  uint64_t programs = uint64_t(gx) * gy * gz;
  if (programs == 0)
    return std::nullopt;
  // Asked once: the C library reads it from /sys on every call.
  static const unsigned everyCore = std::max(1u, std::thread::hardware_concurrency());
  if (numThreads == 0)
    numThreads = everyCore;
  unsigned workers = unsigned(std::min<uint64_t>(numThreads, programs));
  // Programs are handed out in small chunks: enough to balance uneven
  // programs, few enough that the counter is not contended.
  uint64_t chunk = std::max<uint64_t>(1, programs / (uint64_t(workers) * 8));
  std::atomic<uint64_t> next{0};
  CheckState check;
  check.bounds = bounds ? bounds->data() : nullptr;
  AssertState asserts;
  EntryFunction function = entry;
  // A kernel whose loops poll for cancellation may never return from a
  // program, so the caller leaves the programs to the pool and waits,
  // watching for an interruption. Other kernels' programs always end, and
  // the caller runs its share, looking between programs.
  bool callerRuns = !(interrupted && pollsCancellation);
  std::thread::id caller = std::this_thread::get_id();
  auto job = [&] {
    CheckState *previous = currentCheck;
    AssertState *previousAssert = currentAssert;
    currentCheck = &check;
    currentAssert = &asserts;
    bool watches = interrupted && std::this_thread::get_id() == caller;
    auto lastLook = std::chrono::steady_clock::now();
    unsigned sinceLook = 0;
    for (;;) {
      if (cancelRequested.load(std::memory_order_relaxed))
        break;
      uint64_t start = next.fetch_add(chunk, std::memory_order_relaxed);
      if (start >= programs)
        break;
      uint64_t end = std::min(programs, start + chunk);
      for (uint64_t p = start; p < end; ++p) {
        if (cancelRequested.load(std::memory_order_relaxed))
          break;
        // The clock is read every 64 programs: tiny programs cost a few
        // tens of nanoseconds, as much as reading it.
        if (watches && ++sinceLook % 64 == 0) {
          auto now = std::chrono::steady_clock::now();
          if (now - lastLook >= kInterruptPollInterval) {
            lastLook = now;
            if ((*interrupted)())
              cancelRequested.store(1, std::memory_order_relaxed);
          }
        }
        currentProgram[0] = int32_t(p % gx);
        currentProgram[1] = int32_t((p / gx) % gy);
        currentProgram[2] = int32_t(p / (uint64_t(gx) * gy));
        function(params, currentProgram[0], currentProgram[1],
                 currentProgram[2], int32_t(gx), int32_t(gy), int32_t(gz));
      }
    }
    currentCheck = previous;
    currentAssert = previousAssert;
  };
  WorkerPool::get().run(workers, callerRuns, job, interrupted);
  if (assertion && asserts.first)
    *assertion = *asserts.first;
  return check.first;
}
