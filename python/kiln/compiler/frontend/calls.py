"""The code generator's calls: builtins, ``@kiln.jit`` helpers (private
``func.func``s) and compile-time functions."""

from __future__ import annotations

import ast
import builtins
import inspect
import sys
from typing import Any, Sequence

from kiln.compiler.specialization import is_named_tuple_class
from kiln.errors import CompilationError
from kiln.language import core, debugging
from kiln import language
from kiln.language.compile_time import is_constexpr_function, unused_result_message
from kiln.language.core import constexpr, dtype, tensor

from kiln.compiler.frontend.helpers import (KernelSource, _SYMBOL_CHARS, _unwrap, _is_runtime, is_kernel_source,
                                            _leaves_of, _constexpr_key)
from kiln.compiler.frontend.aggregates import _is_aggregate, _leaves, _rebuild, _describe, _aggregate_key


class CallsMixin:
    """Calls (mixed into CodeGenerator)."""

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
                helper = type(self)(callee, self.module, self.builder, self.functions)
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


# Builtins that state facts about their first argument's value.
_VALUE_HINTS = (language.multiple_of, language.max_contiguous, language.max_constancy)

def _memory_and_debug_builtins() -> frozenset:
    """Builtins that touch memory or print: refused under an if on element
    values in element-wise mode (see CodeGenerator.under_element_condition)."""
    from kiln.language import atomics
    return frozenset([core.load, core.store, debugging.device_print, debugging.device_assert] +
                     [getattr(atomics, name) for name in atomics.__all__])

