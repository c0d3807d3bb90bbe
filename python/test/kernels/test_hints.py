"""Hints and debug barriers change no results: kernels using them compute
the same rows on every backend present. Offsets whose runs the axis-info
analysis must not overstate (remainders that wrap mid-block) address the
right elements."""

import pytest
import torch

import kiln
import kiln.language as kl


@kiln.jit
def scaled_rows_kernel(x_ptr, y_ptr, stride, BLOCK: kl.constexpr):
    kl.assume(stride % 16 == 0)
    start = kl.multiple_of(kl.program_id(0) * stride, 16)
    offs = kl.max_contiguous(start + kl.arange(0, BLOCK), BLOCK)
    x = kl.load(x_ptr + offs)
    kl.debug_barrier()
    scale = kl.max_constancy(kl.zeros([BLOCK], kl.int32) + kl.program_id(0), BLOCK)
    kl.store(y_ptr + offs, x * (scale + 1).to(kl.float32))


def test_hinted_rows(arrays):
    rows, stride, block = 6, 48, 32
    x = arrays.randn(rows * stride, torch.float32, seed=5)
    y = arrays.full(rows * stride, float("nan"), torch.float32)
    scaled_rows_kernel[(rows,)](x, y, stride, BLOCK=block)
    x2, y2 = x.cpu().view(rows, stride), y.cpu().view(rows, stride)
    factors = torch.arange(1, rows + 1, dtype=torch.float32)[:, None]
    assert torch.equal(y2[:, :block], x2[:, :block] * factors)
    assert bool(torch.isnan(y2[:, block:]).all())


@kiln.jit
def rotate_kernel(x_ptr, y_ptr, SHIFT: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(y_ptr + (offs + SHIFT) % BLOCK, kl.load(x_ptr + offs))


@pytest.mark.parametrize("shift", [1, 4, 100, 128])
def test_rotation_by_a_remainder(arrays, shift):
    # (offs + SHIFT) % BLOCK runs to BLOCK - 1, then wraps to 0 mid-block.
    block = 256
    x = arrays.randn(block, torch.float32, seed=shift)
    y = arrays.full(block, float("nan"), torch.float32)
    rotate_kernel[(1,)](x, y, SHIFT=shift, BLOCK=block)
    assert torch.equal(y.cpu(), torch.roll(x.cpu(), shift))


@kiln.jit
def signed_remainder_kernel(x_ptr, y_ptr, shift, BLOCK: kl.constexpr, SHIFT: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    # Below zero, C's remainder by 256 goes 0, -255, ..., -1, 0, 1, ...: no
    # run is aligned to where it starts. x_ptr + 256 keeps the accesses
    # aligned, so that only the runs decide how wide they are.
    if SHIFT:
        below = offs - shift
    else:
        below = offs - 512
    kl.store(y_ptr + offs, kl.load(x_ptr + 256 + below % 256))


@pytest.mark.parametrize("runtime_shift", [False, True])
def test_signed_remainder_of_negative_offsets(arrays, runtime_shift):
    x = arrays.randn(512, torch.float32, seed=9)
    y = arrays.full(1024, float("nan"), torch.float32)
    signed_remainder_kernel[(1,)](x, y, 512, BLOCK=1024, SHIFT=runtime_shift)
    index = torch.fmod(torch.arange(1024) - 512, 256) + 256
    assert torch.equal(y.cpu(), x.cpu()[index])
