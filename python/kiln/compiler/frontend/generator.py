"""The code generator: one function (kernel or helper) into a module, and
``generate_kiln_ir``, which drives it for a kernel."""

from __future__ import annotations

import ast
import builtins
import linecache
import re
import sys
from types import ModuleType
from typing import Any, Callable, Mapping, Optional, Sequence

from kiln import _C
from kiln.compiler.specialization import (AGGREGATE_TYPES, TENSOR_DESCRIPTOR_TYPE, TENSOR_MAP_TYPE, Specialization,
                                          child_name)
from kiln.errors import CompilationError, CompileTimeAssertionFailure
from kiln.language import core, debugging
# (Imported from the module: the package exports the class under the module's name.)
from kiln.language.tensor_descriptor import from_kernel_argument
from kiln.language.compile_time import KernelLaunchShape, current_launch_shape
from kiln.language.core import constexpr, dtype, tensor

ir = _C.ir
from kiln.compiler.frontend.helpers import (KernelSource, _UNSUPPORTED_SYNTAX, _PYTHON_BUILTINS, _unwrap,
                                            is_kernel_source, global_scope, _OneBranchOnly, _contains_return, _ParamRef,
                                            _ArgumentAggregate, _Returned)
from kiln.compiler.frontend.aggregates import _tuple_like, _leaves, _rebuild, _AggregateMixin
from kiln.compiler.frontend.branches import BranchesMixin
from kiln.compiler.frontend.calls import CallsMixin
from kiln.compiler.frontend.expressions import ExpressionsMixin
from kiln.compiler.frontend.statements import StatementsMixin


def generate_kiln_ir(fn: KernelSource, signature: Mapping[str, str], constexprs: Mapping[str, Any],
                     attrs: Optional[Specialization], context: Any, debug: bool = False,
                     name: Optional[str] = None, target: str = "", num_warps: int = 4) -> Any:
    """Builds the kiln-dialect module of one specialization of kernel ``fn``.

    Args:
        fn: the kernel (see :class:`KernelSource`).
        signature: each non-constexpr parameter's type string ("*fp32",
            "i32", "u64", "fp16", ...), in any order.
        constexprs: each constexpr parameter's value.
        attrs: which parameters were specialized (divisible by 16 / equal to 1).
        context: the ``kiln._C.ir.Context`` to build in.
        debug: emit ``kl.device_assert`` checks (otherwise they are dropped).
        name: the kernel function's symbol (default: ``fn.__name__``).
        target: the compile target ("cpu", "sm_90a", ...), which
            ``kl.extra.cuda`` functions may depend on.
        num_warps: warps per program (``kl.extra.cuda.num_warps()``).

    Returns:
        a verified ``kiln._C.ir.Module`` holding the public kernel function
        (unit attribute ``kiln.kernel``) and the private functions it calls.

    Raises:
        CompilationError: for any error in the kernel, located in its source.
    """
    attrs = attrs or Specialization()
    module = ir.Module.create(context)
    builder = ir.Builder(context)
    generator = CodeGenerator(fn, module, builder, functions={})
    if name is not None:
        generator.kernel_name = name
    token = debugging.debug_mode.set(bool(debug))
    launch_token = current_launch_shape.set(KernelLaunchShape(target=target, num_warps=num_warps))
    try:
        generator.generate_kernel(dict(signature), dict(constexprs), attrs)
    except RecursionError:
        # Statements and jit calls report it where it happens (see visit and
        # _call_jit); this is the last resort.
        raise generator.error(f"the kernel is nested too deeply to compile within Python's recursion limit "
                              f"({sys.getrecursionlimit()}); raise it with sys.setrecursionlimit() or nest less",
                              None) from None
    finally:
        debugging.debug_mode.reset(token)
        current_launch_shape.reset(launch_token)
    try:
        module.verify()
    except ir.MLIRError as error:
        raise generator.error_from_mlir(error, None) from error
    return module



# ---------------------------------------------------------------------------
# The code generator
# ---------------------------------------------------------------------------


