//===- ArgumentPacking.cc - Kernel arguments from Python objects -----------===//
//
// Implements the argument packing shared by the CUDA and CPU launchers with
// the raw CPython API: it runs on every launch.
//
//===----------------------------------------------------------------------===//

#include "ArgumentPacking.h"

#include "llvm/ADT/APFloat.h"

#include <cstring>

namespace kiln::python {

/// Reads a Python integer (anything with __index__) as a signed 64-bit value;
/// returns false with an exception set when it is not one or is too large.
bool readInt64(PyObject *object, long long &value) {
  if (PyLong_CheckExact(object)) {
    value = PyLong_AsLongLong(object);
    return !(value == -1 && PyErr_Occurred());
  }
  PyObject *index = PyNumber_Index(object);
  if (!index)
    return false;
  value = PyLong_AsLongLong(index);
  Py_DECREF(index);
  return !(value == -1 && PyErr_Occurred());
}

/// Reads an unsigned 64-bit integer; negative values are rejected.
bool readUInt64(PyObject *object, unsigned long long &value) {
  PyObject *index = PyLong_CheckExact(object) ? (Py_INCREF(object), object)
                                              : PyNumber_Index(object);
  if (!index)
    return false;
  value = PyLong_AsUnsignedLongLong(index);
  Py_DECREF(index);
  return !(value == (unsigned long long)-1 && PyErr_Occurred());
}

namespace {

/// Raises OverflowError naming the argument position and the code's range.
bool overflow(Py_ssize_t position, const char *type) {
  PyErr_Format(PyExc_OverflowError,
               "kernel argument %zd does not fit in %s", position, type);
  return false;
}

/// Reads a signed integer for argument `position` and checks its range.
bool readSigned(PyObject *object, Py_ssize_t position, long long lo,
                long long hi, const char *type, uint64_t &slot) {
  long long value;
  if (!readInt64(object, value)) {
    if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
      PyErr_Clear();
      return overflow(position, type);
    }
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "kernel argument %zd must be an integer (%s), got %s",
                 position, type, Py_TYPE(object)->tp_name);
    return false;
  }
  if (value < lo || value > hi)
    return overflow(position, type);
  slot = uint64_t(value);
  return true;
}

/// Reads an unsigned integer for argument `position` and checks its range.
bool readUnsigned(PyObject *object, Py_ssize_t position, unsigned long long hi,
                  const char *type, uint64_t &slot) {
  unsigned long long value;
  if (!readUInt64(object, value)) {
    if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
      PyErr_Clear();
      return overflow(position, type);
    }
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "kernel argument %zd must be an integer (%s), got %s",
                 position, type, Py_TYPE(object)->tp_name);
    return false;
  }
  if (value > hi)
    return overflow(position, type);
  slot = uint64_t(value);
  return true;
}

/// Reads a pointer argument: an int address or obj.data_ptr().
bool readPointer(PyObject *object, Py_ssize_t position, uint64_t &slot) {
  static PyObject *dataPtrName = PyUnicode_InternFromString("data_ptr");
  if (PyLong_Check(object)) {
    unsigned long long address = PyLong_AsUnsignedLongLong(object);
    if (address == (unsigned long long)-1 && PyErr_Occurred()) {
      PyErr_Clear();
      PyErr_Format(PyExc_ValueError,
                   "kernel argument %zd: a pointer must be a non-negative "
                   "64-bit address",
                   position);
      return false;
    }
    slot = address;
    return true;
  }
  PyObject *address = PyObject_CallMethodNoArgs(object, dataPtrName);
  if (!address) {
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError,
                   "kernel argument %zd must be a tensor or an int address, "
                   "got %s",
                   position, Py_TYPE(object)->tp_name);
    }
    return false;
  }
  unsigned long long value = PyLong_AsUnsignedLongLong(address);
  Py_DECREF(address);
  if (value == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "kernel argument %zd: data_ptr() did not return an address",
                 position);
    return false;
  }
  slot = value;
  return true;
}

} // namespace

