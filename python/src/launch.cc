//===- launch.cc - kiln._C.launch: kernel[grid](...) in one native call -----===//
//
// `kernel[grid]` returns a GridLauncher. Called with positional arguments
// only, it computes the launch's key in C++ and looks it up among the
// routes the JITFunction registered for such launches (in its `_routes`
// dict, under keys of their own); a hit launches the loaded kernel with no
// Python frame of the runtime in between: a route with a DirectLaunch
// (DirectLaunch.h) packs the arguments and calls the driver here, the others
// call the loaded kernel's launch function. Everything else (keyword
// arguments, grid callables, argument types the key below does not cover,
// a first launch) goes to `JITFunction.run`, which explains errors and
// compiles; after a successful launch there, the JITFunction is asked to
// register the key (`_register_fast_route`), and decides whether the route
// qualifies (a route that does not is registered as False, and such keys go
// to `run` without asking again).
//
// The key is finer than or equal to the Python key (jit_keys.py): per
// argument its exact type and, for
//   int      the type code and the 1 / divisible-by-16 specialization,
//   bool, float, None: nothing more (one code each, as in Python),
//   a torch.Tensor (exact type): dtype, address alignment (or null), device,
//   a constexpr parameter: the value itself,
// preceded by the raw values of the environment variables that the Python
// key holds, and KILN_CPU_THREADS, which the route's thread count was read
// from. Any other argument type takes the Python path.
//
// An autotuner's launcher (kiln.autotune over a jit function) keys the same
// way, after the autotuner itself, with the values of its tuning-key
// arguments and without the parameters its configs set: its route holds
// the config's values for those, which fill the bound arguments, and the
// config, which becomes the autotuner's best_config. A heuristics launcher
// (kiln.heuristics over a jit function) calls its functions first and keys
// by their results.
//
//===----------------------------------------------------------------------===//

#include "DirectLaunch.h"

#include <pybind11/pybind11.h>

#include <Python.h>
#include <structmember.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

namespace py = pybind11;

namespace {

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
} config;

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

/// Reads a grid of 1 to 3 exact ints (a tuple, or a list a grid function
/// returned) within CUDA's limits (those the driver's launch checks) into
/// `grid`. False, with no error set, for anything else: the Python path
/// then reports it.
bool readLaunchGrid(PyObject *value, LaunchGrid &grid) {
  if (!PyTuple_CheckExact(value) && !PyList_CheckExact(value))
    return false;
  Py_ssize_t size = PySequence_Fast_GET_SIZE(value);
  if (size < 1 || size > 3)
    return false;
  PyObject *items[3];
  unsigned counts[3];
  for (Py_ssize_t i = 0; i < 3; ++i) {
    items[i] = i < size ? PySequence_Fast_GET_ITEM(value, i) : config.one;
    if (!PyLong_CheckExact(items[i]))
      return false;
    int overflow = 0;
    long long read = PyLong_AsLongLongAndOverflow(items[i], &overflow);
    if (overflow || read < 0 || read > kiln::python::kMaxCudaGrid[i]) {
      PyErr_Clear();
      return false;
    }
    counts[i] = unsigned(read);
  }
  for (Py_ssize_t i = 0; i < 3; ++i) {
    Py_INCREF(items[i]);
    Py_XSETREF(grid.xyz[i], items[i]);
    grid.counts[i] = counts[i];
  }
  return true;
}

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
};

// A launcher is kept in its JITFunction's cache of launchers and refers to
// the JITFunction: the garbage collector must see that cycle.
int launcherTraverse(PyObject *self, visitproc visit, void *arg) {
  auto *launcher = reinterpret_cast<GridLauncher *>(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(launcher->function);
  Py_VISIT(launcher->grid);
  for (PyObject *value : launcher->fixed.xyz)
    Py_VISIT(value);
  Py_VISIT(launcher->names);
  Py_VISIT(launcher->defaults);
  Py_VISIT(launcher->noDefault);
  Py_VISIT(launcher->keyPrefix);
  Py_VISIT(launcher->heuristics);
  return 0;
}

int launcherClear(PyObject *self) {
  auto *launcher = reinterpret_cast<GridLauncher *>(self);
  Py_CLEAR(launcher->function);
  Py_CLEAR(launcher->grid);
  launcher->fixed.clear();
  Py_CLEAR(launcher->names);
  Py_CLEAR(launcher->defaults);
  Py_CLEAR(launcher->noDefault);
  Py_CLEAR(launcher->keyPrefix);
  Py_CLEAR(launcher->heuristics);
  // A cleared launcher takes the Python path, which then fails cleanly.
  launcher->numParams = -1;
  launcher->gridIsFixed = launcher->gridIsCallable = false;
  return 0;
}

void launcherDealloc(PyObject *self) {
  PyObject_GC_UnTrack(self);
  launcherClear(self);
  PyMem_Free(reinterpret_cast<GridLauncher *>(self)->kinds);
  PyTypeObject *type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type); // instances of heap types hold a reference to it
}

