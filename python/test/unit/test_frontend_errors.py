"""Every bad kernel raises a CompilationError at the right file:line:col."""

from __future__ import annotations

import inspect

import pytest

import kiln.language as kl
from kiln.errors import CompilationError

NOT_A_CONSTEXPR = [1, 2, 3]


def position_of(kernel, text: str) -> tuple[int, int]:
    """(line, 1-based column) in the file of the first occurrence of `text`."""
    fn = getattr(kernel, "fn", kernel)
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        # The def line only counts when asked for (k_break contains "break").
        if text in line and (i > 0 or text.startswith("def ")):
            return first + i, line.index(text) + 1
    raise AssertionError(f"{text!r} not in the kernel")


def compile_error(build_ir, kernel, signature, constexprs=None) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        build_ir(kernel, signature, constexprs or {})
    return info.value


def triton_position(kernel, line: int, col: int) -> tuple[int, int]:
    """Triton's position of a file position in `kernel`: the line counted
    from the def line (1), the 0-based column in the dedented source."""
    fn = getattr(kernel, "fn", kernel)
    lines, first = inspect.getsourcelines(fn)
    index = next(i for i, text in enumerate(lines) if text.lstrip().startswith("def "))
    indent = len(lines[index]) - len(lines[index].lstrip())
    return line - (first + index) + 1, col - 1 - indent


def check(err: CompilationError, kernel, text: str, *fragments: str) -> None:
    line, col = position_of(kernel, text)
    assert err.filename == __file__
    assert (err.lineno, err.col) == (line, col), str(err)
    assert err.source_line is not None and text in err.source_line
    fn_line, fn_col = triton_position(kernel, line, col)
    assert (err.fn_lineno, err.fn_col) == (fn_line, fn_col), str(err)
    # The location (the file's, then Triton's in the function), the source
    # line with a caret, then the message.
    lines = str(err).splitlines()
    assert lines[0] == f"{__file__}:{line}:{col}: error in {err.function} at {fn_line}:{fn_col}:"
    assert lines[1] == err.source_line
    assert lines[2] == " " * (col - 1) + "^"
    assert "\n".join(lines[3:]) == err.message == err.error_message
    for fragment in fragments:
        assert fragment in err.message, str(err)


def test_undefined_name(jit, build_ir):
    @jit
    def kernel(out):
        kl.store(out, undefined_thing)  # noqa: F821

    err = compile_error(build_ir, kernel, {"out": "*fp32"})
    check(err, kernel, "undefined_thing", "name 'undefined_thing' is not defined")


@pytest.mark.parametrize("snippet,construct", [
    ("try", "'try' statements"), ("lambda", "lambda expressions"), ("setcomp", "set comprehensions"),
    ("dict", "dict literals"), ("with", "'with' statements"), ("import", "'import' statements"),
    ("del", "'del' statements"), ("class", "class definitions"), ("global", "'global' statements"),
    ("break", "'break' statements"), ("set", "set literals"), ("genexp", "generator expressions"),
    ("walrus", "assignment expressions (:=) are"),
])
def test_unsupported_syntax(jit, build_ir, snippet, construct):
    def k_try(out):
        try:
            pass
        except Exception:
            pass

    def k_lambda(out):
        f = lambda v: v  # noqa: E731

    def k_setcomp(out):
        x = {i for i in range(3)}

    def k_dict(out):
        x = {1: 2}

    def k_with(out):
        with out:
            pass

    def k_import(out):
        import os  # noqa: F401

    def k_del(out):
        x = 1
        del x

    def k_class(out):
        class C:
            pass

    def k_global(out):
        global NOT_A_CONSTEXPR

    def k_break(out, n):
        for i in range(n):
            break

    def k_set(out):
        x = {1, 2}

    def k_genexp(out):
        x = tuple(i for i in range(3))

    def k_walrus(out):
        x = (y := 3)

    kernels = {"try": (k_try, "try:"), "lambda": (k_lambda, "lambda v"), "setcomp": (k_setcomp, "{i for"),
               "dict": (k_dict, "{1: 2}"), "with": (k_with, "with out"), "import": (k_import, "import os"),
               "del": (k_del, "del x"), "class": (k_class, "class C"), "global": (k_global, "global NOT"),
               "break": (k_break, "break"), "set": (k_set, "{1, 2}"), "genexp": (k_genexp, "(i for i"),
               "walrus": (k_walrus, "y := 3")}
    fn, text = kernels[snippet]
    kernel = jit(fn)
    sig = {"out": "*fp32", "n": "i32"} if snippet == "break" else {"out": "*fp32"}
    err = compile_error(build_ir, kernel, sig)
    check(err, kernel, text, construct, "not supported")


