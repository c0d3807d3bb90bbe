"""GPU-only vector-add tests: what they check exists only on a CUDA device.

* the PTX (128-bit vectorized loads) and the GPU's compile metadata;
* launching on torch's current CUDA stream;
* forcing the CUDA backend with CPU tensors (the GPU launcher's error);
* `kiln.testing.do_bench`, which times with CUDA events.

Correctness over sizes, dtypes, grids and masks runs on every backend in
python/test/kernels/test_vector_add.py.
"""

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.testing import do_bench


@kiln.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    pid = kl.program_id(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


BLOCK = 1024


def inputs(n, seed=0):
    generator = torch.Generator(device="cuda")
    generator.manual_seed(seed)
    x = torch.randn(n, device="cuda", generator=generator)
    y = torch.randn(n, device="cuda", generator=generator)
    return x, y, torch.full((n,), float("nan"), device="cuda")


def test_vectorized_loads_when_aligned():
    n = 98432  # divisible by 16, and torch's allocations are 16-byte aligned
    x, y, out = inputs(n)
    kernel = add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    assert torch.equal(out, x + y)
    assert isinstance(kernel.asm["ptx"], str) and "ld.global.v4.b32" in kernel.asm["ptx"]
    assert kernel.metadata["num_warps"] == 4


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_num_warps_metadata(num_warps):
    n = 100_003
    x, y, out = inputs(n, seed=num_warps)
    kernel = add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, num_warps=num_warps)
    assert torch.equal(out, x + y)
    assert kernel.metadata["num_warps"] == num_warps


def test_launch_on_the_current_stream():
    n = 2**20
    x, y, out = inputs(n)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    stream.synchronize()
    assert torch.equal(out, x + y)


def test_cpu_tensor_is_rejected_when_cuda_is_forced():
    x, y, out = inputs(64)
    with pytest.raises(ValueError, match="argument 'y_ptr' is on the CPU; launch needs CUDA tensors"):
        add_kernel[(1,)](x, y.cpu(), out, 64, BLOCK=64, backend="cuda")
    with pytest.raises(ValueError, match="argument 'y_ptr' is on the CPU but argument 'x_ptr' is on cuda:"):
        add_kernel[(1,)](x, y.cpu(), out, 64, BLOCK=64)
    with pytest.raises(TypeError, match="missing required argument: 'BLOCK'"):
        add_kernel[(1,)](x, y, out, 64)


def test_do_bench_times_a_kernel():
    n = 2**24
    x, y, out = inputs(n)
    ms = do_bench(lambda: add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK), warmup=5, rep=20)
    assert 0 < ms < 100
    low, mid, high = do_bench(lambda: torch.add(x, y, out=out), warmup=5, rep=20, quantiles=[0.2, 0.5, 0.8])
    assert 0 < low <= mid <= high
    assert len(do_bench(lambda: x.add_(0), warmup=1, rep=5, return_mode="all")) >= 1
