"""Vector add on every backend present (the CPU always, the GPU where there is
one): correctness over sizes, dtypes, launch options and grid forms, masked
loads with `other`, multi-dimensional grids, and the in-memory cache."""

import pytest
import torch

import kiln
import kiln.language as kl


@kiln.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    pid = kl.program_id(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "int32": torch.int32}
SIZES = [1, 17, 98432, 2**20 + 3]
BLOCK = 1024
# Random int32 inputs stay within +-2**20, so sums never overflow and can
# never equal the sentinel the output is poisoned with.
INT_RANGE = 2**20
INT_SENTINEL = 2**30 + 7


def inputs(arrays, n, dtype, seed=0):
    """Fresh random x and y (no zeros in int32) and an output poisoned with
    NaN or a sentinel, so an element the kernel skipped cannot pass."""
    if dtype is torch.int32:
        x, y = (arrays.randint(-INT_RANGE, INT_RANGE, n, dtype, seed=seed + k) for k in (0, 1))
        x, y = (torch.where(v == 0, torch.ones_like(v), v) for v in (x, y))
        return x, y, arrays.full(n, INT_SENTINEL, dtype)
    x, y = (arrays.randn(n, dtype, seed=seed + k) for k in (0, 1))
    return x, y, arrays.full(n, float("nan"), dtype)


@pytest.mark.parametrize("dtype_name", list(DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_vector_add(arrays, n, dtype_name):
    dtype = DTYPES[dtype_name]
    x, y, out = inputs(arrays, n, dtype, seed=n)
    add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    assert torch.equal(out, x + y)


def test_vector_add_large(backend, arrays):
    if backend != "cuda":
        pytest.skip("2**28 elements take minutes and 3 GiB on a CI machine's CPU; the CPU runs 2**20 + 3 above")
    n = 2**28
    x, y, out = inputs(arrays, n, torch.float32, seed=1)
    add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    assert torch.equal(out, x + y)
    del x, y, out
    torch.cuda.empty_cache()


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_num_warps(arrays, num_warps):
    n = 100_003
    x, y, out = inputs(arrays, n, torch.float32, seed=num_warps)
    add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, num_warps=num_warps)
    assert torch.equal(out, x + y)


@pytest.mark.parametrize("block", [16, 256, 4096])
def test_block_sizes(arrays, block):
    n = 10_001
    x, y, out = inputs(arrays, n, torch.float32, seed=block)
    add_kernel[(kiln.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    assert torch.equal(out, x + y)


def test_grid_as_tuple_and_callable(arrays):
    n = 5000
    x, y, out = inputs(arrays, n, torch.float32)
    add_kernel[(kiln.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    assert torch.equal(out, x + y)
    out.fill_(float("nan"))
    add_kernel[lambda meta: (kiln.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n, BLOCK=256)
    assert torch.equal(out, x + y)


def test_same_key_does_not_recompile(arrays):
    n = 4096
    x, y, out = inputs(arrays, n, torch.float32)
    first = add_kernel[(kiln.cdiv(n, 512),)](x, y, out, n, BLOCK=512)
    device = arrays.cache_device
    size = len(add_kernel.cache[device])
    x2, y2, out2 = inputs(arrays, 2 * n, torch.float32, seed=1)  # new tensors, same key
    second = add_kernel[(kiln.cdiv(2 * n, 512),)](x2, y2, out2, 2 * n, BLOCK=512)
    assert second is first
    assert len(add_kernel.cache[device]) == size
    assert torch.equal(out2, x2 + y2)
    add_kernel[(kiln.cdiv(n, 512),)](x, y, out, n - 1, BLOCK=512)  # not divisible by 16: a new key
    assert len(add_kernel.cache[device]) == size + 1


def test_compiled_for_the_backend(backend, arrays):
    x, y, out = inputs(arrays, 64, torch.float32)
    kernel = add_kernel[(1,)](x, y, out, 64, BLOCK=64)
    assert kernel.metadata["backend"] == ("cpu" if backend == "cpu" else "nvidia")
    assert "llir" in kernel.asm and "kiln" in kernel.asm


def test_compiled_kernel_launches_and_reports_as_triton(backend, arrays):
    """warmup, _init_handles, n_regs, metadata.shared and kernel[grid](...)
    as Triton's tutorials use them."""
    n = 3000
    x, y, out = inputs(arrays, n, torch.float32, seed=5)
    kernel = add_kernel.warmup(x, y, out, n, BLOCK=1024, grid=(1,), num_warps=4)
    kernel._init_handles()
    if backend == "cuda":
        assert 0 < kernel.n_regs <= 255 and kernel.n_spills == 0
    else:
        assert kernel.n_regs is None
    assert kernel.metadata.shared == kernel.metadata["shared"] and kernel.metadata.num_warps == 4
    assert torch.isnan(out).all()  # warmup launched nothing
    kernel[(kiln.cdiv(n, 1024), 1, 1)](x, y, out, n, 1024)
    assert torch.equal(out, x + y)


@kiln.jit
def masked_other_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    # The output covers the whole grid: lanes past n must hold `other`.
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=offs < n, other=-7.5))


@pytest.mark.parametrize("n", [1, 100, 256])
def test_masked_load_fills_other(arrays, n):
    block, programs = 64, 5
    x = arrays.randn(n, seed=n)
    out = arrays.full(block * programs, float("nan"), torch.float32)
    masked_other_kernel[(programs,)](x, out, n, BLOCK=block)
    expected = torch.cat([x, arrays.full(block * programs - n, -7.5, torch.float32)])
    assert torch.equal(out, expected)


@kiln.jit
def grid_kernel(out_ptr, BLOCK: kl.constexpr):
    x, y, z = kl.program_id(0), kl.program_id(1), kl.program_id(2)
    nx, ny, nz = kl.num_programs(0), kl.num_programs(1), kl.num_programs(2)
    program = (z * ny + y) * nx + x
    offs = program * BLOCK + kl.arange(0, BLOCK)
    value = x + 10 * y + 100 * z + 1000 * nx + 10000 * ny + 100000 * nz
    kl.store(out_ptr + offs, kl.zeros((BLOCK,), dtype=kl.int32) + value + kl.arange(0, BLOCK) * 1000000)


@pytest.mark.parametrize("grid", [(3,), (4, 3), (2, 3, 5), (1, 7, 1)])
def test_program_ids_and_counts(arrays, grid):
    block = 8
    nx, ny, nz = grid + (1,) * (3 - len(grid))
    out = arrays.full(nx * ny * nz * block, -1, torch.int32)
    grid_kernel[grid](out, BLOCK=block)
    expected = [x + 10 * y + 100 * z + 1000 * nx + 10000 * ny + 100000 * nz + 1000000 * lane
                for z in range(nz) for y in range(ny) for x in range(nx) for lane in range(block)]
    assert out.cpu().tolist() == expected
