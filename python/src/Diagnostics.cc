//===- Diagnostics.cc - MLIR diagnostics as Python exceptions --------------===//
//
// Implements DiagnosticCapture: MLIR diagnostics, with their source
// positions, become one Python exception.
//
//===----------------------------------------------------------------------===//

#include "Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/eval.h>

namespace py = pybind11;

namespace kiln::python {

static py::object &mlirErrorType() {
  // Leaked on purpose: destroying a Python object after the interpreter has
  // shut down would crash at exit.
  static py::object *type = new py::object();
  return *type;
}

/// Finds the first file position inside `loc` (through call sites, names
/// and fused locations).
static std::optional<mlir::FileLineColLoc> findFilePosition(mlir::Location loc) {
  std::optional<mlir::FileLineColLoc> found;
  loc->walk([&](mlir::Location inner) {
    if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(inner)) {
      found = file;
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return found;
}

static std::string severityName(mlir::DiagnosticSeverity severity) {
  switch (severity) {
  case mlir::DiagnosticSeverity::Error: return "error";
  case mlir::DiagnosticSeverity::Warning: return "warning";
  case mlir::DiagnosticSeverity::Note: return "note";
  case mlir::DiagnosticSeverity::Remark: return "remark";
  }
  return "error";
}

static void collect(std::vector<Diagnostic> &out, mlir::Diagnostic &diag) {
  Diagnostic entry;
  entry.severity = severityName(diag.getSeverity());
  entry.message = diag.str();
  if (auto position = findFilePosition(diag.getLocation())) {
    entry.file = position->getFilename().str();
    entry.line = position->getLine();
    entry.column = position->getColumn();
  }
  // The op dump MLIR attaches to a failed pass is for compiler developers
  // (kiln-opt shows it); users get the located messages.
  if (llvm::StringRef(entry.message).starts_with("see current operation"))
    return;
  out.push_back(std::move(entry));
  for (mlir::Diagnostic &note : diag.getNotes())
    collect(out, note);
}

DiagnosticCapture::DiagnosticCapture(mlir::MLIRContext *context)
    : context(context) {
  handler = context->getDiagEngine().registerHandler(
      [this](mlir::Diagnostic &diag) {
        collect(collected, diag);
        return mlir::success();
      });
}

DiagnosticCapture::~DiagnosticCapture() {
  context->getDiagEngine().eraseHandler(handler);
}

bool DiagnosticCapture::hasErrors() const {
  for (const Diagnostic &d : collected)
    if (d.severity == "error")
      return true;
  return false;
}

void DiagnosticCapture::raiseIfErrors(const std::string &what) const {
  if (hasErrors())
    raise(what);
}

void DiagnosticCapture::raise(const std::string &what) const {
  py::list entries;
  std::string text = what + " failed";
  for (const Diagnostic &d : collected) {
    entries.append(py::make_tuple(d.severity, d.message, d.file, d.line, d.column));
    text += "\n" + (d.file.empty() ? std::string("<unknown>")
                                   : d.file + ":" + std::to_string(d.line) +
                                         ":" + std::to_string(d.column)) +
            ": " + d.severity + ": " + d.message;
  }
  py::object error = mlirErrorType()(text, what, entries);
  PyErr_SetObject(mlirErrorType().ptr(), error.ptr());
  throw py::error_already_set();
}

void registerMLIRError(py::module_ &m) {
  // A plain Python exception class with two extra attributes: the step that
  // failed and the list of (severity, message, file, line, column).
  py::object builtins = py::module_::import("builtins");
  py::dict ns;
  py::exec(R"(
class MLIRError(Exception):
    """An MLIR step (verification, a pass) failed; `diagnostics` holds
    (severity, message, file, line, column) tuples."""
    def __init__(self, text, step, diagnostics):
        super().__init__(text)
        self.step = step
        self.diagnostics = list(diagnostics)
)", py::globals(), ns);
  py::object type = ns["MLIRError"];
  type.attr("__module__") = "kiln._C.ir";
  mlirErrorType() = type;
  m.attr("MLIRError") = type;
}

} // namespace kiln::python
