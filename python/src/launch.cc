//===- launch.cc - kiln._C.launch: kernel[grid](...) in one native call -----===//
//
// `kernel[grid]` returns a GridLauncher. Called with positional arguments
// only, it computes the launch's key in C++ and looks it up among the
// routes the JITFunction registered for such launches (in its `_routes`
// dict, under keys of their own); a hit launches the loaded kernel with no
// Python frame of the runtime in between: a route with a DirectLaunch
// (DirectLaunch.h) packs the arguments and calls the driver here, the others
// call the loaded kernel's launch function. Everything else (keyword
// arguments, grid callables, argument types the key does not cover
// (LaunchArguments.cc says what it holds), a first launch) goes to `JITFunction.run`, which explains errors and
// compiles; after a successful launch there, the JITFunction is asked to
// register the key (`_register_fast_route`), and decides whether the route
// qualifies (a route that does not is registered as False, and such keys go
// to `run` without asking again). Each launcher also keeps the last few
// routes it found, by their keys' words (RouteCache below): while `_routes`
// is unchanged, a launch with such a key builds no key tuple and looks
// nothing up in the dict.
//
//===----------------------------------------------------------------------===//

#include "DirectLaunch.h"
#include "GridLauncher.h"

#include <pybind11/pybind11.h>

#include <Python.h>
#include <structmember.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

namespace py = pybind11;

namespace kiln::python::launch {

/// The routes a launcher found, by their keys' words: a launch whose words
/// match an entry, in the same `_routes` dict unchanged since (its version
/// tag), takes the entry's route without building, hashing and looking up
/// its key's tuple (the bulk of a launch's own cost with many arguments).
/// Each entry holds the key it read its words from, which keeps alive every
/// object whose address is among them.
struct CachedRoute {
  llvm::SmallVector<uint64_t, 0> words;
  uint64_t hash = 0;
  PyObject *key = nullptr;    // the key tuple of the words
  PyObject *routes = nullptr; // the `_routes` dict the route was found in
  uint64_t version = 0;       // its version tag then
  PyObject *route = nullptr;  // routes[key] then

  bool holds(const KeyWords &keyWords, uint64_t keyHash) const {
    return route && hash == keyHash && llvm::ArrayRef<uint64_t>(words) == keyWords.view();
  }
};

struct RouteCache {
  static constexpr int kSize = 4; // a launcher rarely sees more keys
  CachedRoute entries[kSize];
  int next = 0; // the entry to replace next
};

} // namespace kiln::python::launch

namespace {

using namespace kiln::python::launch;

// A dict's version tag changes with every change to the dict (PEP 509);
// CPython 3.13 deprecates it and later versions drop it: there, launchers
// cache no routes.
#if PY_VERSION_HEX < 0x030D0000
constexpr bool kHaveDictVersions = true;
uint64_t dictVersion(PyObject *dict) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return reinterpret_cast<PyDictObject *>(dict)->ma_version_tag;
#pragma GCC diagnostic pop
}
#else
constexpr bool kHaveDictVersions = false;
uint64_t dictVersion(PyObject *) { return 0; }
#endif

/// The route `launcher` found for `words` in `routes` as the dict is now
/// (borrowed), or null.
PyObject *cachedRoute(GridLauncher *launcher, const KeyWords &words, uint64_t hash, PyObject *routes) {
  if (!launcher->routes)
    return nullptr;
  for (const CachedRoute &entry : launcher->routes->entries)
    if (entry.holds(words, hash) && entry.routes == routes && entry.version == dictVersion(routes))
      return entry.route;
  return nullptr;
}

/// Forgets an entry (its references are released last: a release may run
/// Python code).
void forgetRoute(CachedRoute &entry) {
  PyObject *key = entry.key, *routes = entry.routes, *route = entry.route;
  entry.key = entry.routes = entry.route = nullptr;
  entry.words.clear();
  Py_XDECREF(key);
  Py_XDECREF(routes);
  Py_XDECREF(route);
}

