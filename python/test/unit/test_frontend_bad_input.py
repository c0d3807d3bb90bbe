"""Bad input the frontend must turn into a CompilationError at the kernel
line, in the user's terms: wrong calls of builtins, blocks over Triton's
element cap, and jit calls nested too deep or recursive."""

from __future__ import annotations

import inspect
import sys
from typing import Any, Callable

import pytest

import kiln.language as kl
from kiln.errors import CompilationError


def error_at(build_ir, kernel, signature: dict, text: str, constexprs: dict | None = None) -> str:
    """The message of the CompilationError compiling ``kernel`` raises,
    checked to point at the kernel line holding ``text``."""
    with pytest.raises(CompilationError) as info:
        build_ir(kernel, signature, constexprs or {})
    err = info.value
    lines, first = inspect.getsourcelines(getattr(kernel, "fn", kernel))
    line = next(first + i for i, s in enumerate(lines) if text in s and i > 0)
    assert (err.filename, err.lineno) == (__file__, line), str(err)
    return err.message


# -- calls of builtins ----------------------------------------------------------------


def test_a_builtin_called_with_too_many_arguments(jit, build_ir):
    @jit
    def kernel(x_ptr):
        x = kl.load(x_ptr)
        kl.store(x_ptr, kl.exp(x, x))

    message = error_at(build_ir, kernel, {"x_ptr": "*fp32"}, "kl.exp(x, x)")
    assert message == "bad arguments to exp(x): too many positional arguments"


def test_a_tensor_method_called_with_an_unknown_keyword(jit, build_ir):
    @jit
    def kernel(x_ptr):
        kl.store(x_ptr, kl.load(x_ptr).to(kl.float16, rounding="rtne"))

    message = error_at(build_ir, kernel, {"x_ptr": "*fp32"}, ".to(kl.float16")
    assert message.startswith("bad arguments to tensor.to(dtype, ")
    assert message.endswith("got an unexpected keyword argument 'rounding'")


def test_a_kernel_cannot_pass_the_hidden_builder(jit, build_ir):
    @jit
    def kernel(x_ptr):
        kl.store(x_ptr, kl.exp(kl.load(x_ptr), _builder=None))

    message = error_at(build_ir, kernel, {"x_ptr": "*fp32"}, "_builder=None")
    assert message == "bad arguments to exp(x): got an unexpected keyword argument '_builder'"


def _builtins() -> list[tuple[str, Callable[..., Any]]]:
    return [(name, getattr(kl, name)) for name in sorted(dir(kl)) if kl.core.is_builtin(getattr(kl, name))]


def _takes(fn: Callable[..., Any], kind: inspect._ParameterKind) -> bool:
    return any(p.kind is kind for p in inspect.signature(fn).parameters.values())


