"""Rules of Triton's language that Kiln follows: conditional expressions
with a runtime condition evaluate one side, one-element blocks as
conditions, `None:` slices, noinline calls with scalar arguments only,
constexpr arguments of jit calls, value hints written as statements, abs of
fp8, the TMA block-shape minimum, dtype reprs, and the CUDA launcher's
checks of host memory. Kernels run on the CPU backend; PTX checks compile
for sm_90a without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.compat
import kiln.language as kl
from kiln.compiler.specialization import Specialization
from kiln.errors import CompilationError


# -- conditional expressions ------------------------------------------------------


@kiln.jit
def void_ternary_kernel(counts_ptr):
    pid = kl.program_id(0)
    kl.atomic_add(counts_ptr, 1) if pid % 2 == 0 else kl.atomic_add(counts_ptr + 1, 1)


@kiln.jit
def value_ternary_kernel(out_ptr, counts_ptr, a_ptr, b_ptr, BLOCK: kl.constexpr):
    pid = kl.program_id(0)
    offs = kl.arange(0, BLOCK)
    # Each side counts its evaluation: only the chosen side may run.
    value = kl.load(a_ptr + offs) + kl.atomic_add(counts_ptr, 1) * 0 if pid % 2 == 0 \
        else kl.load(b_ptr) + kl.atomic_add(counts_ptr + 1, 1) * 0
    kl.store(out_ptr + pid * BLOCK + offs, value)


def test_void_conditional_expression_runs_one_side() -> None:
    counts = np.zeros(2, dtype=np.int32)
    void_ternary_kernel[(5, )](counts, backend="cpu")
    np.testing.assert_array_equal(counts, [3, 2])


def test_conditional_expression_evaluates_only_the_chosen_side() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal(8).astype(np.float32)
    b = rng.standard_normal(1).astype(np.float32)
    counts = np.zeros(2, dtype=np.int32)
    out = np.zeros(4 * 8, dtype=np.float32)
    value_ternary_kernel[(4, )](out, counts, a, b, BLOCK=8, backend="cpu")
    np.testing.assert_array_equal(counts, [2, 2])
    expected = np.concatenate([a if pid % 2 == 0 else np.full(8, b[0]) for pid in range(4)])
    np.testing.assert_allclose(out, expected.astype(np.float64), rtol=0, atol=0)


def test_conditional_expression_of_pointers_of_two_types_is_an_error() -> None:
    @kiln.jit
    def kernel(a_ptr, b_ptr: kl.const, flag):
        kl.store(a_ptr if flag > 0 else b_ptr, 1.0)

    with pytest.raises(CompilationError, match="Ternary expression with dynamic condition has inconsistent types"):
        kiln.compile(kernel, {"a_ptr": "*fp32", "b_ptr": "*kfp32", "flag": "i32"}, target="cpu")


# -- one-element blocks as conditions --------------------------------------------------


@kiln.jit
def unsplat_kernel(x_ptr, TWO_D: kl.constexpr):
    if TWO_D:
        condition = kl.load(x_ptr + kl.arange(0, 1)[:, None] + kl.arange(0, 1)[None, :]) > 42
    else:
        condition = kl.load(x_ptr + kl.arange(0, 1)) > 42
    if condition:
        kl.store(x_ptr, 42)


@pytest.mark.parametrize("two_d", [False, True])
def test_one_element_block_is_a_condition(two_d: bool) -> None:
    with pytest.warns(UserWarning, match="If conditional called with multidimensional Tensor"):
        kiln.compile(unsplat_kernel, {"x_ptr": "*i32"}, {"TWO_D": two_d}, target="cpu")
    for value, expected in ((41, 41), (43, 42)):
        x = np.array([value], dtype=np.int32)
        unsplat_kernel[(1, )](x, TWO_D=two_d, backend="cpu")
        assert x[0] == expected


def test_larger_block_condition_is_an_error() -> None:
    @kiln.jit
    def kernel(x_ptr):
        if kl.load(x_ptr + kl.arange(0, 2)) > 0:
            kl.store(x_ptr, 0)

    with pytest.raises(CompilationError, match="an if condition must be a scalar"):
        kiln.compile(kernel, {"x_ptr": "*i32"}, target="cpu")


# -- slices -----------------------------------------------------------------------------


def test_none_bounded_slices_are_whole_axes() -> None:
    @kiln.jit
    def kernel(out_ptr, XBLOCK: kl.constexpr):
        data = kl.arange(0, XBLOCK)
        kl.static_assert(data[None, None:].shape == [1, XBLOCK])
        kl.static_assert(data[None, :None].shape == [1, XBLOCK])
        kl.static_assert(data[None, None:None:None, None].shape == [1, XBLOCK, 1])
        kl.static_assert(data[None, ::None, None].shape == [1, XBLOCK, 1])
        kl.store(out_ptr + kl.arange(0, XBLOCK)[None, None:], data[None, ::None])

    out = np.zeros(8, dtype=np.int32)
    kernel[(1, )](out, XBLOCK=8, backend="cpu")
    np.testing.assert_array_equal(out, np.arange(8))


def test_a_bounded_slice_is_still_an_error() -> None:
    @kiln.jit
    def kernel(out_ptr):
        kl.store(out_ptr + kl.arange(0, 8)[1:], 0)

    with pytest.raises(CompilationError, match="blocks cannot be sliced"):
        kiln.compile(kernel, {"out_ptr": "*i32"}, target="cpu")


# -- jit calls ----------------------------------------------------------------------


@kiln.jit(noinline=True)
def scale_noinline(value, factor):
    return value * factor


@kiln.jit
def pick(a, b, choose_b):
    if choose_b:
        return b
    else:
        return a


def test_noinline_function_with_a_block_argument_is_an_error() -> None:
    @kiln.jit
    def kernel(x_ptr):
        offs = kl.arange(0, 16)
        kl.store(x_ptr + offs, scale_noinline(kl.load(x_ptr + offs), 2.0))

    with pytest.raises(CompilationError, match="marked noinline, but was called with non-scalar argument value"):
        kiln.compile(kernel, {"x_ptr": "*fp32"}, target="cpu")


def test_noinline_function_with_scalar_arguments_runs() -> None:
    @kiln.jit
    def kernel(x_ptr):
        kl.store(x_ptr, scale_noinline(kl.load(x_ptr), 3.0))

    x = np.array([1.5], dtype=np.float32)
    kernel[(1, )](x, backend="cpu")
    assert x[0] == 4.5


def test_constexpr_argument_of_a_jit_call_stays_compile_time() -> None:
    """`pick(a, b, True)` resolves its `if` at compile time, so the branches
    may return values of different types (here a const and a plain pointer)."""
    @kiln.jit
    def kernel(out_ptr, c_ptr: kl.const, CHOOSE_CONST: kl.constexpr):
        target = pick(out_ptr, c_ptr, CHOOSE_CONST)
        kl.store(target, 1.0)

    out = np.zeros(1, dtype=np.float32)
    kernel[(1, )](out, out, CHOOSE_CONST=False, backend="cpu")
    assert out[0] == 1.0
    with pytest.raises(CompilationError, match="Cannot store to a constant pointer"):
        kernel[(1, )](out, out, CHOOSE_CONST=True, backend="cpu")


# -- hints ----------------------------------------------------------------------


@kiln.jit
def hinted_copy_kernel(dst, src, off, N, BLOCK: kl.constexpr, HINT: kl.constexpr):
    offsets = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK) + kl.load(off)
    if HINT:
        kl.max_contiguous(kl.multiple_of(offsets, 1024), 1024)  # result unused: the hint marks `offsets`
    kl.store(dst + offsets, kl.load(src + offsets, mask=offsets < N), mask=offsets < N)


@pytest.mark.parametrize("hint", [False, True])
def test_hint_written_as_a_statement_vectorizes(hint: bool) -> None:
    attrs = Specialization(divisible_by_16=frozenset(["dst", "src", "off", "N"]))
    ptx = kiln.compile(hinted_copy_kernel, {"dst": "*fp32", "src": "*fp32", "off": "*i32", "N": "i32"},
                       {"BLOCK": 1024, "HINT": hint}, target="sm_90a", attrs=attrs).asm["ptx"]
    assert ("ld.global.v4.b32" in ptx) == hint


# -- fp8 abs, TMA block shapes, dtype names ------------------------------------------------


@kiln.jit
def abs_kernel(x_ptr, z_ptr, SIZE: kl.constexpr):
    offs = kl.arange(0, SIZE)
    kl.store(z_ptr + offs, kl.abs(kl.load(x_ptr + offs)))


@pytest.mark.parametrize("dtype", [kl.float8e4nv, kl.float8e5])
def test_abs_of_fp8_clears_the_sign_bit(dtype) -> None:
    codes = np.arange(256, dtype=np.uint8)
    out = np.zeros_like(codes)
    abs_kernel[(1, )](kiln.reinterpret(codes, dtype), kiln.reinterpret(out, dtype), SIZE=256, backend="cpu")
    np.testing.assert_array_equal(out, codes & 0x7F)


@pytest.mark.parametrize("block, dtype", [([1, 2], "*i32"), ([8, 4], "*i16")])
def test_descriptor_rows_under_16_bytes_are_an_error(block, dtype) -> None:
    @kiln.jit
    def kernel(ptr, B0: kl.constexpr, B1: kl.constexpr):
        desc = kl.make_tensor_descriptor(ptr, [128, 128], [128, 1], [B0, B1])
        desc.load([0, 0])

    with pytest.raises(CompilationError, match="Descriptor block shape must have at least 16 bytes"):
        kiln.compile(kernel, {"ptr": dtype}, {"B0": block[0], "B1": block[1]}, target="cpu")


def test_dtype_repr_names_the_language_module(monkeypatch) -> None:
    assert repr(kl.int8) == "kl.int8" and repr(kl.float32) == "kl.float32"
    assert kl.float8e4nv.codegen_name() == "float8e4nv" and kl.bfloat16.codegen_name() == "bfloat16"
    monkeypatch.setattr(kiln.compat, "installed", lambda: True)
    assert repr(kl.int8) == "triton.language.int8"
    assert repr(kl.float16) == "triton.language.float16"


# -- the CUDA launcher and host memory ----------------------------------------------------


class _HostTensor:
    """A torch-like CPU tensor whose pinning is chosen by the test."""

    def __init__(self, pinned: bool) -> None:
        self.pinned = pinned

    def is_pinned(self) -> bool:
        return self.pinned

    def data_ptr(self) -> int:
        return 4096


@pytest.mark.parametrize("pinned", [False, True])
def test_cuda_launch_accepts_pinned_host_memory_only(pinned: bool) -> None:
    from kiln.backends.nvidia import NvidiaBackend
    from kiln.runtime import launch_settings as arrays

    backend = NvidiaBackend()
    value = _HostTensor(pinned)
    if pinned:
        assert backend.check_array("k", "x", value, arrays.ArrayKind.TORCH, "cpu", 0) == 4096
    else:
        with pytest.raises(ValueError, match="argument 'x' is on the CPU"):
            backend.check_array("k", "x", value, arrays.ArrayKind.TORCH, "cpu", 0)
