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
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import re
import sys
import warnings
from types import ModuleType
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Protocol, Sequence, runtime_checkable

from kiln import _C
from kiln.compiler.specialization import (AGGREGATE_TYPES, TENSOR_DESCRIPTOR_TYPE, TENSOR_MAP_TYPE, Specialization,
                                          child_name, is_named_tuple_class)
from kiln.errors import CompilationError, CompileTimeAssertionFailure
from kiln.language import core, debugging, semantic, shapes
from kiln import language
from kiln.language.block_pointer import block_pointer
# (Imported from the module: the package exports the class under the module's name.)
from kiln.language.tensor_descriptor import from_kernel_argument, tensor_descriptor
from kiln.language.compile_time import (KernelLaunchShape, current_launch_shape, is_constexpr_function,
                                        unused_result_message)
from kiln.language.core import constexpr, dtype, tensor

ir = _C.ir

__all__ = ["KernelSource", "generate_kiln_ir", "global_scope", "is_kernel_source"]


@runtime_checkable
class KernelSource(Protocol):
    """What the frontend needs from a ``@kiln.jit`` function.

    ``kiln.runtime.jit.JITFunction`` satisfies it. Attributes:
        fn: the Python function (its ``__code__`` gives file and first line,
            its ``__closure__`` the closure variables).
        src: its source, dedented (decorators included or not).
        __name__: the function name (the kernel's symbol name).
        arg_names: parameter names, in order.
        constexpr_names: names of the parameters annotated ``kl.constexpr``.
        __globals__: the globals the body's names resolve in.
    """

    fn: Callable[..., Any]
    src: str
    __name__: str
    arg_names: Sequence[str]
    constexpr_names: Iterable[str]
    __globals__: dict


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
# Helpers
# ---------------------------------------------------------------------------

# Syntax kiln does not compile, with the words the error uses.
_UNSUPPORTED_SYNTAX = {
    "Try": "'try' statements", "TryStar": "'try' statements", "With": "'with' statements",
    "AsyncWith": "'async with' statements", "Lambda": "lambda expressions", "ListComp": "list comprehensions",
    "SetComp": "set comprehensions", "DictComp": "dict comprehensions", "GeneratorExp": "generator expressions",
    "Dict": "dict literals", "Set": "set literals", "Global": "'global' statements",
    "Nonlocal": "'nonlocal' statements", "Delete": "'del' statements", "Yield": "'yield' expressions",
    "YieldFrom": "'yield from' expressions", "Await": "'await' expressions", "ClassDef": "class definitions",
    "FunctionDef": "nested function definitions", "AsyncFunctionDef": "nested function definitions",
    "Import": "'import' statements", "ImportFrom": "'import' statements", "Raise": "'raise' statements",
    "Break": "'break' statements", "Continue": "'continue' statements", "AsyncFor": "'async for' loops",
    "Match": "'match' statements", "NamedExpr": "assignment expressions (:=)", "Starred": "starred expressions",
    "JoinedStr": "f-strings",
}

# Python builtins a kernel may call on compile-time values.
_PYTHON_BUILTINS = {"range", "min", "max", "print", "len", "int", "float", "bool", "abs", "isinstance",
                    "getattr", "hasattr", "tuple", "str"}

_BINARY_OPS: dict[type, tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Add: ("add", lambda a, b: a + b), ast.Sub: ("sub", lambda a, b: a - b),
    ast.Mult: ("mul", lambda a, b: a * b), ast.Div: ("truediv", lambda a, b: a / b),
    ast.FloorDiv: ("floordiv", lambda a, b: a // b), ast.Mod: ("mod", lambda a, b: a % b),
    ast.BitAnd: ("and_", lambda a, b: a & b), ast.BitOr: ("or_", lambda a, b: a | b),
    ast.BitXor: ("xor_", lambda a, b: a ^ b), ast.LShift: ("lshift", lambda a, b: a << b),
    ast.RShift: ("rshift", lambda a, b: a >> b), ast.Pow: ("power", lambda a, b: a ** b),
}

_UNARY_SPELLINGS: dict[type, str] = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not", ast.Invert: "~"}

_COMPARE_OPS: dict[type, tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Eq: ("equal", lambda a, b: a == b), ast.NotEq: ("not_equal", lambda a, b: a != b),
    ast.Lt: ("less_than", lambda a, b: a < b), ast.LtE: ("less_equal", lambda a, b: a <= b),
    ast.Gt: ("greater_than", lambda a, b: a > b), ast.GtE: ("greater_equal", lambda a, b: a >= b),
}

_SYMBOL_CHARS = re.compile(r"[^A-Za-z0-9_]")


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, constexpr) else value


def _is_runtime(value: Any) -> bool:
    return isinstance(value, tensor)


def is_kernel_source(value: Any) -> bool:
    """True for a ``@kiln.jit`` function (anything satisfying :class:`KernelSource`)."""
    return not isinstance(value, type) and isinstance(value, KernelSource)


def global_scope(fn: KernelSource) -> dict[str, Any]:
    """The names ``fn``'s body reads outside its parameters: its globals,
    overridden by its closure variables (the on-disk cache's key reads the
    same scope, so that both see the same callees and constants)."""
    scope = dict(fn.__globals__)
    func = fn.fn
    closure = getattr(func, "__closure__", None) or ()
    for name, cell in zip(func.__code__.co_freevars, closure):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an unassigned cell
            pass
    return scope


def _assigned_names(stmts: Sequence[ast.stmt]) -> list[str]:
    """Names a statement list may assign (in order of first appearance)."""
    names: dict[str, None] = {}
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.setdefault(node.id)
    return list(names)


def _leaves_of(values: Any) -> list[Any]:
    """The non-tuple values nested in `values` (a tuple or list)."""
    out: list[Any] = []
    pending = list(values)
    while pending:
        value = _unwrap(pending.pop())
        if isinstance(value, (tuple, list)):
            pending.extend(value)
        else:
            out.append(value)
    return out


def _constexpr_key(value: Any) -> str:
    """A short, symbol-safe spelling of a constexpr for mangled names."""
    if isinstance(value, dtype):
        return core.signature_name(value)
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (int, float, str)):
        return _SYMBOL_CHARS.sub("_", repr(value).replace("-", "m").replace(".", "p"))
    return _SYMBOL_CHARS.sub("_", getattr(value, "__name__", type(value).__name__))


class _OneBranchOnly:
    """Marks a name an ``if`` left undefined (an error on use): defined in
    only one branch, or with different types in the two."""

    def __init__(self, line: int, reason: str = "") -> None:
        self.line = line
        self.reason = reason


