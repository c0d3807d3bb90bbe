//===- launch.cc - kiln._C.launch: kernel[grid](...) in one native call -----===//
//
// `kernel[grid]` returns a GridLauncher. Called with positional arguments
// only, it computes the launch's key in C++ and looks it up among the
// routes the JITFunction registered for such launches (in its `_routes`
// dict, under keys of their own); a hit launches the loaded kernel with no
// Python frame of the runtime in between. Everything else (keyword
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
//===----------------------------------------------------------------------===//

#include <pybind11/pybind11.h>

#include <Python.h>
#include <structmember.h>

#include <cstring>

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
  PyObject *gridPrefix = nullptr; // "grid "
  PyObject *torchName = nullptr;
  PyObject *one = nullptr;
  PyTypeObject *tensorType = nullptr; // torch.Tensor, once torch is imported
} config;

struct GridLauncher {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject *function; // the JITFunction
  PyObject *grid;     // as given
  PyObject *xyz[3];   // the grid's three ints, when it is a tuple of 1 to 3 ints
  bool gridIsFast;
  Py_ssize_t numParams; // -1: not eligible for the fast path
  char *constexprMask;  // numParams flags
};

void launcherDealloc(PyObject *self) {
  auto *launcher = reinterpret_cast<GridLauncher *>(self);
  Py_XDECREF(launcher->function);
  Py_XDECREF(launcher->grid);
  for (PyObject *value : launcher->xyz)
    Py_XDECREF(value);
  PyMem_Free(launcher->constexprMask);
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
/// a type the key does not cover.
PyObject *launchKey(GridLauncher *launcher, PyObject *const *args) {
  Py_ssize_t envCount = PyTuple_GET_SIZE(config.environKeys);
  // At most 4 items per argument (a tensor: type, dtype, alignment, device).
  Py_ssize_t capacity = envCount + 4 * launcher->numParams;
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
  for (Py_ssize_t i = 0; i < envCount; ++i) {
    PyObject *value = PyDict_GetItem(config.environData, PyTuple_GET_ITEM(config.environKeys, i));
    pushBorrowed(value ? value : Py_None);
  }
  bool covered = true;
  for (Py_ssize_t i = 0; i < launcher->numParams && covered; ++i) {
    PyObject *value = args[i];
    PyTypeObject *type = Py_TYPE(value);
    pushBorrowed(reinterpret_cast<PyObject *>(type));
    if (launcher->constexprMask[i]) {
      pushBorrowed(value);
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

/// Launches a registered route: (loaded kernel, CPU threads).
PyObject *launchRoute(GridLauncher *launcher, PyObject *route, PyObject *const *args) {
  PyObject *loaded = PyTuple_GET_ITEM(route, 0);
  PyObject *threads = PyTuple_GET_ITEM(route, 1);
  PyObject *bound = tupleOf(args, launcher->numParams);
  if (!bound)
    return nullptr;
  PyObject *launch = PyObject_GetAttr(loaded, config.launchName);
  if (!launch) {
    Py_DECREF(bound);
    return nullptr;
  }
  PyObject *callArgs[5] = {launcher->xyz[0], launcher->xyz[1], launcher->xyz[2], bound, threads};
  PyObject *done = PyObject_Vectorcall(launch, callArgs, 5, nullptr);
  Py_DECREF(launch);
  Py_DECREF(bound);
  if (!done) {
    // As JITFunction.run: the launchers check the grid in C++, where the
    // kernel has no name.
    if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
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
    return nullptr;
  }
  Py_DECREF(done);
  return PyObject_GetAttr(loaded, config.kernelName);
}

PyObject *launcherCall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  auto *launcher = reinterpret_cast<GridLauncher *>(self);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (launcher->numParams < 0 || !launcher->gridIsFast || nargs != launcher->numParams ||
      (kwnames && PyTuple_GET_SIZE(kwnames)) || !config.environData)
    return runSlowly(launcher, args, nargsf, kwnames);
  PyObject *key = launchKey(launcher, args);
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
  if (route && PyTuple_CheckExact(route) && PyTuple_GET_SIZE(route) == 2) {
    Py_INCREF(route); // a launch may run Python that changes the dict
    Py_DECREF(routes);
    Py_DECREF(key);
    PyObject *result = launchRoute(launcher, route, args);
    Py_DECREF(route);
    return result;
  }
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
    PyObject *bound = tupleOf(args, nargs);
    PyObject *callArgs[3] = {launcher->function, key, bound};
    PyObject *registered =
        bound ? PyObject_VectorcallMethod(config.registerName, callArgs, 3, nullptr) : nullptr;
    Py_XDECREF(bound);
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
    {Py_tp_call, reinterpret_cast<void *>(PyVectorcall_Call)},
    {Py_tp_members, launcherMembers},
    {Py_tp_doc, const_cast<char *>("kernel[grid]: launches the kernel over grid when called")},
    {0, nullptr}};

PyType_Spec launcherSpec = {"kiln._C.launch.GridLauncher", sizeof(GridLauncher), 0,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, launcherSlots};

PyTypeObject *GridLauncherType = nullptr;

/// grid_launcher(function, grid, constexpr_mask or None) -> GridLauncher
PyObject *makeGridLauncher(PyObject *, PyObject *const *argv, Py_ssize_t argc) {
  if (argc != 3) {
    PyErr_SetString(PyExc_TypeError, "grid_launcher(function, grid, constexpr_mask)");
    return nullptr;
  }
  auto *launcher = PyObject_New(GridLauncher, GridLauncherType);
  if (!launcher)
    return nullptr;
  launcher->vectorcall = launcherCall;
  Py_INCREF(argv[0]);
  launcher->function = argv[0];
  Py_INCREF(argv[1]);
  launcher->grid = argv[1];
  launcher->xyz[0] = launcher->xyz[1] = launcher->xyz[2] = nullptr;
  launcher->constexprMask = nullptr;
  launcher->numParams = -1;
  PyObject *grid = argv[1];
  launcher->gridIsFast = PyTuple_CheckExact(grid) && PyTuple_GET_SIZE(grid) >= 1 && PyTuple_GET_SIZE(grid) <= 3;
  for (Py_ssize_t i = 0; launcher->gridIsFast && i < PyTuple_GET_SIZE(grid); ++i)
    launcher->gridIsFast = PyLong_CheckExact(PyTuple_GET_ITEM(grid, i));
  if (launcher->gridIsFast)
    for (Py_ssize_t i = 0; i < 3; ++i) {
      PyObject *value = i < PyTuple_GET_SIZE(grid) ? PyTuple_GET_ITEM(grid, i) : config.one;
      Py_INCREF(value);
      launcher->xyz[i] = value;
    }
  PyObject *mask = argv[2];
  if (mask != Py_None) {
    if (!PyTuple_Check(mask)) {
      Py_DECREF(launcher);
      PyErr_SetString(PyExc_TypeError, "constexpr_mask must be a tuple of bools or None");
      return nullptr;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(mask);
    launcher->constexprMask = static_cast<char *>(PyMem_Malloc(n > 0 ? n : 1));
    for (Py_ssize_t i = 0; i < n; ++i)
      launcher->constexprMask[i] = PyObject_IsTrue(PyTuple_GET_ITEM(mask, i)) == 1;
    launcher->numParams = n;
  }
  return reinterpret_cast<PyObject *>(launcher);
}

PyMethodDef makeDefinition = {
    "grid_launcher", reinterpret_cast<PyCFunction>(reinterpret_cast<void *>(makeGridLauncher)),
    METH_FASTCALL,
    "grid_launcher(function, grid, constexpr_mask): what kernel[grid] returns. constexpr_mask "
    "(one bool per parameter) enables the native path; None sends every call to function.run."};

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
  config.gridPrefix = PyUnicode_InternFromString("grid ");
  config.torchName = PyUnicode_InternFromString("torch");
  config.one = PyLong_FromLong(1);
  PyObject *make = PyCFunction_NewEx(&makeDefinition, nullptr, nullptr);
  m.attr("grid_launcher") = py::reinterpret_steal<py::object>(make);
  m.def(
      "configure",
      [](py::object environData, py::tuple environKeys) {
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
      py::arg("environ_data"), py::arg("environ_keys"),
      "The dict os.environ keeps its data in (None: no native path) and the "
      "keys whose raw values are part of every launch key");
}
