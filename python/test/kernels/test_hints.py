"""Hints and debug barriers change no results: kernels using them compute
the same rows on every backend present."""

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
