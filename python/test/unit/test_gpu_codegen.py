"""Properties of the PTX that decide speed, checked without a GPU: vector
accesses with loop-carried offsets, masks kept as one predicate per lane,
Triton's division instructions, and reductions across lanes and warps
(shuffles, shared memory)."""

import re

import pytest

import kiln
import kiln.language as kl
from kiln.compiler.specialization import Specialization
from kiln.backends.nvidia import find_ptxas


@kiln.jit
def strided_loop_copy(X, Y, N, BLOCK: kl.constexpr):
    for off in range(0, N, BLOCK):
        cols = off + kl.arange(0, BLOCK)
        kl.store(Y + cols, kl.load(X + cols, mask=cols < N, other=0.), mask=cols < N)


@kiln.jit
def masked_centered_sum(X, Y, N, BLOCK: kl.constexpr):
    # Layer norm's second pass over a row: a masked load, then the mask again
    # in a where.
    cols = kl.arange(0, BLOCK)
    x = kl.load(X + cols, mask=cols < N, other=0.0).to(kl.float32)
    centered = kl.where(cols < N, x - 1.0, 0.0)
    kl.store(Y, kl.sum(centered * centered, axis=0))


@kiln.jit
def divide(X, Y, Q, R, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(X + offs)
    y = kl.load(Y + offs)
    kl.store(Q + offs, x / y)
    kl.store(R + offs, kl.div_rn(x, y))


@kiln.jit
def row_max(X, Out, N: kl.constexpr):
    x = kl.load(X + kl.arange(0, N))
    kl.store(Out, kl.max(x, axis=0))


def _ptx(fn, signature, constexprs, target="sm_90a", num_warps=4, divisible=()):
    compiled = kiln.compile(fn, signature=signature, constexprs=constexprs, target=target, num_warps=num_warps,
                            attrs=Specialization(divisible_by_16=frozenset(divisible)))
    return compiled


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_loop_offsets_vectorize(target) -> None:
    # The induction variable of `range(0, N, BLOCK)` is a multiple of BLOCK:
    # each thread moves 16 bytes per instruction.
    compiled = _ptx(strided_loop_copy, {"X": "*fp16", "Y": "*fp16", "N": "i32"}, {"BLOCK": 1024}, target,
                    divisible=("X", "Y", "N"))
    ptx = compiled.asm["ptx"]
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx, ptx
    assert "ld.global.b16" not in ptx


@pytest.mark.parametrize("block,num_warps", [(16384, 8), (2048, 4)])
def test_masks_stay_single_predicates(block, num_warps) -> None:
    # 64 (or 16) elements a thread: a vector of 64 i1 that the NVPTX
    # backend, left to itself, packs into an i64 and shifts back out lane by
    # lane. Split per lane, each vector load takes one compare, and the where
    # one compare and one select per element, with no 16-bit packing.
    ptx = _ptx(masked_centered_sum, {"X": "*fp16", "Y": "*fp32", "N": "i32"}, {"BLOCK": block},
               num_warps=num_warps, divisible=("X", "Y", "N")).asm["ptx"]
    per_thread = block // (32 * num_warps)
    loads = re.findall(r"@%p\d+ ld\.global\.v4\.b32", ptx)
    assert len(loads) == per_thread // 8, ptx
    assert "selp.b16" not in ptx and "shl.b16" not in ptx, ptx
    assert len(re.findall(r"setp\.lt\.s32", ptx)) <= per_thread + per_thread // 8


def test_division_instructions() -> None:
    ptx = _ptx(divide, {"X": "*fp32", "Y": "*fp32", "Q": "*fp32", "R": "*fp32"}, {"BLOCK": 128}).asm["ptx"]
    assert "div.full.f32" in ptx  # `/`, as Triton's
    assert "div.rn.f32" in ptx  # kl.div_rn, correctly rounded


@pytest.mark.parametrize("num_warps,shared", [(1, 0), (4, True), (8, True)])
def test_reduction_crosses_lanes_and_warps(num_warps, shared) -> None:
    compiled = _ptx(row_max, {"X": "*fp32", "Out": "*fp32"}, {"N": 4096}, num_warps=num_warps)
    ptx = compiled.asm["ptx"]
    # 32 lanes: 5 butterfly steps; then each warp's lanes combine the warps'
    # partials, log2(num_warps) more.
    steps = 5 + (num_warps.bit_length() - 1)
    assert len(re.findall(r"shfl\.sync\.bfly\.b32", ptx)) == steps
    if shared:
        # One partial per warp in shared memory, between barriers.
        assert compiled.metadata["shared"] >= 4 * num_warps
        assert "bar.sync" in ptx and "st.shared" in ptx
    else:
        assert compiled.metadata["shared"] == 0
        assert "bar.sync" not in ptx
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]
