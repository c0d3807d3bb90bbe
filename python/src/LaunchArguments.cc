//===- LaunchArguments.cc - A native launch's key, arguments and grid ------===//
//
// The key is finer than or equal to the Python key (jit_keys.py): per
// argument its exact type and, for
//   int      the type code and the 1 / divisible-by-16 specialization,
//   bool, float, None: nothing more (one code each, as in Python),
//   a torch.Tensor (exact type): dtype, address alignment (or null), device,
//   a tuple: its length and each item's piece (a string inside: its value),
//   a host TensorDescriptor: its base's, shape's and strides' pieces, block
//            shape, padding and layout problem (the parts of Python's key),
//   a constexpr parameter: the value itself,
// preceded by the raw values of the environment variables that the Python
// key holds, and KILN_CPU_THREADS, which the route's thread count was read
// from. Any other argument type takes the Python path. A key is read as
// machine words first (KeyWords), which a launcher compares with the keys
// whose routes it holds; the key's tuple is built only when none matches.
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

#include "GridLauncher.h"

#include "ArgumentPacking.h"

#include <Python.h>

#include <cstring>
#include <initializer_list>

namespace kiln::python::launch {

Config config;

namespace {

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

/// The descriptor `name` of `type` where it is a `kind` one (a getter, or a
/// method), else null.
PyObject *tensorDescriptor(PyTypeObject *type, PyObject *name, bool getter) {
  PyObject *found = PyObject_GetAttr(reinterpret_cast<PyObject *>(type), name);
  if (!found) {
    PyErr_Clear();
    return nullptr;
  }
  bool expected = getter ? Py_TYPE(found)->tp_descr_get != nullptr && Py_TYPE(found)->tp_descr_set != nullptr
                         : PyCallable_Check(found) && Py_TYPE(found)->tp_descr_get != nullptr;
  if (!expected)
    Py_CLEAR(found);
  return found;
}

/// The class `name` of the module called `moduleName` where that module is
/// imported (a new reference), else null, with no error set. Nothing is
/// imported for this: a launch only meets such classes after their module was.
PyTypeObject *importedClass(PyObject *moduleName, const char *name) {
  PyObject *module = PyImport_GetModule(moduleName);
  PyObject *found = module ? PyObject_GetAttrString(module, name) : nullptr;
  Py_XDECREF(module);
  PyErr_Clear();
  if (found && PyType_Check(found))
    return reinterpret_cast<PyTypeObject *>(found);
  Py_XDECREF(found);
  return nullptr;
}

/// torch.Tensor, once torch is imported (looked up until then), and the
/// descriptors a launch reads tensors by.
PyTypeObject *tensorType() {
  if (!config.tensorType) {
    config.tensorType = importedClass(config.torchName, "Tensor");
    if (config.tensorType) {
      config.tensorDtype = tensorDescriptor(config.tensorType, config.dtypeName, true);
      config.tensorDataPtr = tensorDescriptor(config.tensorType, config.dataPtrName, false);
      config.tensorGetDevice = tensorDescriptor(config.tensorType, config.getDeviceName, false);
    }
  }
  return config.tensorType;
}

/// Reads a tensor's dtype, data address and device index (new references),
/// or returns false with an error set. Through torch.Tensor's own
/// descriptors where it has them (as attribute lookup would find them: a
/// tensor's own attributes cannot shadow a getter, and a method set on one
/// tensor is not honoured), which skips the lookups by name.
bool readTensor(PyObject *value, PyObject *&dtype, PyObject *&address, PyObject *&device) {
  auto callMethod = [value](PyObject *method, PyObject *name) {
    return method ? PyObject_Vectorcall(method, &value, 1, nullptr) : PyObject_CallMethodNoArgs(value, name);
  };
  dtype = config.tensorDtype
              ? Py_TYPE(config.tensorDtype)
                    ->tp_descr_get(config.tensorDtype, value, reinterpret_cast<PyObject *>(Py_TYPE(value)))
              : PyObject_GetAttr(value, config.dtypeName);
  address = dtype ? callMethod(config.tensorDataPtr, config.dataPtrName) : nullptr;
  device = address ? callMethod(config.tensorGetDevice, config.getDeviceName) : nullptr;
  if (device)
    return true;
  Py_XDECREF(dtype);
  Py_XDECREF(address);
  return false;
}

} // namespace

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

namespace {

/// How deep tuples nest before a key leaves them to the Python path.
constexpr int kMaxTupleDepth = 8;

/// The words that open an int's, a tuple's and a float's words in a key:
/// odd, unlike the address of any object.
constexpr uint64_t kIntMarker = 1, kTupleMarker = 3, kFloatMarker = 5;

/// Appends the words of a key item to `words`: an exact int that fits in
/// 64 bits as kIntMarker and its value, a tuple as kTupleMarker, its length
/// and its items' words, a float as kFloatMarker and its bits (values a
/// heuristic or a grid computes come as new objects on every call), anything
/// else as its address. Equal words mean equal keys wherever every object
/// whose address is in them is alive (the same address is then the same
/// object): RouteCache's entries keep theirs alive in the key they were read
/// from. (Equal bits are equal floats but for NaN, whose key never equals
/// another's: its route is the one of the same spelling, compiled alike.)
void appendWords(KeyWords &words, PyObject *item, int depth = 0) {
  if (PyFloat_CheckExact(item)) {
    double value = PyFloat_AS_DOUBLE(item);
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    words.push(kFloatMarker);
    words.push(bits);
    return;
  }
  if (PyLong_CheckExact(item)) {
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(item, &overflow);
    if (overflow == 0 && !(value == -1 && PyErr_Occurred())) {
      words.push(kIntMarker);
      words.push(static_cast<uint64_t>(value));
      return;
    }
    PyErr_Clear();
  } else if (PyTuple_CheckExact(item) && depth < kMaxTupleDepth) {
    words.push(kTupleMarker);
    words.push(static_cast<uint64_t>(PyTuple_GET_SIZE(item)));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(item); ++i)
      appendWords(words, PyTuple_GET_ITEM(item, i), depth + 1);
    return;
  }
  words.push(reinterpret_cast<uintptr_t>(item));
}

/// A launch key under construction: its words and, unless it is built for
/// its words only, a tuple that grows as items are pushed (it starts with
/// room for the common case, a few items per argument).
class KeyBuilder {
public:
  KeyBuilder(Py_ssize_t capacity, KeyWords &words, bool wordsOnly)
      : key(wordsOnly ? nullptr : PyTuple_New(capacity)), capacity(capacity), words(words),
        wordsOnly(wordsOnly) {}
  ~KeyBuilder() { discard(); }

