"""Compile errors as Triton raises them: its exception classes under its
module names, its exception chains (``__cause__``) and its wording, with
Kiln's location kept (see docs/design/frontend.md, "Locations and errors")."""

from __future__ import annotations

import importlib
import importlib.util
import os
import traceback
import warnings

import pytest

import kiln
import kiln.language as kl
from kiln.errors import CompilationError, CompileTimeAssertionFailure, KilnError

PLAIN_GLOBAL = 42
ANNOTATED_GLOBAL: kl.constexpr = 42
CONSTEXPR_GLOBAL = kl.constexpr(42)


def compile_error(build_ir, kernel, signature=None, constexprs=None) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        build_ir(kernel, signature or {}, constexprs or {})
    return info.value


def test_classes_under_triton_module_names():
    errors = importlib.import_module("kiln.compiler.errors")
    runtime_errors = importlib.import_module("kiln.runtime.errors")
    assert errors.CompilationError is kiln.CompilationError
    assert issubclass(errors.CompileTimeAssertionFailure, kiln.CompilationError)
    assert issubclass(errors.UnsupportedLanguageConstruct, kiln.CompilationError)
    assert kiln.TritonError is KilnError and issubclass(kiln.CompilationError, kiln.TritonError)
    for name in ("InterpreterError", "OutOfResources", "PTXASError"):
        assert issubclass(getattr(runtime_errors, name), kiln.TritonError)
    assert runtime_errors.OutOfResources is kiln.OutOfResources


def test_static_assert_fails_without_a_cause(jit, build_ir):
    @jit
    def kernel():
        kl.static_assert(1 == 2, "one is not two")

    err = compile_error(build_ir, kernel)
    assert isinstance(err, CompileTimeAssertionFailure)
    assert err.__cause__ is None and err.message == "static_assert failed: one is not two"
    assert (err.function, err.fn_lineno, err.fn_col) == ("kernel", 2, 4), str(err)


def test_assert_on_constants_is_a_compile_time_assertion_failure(jit, build_ir):
    @jit
    def kernel(N: kl.constexpr):
        assert N > 4, "N too small"

    err = compile_error(build_ir, kernel, {}, {"N": 2})
    assert isinstance(err, CompileTimeAssertionFailure) and err.__cause__ is None
    assert err.message == "assertion failed: N too small"


def arange_of_five():
    x = kl.arange(0, 5)


def full_of_33_columns():
    x = kl.full((16, 33), 0, kl.int32)


def zeros_of_twelve():
    x = kl.zeros((12, ), kl.int32)


@pytest.mark.parametrize("kernel,message", [
    (arange_of_five, "arange's range must be a power of 2"),
    (full_of_33_columns, "Shape element 1 must be a power of 2"),
    (zeros_of_twelve, "Shape element 0 must be a power of 2"),
])
def test_a_failed_builtin_check_is_the_cause(jit, build_ir, kernel, message):
    err = compile_error(build_ir, jit(kernel))
    assert err.message == message and (err.fn_lineno, err.fn_col) == (2, 8), str(err)
    # The cause is the check's own error: its text is the bare message and
    # its traceback reaches into kiln.language.
    assert str(err.__cause__) == message
    frames = traceback.extract_tb(err.__cause__.__traceback__)
    assert any(f"{os.sep}language{os.sep}" in frame.filename for frame in frames)


def test_an_error_in_a_helper_is_reported_at_the_call_with_the_helper_error_as_cause(jit, build_ir):
    @jit
    def inner(x):
        return x + undefined_name  # noqa: F821

    @jit
    def middle(x):
        return inner(x)

    @jit
    def kernel(x):
        # the call is on line 3
        y = middle(x)

    err = compile_error(build_ir, kernel, {"x": "i32"})
    assert (err.function, err.fn_lineno, err.fn_col) == ("kernel", 3, 8), str(err)
    cause = err.__cause__
    # Through nested calls the cause is the innermost error, where the
    # mistake is; the message names it and its place.
    assert (cause.function, cause.fn_lineno, cause.fn_col) == ("inner", 2, 15), str(cause)
    assert cause.message == "name 'undefined_name' is not defined" and cause.__cause__ is None
    assert err.message == (f"middle fails to compile (in inner, {cause.filename}:{cause.lineno}): "
                           f"name 'undefined_name' is not defined")
    assert str(err).splitlines()[-1] == err.message


