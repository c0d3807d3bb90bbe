//===- ArgumentPacking.h - Kernel arguments from Python objects -*- C++ -*-===//
//
// Packs the arguments of a kernel launch from Python objects into 8-byte
// slots, one per parameter, by a per-kernel code string. The CUDA launcher
// hands the slots to cuLaunchKernel; the CPU launcher hands them to the
// kernel's entry wrapper. Both read them the same way.
//
// Argument codes:
//   p  pointer: an int address, or an object with data_ptr() (torch tensor)
//   b  i1 (bool)       c  i8     B  u8     h  i16    H  u16
//   i  i32             I  u32    l  i64    L  u64
//   f  fp32            d  fp64   e  fp16   E  bf16 (rounded to nearest even)
//   T  a TMA tensor map: a bytes object of 128 bytes, passed by value (its
//      own bytes, not a slot; CUDA launches only)
//   -  skipped (a constexpr parameter, compiled into the kernel)
// Each value is stored zero-extended (sign-extended for signed codes) in its
// own little-endian 8-byte slot, so a reader of the parameter's own width
// finds the right value at the slot's address.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PYTHON_ARGUMENTPACKING_H
#define KILN_PYTHON_ARGUMENTPACKING_H

#include <Python.h>

#include <cstdint>

namespace kiln::python {

/// Reads a Python integer (anything with __index__) as a signed 64-bit
/// value; returns false with an exception set when it is not one or is too
/// large.
bool readInt64(PyObject *object, long long &value);

/// Reads an unsigned 64-bit integer; negative values are rejected.
bool readUInt64(PyObject *object, unsigned long long &value);

/// Packs `args` (a tuple of `count` objects) by `codes` into `slots`, and
/// points `params[k]` at the slot of the k-th packed (non-skipped) argument;
/// `used` receives the number packed. Returns false with a Python exception
/// set (TypeError, OverflowError or ValueError naming the position).
bool packArguments(const char *codes, Py_ssize_t count, PyObject *args,
                   uint64_t *slots, void **params, Py_ssize_t &used);

/// Pointer arguments whose addresses the caller already read (the native
/// launch path reads each tensor's for its key): `isKnown[i]` says whether
/// `addresses[i]` holds argument i's.
struct KnownAddresses {
  const uint64_t *addresses;
  const bool *isKnown;
};

/// As above, for the `count` objects at `items`, taking the addresses in
/// `known` (when not null) instead of asking their objects again.
bool packArguments(const char *codes, Py_ssize_t count, PyObject *const *items,
                   const KnownAddresses *known, uint64_t *slots, void **params,
                   Py_ssize_t &used);

/// CUDA's largest grid: 2^31 - 1 programs along x, 65535 along y and z.
inline constexpr long long kMaxCudaGrid[3] = {0x7fffffffLL, 65535, 65535};

/// Reads one grid dimension: a non-negative int at most `limit`. Returns
/// false with a Python exception set.
bool readGrid(PyObject *object, const char *axis, long long limit,
              unsigned &value);

} // namespace kiln::python

#endif // KILN_PYTHON_ARGUMENTPACKING_H
