//===- DirectLaunch.h - A loaded kernel's launch without Python --*- C++ -*-===//
//
// The native launch path (launch.cc) finds, for a launch key it has seen, the
// loaded kernel and, when its launches need no Python code (a CUDA kernel
// without tensor maps, foreign arrays or checked mode), a DirectLaunch: the
// kernel's function handle, argument codes, block and shared-memory size. A
// hit then packs the arguments and calls the driver from C++; no Python
// frame of the runtime runs. Backends create DirectLaunch objects when they
// load a kernel (driver.cc: `kiln._C.driver.direct_launch`).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PYTHON_DIRECTLAUNCH_H
#define KILN_PYTHON_DIRECTLAUNCH_H

#include "ArgumentPacking.h"

#include <Python.h>

namespace kiln::python {

/// True when `object` is a DirectLaunch.
bool isDirectLaunch(PyObject *object);

/// Launches `direct` over `grid` with the kernel's `count` bound arguments
/// at `args` (constexprs included, as the argument codes skip them),
/// taking the pointer addresses in `known` where it says so. Returns false
/// with a Python exception set.
bool launchDirectly(PyObject *direct, const unsigned grid[3], PyObject *const *args,
                    Py_ssize_t count, const KnownAddresses &known);

} // namespace kiln::python

#endif // KILN_PYTHON_DIRECTLAUNCH_H
