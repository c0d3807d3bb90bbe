"""Blocks of two dimensions, built with `x[:, None]` / `x[None, :]` and
broadcasting, on every backend present: strided 2-D loads and stores with
masks, row vectors broadcast across columns, and outer products. Compared
with torch in float64 on fresh random inputs."""

import pytest
import torch

import kiln
import kiln.language as kl


@kiln.jit
def scale_rows_kernel(x_ptr, s_ptr, out_ptr, M, N, stride_x, stride_out, BM: kl.constexpr, BN: kl.constexpr):
    rows = kl.program_id(0) * BM + kl.arange(0, BM)
    cols = kl.program_id(1) * BN + kl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = kl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    s = kl.load(s_ptr + rows, mask=rows < M, other=0.0)
    kl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], x * s[:, None], mask=mask)


@pytest.mark.parametrize("shape", [(1, 1), (37, 45), (64, 128), (130, 257)])
@pytest.mark.parametrize("blocks", [(16, 32), (32, 64), (1, 128)])
def test_scale_rows(arrays, shape, blocks) -> None:
    M, N = shape
    BM, BN = blocks
    # A padded row stride: rows are not contiguous with each other.
    x_padded = arrays.randn(M * (N + 3), seed=M + N).reshape(M, N + 3)
    x = x_padded[:, :N]
    s = arrays.randn(M, seed=7)
    out = arrays.full((M, N), float("nan"), torch.float32)
    grid = (kiln.cdiv(M, BM), kiln.cdiv(N, BN))
    scale_rows_kernel[grid](x, s, out, M, N, x.stride(0), out.stride(0), BM=BM, BN=BN)
    expected = x.double() * s.double()[:, None]
    assert torch.equal(out.double(), expected.float().double())


@kiln.jit
def outer_kernel(x_ptr, y_ptr, out_ptr, M, N, BM: kl.constexpr, BN: kl.constexpr):
    rows = kl.arange(0, BM)
    cols = kl.arange(0, BN)
    x = kl.load(x_ptr + rows, mask=rows < M, other=0.0)
    y = kl.load(y_ptr + cols, mask=cols < N, other=0.0)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    kl.store(out_ptr + rows[:, None] * N + cols[None, :], x[:, None] * y[None, :] + 1.0, mask=mask)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("shape", [(16, 16), (20, 100), (64, 8)])
def test_outer_product(arrays, shape, num_warps) -> None:
    M, N = shape
    BM, BN = 64, 128
    x = arrays.randn(M, seed=1)
    y = arrays.randn(N, seed=2)
    out = arrays.full((M, N), float("nan"), torch.float32)
    outer_kernel[(1,)](x, y, out, M, N, BM=BM, BN=BN, num_warps=num_warps)
    expected = (x.double()[:, None] * y.double()[None, :]).float() + 1.0
    if arrays.backend == "cuda":
        # The GPU contracts a * b + c into one fma (Triton's default), which
        # rounds once: within an ulp of the twice-rounded result.
        torch.testing.assert_close(out, expected, rtol=2.5e-7, atol=1e-7)
    else:
        assert torch.equal(out, expected)