  bool valid() const { return wordsOnly || key != nullptr; }

  /// Appends `item`, stealing the reference (null: an error is set, and
  /// the key is given up).
  bool push(PyObject *item) {
    if (!item || !valid()) {
      Py_XDECREF(item);
      discard();
      return false;
    }
    appendWords(words, item);
    if (wordsOnly) {
      Py_DECREF(item);
      return true;
    }
    if (size == capacity) {
      // Growing keeps the unset slots null, which the tuple's release skips.
      if (_PyTuple_Resize(&key, 2 * capacity) < 0) {
        Py_DECREF(item);
        return false;
      }
      capacity *= 2;
    }
    PyTuple_SET_ITEM(key, size++, item);
    return true;
  }

  /// Appends an int (as push(PyLong_FromLongLong(value)) would, without
  /// making the int when only the words are built).
  bool pushInt(long long value) {
    if (!wordsOnly)
      return push(PyLong_FromLongLong(value));
    words.push(kIntMarker);
    words.push(static_cast<uint64_t>(value));
    return true;
  }

  /// Appends a type (as pushBorrowed would; a type's words are its address).
  bool pushType(PyTypeObject *type) {
    if (!wordsOnly)
      return pushBorrowed(reinterpret_cast<PyObject *>(type));
    words.push(reinterpret_cast<uintptr_t>(type));
    return true;
  }

