"""Vector add on the GPU: correctness over sizes, dtypes and launch options,
the compiled kernel's PTX, the in-memory cache, streams and launch errors."""

import re

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


DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "int32": torch.int32}
SIZES = [1, 17, 98432, 2**20 + 3, 2**28]
BLOCK = 1024
# Random int32 inputs stay within +-2**20, so sums never overflow and can
# never equal the sentinel the output is poisoned with.
INT_RANGE = 2**20
INT_SENTINEL = 2**30 + 7


def random_input(n, dtype, generator):
    if dtype is torch.int32:
        values = torch.randint(-INT_RANGE, INT_RANGE, (n,), dtype=dtype, device="cuda", generator=generator)
        return torch.where(values == 0, torch.ones_like(values), values)
    values = torch.randn(n, dtype=torch.float32, device="cuda", generator=generator)
    return values.to(dtype)


def poisoned(n, dtype):
    if dtype is torch.int32:
        return torch.full((n,), INT_SENTINEL, dtype=dtype, device="cuda")
    return torch.full((n,), float("nan"), dtype=dtype, device="cuda")


def inputs(n, dtype, seed=0):
    generator = torch.Generator(device="cuda")
    generator.manual_seed(seed)
    return random_input(n, dtype, generator), random_input(n, dtype, generator), poisoned(n, dtype)


@pytest.mark.parametrize("dtype_name", list(DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_vector_add(n, dtype_name):
    dtype = DTYPES[dtype_name]
    x, y, out = inputs(n, dtype, seed=n)
    add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    assert torch.equal(out, x + y)
    del x, y, out
    torch.cuda.empty_cache()


def test_vectorized_loads_when_aligned():
    n = 98432  # divisible by 16, and torch's allocations are 16-byte aligned
    x, y, out = inputs(n, torch.float32)
    kernel = add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    assert torch.equal(out, x + y)
    assert isinstance(kernel.asm["ptx"], str) and "ld.global.v4.b32" in kernel.asm["ptx"]
    assert kernel.metadata["num_warps"] == 4


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_num_warps(num_warps):
    n = 100_003
    x, y, out = inputs(n, torch.float32, seed=num_warps)
    kernel = add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, num_warps=num_warps)
    assert torch.equal(out, x + y)
    assert kernel.metadata["num_warps"] == num_warps


def test_grid_as_tuple_and_callable():
    n = 5000
    x, y, out = inputs(n, torch.float32)
    add_kernel[(kiln.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    assert torch.equal(out, x + y)
    out.fill_(float("nan"))
    add_kernel[lambda meta: (kiln.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n, BLOCK=256)
    assert torch.equal(out, x + y)


def test_same_key_does_not_recompile():
    n = 4096
    x, y, out = inputs(n, torch.float32)
    first = add_kernel[(kiln.cdiv(n, 512),)](x, y, out, n, BLOCK=512)
    device = torch.cuda.current_device()
    size = len(add_kernel.cache[device])
    x2, y2, out2 = inputs(2 * n, torch.float32, seed=1)  # new tensors, same key
    second = add_kernel[(kiln.cdiv(2 * n, 512),)](x2, y2, out2, 2 * n, BLOCK=512)
    assert second is first
    assert len(add_kernel.cache[device]) == size
    assert torch.equal(out2, x2 + y2)
    add_kernel[(kiln.cdiv(n, 512),)](x, y, out, n - 1, BLOCK=512)  # not divisible by 16: a new key
    assert len(add_kernel.cache[device]) == size + 1


def test_launch_on_the_current_stream():
    n = 2**20
    x, y, out = inputs(n, torch.float32)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    stream.synchronize()
    assert torch.equal(out, x + y)


def test_cpu_tensor_is_rejected():
    x, y, out = inputs(64, torch.float32)
    with pytest.raises(ValueError, match="argument 'y_ptr' is on the CPU; launch needs CUDA tensors"):
        add_kernel[(1,)](x, y.cpu(), out, 64, BLOCK=64)
    with pytest.raises(TypeError, match="missing required argument: 'BLOCK'"):
        add_kernel[(1,)](x, y, out, 64)


def test_do_bench_times_a_kernel():
    n = 2**24
    x, y, out = inputs(n, torch.float32)
    ms = do_bench(lambda: add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK), warmup=5, rep=20)
    assert 0 < ms < 100
    low, mid, high = do_bench(lambda: torch.add(x, y, out=out), warmup=5, rep=20, quantiles=[0.2, 0.5, 0.8])
    assert 0 < low <= mid <= high
    assert len(do_bench(lambda: x.add_(0), warmup=1, rep=5, return_mode="all")) >= 1
