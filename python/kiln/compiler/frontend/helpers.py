"""Module-level helpers of the frontend: the kernel-source protocol, the
syntax and operator tables, and small functions on compile-time values and
AST nodes."""

from __future__ import annotations

import ast
import re
from typing import Any, Callable, Iterable, Protocol, Sequence, runtime_checkable

from kiln.language import core
from kiln.language.core import constexpr, dtype, tensor



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


#: KernelSource's attributes: what isinstance(value, KernelSource) looks for.
_KERNEL_SOURCE_ATTRIBUTES = tuple(KernelSource.__annotations__)


def is_kernel_source(value: Any) -> bool:
    """True for a ``@kiln.jit`` function (anything satisfying :class:`KernelSource`).

    Checks the attributes itself: isinstance with a runtime-checkable
    protocol collects the protocol's attributes again on every call, which
    made this check most of a warm first call's cache key (it runs for each
    name a kernel reads)."""
    return not isinstance(value, type) and all(hasattr(value, name) for name in _KERNEL_SOURCE_ATTRIBUTES)


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



_MISSING = object()