/// JITFunction.run(*args, grid=grid, **kwargs).
PyObject *runSlowly(GridLauncher *launcher, PyObject *const *args, size_t nargsf,
                    PyObject *kwnames) {
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  PyObject *run = PyObject_GetAttr(launcher->function, config.runName);
  if (!run)
    return nullptr;
  PyObject *stack[64];
  PyObject **all = stack;
  if (nargs + nkw + 1 > 64) {
    all = static_cast<PyObject **>(PyMem_Malloc(sizeof(PyObject *) * (nargs + nkw + 1)));
    if (!all) {
      Py_DECREF(run);
      return PyErr_NoMemory();
    }
  }
  std::memcpy(all, args, sizeof(PyObject *) * (nargs + nkw));
  all[nargs + nkw] = launcher->grid;
  PyObject *names;
  if (nkw == 0) {
    names = config.gridKwnames;
    Py_INCREF(names);
  } else {
    names = PyTuple_New(nkw + 1);
    for (Py_ssize_t i = 0; i < nkw; ++i) {
      PyObject *name = PyTuple_GET_ITEM(kwnames, i);
      Py_INCREF(name);
      PyTuple_SET_ITEM(names, i, name);
    }
    Py_INCREF(config.gridName);
    PyTuple_SET_ITEM(names, nkw, config.gridName);
  }
  PyObject *result = PyObject_Vectorcall(run, all, nargs, names);
  Py_DECREF(names);
  Py_DECREF(run);
  if (all != stack)
    PyMem_Free(all);
  return result;
}

/// The key piece of a Python int: 0 i32, 1 i32 equal to 1, 2 i32 divisible
/// by 16, 3 i64, 4 i64 divisible by 16, 5 u64, 6 u64 divisible by 16; -1
/// beyond 64 bits (the Python path reports it).
long intCode(PyObject *value) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow == 0) {
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return -1;
    }
    bool divisible = (static_cast<unsigned long long>(v) & 15) == 0;
    if (v >= -(1LL << 31) && v < (1LL << 31))
      return v == 1 ? 1 : divisible ? 2 : 0;
    return divisible ? 4 : 3;
  }
  if (overflow < 0)
    return -1;
  unsigned long long u = PyLong_AsUnsignedLongLong(value);
  if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    return -1;
  }
  return (u & 15) == 0 ? 6 : 5;
}

/// torch.Tensor, once torch is imported (looked up until then; nothing
/// imports torch for this).
PyTypeObject *tensorType() {
  if (!config.tensorType) {
    PyObject *torch = PyImport_GetModule(config.torchName);
    if (torch) {
      PyObject *tensor = PyObject_GetAttrString(torch, "Tensor");
      Py_DECREF(torch);
      if (tensor && PyType_Check(tensor))
        config.tensorType = reinterpret_cast<PyTypeObject *>(tensor);
      else
        Py_XDECREF(tensor);
    }
    PyErr_Clear();
  }
  return config.tensorType;
}

