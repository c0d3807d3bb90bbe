//===- Registration.h - Dialects, passes and pipelines of Kiln --*- C++ -*-===//
//
// One place that registers everything Kiln's tools and the JIT need: the
// dialects a kernel can contain at any stage, every pass, and the named
// pipelines of each target.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_REGISTRATION_H
#define KILN_TARGET_REGISTRATION_H

namespace mlir {
class DialectRegistry;
namespace kiln {

/// Adds every dialect a Kiln kernel may contain, from the kiln dialect down to
/// LLVM and NVVM, with their LLVM IR translations and inliner interfaces.
void registerAllDialects(DialectRegistry &registry);

/// Registers Kiln's passes, the upstream passes its pipelines use, and the
/// named pipelines of every target (NVIDIA and CPU).
void registerAllPasses();

} // namespace kiln
} // namespace mlir

#endif // KILN_TARGET_REGISTRATION_H