def test_inconsistent_return_types_point_at_the_second_return(jit, build_ir):
    @jit
    def helper(n):
        if n == 0:
            return kl.arange(0, 4)
        else:
            return kl.arange(0, 8)

    @jit
    def kernel(n):
        helper(n)

    err = compile_error(build_ir, kernel, {"n": "i32"})
    assert (err.fn_lineno, err.fn_col) == (2, 4), str(err)
    assert (err.__cause__.fn_lineno, err.__cause__.fn_col) == (5, 8), str(err.__cause__)
    assert err.__cause__.message.startswith("Inconsistent return types: the return value is <[8], int32> here "
                                            "but <[4], int32>")


def test_plain_globals_are_refused_constexpr_globals_read(jit, build_ir):
    @jit
    def plain(out):
        kl.store(out, PLAIN_GLOBAL)

    @jit
    def annotated(out):
        kl.store(out, ANNOTATED_GLOBAL)

    @jit
    def wrapped(out):
        kl.store(out, CONSTEXPR_GLOBAL)

    for kernel, name in ((plain, "PLAIN_GLOBAL"), (annotated, "ANNOTATED_GLOBAL")):
        err = compile_error(build_ir, kernel, {"out": "*i32"})
        assert err.message.startswith(f"Cannot access global variable '{name}' (of type int)"), str(err)
        assert err.__cause__ is None
    assert "arith.constant 42" in build_ir(wrapped, {"out": "*i32"}, {}).str()


def test_closure_constants_are_read(jit, build_ir):
    size = 42

    @jit
    def kernel(out):
        kl.store(out, size)

    assert "arith.constant 42" in build_ir(kernel, {"out": "*i32"}, {}).str()


def test_a_dropped_must_use_result_is_an_error(jit, build_ir):
    @kiln.must_use_result("Use the square.")
    @jit
    def square(x):
        return x * x

    @kiln.must_use_result
    @jit
    def cube(x):
        return x * x * x

    @jit
    def uses(out, x):
        y = square(x)
        kl.store(out, cube(y))

    @jit
    def drops(x):
        square(x)

    @jit
    def drops_cube(x):
        cube(x)

    build_ir(uses, {"out": "*i32", "x": "i32"}, {})
    err = compile_error(build_ir, drops, {"x": "i32"})
    assert str(err).splitlines()[-1] == "The result of square is not being used. Use the square."
    assert (err.fn_lineno, err.fn_col) == (2, 4), str(err)
    err = compile_error(build_ir, drops_cube, {"x": "i32"})
    assert err.message == "The result of cube is not being used."


def test_constexpr_listed_in_do_not_specialize(build_ir):
    @kiln.jit(do_not_specialize=["N"])
    def kernel(x, N: kl.constexpr):
        pass

    err = compile_error(build_ir, kernel, {"x": "i32"}, {"N": 4})
    assert err.message == "N marked as constexpr and listed in do_not_specialize"
    assert err.source_line is not None and err.source_line[err.col - 1:].startswith("N: kl.constexpr"), str(err)


@pytest.mark.parametrize("name", ["float8e4b15", "float8e4b8", "float8e5b16"])
def test_fp8_formats_no_target_supports_are_named_and_refused(jit, build_ir, name):
    @jit
    def kernel(DTYPE: kl.constexpr):
        a = kl.full((16, 16), 0.0, DTYPE)

    dtype = getattr(kl, name)
    err = compile_error(build_ir, kernel, {}, {"DTYPE": dtype})
    assert err.message.startswith(f"type {dtype.name} is not supported in this architecture"), str(err)
    assert str(err.__cause__) == err.message


def test_where_on_a_non_boolean_condition_warns(jit, build_ir):
    @jit
    def kernel(out):
        a = kl.full((64, ), 0, kl.uint32)
        kl.store(out + kl.arange(0, 64), kl.where(a, 1.0, 2.0))

    @jit
    def boolean(out):
        a = kl.full((64, ), 0, kl.uint32)
        kl.store(out + kl.arange(0, 64), kl.where(a != 0, 1.0, 2.0))

    with pytest.warns(UserWarning, match="non-boolean condition is deprecated.*got uint32"):
        build_ir(kernel, {"out": "*fp32"}, {})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_ir(boolean, {"out": "*fp32"}, {})