def test_arange_needs_constexpr(jit, build_ir):
    @jit
    def kernel(out, n):
        r = kl.arange(0, n)

    err = compile_error(build_ir, kernel, {"out": "*fp32", "n": "i32"})
    check(err, kernel, "kl.arange(0, n)", "arange end must be a compile-time constant")


def test_arange_power_of_two(jit, build_ir):
    @jit
    def kernel(out, BLOCK: kl.constexpr):
        r = kl.arange(0, BLOCK)

    err = compile_error(build_ir, kernel, {"out": "*fp32"}, {"BLOCK": 100})
    check(err, kernel, "kl.arange(0, BLOCK)", "arange's range must be a power of 2")


def test_program_id_needs_constexpr_axis(jit, build_ir):
    @jit
    def kernel(out, axis):
        pid = kl.program_id(axis)

    err = compile_error(build_ir, kernel, {"out": "*fp32", "axis": "i32"})
    check(err, kernel, "kl.program_id(axis)", "program_id axis must be a compile-time constant")


def test_program_id_axis_range(jit, build_ir):
    @jit
    def kernel(out):
        pid = kl.program_id(3)

    err = compile_error(build_ir, kernel, {"out": "*fp32"})
    check(err, kernel, "kl.program_id(3)", "program_id axis must be 0, 1, or 2 but got 3")


def test_static_range_needs_constexpr(jit, build_ir):
    @jit
    def kernel(out, n):
        for i in kl.static_range(n):
            pass

    err = compile_error(build_ir, kernel, {"out": "*fp32", "n": "i32"})
    check(err, kernel, "kl.static_range(n)", "static_range end must be a constant")


def test_incompatible_shapes(jit, build_ir):
    @jit
    def kernel(out):
        x = kl.arange(0, 16) + kl.arange(0, 32)

    err = compile_error(build_ir, kernel, {"out": "*fp32"})
    check(err, kernel, "kl.arange(0, 16) + kl.arange(0, 32)", "[16]", "[32]", "incompatible shapes")


def test_loop_carried_type_change(jit, build_ir):
    @jit
    def kernel(out, n):
        acc = 0
        for i in range(n):
            acc = acc + 1.5
        kl.store(out, acc)

    err = compile_error(build_ir, kernel, {"out": "*fp32", "n": "i32"})
    check(err, kernel, "for i in range(n)", "'acc'", "int32", "fp32", "must not change")


def test_variable_in_one_branch(jit, build_ir):
    @jit
    def kernel(out, a):
        if a > 0:
            only_then = a
        kl.store(out, only_then)

    err = compile_error(build_ir, kernel, {"out": "*i32", "a": "i32"})
    line, _ = position_of(kernel, "if a > 0")
    check(err, kernel, "only_then)", "'only_then' is defined in only one branch", f"line {line}")


def test_branch_type_mismatch(jit, build_ir):
    @jit
    def kernel(out, a, x):
        y = a
        if a > 0:
            y = x
        kl.store(out, y)

    err = compile_error(build_ir, kernel, {"out": "*i32", "a": "i32", "x": "fp32"})
    check(err, kernel, "if a > 0", "Mismatched type for y", "fp32", "int32", "same type")