class CodeGenerator(StatementsMixin, BranchesMixin, ExpressionsMixin, CallsMixin, _AggregateMixin, ast.NodeVisitor):
    """Generates one function (kernel or helper) into ``module``."""

    def __init__(self, fn: KernelSource, module: Any, builder: Any, functions: dict) -> None:
        if not is_kernel_source(fn):
            raise TypeError(f"generate_kiln_ir expects a @kiln.jit function, got {type(fn).__name__}")
        self.fn = fn
        self.module = module
        self.builder = builder
        # Shared by every generator of one module: mangled name -> (ir.Function,
        # result types), or None while that function is being generated.
        self.functions = functions
        self._call_node: Optional[ast.AST] = None
        # The jit functions whose calls lead here, outermost first.
        self.call_chain: tuple[str, ...] = (fn.__name__,)
        # The public kernel's symbol (a jit(repr=...) function may rename it).
        self.kernel_name = fn.__name__
        code = fn.fn.__code__
        self.filename = code.co_filename
        self.tree = ast.parse(fn.src)
        defs = [n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not defs:
            raise CompilationError(f"no function definition in the source of {fn.__name__}", self.filename,
                                   code.co_firstlineno, 1)
        self.fn_def = defs[0]
        self._locate_source(code.co_firstlineno)
        self.lscope: dict[str, Any] = {}
        self.gscope = global_scope(fn)
        self.region_depth = 0  # scf regions we are inside (returns are top-level only)
        # The call written as an expression statement being visited: its result is dropped.
        self._dropped_call: Optional[ast.Call] = None
        self.is_kernel = True
        self.result_types: Optional[list[dtype]] = None
        self.result_template: Any = None
        # Values `return` gives in the branches of an if that returns early.
        self._captured_returns: Optional[list[tuple[Any, ast.AST]]] = None
        # Element-wise mode (kl.map_elementwise's scalar function, compiled
        # on blocks): an if on element values runs both branches and merges
        # them element by element. `under_element_condition`: generating
        # such a branch (or a function called from one), where memory
        # accesses and prints would act for every element.
        self.elementwise = False
        self.under_element_condition = False
        self.ir_function: Any = None

    # -- source positions ----------------------------------------------------

    def _locate_source(self, first_line: int) -> None:
        """Works out how `fn.src` positions map to the file's positions."""
        src_first = min([self.fn_def.lineno] + [d.lineno for d in self.fn_def.decorator_list])
        self.line_offset = first_line - src_first
        def_line = self.fn_def.lineno + self.line_offset
        text = linecache.getline(self.filename, def_line)
        if f"def {self.fn_def.name}" not in text:
            # `src` and co_firstlineno disagree about the decorators; find the def.
            for candidate in range(first_line, first_line + 50):
                if f"def {self.fn_def.name}" in linecache.getline(self.filename, candidate):
                    self.line_offset = candidate - self.fn_def.lineno
                    text = linecache.getline(self.filename, candidate)
                    break
        src_lines = self.fn.src.splitlines()
        src_def = src_lines[self.fn_def.lineno - 1] if self.fn_def.lineno <= len(src_lines) else ""
        indent = lambda s: len(s) - len(s.lstrip())  # noqa: E731
        self.col_offset = max(indent(text) - indent(src_def), 0) if text else 0

    def position(self, node: ast.AST) -> tuple[int, int]:
        """(line, 1-based column) of `node` in the file."""
        return (getattr(node, "lineno", self.fn_def.lineno) + self.line_offset,
                getattr(node, "col_offset", 0) + self.col_offset + 1)

    def source_line(self, line: int) -> Optional[str]:
        text = linecache.getline(self.filename, line)
        if text:
            return text.rstrip("\n")
        src_lines = self.fn.src.splitlines()
        index = line - self.line_offset - 1
        return src_lines[index] if 0 <= index < len(src_lines) else None

    def error(self, message: str, node: Optional[ast.AST],
              kind: type[CompilationError] = CompilationError) -> CompilationError:
        """A ``kind`` error at `node` (the ``def`` when None)."""
        line, col = self.position(node if node is not None else self.fn_def)
        return self._error_at(kind, message, self.filename, line, col)

    def _error_at(self, kind: type[CompilationError], message: str, file: str, line: int,
                  col: int) -> CompilationError:
        """A ``kind`` error at a file position; inside this function it also
        carries the function's name and Triton's position in it (line 1 is
        the ``def`` line, 0-based column)."""
        where: dict[str, Any] = {}
        def_line = self.fn_def.lineno + self.line_offset
        last_line = getattr(self.fn_def, "end_lineno", None)
        if file == self.filename and line >= def_line and (last_line is None or line <= last_line + self.line_offset):
            where = {"function": self.fn_def.name, "fn_lineno": line - def_line + 1,
                     "fn_col": max(col - 1 - self.col_offset, 0), "src": self.fn.src}
        return kind(message, file, line, col, self._line_of(file, line), **where)

    def error_from_mlir(self, error: Exception, node: Optional[ast.AST]) -> CompilationError:
        """An MLIRError as a CompilationError at its first located diagnostic."""
        for severity, message, file, line, col in getattr(error, "diagnostics", []):
            if severity == "error" and file and line:
                return self._error_at(CompilationError, message, file, line, col)
        errors = [d[1] for d in getattr(error, "diagnostics", []) if d[0] == "error"]
        return self.error("; ".join(errors) or str(error), node)

    def _line_of(self, file: str, line: int) -> Optional[str]:
        if file == self.filename:
            return self.source_line(line)
        text = linecache.getline(file, line)
        return text.rstrip("\n") if text else None

    # -- scopes ----------------------------------------------------------------

    def lookup(self, name: str, node: ast.AST) -> Any:
        if name in self.lscope:
            value = self.lscope[name]
            if isinstance(value, _OneBranchOnly):
                raise self.error(value.reason or f"'{name}' is defined in only one branch of the if at line "
                                 f"{value.line}; define it in both branches (or before the if) to use it here",
                                 node)
            return value
        if name in self.gscope:
            return self._check_global(name, self.gscope[name], node)
        if name in _PYTHON_BUILTINS:
            return getattr(builtins, name)
        if hasattr(builtins, name):
            raise self.error(f"the Python builtin '{name}' is not supported in kiln kernels", node)
        raise self.error(f"name '{name}' is not defined", node)

    def _check_global(self, name: str, value: Any, node: ast.AST) -> Any:
        """Globals a kernel may read: kl.constexpr constants, dtypes, modules,
        classes and things it can call. As in Triton, a plain value (``N =
        42``) is refused: the compiled kernel would keep the value it saw
        while the launch cache, keyed on the arguments, cannot tell when
        the global changes."""
        if isinstance(value, constexpr):
            return value.value
        if isinstance(value, (dtype, ModuleType, type)):
            return value
        if is_kernel_source(value) or core.is_builtin(value) or callable(value):
            return value
        if name in self.fn.fn.__code__.co_freevars:
            # A closure variable of a kernel defined in a function: the
            # enclosing function's constants, read as they are.
            return value
        raise self.error(f"Cannot access global variable '{name}' (of type {type(value).__name__}) from a @jit "
                         f"function: kernels read only globals that are kl.constexpr instances ({name} = "
                         f"kl.constexpr(...)), dtypes, modules and functions; an annotation ({name}: kl.constexpr "
                         f"= ...) does not make a constexpr. Wrap the value in kl.constexpr or pass it as an "
                         f"argument", node)

    # -- function generation -----------------------------------------------------

    def _arg_names(self) -> list[str]:
        args = self.fn_def.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error("kiln functions take plain positional parameters only "
                             "(no *args, **kwargs or keyword-only parameters)", self.fn_def)
        return [a.arg for a in args.args]

    def generate_kernel(self, signature: dict[str, str], constexprs: dict[str, Any],
                        attrs: Specialization) -> None:
        """Emits the public kernel function.

        Tuple arguments arrive flattened (see
        :mod:`kiln.compiler.specialization`): each becomes one function
        argument per runtime leaf, and the body sees the tuple rebuilt.
        """
        arg_names = self._arg_names()
        constexpr_names = set(self.fn.constexpr_names)
        self.named_tuples = dict(attrs.named_tuples)
        for arg in self.fn_def.args.args:
            if arg.arg in constexpr_names and arg.arg in getattr(self.fn, "do_not_specialize", ()):
                # A constexpr is always specialized on: the request cannot
                # be honoured.
                raise self.error(f"{arg.arg} marked as constexpr and listed in do_not_specialize", arg)
        params: list[tuple[str, dtype]] = []
        used: set[str] = set()
        templates: dict[str, Any] = {}
        for name in arg_names:
            if name in constexpr_names:
                if name not in constexprs:
                    raise self.error(f"no value given for constexpr parameter '{name}'", self.fn_def)
                self.lscope[name] = _unwrap(constexprs[name])
                used.add(name)
                continue
            templates[name] = self._parameter_template(name, signature, constexprs, params, used)
        # Constexpr paths of tuple elements must belong to a parameter too.
        unknown = (set(signature) | {name for name in constexprs if "[" in name}) - used
        if unknown:
            raise self.error(f"signature names unknown or constexpr parameters: {sorted(unknown)}", self.fn_def)

        # Helpers named like the kernel get another symbol (see _mangle).
        self.functions.setdefault(("owners",), {})[self.fn.__name__] = self.fn.fn
        self._set_loc(self.fn_def)
        function = self.builder.create_function(self.module, self.kernel_name,
                                                [ty.to_ir(self.builder) for _, ty in params], [], True)
        function.set_unit_attr("kiln.kernel")
        block = function.add_entry_block()
        self.builder.set_insertion_point_to_end(block)
        self.ir_function = function
        values = []
        for index, (name, ty) in enumerate(params):
            # The IR names the argument after its parameter (%v, and %t_1_0
            # for the tuple element t[1][0]) instead of %argN.
            function.set_arg_name(index, re.sub(r"\W+", "_", name).strip("_"))
            if signature.get(name) == TENSOR_MAP_TYPE:
                function.set_arg_attr(index, "kiln.tensor_map", 1)
            if name in attrs.divisible_by_16 and (ty.is_ptr() or ty.is_int()):
                function.set_arg_attr(index, "kiln.divisibility", 16)
            if name in attrs.equal_to_1 and ty.is_int():
                # The argument stays in the signature (the launcher passes it);
                # the body sees the constant 1, as Triton does.
                values.append(1)
            else:
                values.append(tensor(function.arg(index), ty))
        for name, template in templates.items():
            self.lscope[name] = self._run(self.fn_def, lambda t=template: self._instantiate(t, values))
        self._generate_body()
        if self.result_types:
            raise self.error("a kernel cannot return a value", self.fn_def)

    def _parameter_template(self, path: str, signature: dict[str, str], constexprs: dict[str, Any],
                            params: list[tuple[str, dtype]], used: set[str]) -> Any:
        """The value of the kernel argument at `path` with each runtime leaf
        an index into `params` (to which it is appended): an int in a
        _ParamRef, a compile-time value, or an _ArgumentAggregate."""
        if path not in signature:
            if path in constexprs:
                used.add(path)
                return _unwrap(constexprs[path])
            raise self.error(f"parameter '{path}' has no type in the signature", self.fn_def)
        used.add(path)
        text = signature[path]
        if text in AGGREGATE_TYPES:
            children = []
            while child_name(path, len(children)) in signature or child_name(path, len(children)) in constexprs:
                children.append(self._parameter_template(child_name(path, len(children)), signature, constexprs,
                                                         params, used))
            return _ArgumentAggregate(text, path, children)
        try:
            params.append((path, core.dtype_from_signature(text)))
        except Exception as e:  # noqa: BLE001 - reported at the def
            raise self.error(f"parameter '{path}': {e}", self.fn_def) from e
        return _ParamRef(len(params) - 1)

    def _instantiate(self, template: Any, values: list[Any]) -> Any:
        """A kernel argument's value from its template and the function's arguments."""
        if isinstance(template, _ParamRef):
            return values[template.index]
        if isinstance(template, _ArgumentAggregate):
            children = [self._instantiate(child, values) for child in template.children]
            if template.kind == TENSOR_DESCRIPTOR_TYPE:
                if len(children) != 6:
                    raise CompilationError(f"parameter '{template.path}': a tensor descriptor argument has base, "
                                           f"shape, strides, block shape, padding and tensor map, got "
                                           f"{len(children)} parts")
                return from_kernel_argument(*children, self.builder)
            return _tuple_like(self.named_tuples.get(template.path, tuple), children)
        return template

    def generate_helper(self, name: str, arg_values: dict[str, Any]) -> tuple[Any, list[dtype]]:
        """Emits a private function for one specialization of this helper.

        `arg_values` maps every parameter to its tensor (runtime), aggregate
        or Python (constexpr) value; the tensors, aggregates' included,
        become the function's arguments. The value `return` gives, with its
        tensors as placeholders, is left in `result_template`.
        """
        self.is_kernel = False
        runtime = [leaf for value in arg_values.values() for leaf in _leaves(value)]
        self._set_loc(self.fn_def)
        function = self.builder.create_function(self.module, name, [v.type.to_ir(self.builder) for v in runtime],
                                                [], False)
        block = function.add_entry_block()
        self.builder.set_insertion_point_to_end(block)
        self.ir_function = function
        args = iter([function.arg(i) for i in builtins.range(len(runtime))])
        for param, value in arg_values.items():
            # Tensors and aggregates become the function's arguments, in order.
            self.lscope[param] = _rebuild(value, args)
        self._generate_body()
        result_types = self.result_types or []
        function.set_result_types([t.to_ir(self.builder) for t in result_types])
        return function, result_types

    def _generate_body(self) -> None:
        # kl.device_assert reports the function it is in.
        token = debugging.current_function.set(self.fn_def.name)
        try:
            self._generate_statements()
        finally:
            debugging.current_function.reset(token)

    def _generate_statements(self) -> None:
        body = list(self.fn_def.body)
        # A docstring is not code.
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        try:
            self.visit_stmts(body)
        except _Returned:
            return
        self._set_loc(self.fn_def.body[-1] if self.fn_def.body else self.fn_def)
        self.builder.create_return([])

    # -- visiting ----------------------------------------------------------------

    def _set_loc(self, node: ast.AST) -> None:
        line, col = self.position(node)
        self.builder.set_loc(self.filename, line, col)

    def visit(self, node: ast.AST) -> Any:
        """Visits `node` with the builder located at it; any failure becomes a
        CompilationError at `node` (or at the innermost node that failed)."""
        has_position = hasattr(node, "lineno")
        saved = self.builder.get_loc() if has_position else None
        if has_position:
            self._set_loc(node)
        try:
            return super().visit(node)
        except _Returned:
            raise
        except RecursionError:
            # In a helper, the jit call that led there reports it (with the
            # chain of calls); in the kernel, the statement that nests too
            # deep (or, lacking stack to say so, an enclosing one).
            if isinstance(node, ast.stmt) and len(self.call_chain) == 1:
                raise self.error(f"this statement nests too deeply to compile within Python's recursion limit "
                                 f"({sys.getrecursionlimit()}); raise it with sys.setrecursionlimit() or split it",
                                 node) from None
            raise
        except CompilationError as e:
            if e.filename is None:  # raised by the language layer: locate it here
                raise self._locate(e, node)
            raise
        except ir.MLIRError as e:
            raise self.error_from_mlir(e, node) from e
        except Exception as e:  # noqa: BLE001 - every failure is reported at the source
            raise self._located(e, node) from e
        finally:
            if saved is not None:
                self.builder.set_loc(*saved)

    def _locate(self, e: CompilationError, node: ast.AST) -> CompilationError:
        """An unlocated error of the language layer, located at `node`, of the
        same class. Its ``__cause__`` is `e`, whose traceback shows the check
        that failed, except for a failed static assertion: its message is the
        kernel's own."""
        located = self.error(e.message, node, type(e))
        located.__cause__ = None if isinstance(e, CompileTimeAssertionFailure) else e
        located.__suppress_context__ = True
        return located

    def _located(self, e: Exception, node: ast.AST) -> CompilationError:
        message = e.message if isinstance(e, CompilationError) else str(e) or type(e).__name__
        if not isinstance(e, (CompilationError, TypeError, ValueError, AttributeError, IndexError, KeyError,
                              ZeroDivisionError, OverflowError)):
            message = f"{type(e).__name__}: {message}"
        return self.error(message, node)

    def generic_visit(self, node: ast.AST) -> Any:
        name = type(node).__name__
        # Every name in the table is plural ("assignment expressions (:=)"
        # too, which does not end in "s"); the fallback is singular.
        verb = "are" if name in _UNSUPPORTED_SYNTAX else "is"
        what = _UNSUPPORTED_SYNTAX.get(name, f"'{name}' syntax")
        raise self.error(f"{what} {verb} not supported in kiln kernels", node)

    def visit_stmts(self, stmts: Sequence[ast.stmt]) -> None:
        for index, stmt in enumerate(stmts):
            if isinstance(stmt, ast.If) and not self.region_depth and _contains_return(stmt):
                # An early return: the statements after the if run only in the
                # branches that fall through, so both branches end the function.
                rest = list(stmts[index + 1:])
                tail = ast.If(test=stmt.test, body=list(stmt.body) + rest, orelse=list(stmt.orelse) + rest)
                ast.copy_location(tail, stmt)
                tail.returns_early = True  # type: ignore[attr-defined]
                self.visit(tail)
                return
            self.visit(stmt)

    def _run(self, node: ast.AST, fn: Callable[[], Any]) -> Any:
        """Runs `fn` with errors located at `node` (for semantic calls)."""
        try:
            return fn()
        except CompilationError as e:
            if e.filename is None:
                raise self._locate(e, node)
            raise
        except ir.MLIRError as e:
            raise self.error_from_mlir(e, node) from e
