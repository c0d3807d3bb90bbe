"""Tuples, kiln.constexpr_function and early returns in the frontend: the
IR they give and their errors, each at its source line."""

from __future__ import annotations

import inspect

import pytest

import kiln
import kiln.language as kl
from kiln.errors import CompilationError


def located_error(build_ir, kernel, signature, text: str, *fragments: str, where=None) -> None:
    with pytest.raises(CompilationError) as info:
        build_ir(kernel, signature, {})
    err = info.value
    if where is not None:
        # Reported at the kernel's call, caused by the error in `where`.
        assert err.function == kernel.__name__ and isinstance(err.__cause__, CompilationError), str(err)
        err = err.__cause__
    lines, first = inspect.getsourcelines(getattr(where or kernel, "fn", where or kernel))
    line = next(first + i for i, s in enumerate(lines) if text in s and i > 0)
    assert (err.filename, err.lineno) == (__file__, line), str(err)
    for fragment in fragments:
        assert fragment in str(err), str(err)


@kiln.constexpr_function
def _double(x):
    return x * 2


@kiln.constexpr_function
def _fails(x):
    raise ValueError(f"bad {x}")


def test_constexpr_function_runs_at_compile_time(jit, build_ir):
    @jit
    def kernel(out):
        kl.store(out + kl.arange(0, _double(8)), 1.0)

    assert "tensor<16x!kiln.ptr<f32>>" in str(build_ir(kernel, {"out": "*fp32"}))
    assert _double(3) == 6  # an ordinary call outside kernels


def test_constexpr_function_rejects_runtime_values(jit, build_ir):
    @jit
    def kernel(out, n):
        kl.store(out, _double(n))

    located_error(build_ir, kernel, {"out": "*i32", "n": "i32"}, "_double(n)",
                  "constexpr_function '_double' takes compile-time values only")


def test_constexpr_function_exception_is_located(jit, build_ir):
    @jit
    def kernel(out):
        kl.store(out, _fails(3))

    located_error(build_ir, kernel, {"out": "*i32"}, "_fails(3)", "raised ValueError: bad 3")


def test_tuple_return_and_unpack(jit, build_ir):
    @jit
    def helper(a, pair):
        return pair[1], (a, pair[0] + a)

    @jit
    def kernel(out, a, b):
        x, (y, z) = helper(a, (b, a))
        kl.store(out, x + y + z + len((x, y, z)))

    text = str(build_ir(kernel, {"out": "*i32", "a": "i32", "b": "i32"}))
    assert "(i32, i32, i32) -> (i32, i32, i32)" in text


def test_unpack_length_mismatch(jit, build_ir):
    @jit
    def kernel(out, a):
        x, y = (a, a, a)
        kl.store(out, x + y)

    located_error(build_ir, kernel, {"out": "*i32", "a": "i32"}, "x, y = (a, a, a)", "cannot unpack 3 values into 2")


def test_tuple_index_must_be_constant(jit, build_ir):
    @jit
    def kernel(out, a):
        kl.store(out, (a, a)[a])

    located_error(build_ir, kernel, {"out": "*i32", "a": "i32"}, "(a, a)[a]")


def test_loop_tuple_length_must_not_change(jit, build_ir):
    @jit
    def kernel(out, n):
        t = (n, n)
        for i in range(n):
            t = (i, i, i)
        kl.store(out, t[0])

    located_error(build_ir, kernel, {"out": "*i32", "n": "i32"}, "for i in range(n):",
                  "'t' holds tuples of 2 and of 3 values")


def test_early_return_needs_matching_values(jit, build_ir):
    @jit
    def helper(a):
        if a > 0:
            return a

    @jit
    def kernel(out, a):
        kl.store(out, helper(a))

    located_error(build_ir, kernel, {"out": "*i32", "a": "i32"}, "if a > 0:",
                  "one branch of this if returns a value and the other does not", where=helper)


def test_early_return_types_must_agree(jit, build_ir):
    @jit
    def helper(a, x):
        if a > 0:
            return a
        return x

    @jit
    def kernel(out, a, x):
        kl.store(out, helper(a, x))

    located_error(build_ir, kernel, {"out": "*fp32", "a": "i32", "x": "fp32"}, "return x",
                  "Inconsistent return types: the return value is fp32 here but int32 where the then-branch of "
                  "the if at line", where=helper)


def test_kernel_early_return_is_an_if(jit, build_ir):
    @jit
    def kernel(out, n):
        if kl.program_id(0) >= n:
            return
        kl.store(out, 1)

    text = str(build_ir(kernel, {"out": "*i32", "n": "i32"}))
    assert "scf.if" in text and text.count("kiln.store") == 1


def test_tuple_kernel_parameters_are_flattened(jit, build_ir):
    @jit
    def kernel(t, out):
        a, (p, b) = t
        kl.store(p, a + b + len(t[1]))

    signature = {"t": "tuple", "t[0]": "i32", "t[1]": "tuple", "t[1][0]": "*i32", "t[1][1]": "i64", "out": "*i32"}
    text = str(build_ir(kernel, signature, {}))
    assert "@kernel(%t_0: i32" in text and "%t_1_0: !kiln.ptr<i32>" in text and "%t_1_1: i64" in text
    assert "%out: !kiln.ptr<i32>" in text


def test_tuple_kernel_parameter_with_constexpr_leaf(jit, build_ir):
    @jit
    def kernel(t):
        p, n = t
        kl.static_assert(n == 4)
        kl.store(p + kl.arange(0, n), 1)

    text = str(build_ir(kernel, {"t": "tuple", "t[0]": "*i32"}, {"t[1]": 4}))
    assert "tensor<4x!kiln.ptr<i32>>" in text


def test_unknown_tuple_paths_are_reported(jit, build_ir):
    @jit
    def kernel(t):
        pass

    with pytest.raises(CompilationError, match=r"unknown or constexpr parameters: \['u\[0\]'\]"):
        build_ir(kernel, {"t": "tuple", "t[0]": "i32", "u[0]": "i32"}, {})


def test_compile_takes_tuple_signatures(jit):
    @kiln.jit
    def kernel(t):
        kl.store(t[0], t[1])

    compiled = kiln.compile(kernel, {"t": "tuple", "t[0]": "*fp32", "t[1]": "fp32"}, target="cpu")
    assert "t[0]" in compiled.metadata["signature"]
    with pytest.raises(TypeError, match="missing types for t"):
        kiln.compile(kernel, {}, target="cpu")


def test_list_comprehension_errors(jit, build_ir):
    @jit
    def over_range(out):
        t = [i for i in [1, 2]]
        kl.store(out, t[0])

    @jit
    def with_if(out):
        t = [v for v in (1, 2) if v > 1]
        kl.store(out, t[0])

    located_error(build_ir, over_range, {"out": "*i32"}, "t = [i for i in [1, 2]]",
                  "iterates over a tuple, got list")
    located_error(build_ir, with_if, {"out": "*i32"}, "t = [v for v in (1, 2) if v > 1]",
                  "[expr for name in a_tuple]")
