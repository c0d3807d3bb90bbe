"""Hints without a GPU: a row offset that only kl.multiple_of (or kl.assume)
proves 16-aligned becomes ld.global.v4 accesses; kl.debug_barrier is a
bar.sync; misuse is a CompilationError at the call."""

from __future__ import annotations

import re

import pytest

import kiln
import kiln.language as kl
from kiln.backends.nvidia import find_ptxas
from kiln.compiler.specialization import Specialization
from kiln.errors import CompilationError


@kiln.jit
def row_copy(x_ptr, y_ptr, stride, HINT: kl.constexpr, BLOCK: kl.constexpr):
    start = kl.program_id(0) * stride
    if HINT == "multiple_of":
        start = kl.multiple_of(start, 16)
    if HINT == "assume":
        kl.assume(stride % 16 == 0)
        kl.assume(stride > 0)  # accepted, not used
    offs = start + kl.arange(0, BLOCK)
    if HINT == "max_contiguous":
        offs = kl.max_contiguous(kl.multiple_of(offs, BLOCK), BLOCK)
    kl.store(y_ptr + offs, kl.load(x_ptr + offs))


# The stride is not specialized: nothing but a hint can prove its alignment.
POINTERS_ALIGNED = Specialization(divisible_by_16=frozenset({"x_ptr", "y_ptr"}))


def global_accesses(hint: str, target: str = "sm_90a") -> set[str]:
    kernel = kiln.compile(row_copy, {"x_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32"},
                          {"HINT": hint, "BLOCK": 512}, target=target, attrs=POINTERS_ALIGNED)
    if find_ptxas() is not None:
        assert kernel.asm["cubin"][:4] == b"\x7fELF"
    return set(re.findall(r"\b(ld\.global\S*|st\.global\S*)", kernel.asm["ptx"]))


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_without_a_hint_accesses_are_scalar(target: str) -> None:
    assert global_accesses("none", target) == {"ld.global.b32", "st.global.b32"}


@pytest.mark.parametrize("hint", ["multiple_of", "assume", "max_contiguous"])
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_hint_makes_accesses_vectorized(hint: str, target: str) -> None:
    assert global_accesses(hint, target) == {"ld.global.v4.b32", "st.global.v4.b32"}


@kiln.jit
def barrier_kernel(x_ptr):
    kl.store(x_ptr, 1)
    kl.debug_barrier()
    kl.store(x_ptr + 1, 2)


def test_debug_barrier_is_bar_sync() -> None:
    ptx = kiln.compile(barrier_kernel, {"x_ptr": "*i32"}, target="sm_90a").asm["ptx"]
    assert re.search(r"st\.global\.b32.*\n(.*\n)*\s*bar\.sync\s+0;\n(.*\n)*.*st\.global\.b32", ptx), ptx


@kiln.jit
def bad_hint_kernel(x_ptr, n, WHICH: kl.constexpr):
    offs = kl.arange(0, 16)
    if WHICH == 0:
        offs = kl.multiple_of(offs, [16, 16])
    if WHICH == 1:
        offs = kl.max_contiguous(offs, 0)
    if WHICH == 2:
        offs = kl.max_constancy(x_ptr, 16)
    if WHICH == 3:
        offs = kl.multiple_of(offs, n)
    kl.store(x_ptr + offs, 0)


@pytest.mark.parametrize("which,message", [
    (0, "multiple_of needs 1 value (one per dimension), got 2"),
    (1, "max_contiguous values must be positive, got [0]"),
    (2, "max_constancy needs an integer tensor, got pointer<int32>"),
    (3, "multiple_of needs a constant integer or a list of them"),
])
def test_hint_errors(which: int, message: str) -> None:
    with pytest.raises(CompilationError) as info:
        kiln.compile(bad_hint_kernel, {"x_ptr": "*i32", "n": "i32"}, {"WHICH": which}, target="cpu")
    assert message in str(info.value)
    assert info.value.filename == __file__ and "kl." in info.value.source_line