def test_if_on_block(jit, build_ir):
    @jit
    def kernel(out):
        if kl.arange(0, 4) > 1:
            pass

    err = compile_error(build_ir, kernel, {"out": "*i32"})
    check(err, kernel, "kl.arange(0, 4) > 1", "must be a scalar", "kl.where")


def test_pow_needs_constexpr_exponent(jit, build_ir):
    @jit
    def kernel(out, x, n):
        kl.store(out, x ** n)

    err = compile_error(build_ir, kernel, {"out": "*fp32", "x": "fp32", "n": "i32"})
    check(err, kernel, "x ** n", "constant", "exponent")


def test_kernel_cannot_return_value(jit, build_ir):
    @jit
    def kernel(out):
        return 1

    err = compile_error(build_ir, kernel, {"out": "*i32"})
    check(err, kernel, "return 1", "a kernel cannot return a value")


def test_return_inside_runtime_loop(jit, build_ir):
    # An early return in an if is fine (see test_frontend_tuples.py); in a
    # loop it is not, as in Triton.
    @jit
    def helper(a):
        for i in range(a):
            if i > 3:
                return i
        return a

    @jit
    def kernel(out, a):
        kl.store(out, helper(a))

    err = compile_error(build_ir, kernel, {"out": "*i32", "a": "i32"})
    check(err.__cause__, helper, "return i", "'return' inside a runtime for/while loop is not supported")
    check(err, kernel, "helper(a)", "helper fails to compile",
          "'return' inside a runtime for/while loop is not supported")


def test_calling_plain_python_function(jit, build_ir):
    def plain(x):
        return x

    @jit
    def kernel(out, a):
        kl.store(out, plain(a))

    err = compile_error(build_ir, kernel, {"out": "*i32", "a": "i32"})
    check(err, kernel, "plain(a)", "'plain' is not a @kiln.jit function")


def test_load_needs_pointer(jit, build_ir):
    @jit
    def kernel(out, a):
        kl.store(out, kl.load(a))

    err = compile_error(build_ir, kernel, {"out": "*i32", "a": "i32"})
    check(err, kernel, "kl.load(a)", "load needs a pointer argument", "int32")