bool readGrid(PyObject *object, const char *axis, long long limit,
              unsigned &value) {
  long long read;
  if (!readInt64(object, read)) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "grid %s must be an int, got %s", axis,
                 Py_TYPE(object)->tp_name);
    return false;
  }
  if (read < 0 || read > limit) {
    PyErr_Format(PyExc_ValueError, "grid %s is %lld; expected 0 <= %s <= %lld",
                 axis, read, axis, limit);
    return false;
  }
  value = unsigned(read);
  return true;
}


bool packArguments(const char *codes, Py_ssize_t count, PyObject *args,
                   uint64_t *slots, void **params, Py_ssize_t &used) {
  return packArguments(codes, count, reinterpret_cast<PyTupleObject *>(args)->ob_item, nullptr,
                       slots, params, used);
}

bool packArguments(const char *codes, Py_ssize_t count, PyObject *const *items,
                   const KnownAddresses *known, uint64_t *slots, void **params,
                   Py_ssize_t &used) {
  used = 0;
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject *object = items[i];
    uint64_t &slot = slots[used];
    slot = 0;
    bool ok = true;
    switch (codes[i]) {
    case '-':
      continue;
    case 'p':
      if (known && known->isKnown[i])
        slot = known->addresses[i];
      else
        ok = readPointer(object, i, slot);
      break;
    case 'T': {
      // A TMA tensor map, passed by value: the launch copies the 128 bytes
      // from the bytes object, which the argument tuple keeps alive.
      char *data = nullptr;
      Py_ssize_t size = 0;
      if (!PyBytes_Check(object) || PyBytes_AsStringAndSize(object, &data, &size) < 0 ||
          size != 128) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "kernel argument %zd must be a 128-byte tensor map, got %s", i,
                     Py_TYPE(object)->tp_name);
        return false;
      }
      params[used] = data;
      ++used;
      continue;
    }
    case 'b': {
      int truth = PyObject_IsTrue(object);
      if (truth < 0)
        return false;
      slot = uint64_t(truth);
      break;
    }
    case 'c':
      ok = readSigned(object, i, INT8_MIN, INT8_MAX, "i8", slot);
      break;
    case 'B':
      ok = readUnsigned(object, i, UINT8_MAX, "u8", slot);
      break;
    case 'h':
      ok = readSigned(object, i, INT16_MIN, INT16_MAX, "i16", slot);
      break;
    case 'H':
      ok = readUnsigned(object, i, UINT16_MAX, "u16", slot);
      break;
    case 'i':
      ok = readSigned(object, i, INT32_MIN, INT32_MAX, "i32", slot);
      break;
    case 'I':
      ok = readUnsigned(object, i, UINT32_MAX, "u32", slot);
      break;
    case 'l':
      ok = readSigned(object, i, INT64_MIN, INT64_MAX, "i64", slot);
      break;
    case 'L':
      ok = readUnsigned(object, i, UINT64_MAX, "u64", slot);
      break;
    case 'f':
    case 'd':
    case 'e':
    case 'E': {
      double value = PyFloat_AsDouble(object);
      if (value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "kernel argument %zd must be a float, got %s", i,
                     Py_TYPE(object)->tp_name);
        return false;
      }
      if (codes[i] == 'f') {
        float single = float(value);
        std::memcpy(&slot, &single, sizeof(single));
      } else if (codes[i] == 'e' || codes[i] == 'E') {
        // Rounded once, to nearest even, from the double: out-of-range values
        // become infinities, NaN stays NaN (as a cast in the kernel would).
        llvm::APFloat narrow(value);
        bool losesInfo = false;
        narrow.convert(codes[i] == 'e' ? llvm::APFloat::IEEEhalf()
                                       : llvm::APFloat::BFloat(),
                       llvm::APFloat::rmNearestTiesToEven, &losesInfo);
        slot = narrow.bitcastToAPInt().getZExtValue();
      } else {
        std::memcpy(&slot, &value, sizeof(value));
      }
      break;
    }
    default:
      PyErr_Format(PyExc_ValueError,
                   "unknown argument code '%c' at position %zd", codes[i], i);
      return false;
    }
    if (!ok)
      return false;
    params[used] = &slot;
    ++used;
  }
  return true;
}

} // namespace kiln::python