/// The launch key of `args`, or null (no error set) when an argument is of
/// a type the key does not cover. Records in `known` the address of each
/// tensor argument, which the key reads anyway.
PyObject *launchKey(GridLauncher *launcher, PyObject *const *args, uint64_t *addresses,
                    bool *isKnown) {
  Py_ssize_t envCount = PyTuple_GET_SIZE(config.environKeys);
  // At most 4 items per argument (a tensor: type, dtype, alignment, device).
  Py_ssize_t capacity = envCount + 4 * launcher->numParams + 1;
  PyObject *key = PyTuple_New(capacity);
  if (!key)
    return nullptr;
  Py_ssize_t size = 0;
  auto push = [&](PyObject *item) { // steals a reference
    PyTuple_SET_ITEM(key, size++, item);
  };
  auto pushBorrowed = [&](PyObject *item) {
    Py_INCREF(item);
    push(item);
  };
  if (launcher->keyPrefix)
    pushBorrowed(launcher->keyPrefix);
  for (Py_ssize_t i = 0; i < envCount; ++i) {
    PyObject *value = PyDict_GetItem(config.environData, PyTuple_GET_ITEM(config.environKeys, i));
    pushBorrowed(value ? value : Py_None);
  }
  bool covered = true;
  for (Py_ssize_t i = 0; i < launcher->numParams; ++i)
    isKnown[i] = false;
  for (Py_ssize_t i = 0; i < launcher->numParams && covered; ++i) {
    PyObject *value = args[i];
    PyTypeObject *type = Py_TYPE(value);
    char kind = launcher->kinds[i];
    if (kind == kTuned) {
      // The caller left it to the config (its default is the marker);
      // setting it is an error that run reports.
      if (value != PyTuple_GET_ITEM(launcher->defaults, i))
        covered = false;
      continue;
    }
    pushBorrowed(reinterpret_cast<PyObject *>(type));
    if (kind == kConstexpr || kind == kHeuristic) {
      pushBorrowed(value);
    } else if (kind == kTuningKey) {
      // Its value picks the config: a scalar's value; an array's shape
      // (the autotuner's rule) is for run to read.
      if (type == &PyLong_Type || type == &PyFloat_Type || type == &PyBool_Type || value == Py_None)
        pushBorrowed(value);
      else
        covered = false;
    } else if (type == &PyLong_Type) {
      long code = intCode(value);
      if (code < 0)
        covered = false;
      else
        push(PyLong_FromLong(code));
    } else if (type == &PyBool_Type || type == &PyFloat_Type || value == Py_None) {
      // One code each, whatever the value.
    } else if (type == tensorType()) {
      PyObject *dtype = PyObject_GetAttr(value, config.dtypeName);
      PyObject *address = dtype ? PyObject_CallMethodNoArgs(value, config.dataPtrName) : nullptr;
      PyObject *device = address ? PyObject_CallMethodNoArgs(value, config.getDeviceName) : nullptr;
      if (!device) {
        Py_XDECREF(dtype);
        Py_XDECREF(address);
        PyErr_Clear(); // the Python path meets the same error and explains it
        covered = false;
        break;
      }
      unsigned long long bits = PyLong_AsUnsignedLongLongMask(address);
      Py_DECREF(address);
      addresses[i] = bits;
      isKnown[i] = true;
      push(dtype);
      push(PyLong_FromLong(bits == 0 ? 2 : (bits & 15) == 0 ? 1 : 0));
      push(device);
    } else {
      covered = false;
    }
  }
  if (!covered) {
    // Unset the slots not filled, so that the tuple can be freed.
    for (Py_ssize_t i = size; i < capacity; ++i)
      PyTuple_SET_ITEM(key, i, nullptr);
    Py_DECREF(key);
    return nullptr;
  }
  if (size < capacity && _PyTuple_Resize(&key, size) < 0)
    return nullptr;
  return key;
}

/// A tuple of the `count` arguments at `args` (what the launchers take as
/// the bound arguments), or null with an error set.
PyObject *tupleOf(PyObject *const *args, Py_ssize_t count) {
  PyObject *tuple = PyTuple_New(count);
  if (!tuple)
    return nullptr;
  for (Py_ssize_t i = 0; i < count; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SET_ITEM(tuple, i, args[i]);
  }
  return tuple;
}

/// Names the kernel in a grid error from the launchers, which check the
/// grid in C++ where the kernel has no name (as JITFunction.run does).
void nameKernelInGridError(GridLauncher *launcher) {
  if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_ValueError))
    return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  PyObject *text = value ? PyObject_Str(value) : nullptr;
  PyObject *name = PyObject_GetAttr(launcher->function, config.nameName);
  if (text && name && PyUnicode_Check(text) && PyUnicode_GetLength(text) >= 5 &&
      PyUnicode_Tailmatch(text, config.gridPrefix, 0, 5, -1) == 1) {
    PyErr_Format(type, "kernel %S: %S", name, text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
  } else {
    PyErr_Restore(type, value, traceback);
  }
  Py_XDECREF(text);
  Py_XDECREF(name);
}

/// Launches a registered route: (loaded kernel, CPU threads, DirectLaunch
/// or None, compiled kernel). With a DirectLaunch the launch runs here;
/// otherwise through the loaded kernel's Python launch function. Returns
/// the compiled kernel, as kernel[grid](...) does.
PyObject *launchRoute(GridLauncher *launcher, PyObject *route, PyObject *const *args,
                      const LaunchGrid &grid, const kiln::python::KnownAddresses &known) {
  PyObject *loaded = PyTuple_GET_ITEM(route, 0);
  PyObject *threads = PyTuple_GET_ITEM(route, 1);
  PyObject *direct = PyTuple_GET_ITEM(route, 2);
  PyObject *compiled = PyTuple_GET_ITEM(route, 3);
  if (kiln::python::isDirectLaunch(direct)) {
    if (!kiln::python::launchDirectly(direct, grid.counts, args, launcher->numParams, known))
      return nullptr;
    Py_INCREF(compiled);
    return compiled;
  }
  PyObject *bound = tupleOf(args, launcher->numParams);
  if (!bound)
    return nullptr;
  PyObject *launch = PyObject_GetAttr(loaded, config.launchName);
  if (!launch) {
    Py_DECREF(bound);
    return nullptr;
  }
  PyObject *callArgs[5] = {grid.xyz[0], grid.xyz[1], grid.xyz[2], bound, threads};
  PyObject *done = PyObject_Vectorcall(launch, callArgs, 5, nullptr);
  Py_DECREF(launch);
  Py_DECREF(bound);
  if (!done) {
    nameKernelInGridError(launcher);
    return nullptr;
  }
  Py_DECREF(done);
  Py_INCREF(compiled);
  return compiled;
}