  bool pushBorrowed(PyObject *item) {
    Py_XINCREF(item);
    return push(item);
  }

  /// Appends each of `items` in order, stealing every reference even when
  /// one fails.
  bool pushAll(std::initializer_list<PyObject *> items) {
    bool pushed = true;
    for (PyObject *item : items) {
      if (pushed)
        pushed = push(item);
      else
        Py_XDECREF(item);
    }
    return pushed;
  }

  /// The key (a new reference), or null with an error set.
  PyObject *finish() {
    if (wordsOnly) {
      Py_INCREF(Py_None);
      return Py_None;
    }
    if (key && size < capacity && _PyTuple_Resize(&key, size) < 0)
      return nullptr;
    PyObject *done = key;
    key = nullptr;
    return done;
  }

private:
  void discard() {
    if (!key)
      return;
    // Unset the slots not filled, so that the tuple can be freed.
    for (Py_ssize_t i = size; i < capacity; ++i)
      PyTuple_SET_ITEM(key, i, nullptr);
    Py_CLEAR(key);
  }

  PyObject *key;
  Py_ssize_t capacity;
  Py_ssize_t size = 0;
  KeyWords &words;
  bool wordsOnly;
};

/// kiln.tools.tensor_descriptor.TensorDescriptor, once that module is imported.
PyTypeObject *descriptorType() {
  if (!config.descriptorType)
    config.descriptorType = importedClass(config.descriptorModuleName, "TensorDescriptor");
  return config.descriptorType;
}

/// Outcome of adding an argument's piece to a key.
enum class Piece { kCovered, kUncovered, kError };

/// Adds the piece of a runtime argument `value` to `key`: its type, then
/// for an int its code, for a tensor its dtype, alignment and device, for a
/// tuple its length and each item's piece (a string inside one, which is
/// compiled in, its value), for a host tensor descriptor its base's piece,
/// its shape, strides, block shape, padding and what is wrong with its
/// layout (Python's key has the same parts, so no two launches that run
/// differently share a key). `address` receives a tensor's address.
Piece pushPiece(KeyBuilder &key, PyObject *value, int depth, uint64_t *address) {
  PyTypeObject *type = Py_TYPE(value);
  if (!key.pushType(type))
    return Piece::kError;
  if (type == &PyLong_Type) {
    long code = intCode(value);
    if (code < 0)
      return Piece::kUncovered;
    return key.pushInt(code) ? Piece::kCovered : Piece::kError;
  }
  if (type == &PyBool_Type || type == &PyFloat_Type || value == Py_None)
    return Piece::kCovered; // one code each, whatever the value
  if (type == tensorType()) {
    PyObject *dtype, *addressObject, *device;
    if (!readTensor(value, dtype, addressObject, device)) {
      PyErr_Clear(); // the Python path meets the same error and explains it
      return Piece::kUncovered;
    }
    unsigned long long bits = PyLong_AsUnsignedLongLongMask(addressObject);
    Py_DECREF(addressObject);
    if (address)
      *address = bits;
    if (!key.push(dtype) || !key.pushInt(bits == 0 ? 2 : (bits & 15) == 0 ? 1 : 0)) {
      Py_DECREF(device);
      return Piece::kError;
    }
    return key.push(device) ? Piece::kCovered : Piece::kError;
  }
  if (depth > 0 && type == &PyUnicode_Type)
    return key.pushBorrowed(value) ? Piece::kCovered : Piece::kError;
  if (PyTuple_Check(value)) {
    // A tuple subclass (a named tuple) is told apart by its type, pushed above.
    if (depth >= kMaxTupleDepth)
      return Piece::kUncovered;
    Py_ssize_t length = PyTuple_GET_SIZE(value);
    if (!key.pushInt(length))
      return Piece::kError;
    for (Py_ssize_t i = 0; i < length; ++i) {
      Piece piece = pushPiece(key, PyTuple_GET_ITEM(value, i), depth + 1, nullptr);
      if (piece != Piece::kCovered)
        return piece;
    }
    return Piece::kCovered;
  }
  if (type == descriptorType() && depth < kMaxTupleDepth) {
    // Its parts, as Python's key reads them; a part of another type than
    // the launch expects leaves the call to the Python path, which explains.
    const char *parts[] = {"base", "shape", "strides"};
    for (const char *name : parts) {
      PyObject *part = PyObject_GetAttrString(value, name);
      if (!part) {
        PyErr_Clear();
        return Piece::kUncovered;
      }
      PyObject *asTuple = part;
      if (PyList_CheckExact(part)) {
        asTuple = PyList_AsTuple(part);
        Py_DECREF(part);
        if (!asTuple)
          return Piece::kError;
      }
      Piece piece = pushPiece(key, asTuple, depth + 1, nullptr);
      Py_DECREF(asTuple);
      if (piece != Piece::kCovered)
        return piece;
    }
    PyObject *block = PyObject_GetAttrString(value, "block_shape");
    PyObject *blockTuple = block ? PySequence_Tuple(block) : nullptr;
    Py_XDECREF(block);
    PyObject *padding = blockTuple ? PyObject_GetAttrString(value, "padding") : nullptr;
    PyObject *problem = padding ? PyObject_CallMethod(value, "layout_problem", nullptr) : nullptr;
    if (!problem) {
      Py_XDECREF(blockTuple);
      Py_XDECREF(padding);
      PyErr_Clear();
      return Piece::kUncovered;
    }
    return key.pushAll({blockTuple, padding, problem}) ? Piece::kCovered : Piece::kError;
  }
  return Piece::kUncovered;
}

} // namespace