@pytest.mark.parametrize("name,builtin", [(n, f) for n, f in _builtins()
                                          if not _takes(f, inspect.Parameter.VAR_POSITIONAL)],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_every_builtin_reports_too_many_arguments_by_its_name(jit, build_ir, name, builtin):
    def kernel(x_ptr):
        builtin(x_ptr, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)

    message = error_at(build_ir, jit(kernel), {"x_ptr": "*fp32"}, "builtin(x_ptr")
    assert message.startswith(f"bad arguments to {name}(") and message.endswith("too many positional arguments")
    assert "_builder" not in message and "_generator" not in message


@pytest.mark.parametrize("name,builtin", [(n, f) for n, f in _builtins()
                                          if not _takes(f, inspect.Parameter.VAR_KEYWORD)],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_every_builtin_reports_an_unknown_keyword_by_its_name(jit, build_ir, name, builtin):
    def kernel(x_ptr):
        builtin(x_ptr, no_such_parameter=1)

    message = error_at(build_ir, jit(kernel), {"x_ptr": "*fp32"}, "builtin(x_ptr")
    assert message.startswith(f"bad arguments to {name}(")
    assert message.endswith("got an unexpected keyword argument 'no_such_parameter'")


def test_a_missing_argument_is_named(jit, build_ir):
    @jit
    def kernel(x_ptr):
        kl.store(x_ptr, kl.where(kl.load(x_ptr) > 0, 1.0))

    message = error_at(build_ir, kernel, {"x_ptr": "*fp32"}, "kl.where(")
    assert message == "bad arguments to where(condition, x, y): missing a required argument: 'y'"


# -- blocks over Triton's element cap --------------------------------------------------

NUMEL_ERROR = "numel (2097152) exceeds triton maximum tensor numel (1048576)"


def test_the_cap_is_tritons():
    assert kl.TRITON_MAX_TENSOR_NUMEL == 2**20


def _k_arange(x_ptr):
    r = kl.arange(0, 2097152)


def _k_zeros(x_ptr):
    z = kl.zeros((2048, 1024), kl.float32)


def _k_full(x_ptr):
    z = kl.full((1024, 2048), 1, kl.int8)


def _k_broadcast(x_ptr):
    z = kl.arange(0, 2048)[:, None] + kl.arange(0, 1024)[None, :]


def _k_broadcast_to(x_ptr):
    z = kl.broadcast_to(kl.arange(0, 1024)[None, :], (2048, 1024))


def _k_splat_by_store(x_ptr):
    kl.store(x_ptr + kl.arange(0, 1024)[:, None, None] + kl.arange(0, 1024)[None, :, None]
             + kl.arange(0, 2)[None, None, :], 0.0)


def _k_join(x_ptr):
    a = kl.arange(0, 1048576)
    j = kl.join(a, a)


def _k_cat(x_ptr):
    a = kl.arange(0, 1048576)
    j = kl.cat(a, a, can_reorder=True)


def _k_dot(x_ptr):
    a = kl.zeros((2048, 16), kl.float16)
    b = kl.zeros((16, 1024), kl.float16)
    c = kl.dot(a, b)


def _k_block_ptr(x_ptr):
    p = kl.make_block_ptr(x_ptr, (4096, 4096), (4096, 1), (0, 0), (2048, 1024), (1, 0))
    v = kl.load(p)


def _k_descriptor(x_ptr):
    d = kl.make_tensor_descriptor(x_ptr, [4096, 4096], [4096, 1], [2048, 1024])
    v = d.load([0, 0])


@pytest.mark.parametrize("kernel,text", [
    (_k_arange, "kl.arange(0, 2097152)"), (_k_zeros, "kl.zeros"), (_k_full, "kl.full"),
    (_k_broadcast, "z = kl.arange"), (_k_broadcast_to, "kl.broadcast_to"), (_k_splat_by_store, "kl.store"),
    (_k_join, "kl.join"), (_k_cat, "kl.cat"), (_k_dot, "kl.dot"), (_k_block_ptr, "kl.make_block_ptr"),
    (_k_descriptor, "kl.make_tensor_descriptor"),
], ids=lambda v: v.__name__[3:] if callable(v) else "")
def test_a_block_over_the_cap_is_refused_at_its_line(jit, build_ir, kernel, text):
    assert error_at(build_ir, jit(kernel), {"x_ptr": "*fp32"}, text) == NUMEL_ERROR


def test_a_block_at_the_cap_compiles(jit, build_ir):
    @jit
    def kernel(x_ptr):
        kl.store(x_ptr + kl.arange(0, 1024)[:, None] * 1024 + kl.arange(0, 1024)[None, :], 1.0)

    build_ir(kernel, {"x_ptr": "*fp32"}, {})


# -- nesting deeper than Python's recursion limit ----------------------------------------

_RECURSIVE_HELPERS = '''
@kiln.jit
def countdown(x, n: kl.constexpr):
    if n == 0:
        return x
    return countdown(x, n - 1) + 1


@kiln.jit
def count_up_forever(x, n: kl.constexpr):
    return count_up_forever(x, n + 1)


@kiln.jit
def same_forever(x):
    return same_forever(x + 1)


@kiln.jit
def kernel_countdown(p, N: kl.constexpr):
    kl.store(p, countdown(kl.load(p), N))


@kiln.jit
def kernel_forever(p):
    kl.store(p, count_up_forever(kl.load(p), 0))


@kiln.jit
def kernel_same(p):
    kl.store(p, same_forever(kl.load(p)))
'''


def _chain_module(tmp_path, depth: int) -> Any:
    """A module of jit helpers h0 .. h{depth-1}, each calling the one
    before, a kernel calling the last, and the recursive kernels above.
    (Written to a file: the frontend reads a kernel's source lines.)"""
    import importlib.util

    lines = ["import kiln", "import kiln.language as kl", "", "", "@kiln.jit", "def h0(x):", "    return x + 1"]
    for i in range(1, depth):
        lines += ["", "", "@kiln.jit", f"def h{i}(x):", f"    return h{i - 1}(x) + 1"]
    lines += ["", "", "@kiln.jit", "def kernel(p):", f"    kl.store(p, h{depth - 1}(kl.load(p)))", ""]
    path = tmp_path / f"chain_{depth}.py"
    path.write_text("\n".join(lines) + _RECURSIVE_HELPERS)
    spec = importlib.util.spec_from_file_location(f"chain_{depth}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _error(build_ir, kernel, constexprs: dict | None = None) -> CompilationError:
    """The error where the mistake is: in a helper, the cause of the error
    reported at the kernel's call of the first helper."""
    with pytest.raises(CompilationError) as info:
        build_ir(kernel, {"p": "*fp32"}, constexprs or {})
    outer = info.value
    assert outer.function == kernel.__name__, str(outer)
    if not isinstance(outer.__cause__, CompilationError):
        return outer
    assert outer.message.endswith(outer.__cause__.message)
    return outer.__cause__


def test_a_chain_of_jit_calls_deeper_than_the_recursion_limit_is_reported_at_a_call(build_ir, tmp_path):
    module = _chain_module(tmp_path, 300)
    err = _error(build_ir, module.kernel)
    assert err.filename == str(tmp_path / "chain_300.py")
    assert err.source_line is not None and "return h" in err.source_line
    assert "nests too deeply" in err.message and "jit calls deep: kernel -> h299 -> h298" in err.message
    assert f"Python's recursion limit ({sys.getrecursionlimit()})" in err.message
    assert "sys.setrecursionlimit()" in err.message and "RecursionError" not in str(err)


def test_a_deep_chain_compiles_within_a_raised_recursion_limit(build_ir, tmp_path):
    module = _chain_module(tmp_path, 300)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(30000)
    try:
        build_ir(module.kernel, {"p": "*fp32"}, {})
    finally:
        sys.setrecursionlimit(limit)


def test_recursion_that_ends_on_a_constexpr_compiles(build_ir, tmp_path):
    build_ir(_chain_module(tmp_path, 1).kernel_countdown, {"p": "*fp32"}, {"N": 5})


def test_recursion_that_never_ends_is_reported(build_ir, tmp_path):
    err = _error(build_ir, _chain_module(tmp_path, 1).kernel_forever)
    assert err.source_line is not None and "return count_up_forever(x, n + 1)" in err.source_line
    assert "recursive calls of count_up_forever nest too deeply" in err.message
    assert "kernel_forever -> count_up_forever -> count_up_forever" in err.message


def test_recursion_with_the_same_arguments_is_reported(build_ir, tmp_path):
    err = _error(build_ir, _chain_module(tmp_path, 1).kernel_same)
    assert err.source_line is not None and "return same_forever(x + 1)" in err.source_line
    assert err.message == ("recursive call of same_forever with the same argument types and constexprs is not "
                           "supported: it would never end")


def test_a_statement_nested_too_deeply_is_reported_at_it(build_ir, tmp_path):
    import importlib.util

    path = tmp_path / "long_sum.py"
    path.write_text("import kiln\nimport kiln.language as kl\n\n\n@kiln.jit\ndef kernel(p):\n    x = kl.load(p)\n"
                    f"    y = {' + '.join(['x'] * 700)}\n    kl.store(p, y)\n")
    spec = importlib.util.spec_from_file_location("long_sum", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    err = _error(build_ir, module.kernel)
    assert (err.lineno, err.col) == (8, 5)
    assert err.message.startswith("this statement nests too deeply to compile within Python's recursion limit")
