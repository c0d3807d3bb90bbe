"""None for a parameter that is not a constexpr: as in Triton, the kernel is
specialized on the constexpr None, so ``if p is None:`` picks a branch at
compile time (the other branch, which may use ``p`` as a pointer, is never
built), on every backend present, against torch."""

import torch

import kiln
import kiln.language as kl


@kiln.jit
def _scaled(values, scale_ptr):
    # A helper receives the None as well.
    if scale_ptr is None:
        return values
    return values * kl.load(scale_ptr)


@kiln.jit
def optional_scale_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = _scaled(kl.load(x_ptr + offs, mask=mask), scale_ptr)
    if bias_ptr is not None:
        x += kl.load(bias_ptr + offs, mask=mask)
    kl.store(out_ptr + offs, x, mask=mask)


def test_none_arguments_pick_the_branch(arrays) -> None:
    n = 300
    x, bias = arrays.randn(n, seed=1), arrays.randn(n, seed=2)
    scale = arrays.full(1, 3.0, torch.float32)
    grid = (kiln.cdiv(n, 128),)
    for scale_arg, bias_arg, expected in [(None, None, x), (scale, None, x * 3), (None, bias, x + bias),
                                          (scale, bias, x * 3 + bias)]:
        out = arrays.full(n, float("nan"), torch.float32)
        optional_scale_kernel[grid](x, scale_arg, bias_arg, out, n, BLOCK=128)
        torch.testing.assert_close(out, expected)
    # One compiled kernel per combination of None and array arguments.
    assert len(optional_scale_kernel.cache[arrays.cache_device]) == 4