PyObject *launchKey(GridLauncher *launcher, PyObject *const *args, uint64_t *addresses,
                    bool *isKnown, KeyWords &words, bool wordsOnly) {
  Py_ssize_t envCount = PyTuple_GET_SIZE(config.environKeys);
  // Room for the common case: at most 4 items per argument (a tensor:
  // type, dtype, alignment, device); tuples make it grow.
  words.clear();
  KeyBuilder key(envCount + 4 * launcher->numParams + 1, words, wordsOnly);
  if (!key.valid())
    return nullptr;
  if (launcher->keyPrefix && !key.pushBorrowed(launcher->keyPrefix))
    return nullptr;
  for (Py_ssize_t i = 0; i < envCount; ++i) {
    PyObject *value = PyDict_GetItem(config.environData, PyTuple_GET_ITEM(config.environKeys, i));
    if (!key.pushBorrowed(value ? value : Py_None))
      return nullptr;
  }
  for (Py_ssize_t i = 0; i < launcher->numParams; ++i)
    isKnown[i] = false;
  for (Py_ssize_t i = 0; i < launcher->numParams; ++i) {
    PyObject *value = args[i];
    PyTypeObject *type = Py_TYPE(value);
    char kind = launcher->kinds[i];
    if (kind == kTuned) {
      // The caller left it to the config (its default is the marker);
      // setting it is an error that run reports.
      if (value != PyTuple_GET_ITEM(launcher->defaults, i))
        return nullptr;
      continue;
    }
    if (kind == kConstexpr || kind == kHeuristic) {
      if (!key.pushType(type) || !key.pushBorrowed(value))
        return nullptr;
    } else if (kind == kTuningKey) {
      // Its value picks the config: a scalar's value; an array's shape
      // (the autotuner's rule) is for run to read.
      if (type != &PyLong_Type && type != &PyFloat_Type && type != &PyBool_Type && value != Py_None)
        return nullptr;
      if (!key.pushType(type) || !key.pushBorrowed(value))
        return nullptr;
    } else {
      Piece piece = pushPiece(key, value, 0, &addresses[i]);
      if (piece != Piece::kCovered)
        return nullptr;
      isKnown[i] = type == tensorType();
    }
  }
  return key.finish();
}

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

} // namespace kiln::python::launch