/// Whether launches are skipped here (launch_settings.skipping_launches):
/// 1 yes, 0 no, -1 with an error set.
int launchesSkipped() {
  if (!config.launchesSkipped)
    return 0;
  PyObject *value = nullptr;
  if (PyContextVar_Get(config.launchesSkipped, nullptr, &value) < 0)
    return -1;
  int skipped = value ? PyObject_IsTrue(value) : 0;
  Py_XDECREF(value);
  return skipped;
}

/// Binds a call's arguments to the kernel's parameters in order, as
/// JITFunction._bind does, into `bound` (borrowed references: the call's
/// arguments and the defaults). False when the call is not a plain one
/// (too many arguments, an unknown or repeated keyword, a launch option such
/// as num_warps, a missing argument): the Python path then handles it.
bool bindArguments(GridLauncher *launcher, PyObject *const *args, Py_ssize_t nargs,
                   PyObject *kwnames, PyObject **bound) {
  Py_ssize_t count = launcher->numParams;
  if (nargs > count)
    return false;
  for (Py_ssize_t i = 0; i < count; ++i)
    bound[i] = i < nargs ? args[i] : nullptr;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject *name = PyTuple_GET_ITEM(kwnames, k);
    Py_ssize_t position = -1;
    // Keyword names and parameter names are interned: compare pointers
    // first, then text.
    for (Py_ssize_t i = nargs; i < count && position < 0; ++i)
      if (PyTuple_GET_ITEM(launcher->names, i) == name)
        position = i;
    for (Py_ssize_t i = nargs; i < count && position < 0; ++i)
      if (PyUnicode_Compare(PyTuple_GET_ITEM(launcher->names, i), name) == 0)
        position = i;
    if (PyErr_Occurred())
      PyErr_Clear();
    if (position < 0 || bound[position])
      return false;
    bound[position] = args[nargs + k];
  }
  for (Py_ssize_t i = nargs; i < count; ++i) {
    if (bound[i])
      continue;
    PyObject *value = PyTuple_GET_ITEM(launcher->defaults, i);
    if (value == launcher->noDefault)
      return false;
    bound[i] = value;
  }
  return true;
}

/// The grid of a call: the launcher's own, or its grid function's result
/// for these arguments. False, with no error set, where the Python path
/// must compute it (and report what is wrong); false with an error set
/// where the grid function raised.
bool callGrid(GridLauncher *launcher, PyObject *const *bound, LaunchGrid &grid) {
  if (launcher->gridIsFixed) {
    for (int i = 0; i < 3; ++i) {
      Py_INCREF(launcher->fixed.xyz[i]);
      grid.xyz[i] = launcher->fixed.xyz[i];
      grid.counts[i] = launcher->fixed.counts[i];
    }
    return true;
  }
  PyObject *named = PyDict_New();
  if (!named)
    return false;
  for (Py_ssize_t i = 0; i < launcher->numParams; ++i)
    if (PyDict_SetItem(named, PyTuple_GET_ITEM(launcher->names, i), bound[i]) < 0) {
      Py_DECREF(named);
      return false;
    }
  PyObject *value = PyObject_CallOneArg(launcher->grid, named);
  Py_DECREF(named);
  if (!value)
    return false;
  bool read = readLaunchGrid(value, grid);
  Py_DECREF(value);
  return read;
}

