"""Small builtins in the frontend: cast rounding, zeros_like, dtype methods,
kl.range's hints; each error at its source line."""

from __future__ import annotations

import pytest

import kiln.language as kl
from kiln.errors import CompilationError
from kiln_test_support import assert_located_error


def test_rounding_needs_a_narrowing_float_cast(jit, build_ir):
    @jit
    def kernel(p, x):
        kl.store(p, x.to(kl.float64, fp_downcast_rounding="rtz"))

    assert_located_error(build_ir, kernel, {"p": "*fp64", "x": "fp32"}, {}, 'fp_downcast_rounding="rtz"',
                         "only for conversions to a narrower float type", "fp32 to kl.float64")


def test_unknown_rounding(jit, build_ir):
    @jit
    def kernel(p, x):
        kl.store(p, kl.cast(x, kl.float16, fp_downcast_rounding="up"))

    assert_located_error(build_ir, kernel, {"p": "*fp16", "x": "fp32"}, {}, 'fp_downcast_rounding="up"',
                         "must be 'rtne' or 'rtz', got 'up'")


def test_rtz_is_a_select_on_the_nearest(jit, build_ir):
    @jit
    def kernel(p, x):
        kl.store(p, x.to(kl.bfloat16, fp_downcast_rounding="rtz"))

    text = str(build_ir(kernel, {"p": "*bf16", "x": "fp32"}))
    assert "arith.truncf" in text and "arith.select" in text and "arith.bitcast" in text


def test_zeros_like_of_a_pointer(jit, build_ir):
    @jit
    def kernel(p):
        kl.store(p, kl.zeros_like(p))

    assert_located_error(build_ir, kernel, {"p": "*fp32"}, {}, "kl.zeros_like(p)",
                         "zeros_like needs a block of numbers")


def test_dtype_methods_and_static_assert(jit, build_ir):
    @jit
    def kernel(p, x):
        kl.static_assert(x.dtype.is_floating(), "x must be a float")
        kl.static_assert(p.dtype.is_ptr() and p.dtype.element_ty.is_int(), "p must point to integers")

    build_ir(kernel, {"p": "*i32", "x": "fp32"})
    assert_located_error(build_ir, kernel, {"p": "*fp32", "x": "fp32"}, {}, "p must point to integers",
                         "static_assert failed: p must point to integers")


def test_shape_is_a_tuple(jit, build_ir):
    """x.shape is a tuple, as in Triton: it compares equal to one and
    concatenates with one; blocks and scalars alike."""
    @jit
    def kernel(p, s):
        x = kl.zeros((4, 8), dtype=kl.float32)
        kl.static_assert(x.shape == (4, 8), "shape")
        kl.static_assert(len(x.shape + (1,)) == 3, "concatenation")
        kl.static_assert(s.shape == (), "scalar shape")
        kl.store(p + kl.arange(0, 8), kl.sum(kl.reshape(x, x.shape + (1,)), axis=0).reshape(8))

    build_ir(kernel, {"p": "*fp32", "s": "fp32"})


def test_range_accepts_triton_hints(jit, build_ir):
    @jit
    def kernel(p, n):
        for i in kl.range(0, n, 1, num_stages=3, loop_unroll_factor=2, flatten=True):
            kl.store(p + i, i)

    ir = str(build_ir(kernel, {"p": "*i32", "n": "i32"}))
    assert "scf.for" in ir
    # num_stages is the loop's own pipelining depth.
    assert "kiln.num_stages = 3 : i32" in ir


def test_range_without_num_stages_uses_the_kernels(jit, build_ir):
    @jit
    def kernel(p, n):
        for i in kl.range(0, n):
            kl.store(p + i, i)

    assert "kiln.num_stages" not in str(build_ir(kernel, {"p": "*i32", "n": "i32"}))


@pytest.mark.parametrize("stages", [0, 1.5, True])
def test_range_num_stages_must_be_a_positive_constexpr(jit, build_ir, stages):
    @jit
    def kernel(p, n, STAGES: kl.constexpr):
        for i in kl.range(0, n, num_stages=STAGES):
            kl.store(p + i, i)

    with pytest.raises(CompilationError, match="num_stages must be a constexpr integer of at least 1"):
        build_ir(kernel, {"p": "*i32", "n": "i32"}, constexprs={"STAGES": stages})


