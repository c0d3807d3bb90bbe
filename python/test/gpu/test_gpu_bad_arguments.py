"""GPU-only: arrays a CUDA launch must refuse before running anything.
(The CPU backend's refusals run in python/test/unit/test_launch_bad_arguments.py.)"""

import pytest
import torch

import kiln
import kiln.language as kl


@kiln.jit
def copy_kernel(src, dst, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(dst + offs, kl.load(src + offs, mask=offs < n), mask=offs < n)


META = "kernel copy_kernel: argument '{}' is a tensor on the 'meta' device, which has no data"


@pytest.mark.parametrize("which", ["src", "dst"])
def test_a_meta_tensor_is_refused_after_a_cuda_launch_of_the_same_key(which):
    src, dst = torch.ones(64, device="cuda"), torch.zeros(64, device="cuda")
    copy_kernel[(1,)](src, dst, 64, BLOCK=64)
    torch.cuda.synchronize()
    assert torch.equal(dst, src)
    arguments = {"src": src, "dst": dst, which: torch.empty(64, device="meta")}
    for options in ({}, {"backend": "cuda"}):
        with pytest.raises(ValueError, match=META.format(which)):
            copy_kernel[(1,)](arguments["src"], arguments["dst"], 64, BLOCK=64, **options)