/// An autotuner's route (loaded kernel, CPU threads, DirectLaunch or None,
/// compiled kernel, fills, config): puts the config's values into `bound`
/// (fills: (position, value) pairs, kept alive by the route) and makes the
/// config the autotuner's `best_config`, as its run does. False with an
/// error set.
bool applyConfig(GridLauncher *launcher, PyObject *route, PyObject **bound) {
  PyObject *fills = PyTuple_GET_ITEM(route, 4);
  if (!PyTuple_Check(fills)) {
    PyErr_SetString(PyExc_TypeError, "an autotuner's route must hold a tuple of fills");
    return false;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fills); ++i) {
    PyObject *fill = PyTuple_GET_ITEM(fills, i);
    Py_ssize_t position = PyTuple_Check(fill) && PyTuple_GET_SIZE(fill) == 2
                              ? PyLong_AsSsize_t(PyTuple_GET_ITEM(fill, 0))
                              : -1;
    if (position < 0 || position >= launcher->numParams) {
      PyErr_Clear();
      PyErr_SetString(PyExc_ValueError, "an autotuner's route names no parameter");
      return false;
    }
    bound[position] = PyTuple_GET_ITEM(fill, 1);
  }
  return PyObject_SetAttr(launcher->function, config.bestConfigName, PyTuple_GET_ITEM(route, 5)) == 0;
}

/// Owned references that a call holds until it returns.
struct OwnedValues {
  std::vector<PyObject *> values;
  ~OwnedValues() {
    for (PyObject *value : values)
      Py_DECREF(value);
  }
};

/// A heuristics launcher's computed arguments (kiln.heuristics): each
/// function, in order, receives the arguments by name (those bound, the
/// ones computed before it, and the grid, as Heuristics.run gives them;
/// parameters left to a heuristic with no value yet are absent), and its
/// result becomes its parameter's argument (kept alive in `results`).
/// False with an error set when a function raised.
bool computeHeuristics(GridLauncher *launcher, PyObject **bound, OwnedValues &results) {
  PyObject *named = PyDict_New();
  if (!named)
    return false;
  bool ok = true;
  for (Py_ssize_t i = 0; ok && i < launcher->numParams; ++i)
    if (bound[i] != PyTuple_GET_ITEM(launcher->defaults, i) || launcher->kinds[i] != kHeuristic)
      ok = PyDict_SetItem(named, PyTuple_GET_ITEM(launcher->names, i), bound[i]) == 0;
  ok = ok && PyDict_SetItem(named, config.gridName, launcher->grid) == 0;
  for (Py_ssize_t k = 0; ok && k < PyTuple_GET_SIZE(launcher->heuristics); ++k) {
    PyObject *entry = PyTuple_GET_ITEM(launcher->heuristics, k);
    Py_ssize_t position = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0));
    // Each function sees its own copy, as Heuristics.run's `{**named, **kwargs}`.
    PyObject *view = PyDict_Copy(named);
    PyObject *value = view ? PyObject_CallOneArg(PyTuple_GET_ITEM(entry, 1), view) : nullptr;
    Py_XDECREF(view);
    if (!value) {
      ok = false;
      break;
    }
    results.values.push_back(value);
    bound[position] = value;
    ok = PyDict_SetItem(named, PyTuple_GET_ITEM(launcher->names, position), value) == 0;
  }
  Py_DECREF(named);
  return ok;
}