def test_an_int_literal_must_fit_the_tensor_type(jit, build_ir):
    @jit
    def kernel(out):
        x = kl.full((), 32, dtype=kl.int32)
        kl.store(out, x + 0xFFFFFFFFFFFFFF)

    @jit
    def fits(out):
        x = kl.full((), 32, dtype=kl.int8)
        kl.store(out, x + 127)

    err = compile_error(build_ir, kernel, {"out": "*i64"})
    assert err.message == f"Scalar {0xFFFFFFFFFFFFFF} is out of range for type int32", str(err)
    assert "i8" in build_ir(fits, {"out": "*i8"}, {}).str()


def kernel_from_source(tmp_path, body: str):
    """A jit kernel ``kernel(out, x, y)`` whose body is `body`, from a module
    file (the frontend reads a kernel's source from its file)."""
    path = tmp_path / "generated_kernel.py"
    path.write_text(f"import kiln\nimport kiln.language as kl\n\n\n@kiln.jit\ndef kernel(out, x, y):\n    {body}\n")
    spec = importlib.util.spec_from_file_location("generated_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


@pytest.mark.parametrize("op", ["/", "//", "%"])
@pytest.mark.parametrize("types", [("i8", "u8"), ("u32", "i64"), ("u64", "i32")])
def test_division_of_mixed_signedness_is_refused(build_ir, tmp_path, op, types):
    kernel = kernel_from_source(tmp_path, f"kl.store(out, x {op} y)")
    with pytest.raises(CompilationError, match=r"Cannot use /, // or % with \w+ and \w+ because they have "
                                               r"different signedness"):
        build_ir(kernel, {"out": "*fp32", "x": types[0], "y": types[1]}, {})
    # The same signedness divides.
    build_ir(kernel, {"out": "*fp32", "x": types[0], "y": types[0]}, {})


@pytest.mark.parametrize("expression", ["x & y", "x | y", "x ^ y", "x << y", "x >> y"])
def test_bitwise_operators_name_the_operand_types(build_ir, tmp_path, expression):
    kernel = kernel_from_source(tmp_path, f"kl.store(out, {expression})")
    with pytest.raises(CompilationError, match=r"invalid operands of type int8 and fp32"):
        build_ir(kernel, {"out": "*fp32", "x": "i8", "y": "fp32"}, {})


def test_a_slice_of_a_tensor_is_an_unsupported_tensor_index(jit, build_ir):
    @jit
    def kernel(dst):
        dst[10:]

    @jit
    def by_int(dst):
        x = kl.arange(0, 16)[3]

    err = compile_error(build_ir, kernel, {"dst": "*fp32"})
    assert err.message.startswith("unsupported tensor index: 10:"), str(err)
    err = compile_error(build_ir, by_int, {"dst": "*fp32"})
    assert err.message.startswith("unsupported tensor index: the compile-time value 3"), str(err)


def test_an_invalid_num_warps_is_a_value_error_and_an_assertion_error(jit):
    @kiln.jit
    def kernel(x):
        pass

    for error in (ValueError, AssertionError, kiln.TritonError):
        with pytest.raises(error, match="num_warps must be a power of 2"):
            kiln.compile(kernel, {"x": "i32"}, target="cpu", num_warps=3)


def test_branches_of_different_types_say_so_in_tritons_words(jit, build_ir):
    @jit
    def if_statement(out, x, c):
        if c > 0:
            y = x
        else:
            y = out
        kl.store(y, 1.0)

    @jit
    def ternary(out, x, c):
        y = x if c > 0 else out
        kl.store(y, 1.0)

    signature = {"out": "*fp32", "x": "*fp16", "c": "i32"}
    err = compile_error(build_ir, if_statement, signature)
    assert err.message.startswith("Mismatched type for y between the then-branch (pointer<fp16>) and the "
                                  "else-branch (pointer<fp32>)"), str(err)
    err = compile_error(build_ir, ternary, signature)
    assert err.message.startswith("Ternary expression with dynamic condition has inconsistent types: "), str(err)
    assert (err.fn_lineno, err.fn_col) == (2, 8) and str(err.__cause__) in err.message, str(err)