def test_range_num_stages_cannot_be_a_runtime_value(jit, build_ir):
    @jit
    def kernel(p, n):
        for i in kl.range(0, n, num_stages=n):
            kl.store(p + i, i)

    with pytest.raises(CompilationError, match="num_stages must be a constexpr integer"):
        build_ir(kernel, {"p": "*i32", "n": "i32"})


@pytest.mark.parametrize("requested,mark", [(True, "kiln.warp_specialize = true"),
                                            (False, "kiln.warp_specialize = false"), (None, None)])
def test_range_warp_specialize_marks_the_loop(jit, build_ir, requested, mark):
    @jit
    def kernel(p, n, WS: kl.constexpr):
        for i in kl.range(0, n, warp_specialize=WS):
            kl.store(p + i, i)

    ir = str(build_ir(kernel, {"p": "*i32", "n": "i32"}, constexprs={"WS": requested}))
    if mark is None:  # the compiler decides
        assert "kiln.warp_specialize" not in ir
    else:
        assert mark in ir


@pytest.mark.parametrize("requested", [1, "yes"])
def test_range_warp_specialize_must_be_a_constexpr_bool(jit, build_ir, requested):
    @jit
    def kernel(p, n, WS: kl.constexpr):
        for i in kl.range(0, n, warp_specialize=WS):
            kl.store(p + i, i)

    with pytest.raises(CompilationError, match="warp_specialize must be a constexpr bool or None, got"):
        build_ir(kernel, {"p": "*i32", "n": "i32"}, constexprs={"WS": requested})


def test_where_between_a_pointer_and_a_number(jit, build_ir):
    @jit
    def kernel(x_ptr):
        p = kl.where(kl.arange(0, 16) < 4, x_ptr, 0)

    assert_located_error(build_ir, kernel, {"x_ptr": "*fp32"}, {}, "kl.where(",
                         "where cannot choose between a pointer and a non-pointer, got pointer<fp32> and int")


def test_where_between_pointers_of_two_types(jit, build_ir):
    @jit
    def kernel(x_ptr, y_ptr):
        p = kl.where(kl.arange(0, 16) < 4, x_ptr, y_ptr)

    assert_located_error(build_ir, kernel, {"x_ptr": "*fp32", "y_ptr": "*i32"}, {}, "kl.where(",
                         "where needs pointers of one type")


def test_where_between_pointers_compiles_for_the_gpu():
    import kiln

    @kiln.jit
    def kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        p = kl.where(offs % 2 == 0, a_ptr + offs, b_ptr + offs)
        kl.store(out_ptr + offs, kl.load(kl.where(n > 0, p, a_ptr)))

    compiled = kiln.compile(kernel, signature={"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                            constexprs={"BLOCK": 128}, target="sm_90a")
    assert "selp" in compiled.asm["ptx"]


def test_shape_equals_a_list(jit, build_ir):
    """As Triton's tuples: a shape compares equal to a list of its sizes."""
    @jit
    def kernel(p):
        x = kl.zeros((4, 8), dtype=kl.float32)
        kl.static_assert(x.shape == [4, 8], "equal to a list")
        kl.static_assert(x.shape != [8, 4], "not equal to another list")
        kl.static_assert([1, 2] == (1, 2), "a list literal and a tuple")
        kl.store(p, kl.sum(kl.sum(x, axis=0), axis=0))

    build_ir(kernel, {"p": "*fp32"})


def test_isinstance_hasattr_getattr_on_runtime_values(jit, build_ir):
    """They inspect the value's Python object while compiling, as in Triton."""
    @jit
    def kernel(p, n):
        kl.static_assert(isinstance(n, kl.tensor) and hasattr(n, "dtype"), "a runtime value is a tensor")
        kl.static_assert(isinstance(getattr(p, "dtype"), kl.pointer_type), "p is a pointer")
        kl.static_assert(not hasattr(n, "no_such_attribute"), "hasattr of a missing name")
        if hasattr(p, "dtype") and isinstance(p.dtype, kl.pointer_type) and p.dtype.element_ty == kl.int32:
            kl.store(p, n)

    build_ir(kernel, {"p": "*i32", "n": "i32"})