PyObject *launcherCall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  auto *launcher = reinterpret_cast<GridLauncher *>(self);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  Py_ssize_t count = launcher->numParams;
  if (count < 0 || !(launcher->gridIsFixed || launcher->gridIsCallable) || !config.environData)
    return runSlowly(launcher, args, nargsf, kwnames);
  switch (launchesSkipped()) {
  case -1:
    return nullptr;
  case 1: // run() returns None without looking at anything
    return runSlowly(launcher, args, nargsf, kwnames);
  }
  // Small signatures keep their arguments and addresses on the stack.
  constexpr Py_ssize_t kInline = 32;
  PyObject *inlineBound[kInline];
  uint64_t inlineAddresses[kInline];
  bool inlineKnown[kInline];
  std::unique_ptr<PyObject *[]> heapBound;
  std::unique_ptr<uint64_t[]> heapAddresses;
  std::unique_ptr<bool[]> heapKnown;
  PyObject **bound = inlineBound;
  uint64_t *addresses = inlineAddresses;
  bool *isKnown = inlineKnown;
  if (count > kInline) {
    heapBound.reset(new PyObject *[count]);
    heapAddresses.reset(new uint64_t[count]);
    heapKnown.reset(new bool[count]);
    bound = heapBound.get();
    addresses = heapAddresses.get();
    isKnown = heapKnown.get();
  }
  bool hasKeywords = kwnames && PyTuple_GET_SIZE(kwnames);
  if (nargs == count && !hasKeywords)
    std::copy(args, args + count, bound);
  else if (!bindArguments(launcher, args, nargs, kwnames, bound))
    return runSlowly(launcher, args, nargsf, kwnames);
  OwnedValues heuristicValues;
  if (launcher->heuristics && !computeHeuristics(launcher, bound, heuristicValues))
    return nullptr;

  PyObject *key = launchKey(launcher, bound, addresses, isKnown);
  if (!key) {
    if (PyErr_Occurred())
      return nullptr;
    return runSlowly(launcher, args, nargsf, kwnames);
  }
  PyObject *routes = PyObject_GetAttr(launcher->function, config.routesName);
  if (!routes || !PyDict_Check(routes)) {
    Py_XDECREF(routes);
    Py_DECREF(key);
    PyErr_Clear();
    return runSlowly(launcher, args, nargsf, kwnames);
  }
  PyObject *route = PyDict_GetItemWithError(routes, key); // borrowed
  PyObject *byDevice = nullptr;                           // owned, when the route is by device
  if (route && PyDict_Check(route)) {
    // A key that names no device: {device: route}, by the current device.
    byDevice = route;
    Py_INCREF(byDevice);
    PyObject *device = PyObject_CallMethodNoArgs(byDevice, config.currentDeviceName);
    route = device ? PyDict_GetItemWithError(byDevice, device) : nullptr;
    Py_XDECREF(device);
    if (!route && PyErr_Occurred()) {
      Py_DECREF(byDevice);
      Py_DECREF(routes);
      Py_DECREF(key);
      return nullptr;
    }
  }
  Py_ssize_t routeSize = route && PyTuple_CheckExact(route) ? PyTuple_GET_SIZE(route) : 0;
  if (routeSize == 4 || routeSize == 6) {
    Py_INCREF(route); // a launch may run Python that changes the dicts
    Py_XDECREF(byDevice);
    Py_DECREF(routes);
    Py_DECREF(key);
    if (routeSize == 6 && !applyConfig(launcher, route, bound)) {
      Py_DECREF(route);
      return nullptr;
    }
    LaunchGrid grid;
    PyObject *result = nullptr;
    if (callGrid(launcher, bound, grid))
      result = launchRoute(launcher, route, bound, grid, {addresses, isKnown});
    else if (!PyErr_Occurred())
      result = runSlowly(launcher, args, nargsf, kwnames);
    grid.clear();
    Py_DECREF(route);
    return result;
  }
  Py_XDECREF(byDevice); // this device's route is not there yet: run registers it
  Py_DECREF(routes);
  if (route == Py_False) { // a key whose route does not qualify
    Py_DECREF(key);
    return runSlowly(launcher, args, nargsf, kwnames);
  }
  if (PyErr_Occurred()) { // an unhashable constexpr: the Python path explains
    PyErr_Clear();
    Py_DECREF(key);
    return runSlowly(launcher, args, nargsf, kwnames);
  }
  PyObject *result = runSlowly(launcher, args, nargsf, kwnames);
  if (result) {
    PyObject *boundTuple = tupleOf(bound, count);
    PyObject *callArgs[3] = {launcher->function, key, boundTuple};
    PyObject *registered =
        boundTuple ? PyObject_VectorcallMethod(config.registerName, callArgs, 3, nullptr) : nullptr;
    Py_XDECREF(boundTuple);
    if (!registered) {
      Py_DECREF(result);
      result = nullptr;
    } else {
      Py_DECREF(registered);
    }
  }
  Py_DECREF(key);
  return result;
}

PyMemberDef launcherMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(GridLauncher, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot launcherSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void *>(launcherDealloc)},
    {Py_tp_traverse, reinterpret_cast<void *>(launcherTraverse)},
    {Py_tp_clear, reinterpret_cast<void *>(launcherClear)},
    {Py_tp_call, reinterpret_cast<void *>(PyVectorcall_Call)},
    {Py_tp_members, launcherMembers},
    {Py_tp_doc, const_cast<char *>("kernel[grid]: launches the kernel over grid when called")},
    {0, nullptr}};

PyType_Spec launcherSpec = {"kiln._C.launch.GridLauncher", sizeof(GridLauncher), 0,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
                            launcherSlots};

PyTypeObject *GridLauncherType = nullptr;

/// A new launcher of `function` over `grid`, or null with an error set.
PyObject *newGridLauncher(PyObject *const *argv);

/// Launchers a JITFunction keeps, by grid: at most this many (then the
/// cache starts again), so that grids computed per call do not pile up.
constexpr Py_ssize_t kMaxCachedLaunchers = 256;

/// Whether kernel[grid] may reuse a launcher made for an equal grid: a
/// tuple of exact ints (equal ones launch alike), or a plain function
/// (equal only to itself).
bool isCacheableGrid(PyObject *grid) {
  if (PyFunction_Check(grid))
    return true;
  if (!PyTuple_CheckExact(grid))
    return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(grid); ++i)
    if (!PyLong_CheckExact(PyTuple_GET_ITEM(grid, i)))
      return false;
  return true;
}