/// Remembers that `routes` holds `route` under `key`, whose words are
/// `words`, replacing the entry of the same words or the oldest.
void cacheRoute(GridLauncher *launcher, const KeyWords &words, uint64_t hash, PyObject *key,
                PyObject *routes, PyObject *route) {
  if (!kHaveDictVersions)
    return;
  if (!launcher->routes)
    launcher->routes = new RouteCache();
  RouteCache &cache = *launcher->routes;
  CachedRoute *slot = nullptr;
  for (CachedRoute &entry : cache.entries)
    if (entry.holds(words, hash))
      slot = &entry;
  if (!slot) {
    slot = &cache.entries[cache.next];
    cache.next = (cache.next + 1) % RouteCache::kSize;
  }
  PyObject *oldKey = slot->key, *oldRoutes = slot->routes, *oldRoute = slot->route;
  slot->words.assign(words.view().begin(), words.view().end());
  slot->hash = hash;
  slot->version = dictVersion(routes);
  Py_INCREF(key);
  Py_INCREF(routes);
  Py_INCREF(route);
  slot->key = key;
  slot->routes = routes;
  slot->route = route;
  Py_XDECREF(oldKey);
  Py_XDECREF(oldRoutes);
  Py_XDECREF(oldRoute);
}

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
  if (launcher->routes)
    for (const CachedRoute &entry : launcher->routes->entries) {
      Py_VISIT(entry.key);
      Py_VISIT(entry.routes);
      Py_VISIT(entry.route);
    }
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
  if (launcher->routes)
    for (CachedRoute &entry : launcher->routes->entries)
      forgetRoute(entry);
  // A cleared launcher takes the Python path, which then fails cleanly.
  launcher->numParams = -1;
  launcher->gridIsFixed = launcher->gridIsCallable = false;
  return 0;
}

void launcherDealloc(PyObject *self) {
  PyObject_GC_UnTrack(self);
  launcherClear(self);
  PyMem_Free(reinterpret_cast<GridLauncher *>(self)->kinds);
  delete reinterpret_cast<GridLauncher *>(self)->routes;
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

  // The key's words first: a route this launcher found for the same words
  // in the same, unchanged `_routes` needs no key tuple.
  KeyWords words;
  PyObject *noKey = launchKey(launcher, bound, addresses, isKnown, words, /*wordsOnly=*/true);
  if (!noKey) {
    if (PyErr_Occurred())
      return nullptr;
    return runSlowly(launcher, args, nargsf, kwnames);
  }
  Py_DECREF(noKey);
  PyObject *routes = PyObject_GetAttr(launcher->function, config.routesName);
  if (!routes || !PyDict_Check(routes)) {
    Py_XDECREF(routes);
    PyErr_Clear();
    return runSlowly(launcher, args, nargsf, kwnames);
  }
  uint64_t hash = words.hash();
  PyObject *key = nullptr; // owned, once built: the cache had no route
  // The key's words read again with the key: an entry must have the words
  // of the objects its key holds, not of any the first reading made and
  // dropped (a new object may take such an address later).
  KeyWords keyWords;
  auto buildKey = [&]() {
    key = launchKey(launcher, bound, addresses, isKnown, keyWords, /*wordsOnly=*/false);
    return key != nullptr;
  };
  PyObject *route = cachedRoute(launcher, words, hash, routes); // owned from here on
  if (route) {
    Py_INCREF(route);
  } else {
    if (!buildKey()) {
      Py_DECREF(routes);
      if (PyErr_Occurred())
        return nullptr;
      return runSlowly(launcher, args, nargsf, kwnames);
    }
    route = PyDict_GetItemWithError(routes, key);
    Py_XINCREF(route);
    if (route && (PyDict_Check(route) || (PyTuple_CheckExact(route) && (PyTuple_GET_SIZE(route) == 4 ||
                                                                       PyTuple_GET_SIZE(route) == 6))))
      cacheRoute(launcher, keyWords, keyWords.hash(), key, routes, route);
  }
  if (route && PyDict_Check(route)) {
    // A key that names no device: {device: route}, by the current device.
    PyObject *byDevice = route;
    PyObject *device = PyObject_CallMethodNoArgs(byDevice, config.currentDeviceName);
    route = device ? PyDict_GetItemWithError(byDevice, device) : nullptr;
    Py_XINCREF(route);
    Py_XDECREF(device);
    Py_DECREF(byDevice);
    if (!route && PyErr_Occurred()) {
      Py_DECREF(routes);
      Py_XDECREF(key);
      return nullptr;
    }
  }
  Py_DECREF(routes);
  Py_ssize_t routeSize = route && PyTuple_CheckExact(route) ? PyTuple_GET_SIZE(route) : 0;
  if (routeSize == 4 || routeSize == 6) {
    Py_XDECREF(key);
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
  bool doesNotQualify = route == Py_False;
  Py_XDECREF(route);
  if (doesNotQualify || PyErr_Occurred()) {
    // A key whose route does not qualify, or an unhashable constexpr (the
    // Python path explains).
    PyErr_Clear();
    Py_XDECREF(key);
    return runSlowly(launcher, args, nargsf, kwnames);
  }
  // This device's route is not there yet: run registers it, by the key.
  if (!key && !buildKey()) {
    if (PyErr_Occurred())
      return nullptr;
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
  launcher->routes = nullptr;
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
  config.descriptorModuleName = PyUnicode_InternFromString("kiln.tools.tensor_descriptor");
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
