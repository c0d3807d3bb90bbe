//===- Diagnostics.h - MLIR diagnostics as Python exceptions ----*- C++ -*-===//
//
// Collects the diagnostics MLIR emits while a callback runs and, if any error
// was reported, raises kiln._C.ir.MLIRError carrying each message with its
// file, line and column, so that Python can point at the kernel source.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PYTHON_DIAGNOSTICS_H
#define KILN_PYTHON_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

namespace kiln::python {

/// One diagnostic, located at the innermost file position MLIR knows.
struct Diagnostic {
  std::string severity; // "error", "warning", "note", "remark"
  std::string message;
  std::string file;     // empty when the location has no file position
  unsigned line = 0;
  unsigned column = 0;
};

/// Captures every diagnostic of `context` for its lifetime.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(mlir::MLIRContext *context);
  ~DiagnosticCapture();
  const std::vector<Diagnostic> &diagnostics() const { return collected; }
  bool hasErrors() const;
  /// Raises kiln._C.ir.MLIRError with the collected diagnostics if any is an
  /// error; `what` names the failed step ("verification", "pass pipeline").
  void raiseIfErrors(const std::string &what) const;
  /// Raises MLIRError unconditionally (for failures that reported nothing).
  [[noreturn]] void raise(const std::string &what) const;

private:
  mlir::MLIRContext *context;
  mlir::DiagnosticEngine::HandlerID handler;
  std::vector<Diagnostic> collected;
};

/// Registers kiln._C.ir.MLIRError in `m`; called once by initIR.
void registerMLIRError(pybind11::module_ &m);

} // namespace kiln::python

#endif // KILN_PYTHON_DIAGNOSTICS_H