/// grid_launcher(function, grid, signature or None, cache or None) ->
/// GridLauncher, where signature is (kinds, names, defaults, no_default[,
/// key_prefix]) and cache a dict of the function's launchers by grid.
PyObject *makeGridLauncher(PyObject *, PyObject *const *argv, Py_ssize_t argc) {
  if (argc != 4) {
    PyErr_SetString(PyExc_TypeError, "grid_launcher(function, grid, signature, cache)");
    return nullptr;
  }
  PyObject *cache = argv[3];
  if (cache != Py_None && !PyDict_CheckExact(cache)) {
    PyErr_SetString(PyExc_TypeError, "grid_launcher: cache must be a dict or None");
    return nullptr;
  }
  if (cache == Py_None || !isCacheableGrid(argv[1]))
    return newGridLauncher(argv);
  PyObject *cached = PyDict_GetItemWithError(cache, argv[1]);
  if (cached) {
    Py_INCREF(cached);
    return cached;
  }
  if (PyErr_Occurred())
    return nullptr;
  PyObject *launcher = newGridLauncher(argv);
  if (!launcher)
    return nullptr;
  if (PyDict_GET_SIZE(cache) >= kMaxCachedLaunchers)
    PyDict_Clear(cache);
  if (PyDict_SetItem(cache, argv[1], launcher) < 0) {
    Py_DECREF(launcher);
    return nullptr;
  }
  return launcher;
}

PyObject *newGridLauncher(PyObject *const *argv) {
  auto *launcher = PyObject_GC_New(GridLauncher, GridLauncherType);
  if (!launcher)
    return nullptr;
  launcher->vectorcall = launcherCall;
  Py_INCREF(argv[0]);
  launcher->function = argv[0];
  Py_INCREF(argv[1]);
  launcher->grid = argv[1];
  new (&launcher->fixed) LaunchGrid();
  launcher->kinds = nullptr;
  launcher->names = launcher->defaults = launcher->noDefault = launcher->keyPrefix = nullptr;
  launcher->heuristics = nullptr;
  launcher->numParams = -1;
  launcher->gridIsFixed = readLaunchGrid(argv[1], launcher->fixed) && PyTuple_CheckExact(argv[1]);
  launcher->gridIsCallable = !PyTuple_Check(argv[1]) && !PyList_Check(argv[1]) &&
                             PyCallable_Check(argv[1]);
  PyObject_GC_Track(launcher);
  PyObject *signature = argv[2];
  if (signature == Py_None)
    return reinterpret_cast<PyObject *>(launcher);
  if (!PyTuple_Check(signature) || PyTuple_GET_SIZE(signature) < 4 || PyTuple_GET_SIZE(signature) > 6 ||
      !PyTuple_Check(PyTuple_GET_ITEM(signature, 0)) ||
      !PyTuple_Check(PyTuple_GET_ITEM(signature, 1)) ||
      !PyTuple_Check(PyTuple_GET_ITEM(signature, 2))) {
    Py_DECREF(launcher);
    PyErr_SetString(PyExc_TypeError,
                    "signature must be (kinds, names, defaults, no_default[, key_prefix[, "
                    "heuristics]]) or None");
    return nullptr;
  }
  PyObject *kinds = PyTuple_GET_ITEM(signature, 0);
  Py_ssize_t n = PyTuple_GET_SIZE(kinds);
  if (PyTuple_GET_SIZE(PyTuple_GET_ITEM(signature, 1)) != n ||
      PyTuple_GET_SIZE(PyTuple_GET_ITEM(signature, 2)) != n) {
    Py_DECREF(launcher);
    PyErr_SetString(PyExc_ValueError, "signature: one kind, name and default per parameter");
    return nullptr;
  }
  launcher->kinds = static_cast<char *>(PyMem_Malloc(n > 0 ? n : 1));
  for (Py_ssize_t i = 0; i < n; ++i) {
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(kinds, i)); // a bool is 0 or 1
    if (kind < kRuntime || kind > kHeuristic) {
      PyErr_Clear();
      Py_DECREF(launcher);
      PyErr_SetString(PyExc_ValueError, "signature: a parameter kind is 0 to 4");
      return nullptr;
    }
    launcher->kinds[i] = char(kind);
  }
  launcher->names = PyTuple_GET_ITEM(signature, 1);
  launcher->defaults = PyTuple_GET_ITEM(signature, 2);
  launcher->noDefault = PyTuple_GET_ITEM(signature, 3);
  Py_INCREF(launcher->names);
  Py_INCREF(launcher->defaults);
  Py_INCREF(launcher->noDefault);
  if (PyTuple_GET_SIZE(signature) >= 5 && PyTuple_GET_ITEM(signature, 4) != Py_None) {
    launcher->keyPrefix = PyTuple_GET_ITEM(signature, 4);
    Py_INCREF(launcher->keyPrefix);
  }
  if (PyTuple_GET_SIZE(signature) == 6 && PyTuple_GET_ITEM(signature, 5) != Py_None) {
    PyObject *heuristics = PyTuple_GET_ITEM(signature, 5);
    bool valid = PyTuple_Check(heuristics);
    for (Py_ssize_t i = 0; valid && i < PyTuple_GET_SIZE(heuristics); ++i) {
      PyObject *entry = PyTuple_GET_ITEM(heuristics, i);
      Py_ssize_t position = PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 2
                                ? PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0))
                                : -1;
      valid = position >= 0 && position < n && launcher->kinds[position] == kHeuristic;
    }
    if (!valid) {
      PyErr_Clear();
      Py_DECREF(launcher);
      PyErr_SetString(PyExc_ValueError,
                      "signature: heuristics must be (position, function) pairs of kind-4 parameters");
      return nullptr;
    }
    launcher->heuristics = heuristics;
    Py_INCREF(heuristics);
  }
  launcher->numParams = n;
  return reinterpret_cast<PyObject *>(launcher);
}

