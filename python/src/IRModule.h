//===- IRModule.h - The Python-visible IR objects of kiln._C.ir -*- C++ -*-===//
//
// The C++ structs behind kiln._C.ir's Module, Type, Value, Block and
// Function. Other binding files (compiler.cc) include this header to accept
// a `PyModule &` argument from Python and reach the `mlir::ModuleOp`.
//
// Lifetime: an MLIRContext is shared (std::shared_ptr) by every module,
// type and builder made in it, so a context never dies before them. Values,
// blocks and functions point into a module's operations; they hold the module
// (`owner`) alive, so dropping the Python Module first cannot leave them
// dangling.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PYTHON_IRMODULE_H
#define KILN_PYTHON_IRMODULE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>

namespace kiln::python {

/// A module and the context it lives in. Registered with pybind11 as
/// kiln._C.ir.Module with a std::shared_ptr holder.
struct PyModule {
  std::shared_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;

  mlir::ModuleOp get() const { return *module; }
};

/// Keeps alive whatever an IR handle points into: a PyModule, or only the
/// context for handles not yet inside a module.
using Owner = std::shared_ptr<void>;

} // namespace kiln::python

#endif // KILN_PYTHON_IRMODULE_H
