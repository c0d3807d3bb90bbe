"""``kl.const`` pointer parameters (Triton's ``tl.const``), on every backend
present: loads through them work, the signature marks them ``*k<type>``,
and storing through them, or an atomic on them, is a compile error at the
line that tries; the const-ness survives pointer arithmetic."""

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.errors import CompilationError


@kiln.jit
def copy_from_const(in_ptr: kl.const, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(in_ptr + offs, mask=mask) * 2.0, mask=mask)


def test_loads_through_a_const_pointer(arrays) -> None:
    x = arrays.randn(100, seed=1)
    out = arrays.full(100, float("nan"), torch.float32)
    compiled = copy_from_const[(1,)](x, out, 100, BLOCK=128)
    torch.testing.assert_close(out, x * 2.0)
    assert compiled.metadata["signature"]["in_ptr"] == "*kfp32"
    assert compiled.metadata["signature"]["out_ptr"] == "*fp32"


@kiln.jit
def store_to_const(in_ptr: kl.const, out_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(in_ptr + offs + 1, kl.load(out_ptr + offs))


@kiln.jit
def atomic_on_const(in_ptr: "kl.const", BLOCK: kl.constexpr):
    kl.atomic_add(in_ptr + kl.arange(0, BLOCK), 1.0)


@kiln.jit
def mixed_pointers(in_ptr: kl.const, out_ptr, pick, BLOCK: kl.constexpr):
    target = out_ptr
    if pick > 0:
        target = in_ptr
    kl.store(out_ptr + kl.arange(0, BLOCK), kl.load(target + kl.arange(0, BLOCK)))


@kiln.jit
def selected_pointers(in_ptr: kl.const, out_ptr, pick, BLOCK: kl.constexpr):
    target = in_ptr if pick > 0 else out_ptr
    kl.store(out_ptr + kl.arange(0, BLOCK), kl.load(target + kl.arange(0, BLOCK)))


def test_writes_through_a_const_pointer_are_compile_errors(arrays) -> None:
    x = arrays.randn(16, seed=2)
    out = arrays.full(16, 0.0, torch.float32)
    with pytest.raises(CompilationError, match="Cannot store to a constant pointer") as error:
        store_to_const[(1,)](x, out, BLOCK=16)
    assert "kl.store(in_ptr + offs + 1" in str(error.value)
    assert error.value.error_message == error.value.message
    with pytest.raises(CompilationError, match="atomic_add cannot write through a constant pointer"):
        atomic_on_const[(1,)](x, BLOCK=16)
    # A const and a plain pointer are different types, so they do not merge.
    with pytest.raises(CompilationError, match="pointer<const fp32>"):
        mixed_pointers[(1,)](x, out, 3, BLOCK=16)
    with pytest.raises(CompilationError, match="pointer<const fp32>"):
        selected_pointers[(1,)](x, out, 3, BLOCK=16)