PyMethodDef makeDefinition = {
    "grid_launcher", reinterpret_cast<PyCFunction>(reinterpret_cast<void *>(makeGridLauncher)),
    METH_FASTCALL,
    "grid_launcher(function, grid, signature, cache): what kernel[grid] returns. signature "
    "(kinds, names, defaults, no_default[, key_prefix]: one entry per parameter in each of the "
    "first three; kinds 0 runtime, 1 constexpr, 2 set by an autotuner's config, 3 a tuning key "
    "argument; no_default marking a parameter without one) enables the native path; None "
    "sends every call to function.run. cache (a dict, or None) keeps the launchers of grids of ints and "
    "of grid functions, so that kernel[grid] with such a grid allocates nothing after the "
    "first time."};

} // namespace

void initLaunch(py::module_ &m) {
  GridLauncherType = reinterpret_cast<PyTypeObject *>(PyType_FromSpec(&launcherSpec));
  if (!GridLauncherType)
    throw py::error_already_set();
  m.attr("GridLauncher") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(GridLauncherType));
  config.runName = PyUnicode_InternFromString("run");
  config.gridName = PyUnicode_InternFromString("grid");
  config.gridKwnames = PyTuple_Pack(1, config.gridName);
  config.routesName = PyUnicode_InternFromString("_routes");
  config.registerName = PyUnicode_InternFromString("_register_fast_route");
  config.launchName = PyUnicode_InternFromString("launch");
  config.kernelName = PyUnicode_InternFromString("kernel");
  config.dtypeName = PyUnicode_InternFromString("dtype");
  config.dataPtrName = PyUnicode_InternFromString("data_ptr");
  config.getDeviceName = PyUnicode_InternFromString("get_device");
  config.nameName = PyUnicode_InternFromString("__name__");
  config.currentDeviceName = PyUnicode_InternFromString("current_device");
  config.bestConfigName = PyUnicode_InternFromString("best_config");
  config.gridPrefix = PyUnicode_InternFromString("grid ");
  config.torchName = PyUnicode_InternFromString("torch");
  config.one = PyLong_FromLong(1);
  PyObject *make = PyCFunction_NewEx(&makeDefinition, nullptr, nullptr);
  m.attr("grid_launcher") = py::reinterpret_steal<py::object>(make);
  m.def(
      "configure",
      [](py::object environData, py::tuple environKeys, py::object launchesSkipped) {
        if (!launchesSkipped.is_none() && !PyContextVar_CheckExact(launchesSkipped.ptr()))
          throw py::type_error("launches_skipped must be a ContextVar or None");
        Py_XDECREF(config.launchesSkipped);
        config.launchesSkipped = launchesSkipped.is_none() ? nullptr : launchesSkipped.inc_ref().ptr();
        Py_XDECREF(config.environData);
        Py_XDECREF(config.environKeys);
        if (environData.is_none()) {
          config.environData = config.environKeys = nullptr;
          return;
        }
        if (!PyDict_Check(environData.ptr()))
          throw py::type_error("environ data must be a dict");
        config.environData = environData.inc_ref().ptr();
        config.environKeys = environKeys.inc_ref().ptr();
      },
      py::arg("environ_data"), py::arg("environ_keys"), py::arg("launches_skipped") = py::none(),
      "The dict os.environ keeps its data in (None: no native path), the "
      "keys whose raw values are part of every launch key, and the ContextVar "
      "that is true where launches are skipped (those calls go to run)");
}
