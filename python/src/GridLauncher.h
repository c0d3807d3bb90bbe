//===- GridLauncher.h - kernel[grid]'s native launcher ------------*- C++ -*-===//
//
// What launch.cc (the GridLauncher type and its call) and
// LaunchArguments.cc (from a call's arguments to its key, bound arguments
// and grid) share: the interned names and settings `configure` gave, the
// launcher object, and the steps of a call.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PYTHON_GRIDLAUNCHER_H
#define KILN_PYTHON_GRIDLAUNCHER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <Python.h>

#include <cstdint>
#include <vector>

namespace kiln::python::launch {

/// What `configure` gave: os.environ's data dict and the keys to read from
/// it, and the names used on every call.
struct Config {
  PyObject *environData = nullptr; // dict, bytes -> bytes
  PyObject *environKeys = nullptr; // tuple of bytes
  PyObject *runName = nullptr;
  PyObject *gridName = nullptr;
  PyObject *gridKwnames = nullptr; // ("grid",)
  PyObject *routesName = nullptr;
  PyObject *registerName = nullptr;
  PyObject *launchName = nullptr;
  PyObject *kernelName = nullptr;
  PyObject *dtypeName = nullptr;
  PyObject *dataPtrName = nullptr;
  PyObject *getDeviceName = nullptr;
  PyObject *nameName = nullptr;
  PyObject *currentDeviceName = nullptr;
  PyObject *bestConfigName = nullptr;
  PyObject *gridPrefix = nullptr; // "grid "
  PyObject *torchName = nullptr;
  PyObject *one = nullptr;
  PyObject *launchesSkipped = nullptr; // a ContextVar: true while launches are skipped
  PyTypeObject *tensorType = nullptr;  // torch.Tensor, once torch is imported
  // What a launch reads of each tensor, as torch.Tensor defines them (read
  // with the type; null where one is not a descriptor of the expected kind).
  PyObject *tensorDtype = nullptr;     // the `dtype` getter
  PyObject *tensorDataPtr = nullptr;   // the `data_ptr` method
  PyObject *tensorGetDevice = nullptr; // the `get_device` method
  PyObject *descriptorModuleName = nullptr; // "kiln.tools.tensor_descriptor"
  PyTypeObject *descriptorType = nullptr;   // its TensorDescriptor, once imported
};

extern Config config;

/// A launch's grid: three Python ints (what the Python launch functions
/// take; owned references) and their values.
struct LaunchGrid {
  PyObject *xyz[3] = {nullptr, nullptr, nullptr};
  unsigned counts[3] = {0, 0, 0};

  void clear() {
    for (PyObject *&value : xyz)
      Py_CLEAR(value);
  }
};

/// A launch key as machine words (LaunchArguments.cc's appendWords says
/// how items become words), which RouteCache compares instead of building
/// and hashing the key's tuple.
class KeyWords {
public:
  void push(uint64_t word) { words.push_back(word); }
  void clear() { words.clear(); }
  /// A hash of the words (FNV-1a over 64-bit words, then mixed).
  uint64_t hash() const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t word : words)
      h = (h ^ word) * 0x100000001b3ull;
    return h ^ (h >> 32);
  }
  llvm::ArrayRef<uint64_t> view() const { return words; }

private:
  llvm::SmallVector<uint64_t, 128> words;
};

struct RouteCache;

/// What a parameter contributes to the launch key.
enum ParamKind : char {
  kRuntime = 0,   // a runtime argument: its type and specialization
  kConstexpr = 1, // its value
  kTuned = 2,     // set by an autotuner's config (the route's), not the caller
  kTuningKey = 3, // a runtime argument an autotuner tunes by: its value
  kHeuristic = 4, // computed by a heuristics function of the others: its value
};

struct GridLauncher {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject *function;  // the JITFunction
  PyObject *grid;      // as given
  LaunchGrid fixed;    // the grid, when it is a tuple of 1 to 3 ints
  bool gridIsFixed;    // ... that readGrid accepted
  bool gridIsCallable; // a function of the bound arguments by name
  Py_ssize_t numParams; // -1: not eligible for the fast path
  char *kinds;          // numParams ParamKind values
  PyObject *names;      // tuple: the parameters' names
  PyObject *defaults;   // tuple: each parameter's default, or `noDefault`
  PyObject *noDefault;  // the marker of a parameter without a default
  PyObject *keyPrefix;  // the key's first item (an autotuner: itself), or null
  PyObject *heuristics; // tuple of (position, function), computed in order, or null
  RouteCache *routes;   // the routes this launcher found, by their keys' words (launch.cc)
};

/// Owned references that a call holds until it returns.
struct OwnedValues {
  std::vector<PyObject *> values;
  ~OwnedValues() {
    for (PyObject *value : values)
      Py_DECREF(value);
  }
};

/// Reads a grid of 1 to 3 exact ints (a tuple, or a list a grid function
/// returned) within CUDA's limits (those the driver's launch checks) into
/// `grid`. False, with no error set, for anything else: the Python path
/// then reports it.
bool readLaunchGrid(PyObject *value, LaunchGrid &grid);

/// The launch key of `args` (a new reference), or null (no error set) when
/// an argument is of a type the key does not cover. Its words go to `words`;
/// with `wordsOnly` no key is built, and None stands for it. Records in
/// `addresses` and `isKnown` the address of each tensor argument, which the
/// key reads anyway.
PyObject *launchKey(GridLauncher *launcher, PyObject *const *args, uint64_t *addresses,
                    bool *isKnown, KeyWords &words, bool wordsOnly);

/// A tuple of the `count` arguments at `args` (what the launchers take as
/// the bound arguments), or null with an error set.
PyObject *tupleOf(PyObject *const *args, Py_ssize_t count);

/// Binds a call's arguments to the kernel's parameters in order, as
/// JITFunction._bind does, into `bound` (borrowed references: the call's
/// arguments and the defaults). False when the call is not a plain one
/// (too many arguments, an unknown or repeated keyword, a launch option such
/// as num_warps, a missing argument): the Python path then handles it.
bool bindArguments(GridLauncher *launcher, PyObject *const *args, Py_ssize_t nargs,
                   PyObject *kwnames, PyObject **bound);

/// The grid of a call: the launcher's own, or its grid function's result
/// for these arguments. False, with no error set, where the Python path
/// must compute it (and report what is wrong); false with an error set
/// where the grid function raised.
bool callGrid(GridLauncher *launcher, PyObject *const *bound, LaunchGrid &grid);

/// An autotuner's route (loaded kernel, CPU threads, DirectLaunch or None,
/// compiled kernel, fills, config): puts the config's values into `bound`
/// (fills: (position, value) pairs, kept alive by the route) and makes the
/// config the autotuner's `best_config`, as its run does. False with an
/// error set.
bool applyConfig(GridLauncher *launcher, PyObject *route, PyObject **bound);

/// A heuristics launcher's computed arguments (kiln.heuristics): each
/// function, in order, receives the arguments by name (those bound, the
/// ones computed before it, and the grid, as Heuristics.run gives them;
/// parameters left to a heuristic with no value yet are absent), and its
/// result becomes its parameter's argument (kept alive in `results`).
/// False with an error set when a function raised.
bool computeHeuristics(GridLauncher *launcher, PyObject **bound, OwnedValues &results);

} // namespace kiln::python::launch

#endif // KILN_PYTHON_GRIDLAUNCHER_H
