"""The frontend: a kernel's Python AST to kiln-dialect IR, with locations.

``generate_kiln_ir`` parses the kernel's source and walks it, evaluating
compile-time values (constexprs, dtypes, Python numbers) in Python and
emitting IR for runtime values through ``kiln._C.ir.Builder``. Every op gets
the ``FileLineColLoc`` of the AST node that produced it, and every error
becomes a ``CompilationError`` at that node (``file:line:col``, the source
line and a caret).

Control flow:

* ``if`` on a constant is folded; on a runtime scalar it becomes ``scf.if``
  whose results are the variables either branch assigns that exist after it.
* ``for`` over ``range``/``kl.range`` becomes ``scf.for``, carrying every
  variable the body assigns that existed before the loop (its type must not
  change); ``kl.static_range`` is unrolled; ``while`` becomes ``scf.while``.
* Calls to other ``@kiln.jit`` functions become private ``func.func``s
  (specialized on argument types and constexprs) called with ``func.call``.

The package's modules: ``generator`` (``generate_kiln_ir`` and the
``CodeGenerator`` class, with source positions, scopes and function
generation), the statement kinds ``CodeGenerator`` mixes in
(``statements``, ``branches``, ``expressions``, ``calls``), ``aggregates``
(tuples, block pointers and tensor descriptors as flat value lists) and
``helpers``.
"""

from kiln.compiler.frontend.generator import CodeGenerator, generate_kiln_ir
from kiln.compiler.frontend.helpers import KernelSource, global_scope, is_kernel_source

__all__ = ["CodeGenerator", "KernelSource", "generate_kiln_ir", "global_scope", "is_kernel_source"]