def _contains_return(node: ast.stmt) -> bool:
    """True if `node` holds a return outside loops (a loop's returns are an
    error reported where they are)."""
    pending: list[ast.AST] = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.Return):
            return True
        if isinstance(current, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        pending.extend(ast.iter_child_nodes(current))
    return False


class _ParamRef:
    """A kernel argument's runtime leaf in a template: the index of its
    function argument."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class _ArgumentAggregate:
    """A flattened kernel argument in a template: its marker type (one of
    AGGREGATE_TYPES), path and children's templates."""

    __slots__ = ("kind", "path", "children")

    def __init__(self, kind: str, path: str, children: list[Any]) -> None:
        self.kind = kind
        self.path = path
        self.children = children


class _Returned(Exception):
    """Internal: unwinds statement lists after a top-level ``return``."""


# ---------------------------------------------------------------------------
# Aggregates: tuples, block pointers and tensor descriptors
#
# A tuple, a block pointer (kl.make_block_ptr) or a tensor descriptor
# (kl.make_tensor_descriptor) is a tree whose leaves are
# tensors and compile-time values. Where the IR needs a flat list of values
# (loop-carried variables, if results, helper arguments and results), the
# frontend passes the tree's tensors, depth first, and rebuilds the tree from
# a template on the other side; compile-time leaves stay in the template.
# ---------------------------------------------------------------------------


# Frontend values with runtime fields: they define runtime_fields,
# with_runtime_fields and static_key.
_RECORDS = (block_pointer, tensor_descriptor)


def _is_aggregate(value: Any) -> bool:
    return isinstance(value, (tuple,) + _RECORDS)


def _children(value: Any) -> tuple:
    return value.runtime_fields if isinstance(value, _RECORDS) else value


def _with_children(value: Any, children: Sequence[Any]) -> Any:
    if isinstance(value, _RECORDS):
        return value.with_runtime_fields(tuple(children))
    return _tuple_like(type(value), children)


def _tuple_like(cls: type, children: Sequence[Any]) -> tuple:
    """A tuple of ``children`` of class ``cls``: a named tuple keeps its class
    (and so its field names); any other tuple becomes a plain one."""
    return cls(*children) if is_named_tuple_class(cls) else tuple(children)


def _leaves(value: Any) -> list[tensor]:
    """The tensors of `value`, depth first."""
    if isinstance(value, tensor):
        return [value]
    if _is_aggregate(value):
        return [leaf for child in _children(value) for leaf in _leaves(child)]
    return []


def _rebuild(template: Any, handles: Iterator[Any]) -> Any:
    """`template` with each tensor replaced by the next of `handles` (an IR
    value of the same type)."""
    if isinstance(template, tensor):
        return tensor(next(handles), template.type)
    if _is_aggregate(template):
        return _with_children(template, [_rebuild(child, handles) for child in _children(template)])
    return template


def _same_constant(a: Any, b: Any) -> bool:
    """Whether two branches' values are one compile-time value (of one
    type), which then needs no if result."""
    return not _is_runtime(a) and not _is_runtime(b) and type(a) is type(b) and a == b


def _describe(value: Any) -> str:
    if isinstance(value, block_pointer):
        return f"a block pointer with block shape {list(value.block_shape)}"
    if isinstance(value, tensor_descriptor):
        return f"a tensor descriptor with block shape {list(value.block_shape)}"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    if isinstance(value, tensor):
        return f"a value of type {value.type}"
    return f"the compile-time value {value!r}"


def _aggregate_key(value: Any) -> str:
    """A symbol-safe key of an aggregate argument: its structure, leaf types
    and compile-time leaves (helpers are specialized on all three)."""
    if isinstance(value, tensor):
        return core.signature_name(value.type)
    if isinstance(value, block_pointer):
        inner = "_".join(_aggregate_key(c) for c in _children(value))
        static = "_".join(str(d) for d in value.block_shape + value.order)
        return f"B{static}_{inner}_E"
    if isinstance(value, tensor_descriptor):
        inner = "_".join(_aggregate_key(c) for c in _children(value))
        static = "_".join(str(d) for d in value.block_shape)
        return f"D{static}_{value.padding}_{inner}_E"
    if isinstance(value, tuple):
        # A named tuple's class is part of the key: its fields are read by name.
        name = _constexpr_key(type(value)) if is_named_tuple_class(type(value)) else ""
        return "T" + name + "".join(f"_{_aggregate_key(c)}" for c in value) + "_E"
    return _constexpr_key(value)


class _AggregateMixin:
    """The code generator's handling of aggregates (mixed into CodeGenerator)."""

    def _materialize(self, value: Any, node: ast.AST) -> Any:
        """`value` with its Python int and float leaves made tensors (the
        form in which aggregates cross region and function boundaries)."""
        value = _unwrap(value)
        if _is_aggregate(value):
            return _with_children(value, [self._materialize(c, node) for c in _children(value)])
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return self._run(node, lambda: semantic.to_tensor(value, self.builder))
        return value

    def _pair_leaves(self, name: str, a: Any, b: Any, node: ast.AST,
                     pairs: list[tuple[Any, Any]]) -> Callable[[Iterator[Any]], Any]:
        """Walks two values of variable `name` (an if's two branches, or a
        loop's initial and final value) together, appending their leaves to
        `pairs`; returns what rebuilds the aggregate from one value per pair."""
        a, b = _unwrap(a), _unwrap(b)
        if not _is_aggregate(a) and not _is_aggregate(b):
            pairs.append((a, b))
            return lambda values: next(values)
        if type(a) is not type(b):
            raise self.error(f"'{name}' holds {_describe(a)} in one place and {_describe(b)} in another; it must "
                             f"keep one kind of value", node)
        if isinstance(a, tuple) and len(a) != len(b):
            raise self.error(f"'{name}' holds tuples of {len(a)} and of {len(b)} values; their lengths must agree",
                             node)
        if isinstance(a, block_pointer) and a.static_key != b.static_key:
            raise self.error(f"'{name}' holds block pointers of different element types, block shapes or orders: "
                             f"{a!r} and {b!r}", node)
        if isinstance(a, tensor_descriptor) and a.static_key != b.static_key:
            raise self.error(f"'{name}' holds tensor descriptors of different element types, block shapes or "
                             f"paddings: {a!r} and {b!r}", node)
        rebuilders = [self._pair_leaves(name, x, y, node, pairs) for x, y in zip(_children(a), _children(b))]
        return lambda values: _with_children(a, [rebuild(values) for rebuild in rebuilders])

    def _loop_leaf(self, name: str, init: Any, value: Any, node: ast.stmt) -> Optional[tensor]:
        """The value to yield for one leaf of loop-carried `name` (None for a
        compile-time leaf, which must not change)."""
        if isinstance(value, _OneBranchOnly):
            raise self.error(f"loop-carried variable '{name}' is assigned in only one branch of an if", node)
        if not isinstance(init, tensor):
            if _is_runtime(value) or type(value) is not type(init) or value != init:
                raise self.error(f"'{name}' holds the compile-time value {init!r} before the loop but "
                                 f"{_describe(value)} at the end of the body; compile-time parts of a "
                                 f"loop-carried value must not change", node)
            return None
        if not _is_runtime(value):
            value = self._run(node, lambda: semantic.cast(semantic._literal_like(value, init, self.builder),
                                                          init.dtype, self.builder))
        if value.type != init.type:
            raise self.error(f"loop-carried variable '{name}' has type {init.type} before the loop but "
                             f"{value.type} at the end of the body; its type must not change", node)
        return value

    def _aggregate_yields(self, name: str, init: Any, value: Any, node: ast.stmt) -> list[tensor]:
        pairs: list[tuple[Any, Any]] = []
        self._pair_leaves(name, init, value, node, pairs)
        return [y for y in (self._loop_leaf(name, i, v, node) for i, v in pairs) if y is not None]


# ---------------------------------------------------------------------------
# The code generator
# ---------------------------------------------------------------------------


class CodeGenerator(_AggregateMixin, ast.NodeVisitor):
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

    # -- statements ----------------------------------------------------------------

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a string statement is a comment
        if isinstance(node.value, ast.Call):
            # visit_Call checks that the callee's result may be dropped.
            self._dropped_call = node.value
        self.visit(node.value)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self._assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return None
        self._assign(node.target, self.visit(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error("only plain names can be the target of an augmented assignment", node.target)
        current = self.lookup(node.target.id, node.target)
        value = self._binary(type(node.op), current, self.visit(node.value), node)
        self._assign(node.target, value)

    def _assign(self, target: ast.expr, value: Any) -> None:
        value = _unwrap(value)
        if isinstance(target, ast.Name):
            self.lscope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple):
                raise self.error(f"cannot unpack a value of type {type(value).__name__}", target)
            if len(value) != len(target.elts):
                raise self.error(f"cannot unpack {len(value)} values into {len(target.elts)} names", target)
            for elt, v in zip(target.elts, value):
                self._assign(elt, v)
        else:
            raise self.error("only names and tuples of names can be assigned to in kiln kernels", target)

    def visit_Return(self, node: ast.Return) -> None:
        if self.region_depth:
            raise self.error("'return' inside a runtime for/while loop is not supported", node)
        value = _unwrap(self.visit(node.value)) if node.value is not None else None
        if self.is_kernel and value is not None:
            raise self.error("a kernel cannot return a value", node)
        if self._captured_returns is not None:
            # In a branch of an if that returns early (see _returning_if).
            self._captured_returns.append((value, node))
            raise _Returned()
        self._emit_return(value, node)

    def _emit_return(self, value: Any, node: ast.AST) -> None:
        if value is not None and not _is_aggregate(value):
            value = self._run(node, lambda: semantic.to_tensor(value, self.builder))
        # Tuples and block pointers return their tensors; compile-time
        # leaves (None, dtypes, ...) stay in the template.
        value = self._materialize(value, node)
        tensors = _leaves(value)
        self.result_types = [t.type for t in tensors]
        self.result_template = value
        self.builder.create_return([t.handle for t in tensors])
        raise _Returned()

    def visit_Assert(self, node: ast.Assert) -> None:
        test = _unwrap(self.visit(node.test))
        if _is_runtime(test):
            # As in Triton: a device assertion, checked in debug mode only.
            msg = _unwrap(self.visit(node.msg)) if node.msg is not None else ""
            if not isinstance(msg, str):
                raise self.error(f"an assert message must be a constant string, got {msg!r}", node)
            self._run(node, lambda: debugging.device_assert(test, msg, _builder=self.builder))
            return
        if not test:
            msg = _unwrap(self.visit(node.msg)) if node.msg is not None else ""
            raise self.error(f"assertion failed{': ' + str(msg) if msg else ''}", node, CompileTimeAssertionFailure)

    # -- if ------------------------------------------------------------------------

    def visit_If(self, node: ast.If) -> None:
        cond = _unwrap(self.visit(node.test))
        if not _is_runtime(cond):
            self.visit_stmts(node.body if cond else node.orelse)
            return
        if cond.shape and self.elementwise:
            cond = self._run(node.test, lambda: semantic.to_bool(cond, self.builder))
            if getattr(node, "returns_early", False):
                self._element_returning_if(node, cond)
            self._element_if(node, cond)
            return
        cond = self._scalar_condition(cond, node.test, "an if")
        cond = self._run(node.test, lambda: semantic.to_bool(cond, self.builder))
        if getattr(node, "returns_early", False):
            self._returning_if(node, cond)
        before = dict(self.lscope)
        if_op = self.builder.create_if(cond.handle, [], True)
        ip = self.builder.get_insertion_point()

        def branch(stmts: Sequence[ast.stmt], block: Any) -> dict[str, Any]:
            self.lscope = dict(before)
            self.builder.set_insertion_point_to_end(block)
            self.region_depth += 1
            try:
                self.visit_stmts(stmts)
            finally:
                self.region_depth -= 1
            return self.lscope

        then_scope = branch(node.body, if_op.then_block)
        else_scope = branch(node.orelse, if_op.else_block)

        # Variables either branch (re)assigned become results; ones only one
        # branch defines are not visible after the if.
        names = [n for n in dict.fromkeys(list(then_scope) + list(else_scope))
                 if then_scope.get(n, _MISSING) is not before.get(n, _MISSING)
                 or else_scope.get(n, _MISSING) is not before.get(n, _MISSING)]
        after = dict(before)
        results: list[tuple[str, tensor, tensor]] = []
        # Aggregates: (name, rebuild, per leaf a constant or an index into results).
        aggregates: list[tuple[str, Callable[[Iterator[Any]], Any], list[tuple[bool, Any]]]] = []
        for name in names:
            t, e = then_scope.get(name, _MISSING), else_scope.get(name, _MISSING)
            if t is _MISSING or e is _MISSING or isinstance(t, _OneBranchOnly) or isinstance(e, _OneBranchOnly):
                after[name] = _OneBranchOnly(self.position(node)[0])
                continue
            t, e = _unwrap(t), _unwrap(e)
            if _is_aggregate(t) or _is_aggregate(e):
                try:
                    pairs: list[tuple[Any, Any]] = []
                    rebuild = self._pair_leaves(name, t, e, node, pairs)
                    slots: list[tuple[bool, Any]] = []
                    leaf_results = []
                    for index, (t_leaf, e_leaf) in enumerate(pairs):
                        if _same_constant(t_leaf, e_leaf):
                            slots.append((False, t_leaf))
                            continue
                        t_val, e_val = self._branch_values(f"{name}[{index}]", t_leaf, e_leaf, if_op, node)
                        slots.append((True, len(results) + len(leaf_results)))
                        leaf_results.append((name, t_val, e_val))
                except CompilationError as err:
                    if name in before:
                        raise
                    after[name] = _OneBranchOnly(self.position(node)[0], err.message)
                    continue
                results.extend(leaf_results)
                aggregates.append((name, rebuild, slots))
                continue
            if _same_constant(t, e):
                after[name] = t  # the same constant either way
                continue
            try:
                t_val, e_val = self._branch_values(name, t, e, if_op, node)
            except CompilationError as e:
                if name in before:
                    raise
                # Temporaries whose types differ are fine while unused.
                after[name] = _OneBranchOnly(self.position(node)[0], e.message)
                continue
            results.append((name, t_val, e_val))

        self.lscope = after
        values = self._if_results(if_op, ip, [(t_val, e_val) for _, t_val, e_val in results])
        aggregate_leaves = {index for _, _, slots in aggregates for is_result, index in slots if is_result}
        for index, (name, _, _) in enumerate(results):
            if index not in aggregate_leaves:
                self.lscope[name] = values[index]
        for name, rebuild, slots in aggregates:
            self.lscope[name] = rebuild(iter([values[v] if is_result else v for is_result, v in slots]))

    def _if_results(self, if_op: Any, ip: Any, results: Sequence[tuple[tensor, tensor]]) -> list[tensor]:
        """Gives ``if_op`` one result per (then, else) pair of ``results``,
        each branch yielding its side, and returns to ``ip``; the results as
        tensors, in order."""
        if results:
            if_op = self.builder.set_if_results(if_op, [t.type.to_ir(self.builder) for t, _ in results])
        for block, pick in ((if_op.then_block, 0), (if_op.else_block, 1)):
            self.builder.set_insertion_point_to_end(block)
            self.builder.create_yield([r[pick].handle for r in results])
        self.builder.restore_insertion_point(ip)
        return [tensor(v, t.type) for (t, _), v in zip(results, if_op.results if results else [])]

    def _scalar_condition(self, cond: tensor, node: ast.expr, what: str) -> tensor:
        """The scalar a runtime condition tests. A block of one element
        stands for its element (with a warning, as in Triton); a larger
        block is an error."""
        if not cond.shape:
            return cond
        if cond.numel != 1:
            raise self.error(f"{what} condition must be a scalar, got a block of shape {cond.shape}; "
                             f"use kl.where for element-wise choices", node)
        line, _ = self.position(node)
        warnings.warn(f"If conditional called with multidimensional Tensor of shape {cond.shape} "
                      f"({self.filename}:{line}): its one element is the condition", stacklevel=2)
        self._call_node = node
        return self._run(node, lambda: shapes._unsplat(cond, self.builder, self))

    # -- element-wise mode (kl.map_elementwise) -------------------------------------

    def _element_branches(self, node: ast.If, capture: bool) -> list[tuple[dict[str, Any], Any]]:
        """Generates both branches of an if on element values, one after
        the other, for every element; returns each branch's scope and
        (with `capture`) the value it returned (None if it fell off the
        end), with the return statement."""
        before, outer_masked, outer_returns = dict(self.lscope), self.under_element_condition, self._captured_returns
        out = []
        for stmts in (node.body, node.orelse):
            self.lscope = dict(before)
            self.under_element_condition = True
            try:
                if capture:
                    self._captured_returns = []
                self.visit_stmts(stmts)
                returned = (None, stmts[-1] if stmts else node)
            except _Returned:
                returned = self._captured_returns[-1]
            finally:
                self.under_element_condition, self._captured_returns = outer_masked, outer_returns
            out.append((self.lscope, returned))
        self.lscope = before
        return out

    def _element_select(self, what: str, cond: tensor, t: Any, e: Any, node: ast.AST) -> Any:
        """Each element of `t` where `cond` holds, else of `e` (aggregates
        leaf by leaf; equal constants stay constants)."""
        pairs: list[tuple[Any, Any]] = []
        rebuild = self._pair_leaves(what, t, e, node, pairs)
        merged = []
        for t_leaf, e_leaf in pairs:
            if _same_constant(t_leaf, e_leaf):
                merged.append(t_leaf)
                continue
            if not all(_is_runtime(v) or isinstance(v, (int, float)) for v in (t_leaf, e_leaf)):
                raise self.error(f"{what} is {_describe(t_leaf)} in one branch and {_describe(e_leaf)} in the other "
                                 f"of an if on element values; both must be numbers", node)
            if _is_runtime(t_leaf) and _is_runtime(e_leaf) and t_leaf.dtype != e_leaf.dtype:
                raise self.error(f"Mismatched type for {what} between the then-branch ({t_leaf.dtype}) and the "
                                 f"else-branch ({e_leaf.dtype}) of the if at line {self.position(node)[0]}; both "
                                 f"branches must give it the same type", node)
            merged.append(self._run(node, lambda a=t_leaf, c=e_leaf: semantic.where(cond, a, c, self.builder)))
        return rebuild(iter(merged))

    def _element_if(self, node: ast.If, cond: tensor) -> None:
        """An if on element values (element-wise mode): both branches run,
        and each variable they assign takes, element by element, the value
        of the branch that element's condition chose."""
        before = dict(self.lscope)
        (then_scope, _), (else_scope, _) = self._element_branches(node, capture=False)
        names = [n for n in dict.fromkeys(list(then_scope) + list(else_scope))
                 if then_scope.get(n, _MISSING) is not before.get(n, _MISSING)
                 or else_scope.get(n, _MISSING) is not before.get(n, _MISSING)]
        after = dict(before)
        for name in names:
            t, e = then_scope.get(name, _MISSING), else_scope.get(name, _MISSING)
            if t is _MISSING or e is _MISSING or isinstance(t, _OneBranchOnly) or isinstance(e, _OneBranchOnly):
                after[name] = _OneBranchOnly(self.position(node)[0])
                continue
            try:
                after[name] = self._element_select(f"'{name}'", cond, _unwrap(t), _unwrap(e), node)
            except CompilationError as err:
                if name in before:
                    raise
                after[name] = _OneBranchOnly(self.position(node)[0], err.message)
        self.lscope = after

    def _element_returning_if(self, node: ast.If, cond: tensor) -> None:
        """An if on element values whose branches both end the function:
        each element returns what its branch returns. Raises _Returned."""
        (_, (t, t_node)), (_, (e, e_node)) = self._element_branches(node, capture=True)
        if (t is None) != (e is None):
            raise self.error("one branch of this if returns a value and the other does not (or falls off the end "
                             "of the function); both must return values of the same types", node)
        value = None if t is None else self._element_select("the return value", cond, t, e, e_node)
        if self._captured_returns is not None:
            self._captured_returns.append((value, node))
            raise _Returned()
        self._emit_return(value, node)

    def _returning_if(self, node: ast.If, cond: tensor) -> None:
        """An if whose branches both end the function (visit_stmts moved the
        statements after it into them): an scf.if yielding each branch's
        return value, then one return of the if's results. Raises _Returned."""
        outer = self._captured_returns
        if_op = self.builder.create_if(cond.handle, [], True)
        ip = self.builder.get_insertion_point()
        before = dict(self.lscope)
        returned = []
        for stmts, block in ((node.body, if_op.then_block), (node.orelse, if_op.else_block)):
            self.lscope = dict(before)
            self.builder.set_insertion_point_to_end(block)
            self._captured_returns = []
            try:
                self.visit_stmts(stmts)
                returned.append((None, stmts[-1] if stmts else node))  # fell off the end
            except _Returned:
                returned.append(self._captured_returns[-1])
            finally:
                self._captured_returns = outer
        (t, t_node), (e, e_node) = returned
        if (t is None) != (e is None):
            raise self.error("one branch of this if returns a value and the other does not (or falls off the end "
                             "of the function); both must return values of the same types", node)
        pairs: list[tuple[Any, Any]] = []
        rebuild = self._pair_leaves("the return value", t, e, node, pairs)
        slots: list[tuple[bool, Any]] = []
        results: list[tuple[tensor, tensor]] = []
        for index, (t_leaf, e_leaf) in enumerate(pairs):
            if _same_constant(t_leaf, e_leaf):
                slots.append((False, t_leaf))
                continue
            slots.append((True, len(results)))
            what = "the return value" if len(pairs) == 1 else f"leaf {index} of the return value"
            results.append(self._branch_values(what, t_leaf, e_leaf, if_op, node, returns=(t_node, e_node)))
        values = self._if_results(if_op, ip, results)
        self.lscope = before
        value = rebuild(iter([values[v] if is_result else v for is_result, v in slots])) if t is not None else None
        if outer is not None:
            outer.append((value, node))
            raise _Returned()
        self._emit_return(value, node)

    def _branch_values(self, name: str, t: Any, e: Any, if_op: Any, node: ast.If,
                       returns: Optional[tuple[ast.AST, ast.AST]] = None) -> tuple[tensor, tensor]:
        """Both branches' values of `name` as tensors of one type (constants
        are materialized inside their branch). For the values two branches
        return, `returns` holds their return statements: a type mismatch is
        reported at the else-branch's."""
        values = []
        for v, block, other in ((t, if_op.then_block, e), (e, if_op.else_block, t)):
            if _is_runtime(v):
                values.append(v)
                continue
            self.builder.set_insertion_point_to_end(block)
            if not isinstance(other, tensor) and isinstance(v, (int, float)) and isinstance(other, (int, float)):
                # Two constants: both take the type Triton gives their sum.
                ty = semantic.computation_type(semantic._literal_dtype(v), semantic._literal_dtype(other))
                values.append(self._run(node, lambda: semantic.constant(v, ty, self.builder)))
            elif isinstance(other, tensor):
                values.append(self._run(node, lambda: semantic.cast(
                    semantic._literal_like(v, other, self.builder), other.dtype, self.builder)))
            else:
                values.append(self._run(node, lambda: semantic.to_tensor(v, self.builder)))
        t_val, e_val = values
        if t_val.type != e_val.type and returns is not None:
            raise self.error(f"Inconsistent return types: {name} is {e_val.type} here but {t_val.type} where the "
                             f"then-branch of the if at line {self.position(node)[0]} returns (line "
                             f"{self.position(returns[0])[0]}); both must return the same types", returns[1])
        if t_val.type != e_val.type:
            raise self.error(f"Mismatched type for {name} between the then-branch ({t_val.type}) and the "
                             f"else-branch ({e_val.type}) of the if at line {self.position(node)[0]}; both "
                             f"branches must give it the same type", node)
        return t_val, e_val

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = _unwrap(self.visit(node.test))
        if not _is_runtime(cond):
            return self.visit(node.body if cond else node.orelse)
        if cond.numel > 1:
            # A block condition chooses element-wise, as kl.where does (both
            # sides are evaluated).
            then_value, else_value = _unwrap(self.visit(node.body)), _unwrap(self.visit(node.orelse))
            try:
                return self._run(node, lambda: semantic.where(cond, then_value, else_value, self.builder))
            except CompilationError as e:
                cause = e.__cause__ if isinstance(e.__cause__, CompilationError) else None
                if cause is None or cause.filename is not None:
                    raise
                raise self._ternary_mismatch(then_value, else_value, cause.message, node) from cause
        # A scalar condition evaluates one side only, as an if statement
        # does: `tl.store(...) if c else tl.store(...)` stores once.
        cond = self._scalar_condition(cond, node.test, "a conditional expression's")
        cond = self._run(node.test, lambda: semantic.to_bool(cond, self.builder))
        if_op = self.builder.create_if(cond.handle, [], True)
        ip = self.builder.get_insertion_point()
        sides = []
        for expr, block in ((node.body, if_op.then_block), (node.orelse, if_op.else_block)):
            self.builder.set_insertion_point_to_end(block)
            self.region_depth += 1
            try:
                sides.append(_unwrap(self.visit(expr)))
            finally:
                self.region_depth -= 1
        then_value, else_value = sides
        try:
            pairs: list[tuple[Any, Any]] = []
            rebuild = self._pair_leaves("the conditional expression", then_value, else_value, node, pairs)
            slots: list[tuple[bool, Any]] = []
            results: list[tuple[tensor, tensor]] = []
            for t_leaf, e_leaf in pairs:
                if _same_constant(t_leaf, e_leaf):
                    slots.append((False, t_leaf))  # the same constant either way (None for void calls)
                    continue
                slots.append((True, len(results)))
                results.append(self._ternary_values(t_leaf, e_leaf, if_op, node))
        except CompilationError as e:
            self.builder.restore_insertion_point(ip)
            if e.filename is not None and "Ternary expression" in e.message:
                raise
            raise self._ternary_mismatch(then_value, else_value, e.message, node) from e
        values = self._if_results(if_op, ip, results)
        return rebuild(iter([values[v] if is_result else v for is_result, v in slots]))

    def _ternary_values(self, t: Any, e: Any, if_op: Any, node: ast.IfExp) -> tuple[tensor, tensor]:
        """The two sides of a conditional expression with a runtime scalar
        condition as values of one type, each converted in its own branch:
        the type kl.where gives them (promoted and broadcast), constants
        taking the other side's type as in an if statement."""
        if t is None or e is None or not all(_is_runtime(v) or isinstance(v, (int, float)) for v in (t, e)):
            reason = CompilationError("both sides must be values")
            raise self._ternary_mismatch(t, e, reason.message, node) from reason
        values = []
        for v, block, other in ((t, if_op.then_block, e), (e, if_op.else_block, t)):
            if _is_runtime(v):
                values.append(v)
                continue
            self.builder.set_insertion_point_to_end(block)
            if isinstance(other, tensor):
                values.append(self._run(node, lambda: semantic.cast(
                    semantic._literal_like(v, other, self.builder), other.dtype, self.builder)))
            else:
                ty = semantic.computation_type(semantic._literal_dtype(v), semantic._literal_dtype(other))
                values.append(self._run(node, lambda: semantic.constant(v, ty, self.builder)))
        t, e = values
        if t.type == e.type:
            return t, e
        if t.dtype.is_ptr() or e.dtype.is_ptr():
            if t.dtype != e.dtype:
                reason = CompilationError("pointers of different types")
                raise self._ternary_mismatch(t, e, reason.message, node) from reason
            ty = t.dtype
        else:
            ty = self._run(node, lambda: semantic.computation_type(t.dtype, e.dtype))
        shape = self._run(node, lambda: semantic.broadcast_shapes(t.shape, e.shape))
        converted = []
        for value, block in ((t, if_op.then_block), (e, if_op.else_block)):
            self.builder.set_insertion_point_to_end(block)

            def convert(v: tensor = value) -> tensor:
                v = semantic.cast(v, ty, self.builder) if v.dtype != ty else v
                return semantic.broadcast_to(v, shape, self.builder) if shape and v.shape != shape else v
            converted.append(self._run(node, convert))
        return converted[0], converted[1]

    def _ternary_mismatch(self, then_value: Any, else_value: Any, reason: str, node: ast.AST) -> CompilationError:
        # Triton's words for the two sides not combining into one value.
        return self.error(f"Ternary expression with dynamic condition has inconsistent types: "
                          f"{_describe(then_value)} and {_describe(else_value)}: {reason}", node)

    # -- loops -----------------------------------------------------------------------

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error("'for ... else' is not supported in kiln kernels", node)
        iterator = node.iter
        kind = None
        if isinstance(iterator, ast.Call):
            func = self.visit(iterator.func)
            if func is builtins.range or func is core.range:
                kind = "runtime"
            elif func is core.static_range:
                kind = "static"
        if kind is None:
            raise self.error("kiln for loops iterate over range(...), kl.range(...) or kl.static_range(...)",
                             iterator)
        args = [_unwrap(self.visit(a)) for a in iterator.args]
        kwargs = {k.arg: _unwrap(self.visit(k.value)) for k in iterator.keywords}
        try:
            bounds = core.range(*args, **kwargs)
        except TypeError as e:
            raise self.error(f"bad arguments to range: {e}", iterator) from e
        if kind == "static":
            self._static_for(node, bounds)
        else:
            self._runtime_for(node, bounds)

    def _static_for(self, node: ast.For, bounds: core.range) -> None:
        values = []
        for what, v in (("start", bounds.start), ("end", bounds.end), ("step", bounds.step)):
            if _is_runtime(v) or isinstance(v, bool) or not isinstance(v, int):
                raise self.error(f"kl.static_range {what} must be a constant integer (kl.constexpr), got "
                                 f"{'a runtime value' if _is_runtime(v) else repr(v)}", node.iter)
            values.append(v)
        if values[2] == 0:
            raise self.error("kl.static_range step must not be zero", node.iter)
        for i in builtins.range(*values):
            self._assign(node.target, i)
            self.visit_stmts(node.body)

    def _runtime_for(self, node: ast.For, bounds: core.range) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error("the target of a runtime for loop must be a single name", node.target)
        step = bounds.step
        if not _is_runtime(step) and (isinstance(step, bool) or not isinstance(step, int) or step == 0):
            raise self.error(f"the step of a runtime for loop must be a nonzero constant or a runtime integer, "
                             f"got {step!r}", node.iter)
        # A constant negative step counts down: the loop runs j from `end` up
        # to `start` by -step and the body sees i = start + end - j, which
        # takes start, start + step, ... while i > end (as Python's range).
        descending = not _is_runtime(step) and step < 0
        start, end = (bounds.end, bounds.start) if descending else (bounds.start, bounds.end)
        lb, ub, st = self._run(node.iter, lambda: self._loop_bounds([start, end, -step if descending else step]))

        carried = self._carried(node, node.body, exclude={node.target.id})
        inits = [leaf for _, value in carried for leaf in _leaves(value)]
        for_op = self.builder.create_for(lb.handle, ub.handle, st.handle, [t.handle for t in inits])
        num_stages = getattr(bounds, "num_stages", None)
        if num_stages is not None:
            num_stages = _unwrap(num_stages)
            if isinstance(num_stages, bool) or not isinstance(num_stages, int) or num_stages < 1:
                raise self.error(f"num_stages must be a constexpr integer of at least 1, got {num_stages!r}",
                                 node.iter)
            for_op.set_num_stages(num_stages)
        ip = self.builder.get_insertion_point()
        before = dict(self.lscope)
        self.builder.set_insertion_point_to_end(for_op.body)
        induction = tensor(for_op.induction_var, lb.type)
        if descending:
            induction = self._run(node.iter, lambda: semantic.add(semantic.sub(ub, induction, self.builder), lb,
                                                                  self.builder))
        self.lscope[node.target.id] = induction
        args = iter(for_op.iter_args)
        for name, init in carried:
            self.lscope[name] = _rebuild(init, args)
        self.region_depth += 1
        try:
            self.visit_stmts(node.body)
        finally:
            self.region_depth -= 1
        yields = self._loop_yields(carried, node)
        self.builder.create_yield([y.handle for y in yields])
        self.builder.restore_insertion_point(ip)
        self.lscope = before
        results = iter(for_op.results)
        for name, init in carried:
            self.lscope[name] = _rebuild(init, results)

    def _loop_bounds(self, values: list[Any]) -> list[tensor]:
        tensors = [semantic.to_tensor(v, self.builder) for v in values]
        for t in tensors:
            if t.shape or not t.dtype.is_int():
                raise CompilationError(f"loop bounds must be scalar integers, got {t.type}")
        ty = core.int64 if any(t.dtype.int_bitwidth == 64 for t in tensors) else core.int32
        return [semantic.cast(t, ty, self.builder) for t in tensors]

    def _carried(self, node: ast.stmt, body: Sequence[ast.stmt], exclude: set[str]) -> list[tuple[str, Any]]:
        """Variables a loop body assigns that exist before the loop, with
        their initial values as tensors (or aggregates of tensors)."""
        carried = []
        for name in _assigned_names(body):
            if name in exclude or name not in self.lscope:
                continue
            value = self.lscope[name]
            if isinstance(value, _OneBranchOnly):
                continue
            if _is_aggregate(value):
                carried.append((name, self._materialize(value, node)))
                continue
            if not _is_runtime(value):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise self.error(f"'{name}' holds the compile-time value {value!r} and cannot be reassigned "
                                     f"inside a runtime loop", node)
                value = self._run(node, lambda v=value: semantic.to_tensor(v, self.builder))
            carried.append((name, value))
        return carried

    def _loop_yields(self, carried: list[tuple[str, Any]], node: ast.stmt) -> list[tensor]:
        yields = []
        for name, init in carried:
            value = _unwrap(self.lscope.get(name, init))
            if _is_aggregate(init):
                yields.extend(self._aggregate_yields(name, init, value, node))
                continue
            if isinstance(value, _OneBranchOnly):
                raise self.error(f"loop-carried variable '{name}' is assigned in only one branch of an if", node)
            if not _is_runtime(value):
                value = self._run(node, lambda v=value: semantic.cast(
                    semantic._literal_like(v, init, self.builder), init.dtype, self.builder))
            if value.type != init.type:
                raise self.error(f"loop-carried variable '{name}' has type {init.type} before the loop but "
                                 f"{value.type} at the end of the body; its type must not change", node)
            yields.append(value)
        return yields

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error("'while ... else' is not supported in kiln kernels", node)
        carried = self._carried(node, node.body, exclude=set())
        while_op = self.builder.create_while([leaf.handle for _, value in carried for leaf in _leaves(value)])
        ip = self.builder.get_insertion_point()
        before = dict(self.lscope)

        def bind(block: Any) -> None:
            self.lscope = dict(before)
            args = iter(block.args)
            for name, init in carried:
                self.lscope[name] = _rebuild(init, args)

        self.region_depth += 1
        try:
            bind(while_op.before)
            self.builder.set_insertion_point_to_end(while_op.before)
            cond = _unwrap(self.visit(node.test))
            if isinstance(cond, core.condition):
                # kl.condition(cond, disable_licm=...): the hint is checked
                # and the loop runs on `cond` (see kl.condition).
                self._check_condition_hints(cond, node.test)
                cond = _unwrap(cond.condition)
            if _is_runtime(cond) and cond.shape and cond.numel == 1:
                cond = self._scalar_condition(cond, node.test, "a while")
            cond = self._run(node.test, lambda: semantic.to_bool(cond, self.builder))
            if cond.shape:
                raise self.error(f"a while condition must be a scalar, got a block of shape {cond.shape}"
                                 + ("; a while loop on element values is not supported in kl.map_elementwise's "
                                    "function" if self.elementwise else ""), node.test)
            self.builder.create_condition(cond.handle, list(while_op.before.args))
            bind(while_op.after)
            self.builder.set_insertion_point_to_end(while_op.after)
            self.visit_stmts(node.body)
            yields = self._loop_yields(carried, node)
            self.builder.create_yield([y.handle for y in yields])
        finally:
            self.region_depth -= 1
        self.builder.restore_insertion_point(ip)
        self.lscope = before
        results = iter(while_op.results)
        for name, init in carried:
            self.lscope[name] = _rebuild(init, results)

    def _check_condition_hints(self, cond: core.condition, node: ast.AST) -> None:
        disable_licm = _unwrap(cond.disable_licm)
        if not isinstance(disable_licm, bool):
            raise self.error(f"kl.condition's disable_licm must be a constexpr bool, got {disable_licm!r}", node)

    # -- expressions -----------------------------------------------------------------

    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def visit_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(_unwrap(self.visit(e)) for e in node.elts)

    def visit_ListComp(self, node: ast.ListComp) -> tuple:
        """``[f(v) for v in values]`` over a tuple, as Triton's: unrolled
        while compiling, giving a tuple (its elements may be runtime
        values, which a list cannot hold)."""
        comp = node.generators[0]
        if len(node.generators) != 1 or comp.ifs or comp.is_async or not isinstance(comp.target, ast.Name):
            raise self.error("only list comprehensions of the form [expr for name in a_tuple] are supported in "
                             "kiln kernels", node)
        values = _unwrap(self.visit(comp.iter))
        if not isinstance(values, tuple):
            raise self.error(f"a list comprehension in a kiln kernel iterates over a tuple, got "
                             f"{type(values).__name__}", comp.iter)
        name = comp.target.id
        missing = object()
        saved = self.lscope.get(name, missing)
        results = []
        try:
            for value in values:
                self.lscope[name] = value
                results.append(_unwrap(self.visit(node.elt)))
        finally:
            # The loop variable is the comprehension's own, as in Python.
            if saved is missing:
                self.lscope.pop(name, None)
            else:
                self.lscope[name] = saved
        return tuple(results)

    def visit_List(self, node: ast.List) -> list:
        # Lists of constants are shapes (kl.zeros([M, N], ...)); lists of
        # runtime values have no IR equivalent.
        values = [_unwrap(self.visit(e)) for e in node.elts]
        if any(_is_runtime(v) for v in values):
            raise self.error("list literals of runtime values are not supported in kiln kernels; "
                             "only lists of constants (such as shapes) are", node)
        return values

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        base = _unwrap(self.visit(node.value))
        if node.attr == "T" and isinstance(base, tensor):
            # The transpose, as in Triton: a permutation (1, 0) of a 2-D block.
            from kiln.language import shapes
            return self._run(node, lambda: shapes.permute_impl(base, [1, 0], self.builder))
        if node.attr == "shape" and isinstance(base, tensor):
            # A tuple, as Triton's tensor.shape (x.shape == (M, N) holds).
            return tuple(base.shape)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            if node.attr == "type" and (base is None or isinstance(base, (bool, int, float, str))
                                        or (type(base) is tuple and not any(_is_runtime(v) for v in _leaves_of(base)))):
                # A compile-time value's type, as a Triton constexpr's.
                return core.constexpr_type(base)
            if isinstance(base, (bool, int, float)):
                # Triton makes a scalar assigned in a kernel (``acc = 0``) a
                # scalar tensor of its literal type, so ``acc.to(...)`` and
                # ``acc.dtype`` work; Kiln keeps the Python number (it folds
                # and stays usable where a constant is needed) and gives it
                # the tensor's attributes when Python's have none.
                scalar = self._run(node, lambda: semantic.to_tensor(base, self.builder))
                if hasattr(scalar, node.attr):
                    return getattr(scalar, node.attr)
            what = f"module '{base.__name__}'" if isinstance(base, ModuleType) else f"'{type(base).__name__}'"
            raise self.error(f"{what} has no attribute '{node.attr}'", node) from None

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        return self._binary(type(node.op), self.visit(node.left), self.visit(node.right), node)

    def _binary(self, op: type, lhs: Any, rhs: Any, node: ast.AST) -> Any:
        if op not in _BINARY_OPS:
            raise self.error(f"the operator {op.__name__} is not supported in kiln kernels", node)
        name, python_op = _BINARY_OPS[op]
        lhs, rhs = _unwrap(lhs), _unwrap(rhs)
        if not _is_runtime(lhs) and not _is_runtime(rhs):
            return python_op(lhs, rhs)
        if op is ast.Pow:
            if _is_runtime(rhs) or not _is_runtime(lhs):
                raise self.error("** needs a runtime base and a non-negative constant (kl.constexpr) integer "
                                 "exponent; use kl.exp and kl.log for other powers", node)
            return self._run(node, lambda: semantic.power(lhs, rhs, self.builder))
        if self.under_element_condition and op in (ast.FloorDiv, ast.Mod) and isinstance(rhs, tensor) \
                and rhs.dtype.scalar.is_int():
            # Both branches of an if on element values run for every
            # element; an integer division by zero, even in elements whose
            # branch is not taken, would let the compiler assume the divisor
            # is never zero and drop the choice between the branches. Those
            # elements divide by 1 instead (their results are discarded).
            rhs = self._run(node, lambda: semantic.where(semantic.equal(rhs, 0, self.builder),
                                                         semantic.to_tensor(1, self.builder), rhs, self.builder))
        return self._run(node, lambda: getattr(semantic, name)(lhs, rhs, self.builder))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = _unwrap(self.visit(node.operand))
        op = type(node.op)
        if _is_aggregate(operand):
            # As in Triton, a tuple has no truth value or arithmetic in a
            # kernel; `not t` is far more often a mistake than a test for ().
            raise self.error(f"the unary operator {_UNARY_SPELLINGS[op]} cannot be applied to "
                             f"{_describe(operand)}", node)
        if not _is_runtime(operand):
            return {ast.USub: lambda v: -v, ast.UAdd: lambda v: +v, ast.Not: lambda v: not v,
                    ast.Invert: lambda v: ~v}[op](operand)
        impl = {ast.USub: semantic.minus, ast.UAdd: lambda v, b: v, ast.Not: semantic.logical_not,
                ast.Invert: semantic.invert}[op]
        return self._run(node, lambda: impl(operand, self.builder))

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = _unwrap(self.visit(node.left))
        result: Any = None
        for op, comparator in zip(node.ops, node.comparators):
            right = _unwrap(self.visit(comparator))
            value = self._compare(type(op), left, right, node)
            if result is None:
                result = value
            else:
                result = self._logical("and", result, value, node)
            left = right
        return result

    def _compare(self, op: type, lhs: Any, rhs: Any, node: ast.AST) -> Any:
        if op in (ast.Is, ast.IsNot):
            same = lhs is rhs
            return same if op is ast.Is else not same
        if op not in _COMPARE_OPS:
            raise self.error(f"the comparison {op.__name__} is not supported in kiln kernels", node)
        name, python_op = _COMPARE_OPS[op]
        if not _is_runtime(lhs) and not _is_runtime(rhs):
            if op in (ast.Eq, ast.NotEq) and isinstance(lhs, (list, tuple)) and isinstance(rhs, (list, tuple)):
                # As Triton's tuples: equal to a list of the same elements
                # (``x.shape == [16, 32]``).
                lhs, rhs = tuple(lhs), tuple(rhs)
            return python_op(lhs, rhs)
        return self._run(node, lambda: getattr(semantic, name)(lhs, rhs, self.builder))

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        kind = "and" if isinstance(node.op, ast.And) else "or"
        result = _unwrap(self.visit(node.values[0]))
        for value_node in node.values[1:]:
            if not _is_runtime(result):
                # Python's short circuit on a constant left side.
                if (kind == "and" and not result) or (kind == "or" and result):
                    return result
                result = _unwrap(self.visit(value_node))
                continue
            result = self._logical(kind, result, _unwrap(self.visit(value_node)), node)
        return result

    def _logical(self, kind: str, lhs: Any, rhs: Any, node: ast.AST) -> Any:
        if not _is_runtime(lhs) and not _is_runtime(rhs):
            return (lhs and rhs) if kind == "and" else (lhs or rhs)
        impl = semantic.logical_and if kind == "and" else semantic.logical_or
        return self._run(node, lambda: impl(lhs, rhs, self.builder))

    def visit_Slice(self, node: ast.Slice) -> core.slice:
        """``lower:upper:step`` in a subscript: a kl.slice of compile-time
        bounds (a tuple's subscript takes it as Python's slice)."""
        bounds = []
        for part in (node.lower, node.upper, node.step):
            value = None if part is None else _unwrap(self.visit(part))
            if _is_runtime(value):
                raise self.error("slice bounds must be compile-time values (kl.constexpr), got a runtime value",
                                 part)
            bounds.append(value)
        return core.slice(*bounds)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = _unwrap(self.visit(node.value))
        index_node = node.slice
        if not _is_runtime(base):
            index = _unwrap(self.visit(index_node))
            if isinstance(index, core.slice):
                index = index.to_python()
            return base[index]
        items = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
        # Only `None` (a new axis) and `:` (a whole axis) index a block.
        result = base
        axis = 0
        for item in items:
            if isinstance(item, ast.Slice):
                # `None:`, `:None` and `::None` are ':' too, as in Python.
                bounds = [_unwrap(self.visit(part)) for part in (item.lower, item.upper, item.step)
                          if part is not None]
                if any(bound is not None for bound in bounds):
                    raise self.error(f"unsupported tensor index: {ast.unparse(item)}: blocks cannot be sliced; only "
                                     f"':' (a whole axis) and None (a new axis) index a block", item)
                axis += 1
                continue
            index = _unwrap(self.visit(item))
            if isinstance(index, core.slice):
                if (index.start, index.stop, index.step) != (None, None, None):
                    raise self.error(f"unsupported tensor index: {index!r}: blocks cannot be sliced; only "
                                     f"':' (a whole axis) and None (a new axis) index a block", item)
                axis += 1
                continue
            if index is not None:
                raise self.error(f"unsupported tensor index: {_describe(index)}: blocks can only be indexed with None "
                                 f"(a new axis) and ':' (a whole axis)", item)
            result = self._run(node, lambda r=result, a=axis: semantic.expand_dims(r, a, self.builder))
            axis += 1
        # A ':' past the last axis is a no-op, as in Triton: a scalar's
        # `p[None, None, :]` is a 1x1 block.
        return result

    # -- calls -----------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> Any:
        func = _unwrap(self.visit(node.func))
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                # f(*t): the elements of a tuple (as in Triton).
                spread = _unwrap(self.visit(a.value))
                if not isinstance(spread, (tuple, list, language.tuple)):
                    raise self.error(f"only a tuple can be spread into arguments with *, got {_describe(spread)}", a)
                args.extend(_unwrap(v) for v in spread)
                continue
            args.append(self._call_argument(a))
        kwargs: dict[str, Any] = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.error("**kwargs arguments are not supported in kiln kernels", k)
            kwargs[k.arg] = self._call_argument(k.value)
        if is_kernel_source(func):
            if node is self._dropped_call and unused_result_message(func):
                raise self.error(unused_result_message(func), node)
            return self._call_jit(func, args, kwargs, node)
        if self.under_element_condition and (func in _memory_and_debug_builtins() or func is builtins.print):
            name = getattr(func, "__name__", "print")
            raise self.error(f"{name} cannot run under an if on element values in kl.map_elementwise's function: "
                             f"the function runs on whole blocks there, so it would act for every element", node)
        if core.is_builtin(func):
            core.check_kernel_keywords(func, kwargs)
            if core.wants_generator(func):
                # Builtins that call jit functions (combine functions of
                # reductions and scans) call them through this generator.
                kwargs["_generator"] = self
                self._call_node = node
            result = self._run(node, lambda: _unwrap(func(*args, **kwargs, _builder=self.builder)))
            if func in _VALUE_HINTS and args:
                self._hint_names(_unwrap(args[0]), result)
            return result
        if func is builtins.range or func is core.range or func is core.static_range:
            raise self.error("range objects can only be used as the iterator of a for loop", node)
        if func is builtins.print:
            # As in Triton, print in a kernel is kl.device_print: a string
            # prefix, then the values, printed at run time.
            core.check_kernel_keywords(debugging.device_print, kwargs)
            return self._run(node, lambda: debugging.device_print(*args, **kwargs, _builder=self.builder))
        if is_constexpr_function(func):
            return self._call_constexpr_function(func, args, kwargs, node)
        if inspect.ismethod(func) and isinstance(func.__self__, dtype):
            # dtype predicates and helpers (x.dtype.is_int(), ...) run now.
            return self._call_constexpr_function(func, args, kwargs, node)
        if isinstance(func, type) and issubclass(func, constexpr):
            return func(*args, **kwargs).value
        if func is core.constexpr_type:
            if any(_is_runtime(v) for v in _leaves_of(args)):
                raise self.error("kl.constexpr_type takes a compile-time value", node)
            return core.constexpr_type(*args, **kwargs)
        if isinstance(func, type) and issubclass(func, dtype):
            return func(*args, **kwargs)  # kl.pointer_type(kl.int8), kl.block_type(...)
        if func is core.condition:
            # A while loop's test (see visit_While); it holds a runtime value.
            return self._run(node, lambda: core.condition(*args, **kwargs))
        if func is core.slice:
            if any(_is_runtime(v) for v in list(args) + list(kwargs.values())):
                raise self.error("kl.slice bounds must be compile-time values (kl.constexpr)", node)
            return self._run(node, lambda: core.slice(*args, **kwargs))
        if is_named_tuple_class(func):
            # Building a named tuple (a NamedTuple class called in a kernel,
            # as Triton allows): it only groups its fields' values.
            return self._run(node, lambda: func(*args, **kwargs))
        if func is language.tuple:
            # Its elements may be runtime values: it only groups them.
            if kwargs or len(args) > 1:
                raise self.error("kl.tuple takes one iterable, e.g. kl.tuple([a, b])", node)
            return self._run(node, lambda: language.tuple(*args))
        if func in (builtins.min, builtins.max, builtins.len, builtins.int, builtins.float, builtins.bool,
                    builtins.abs, builtins.isinstance, builtins.getattr, builtins.hasattr, builtins.tuple,
                    builtins.str):
            if (func in (builtins.isinstance, builtins.hasattr, builtins.getattr) and not kwargs and args
                    and not any(_is_runtime(v) for v in args[1:])):
                # They look at the value's Python object (its type, .dtype,
                # .shape), which is known while compiling, as in Triton.
                return self._run(node, lambda: func(*args))
            if any(_is_runtime(v) for v in list(args) + list(kwargs.values())):
                # As in Triton, min/max of two or more values and abs of one
                # also take runtime values (element-wise, NaN-ignoring).
                elementwise = {builtins.min: language.minimum, builtins.max: language.maximum}
                if func in elementwise and len(args) >= 2 and not kwargs:
                    result = args[0]
                    for arg in args[1:]:
                        result = self._run(node, lambda r=result, a=arg: _unwrap(
                            elementwise[func](r, a, _builder=self.builder)))
                    return result
                if func is builtins.abs and len(args) == 1 and not kwargs:
                    return self._run(node, lambda: _unwrap(language.abs(args[0], _builder=self.builder)))
                hint = {"min": "kl.minimum", "max": "kl.maximum", "abs": "kl.abs"}.get(func.__name__)
                raise self.error(f"{func.__name__}() only works on compile-time values here"
                                 + (f"; use {hint} for runtime values" if hint else ""), node)
            return func(*args, **kwargs)
        name = getattr(func, "__name__", type(func).__name__)
        raise self.error(f"'{name}' is not a @kiln.jit function or a kiln builtin and cannot be called from a "
                         f"kernel; decorate it with @kiln.jit", node)

    def _hint_names(self, value: Any, hinted: Any) -> None:
        """After `hinted = kl.multiple_of(value, ...)` (or another value
        hint), the names bound to `value` name `hinted`: in Triton a hint
        marks the value itself, so `tl.multiple_of(offsets, 16)` written as
        a statement still informs the loads through `offsets`. Only outside
        runtime branches and loops, where a new binding needs no merging."""
        if self.region_depth or not isinstance(value, tensor) or not isinstance(hinted, tensor):
            return
        for name, bound in list(self.lscope.items()):
            if bound is value:
                self.lscope[name] = hinted

    def _call_argument(self, node: ast.expr) -> Any:
        """A call argument's value. A list literal written as an argument may
        hold runtime values (``desc.load([off_m, off_n])``,
        ``shape=[M, N]``), as in Triton: the callee takes it apart."""
        if isinstance(node, ast.List):
            return [_unwrap(self.visit(e)) for e in node.elts]
        return _unwrap(self.visit(node))

    def _call_jit(self, callee: KernelSource, args: list[Any], kwargs: dict[str, Any], node: ast.Call,
                  elementwise: bool = False) -> Any:
        try:
            bound = inspect.signature(callee.fn).bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(f"bad arguments to {callee.__name__}: {e}", node) from e
        bound.apply_defaults()
        constexpr_names = set(callee.constexpr_names)
        values: dict[str, Any] = {}
        for param, value in bound.arguments.items():
            value = _unwrap(value)
            if param in constexpr_names:
                # A called function's kl.constexpr annotation asks for no
                # conversion; a runtime value passed there stays a runtime
                # parameter, as in Triton (its tutorial 06 passes a block of
                # offsets to an `offs_m: tl.constexpr` parameter).
                values[param] = value
                continue
            if isinstance(value, list):
                # A list written as an argument (`shape=[n, HEAD_DIM]`) crosses
                # as a tuple: its runtime elements become arguments and its
                # compile-time ones specialize the callee, so two calls with
                # different block shapes get different functions.
                values[param] = tuple(value)
                continue
            # A Python number (a literal or a constexpr of the caller) stays
            # a compile-time value, as in Triton: the callee is specialized
            # on it, so `if flag:` on it is resolved at compile time.
            if _is_aggregate(value):
                value = self._materialize(value, node)
            values[param] = value
        elementwise = elementwise or self.elementwise
        if getattr(callee, "noinline", False) and not elementwise:
            # As in Triton: a noinline function is a real call, whose
            # arguments are scalars (blocks would need their layout agreed
            # across the call). In kl.map_elementwise's function, blocks
            # stand for scalars.
            for param, value in values.items():
                for leaf in _leaves(value) if _is_aggregate(value) else [value]:
                    if isinstance(leaf, tensor) and leaf.shape:
                        raise self.error(f"Function {callee.__name__} is marked noinline, but was called with "
                                         f"non-scalar argument {param}:{leaf.type}", node)
        masked = elementwise and self.under_element_condition
        # Element-wise compilations of a function are other functions.
        name = self._mangle(callee, values, "__ewm" if masked else "__ew" if elementwise else "")
        if name in self.functions and self.functions[name] is None:
            raise self.error(f"recursive call of {callee.__name__} with the same argument types and constexprs "
                             f"is not supported: it would never end", node)
        if name not in self.functions:
            self.functions[name] = None
            ip = self.builder.get_insertion_point()
            loc = self.builder.get_loc()
            try:
                helper = CodeGenerator(callee, self.module, self.builder, self.functions)
                helper.call_chain = self.call_chain + (callee.__name__,)
                helper.elementwise = elementwise
                helper.under_element_condition = masked
                self.functions[name] = helper.generate_helper(name, values) + (getattr(helper, "result_template",
                                                                                       None),)
            except RecursionError:
                del self.functions[name]
                # Building the error needs stack too: when this level has
                # too little left, the RecursionError of doing so reaches the
                # caller's call, which reports it instead.
                raise self._nested_too_deeply(callee, node) from None
            except CompilationError as e:
                del self.functions[name]
                # Reported at this call too, as Triton does: the error in the
                # helper is the cause, so the traceback shows both places.
                error, inner = self._call_failed(callee, e, node)
                raise error from inner
            except BaseException:
                del self.functions[name]
                raise
            finally:
                self.builder.restore_insertion_point(ip)
                if loc is not None:
                    self.builder.set_loc(*loc)
        function, result_types, template = self.functions[name]
        runtime_args = [leaf.handle for v in values.values() for leaf in _leaves(v)]
        results = self._run(node, lambda: self.builder.create_call(function, runtime_args))
        return _rebuild(template, iter(results))

    def _call_failed(self, callee: KernelSource, e: CompilationError,
                     node: ast.AST) -> tuple[CompilationError, CompilationError]:
        """The error at a call of `callee` whose compilation failed with `e`,
        and the error to chain it to. The error is of `e`'s class, with the
        message of the innermost error (where the mistake is) after the name
        and place of the function it is in. The chain is that innermost
        error: through nested calls the outermost call (in the kernel) and
        the mistake are what count, and a chain of every call between would
        print a traceback per call."""
        inner = e
        while isinstance(inner.__cause__, CompilationError) and getattr(inner, "_failed_call", False):
            inner = inner.__cause__
        where = f"{inner.filename}:{inner.lineno}" if inner.filename is not None else "unknown location"
        if inner.function is not None and inner.function != callee.__name__:
            where = f"in {inner.function}, {where}"
        error = self.error(f"{callee.__name__} fails to compile ({where}): {inner.message}", node, type(e))
        error._failed_call = True  # type: ignore[attr-defined]
        return error, inner

    def _nested_too_deeply(self, callee: KernelSource, node: ast.AST) -> CompilationError:
        chain = self.call_chain + (callee.__name__,)
        shown = " -> ".join(chain if len(chain) <= 8 else chain[:4] + ("...",) + chain[-3:])
        limit = sys.getrecursionlimit()
        if callee.__name__ in self.call_chain:
            return self.error(f"recursive calls of {callee.__name__} nest too deeply ({len(chain) - 1} jit calls: "
                              f"{shown}): a recursion must reach its base case (through its constexpr arguments) "
                              f"within Python's recursion limit ({limit}); raise it with sys.setrecursionlimit() "
                              f"to recurse deeper", node)
        return self.error(f"compiling this call of {callee.__name__} nests too deeply ({len(chain) - 1} jit calls "
                          f"deep: {shown}) for Python's recursion limit ({limit}); raise it with "
                          f"sys.setrecursionlimit() to nest deeper", node)

    def _call_constexpr_function(self, func: Any, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        """Runs a kiln.constexpr_function on compile-time arguments."""
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", "constexpr_function")
        for value in list(args) + list(kwargs.values()):
            if _is_runtime(value) or (_is_aggregate(value) and _leaves(value)):
                raise self.error(f"constexpr_function '{name}' takes compile-time values only, got a runtime "
                                 f"value", node)
        try:
            result = _unwrap(func(*args, **kwargs))
        except CompilationError:
            raise
        except Exception as e:  # noqa: BLE001 - reported at the call
            raise self.error(f"constexpr_function '{name}' raised {type(e).__name__}: {e}", node) from e
        if _is_runtime(result) or (_is_aggregate(result) and _leaves(result)):
            raise self.error(f"constexpr_function '{name}' returned a runtime value", node)
        return result

    def call_function(self, callee: KernelSource, args: Sequence[Any]) -> Any:
        """Calls the jit function `callee` with `args` at the builder's
        insertion point, for a builtin being compiled (see wants_generator);
        errors are located at that builtin's call."""
        return self._call_jit(callee, list(args), {}, self._call_node)

    def call_elementwise(self, callee: KernelSource, args: Sequence[Any]) -> Any:
        """Calls the jit function `callee` compiled in element-wise mode on
        the blocks `args`, for kl.map_elementwise (see CodeGenerator's
        `elementwise`)."""
        return self._call_jit(callee, list(args), {}, self._call_node, elementwise=True)

    def _mangle(self, callee: KernelSource, values: dict[str, Any], suffix: str = "") -> str:
        parts = []
        for param, value in values.items():
            if isinstance(value, tensor):
                parts.append(core.signature_name(value.type))
            elif _is_aggregate(value):
                parts.append(f"{param}{_aggregate_key(value)}")
            else:
                parts.append(f"{param}{_constexpr_key(value)}")
        base = _SYMBOL_CHARS.sub("_", callee.__name__)
        name = (f"{base}__{'_'.join(parts)}" if parts else base) + suffix
        # Two different functions with one name (from different modules) must
        # not share a symbol.
        owners = self.functions.setdefault(("owners",), {})
        candidate, suffix = name, 1
        while owners.setdefault(name, callee.fn) is not callee.fn:
            suffix += 1
            name = f"{candidate}_{suffix}"
        return name


_MISSING = object()

# Builtins that state facts about their first argument's value.
_VALUE_HINTS = (language.multiple_of, language.max_contiguous, language.max_constancy)

def _memory_and_debug_builtins() -> frozenset:
    """Builtins that touch memory or print: refused under an if on element
    values in element-wise mode (see CodeGenerator.under_element_condition)."""
    from kiln.language import atomics
    return frozenset([core.load, core.store, debugging.device_print, debugging.device_assert] +
                     [getattr(atomics, name) for name in atomics.__all__])