def test_float_floordiv(jit, build_ir):
    @jit
    def kernel(out, x):
        kl.store(out, x // 2.0)

    err = compile_error(build_ir, kernel, {"out": "*fp32", "x": "fp32"})
    check(err, kernel, "x // 2.0", "// needs integer operands")


def test_non_constexpr_global(jit, build_ir):
    @jit
    def kernel(out):
        kl.store(out, NOT_A_CONSTEXPR)

    err = compile_error(build_ir, kernel, {"out": "*i32"})
    check(err, kernel, "NOT_A_CONSTEXPR", "Cannot access global variable 'NOT_A_CONSTEXPR' (of type list)",
          "kl.constexpr")
    assert err.__cause__ is None


def test_wrong_attribute(jit, build_ir):
    @jit
    def kernel(out):
        kl.no_such_builtin(out)

    err = compile_error(build_ir, kernel, {"out": "*i32"})
    check(err, kernel, "kl.no_such_builtin", "has no attribute 'no_such_builtin'")


def test_static_assert(jit, build_ir):
    @jit
    def kernel(out, BLOCK: kl.constexpr):
        kl.static_assert(BLOCK >= 64, "BLOCK too small")

    err = compile_error(build_ir, kernel, {"out": "*i32"}, {"BLOCK": 16})
    check(err, kernel, "kl.static_assert", "static_assert failed: BLOCK too small")


def test_error_in_nested_function_points_into_it(jit, build_ir):
    @jit
    def helper(x):
        return x + missing_name  # noqa: F821

    @jit
    def kernel(out, a):
        kl.store(out, helper(a))

    err = compile_error(build_ir, kernel, {"out": "*i32", "a": "i32"})
    # Reported at the call, as Triton does, caused by the error in the helper.
    check(err.__cause__, helper, "missing_name", "name 'missing_name' is not defined")
    check(err, kernel, "helper(a)", f"helper fails to compile ({__file__}:{err.__cause__.lineno}): "
                                    f"name 'missing_name' is not defined")


def test_errors_are_chained(jit, build_ir):
    @jit
    def kernel(out, x):
        kl.store(out, x // 2.0)

    err = compile_error(build_ir, kernel, {"out": "*fp32", "x": "fp32"})
    assert err.__cause__ is not None


def test_missing_constexpr_and_bad_signature(jit, build_ir):
    @jit
    def kernel(out, BLOCK: kl.constexpr):
        pass

    err = compile_error(build_ir, kernel, {"out": "*fp32"})
    check(err, kernel, "def kernel", "no value given for constexpr parameter 'BLOCK'")
    with pytest.raises(CompilationError, match="unsupported signature type 'float'"):
        build_ir(kernel, {"out": "float"}, {"BLOCK": 4})
    with pytest.raises(CompilationError, match="no type in the signature"):
        build_ir(kernel, {}, {"BLOCK": 4})


def test_store_mask_must_be_bool(jit, build_ir):
    @jit
    def kernel(out, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        kl.store(out + offs, offs, mask=offs)

    err = compile_error(build_ir, kernel, {"out": "*i32"}, {"BLOCK": 8})
    check(err, kernel, "kl.store(out + offs, offs, mask=offs)", "mask must be a boolean")



def k_sum_of_pointers(out, BLOCK: kl.constexpr):
    kl.sum(out + kl.arange(0, BLOCK), axis=0)


def k_max_of_pointers(out, BLOCK: kl.constexpr):
    kl.max(out + kl.arange(0, BLOCK))


def k_argmin_of_pointers(out, BLOCK: kl.constexpr):
    kl.argmin(out + kl.arange(0, BLOCK), axis=0)


def k_cumsum_of_pointers(out, BLOCK: kl.constexpr):
    kl.cumsum(out + kl.arange(0, BLOCK), axis=0)


@pytest.mark.parametrize("kernel,call", [(k_sum_of_pointers, "kl.sum("), (k_max_of_pointers, "kl.max("),
                                         (k_argmin_of_pointers, "kl.argmin("),
                                         (k_cumsum_of_pointers, "kl.cumsum(")])
def test_reduction_of_pointers_names_the_call(jit, build_ir, kernel, call):
    # A block of pointers used to reach the combine function, whose error
    # named a line of kiln/language/standard.py instead of the kernel's.
    kernel = jit(kernel)
    err = compile_error(build_ir, kernel, {"out": "*i32"}, {"BLOCK": 8})
    check(err, kernel, call, "block of pointers")


@pytest.mark.parametrize("target", ["cpu", "sm_90a"])
def test_loading_pointers_is_refused_at_the_line(target: str) -> None:
    # A `**fp32` parameter makes a load of pointer values, which neither
    # lowering supports: the compile used to crash the process.
    import kiln

    @kiln.jit
    def chase(pp, out):
        p = kl.load(pp)
        kl.store(out, kl.load(p))

    with pytest.raises(CompilationError) as info:
        kiln.compile(chase, {"pp": "**fp32", "out": "*fp32"}, {}, target=target)
    message = str(info.value)
    assert "loads and stores of pointer values are not supported" in message
    lines, first = inspect.getsourcelines(chase.fn)
    load_line = first + next(i for i, line in enumerate(lines) if "kl.load(pp)" in line)
    assert f":{load_line}:" in message.splitlines()[0]


def test_unary_operator_on_a_tuple(jit, build_ir):
    @jit
    def kernel(out):
        flag = not (0, 0)
        kl.store(out, flag)

    err = compile_error(build_ir, kernel, {"out": "*i1"})
    check(err, kernel, "not (0, 0)", "the unary operator not cannot be applied to a tuple of 2")
