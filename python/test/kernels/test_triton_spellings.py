"""Triton's second spellings of Kiln builtins, on every backend present,
against torch: ``kl.math.<fn>``, ``kl.add/sub/mul`` as functions, the block
methods (``x.sum()``, ``x.exp()``, ``x.broadcast_to(4, 16)``, ``x.abs()``),
and shapes comparing equal to lists."""

import torch

import kiln
import kiln.language as kl


@kiln.jit
def math_spellings_kernel(x_ptr, y_ptr, out_ptr, N: kl.constexpr):
    offs = kl.arange(0, N)
    x = kl.load(x_ptr + offs)
    y = kl.load(y_ptr + offs)
    r = kl.math.exp2(kl.math.fma(x, y, 1.0)) + kl.math.sqrt_rn(kl.math.abs(y)) + kl.math.div_rn(x, y)
    r += kl.add(x, y) * kl.sub(x, y) + kl.mul(x, 3.0)
    r += x.exp() + (-x).abs() + y.abs().log2() + x.erf() * kl.math.erf(x)
    kl.store(out_ptr + offs, r)


def test_math_module_and_arithmetic_functions(arrays) -> None:
    n = 64
    x, y = arrays.randn(n, seed=1), arrays.randn(n, seed=2) + 4.0
    out = arrays.full(n, float("nan"), torch.float32)
    math_spellings_kernel[(1,)](x, y, out, N=n)
    expected = (torch.exp2(x * y + 1) + torch.sqrt(y.abs()) + x / y + (x + y) * (x - y) + 3 * x + torch.exp(x)
                + x.abs() + torch.log2(y.abs()) + torch.erf(x) ** 2)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    assert kl.math.exp2 is kl.exp2 and kl.pi32_t == kl.pointer_type(kl.int32)


@kiln.jit
def method_spellings_kernel(x_ptr, out_ptr, M: kl.constexpr, N: kl.constexpr):
    row = kl.arange(0, N)
    x = kl.load(x_ptr + row)
    grid = x.expand_dims(0).broadcast_to(M, N)
    kl.static_assert(grid.shape == [M, N])
    kl.static_assert(x.expand_dims(1).broadcast_to([N, M]).shape == (N, M))
    kl.static_assert(grid.shape != [N, M + 1])
    offs = kl.arange(0, M)[:, None] * N + row[None, :]
    kl.store(out_ptr + offs, grid.cumsum(axis=1) + grid.sum(axis=1)[:, None] + grid.max(axis=1)[:, None] * 0.5
             + grid.argmax(axis=1).to(kl.float32)[:, None] * 0.25)


def test_block_methods_and_shape_equality(arrays) -> None:
    m, n = 4, 32
    x = arrays.randn(n, seed=3)
    out = arrays.full(m * n, float("nan"), torch.float32)
    method_spellings_kernel[(1,)](x, out, M=m, N=n)
    row = torch.cumsum(x, 0) + x.sum() + x.max() * 0.5 + x.argmax().float() * 0.25
    torch.testing.assert_close(out.reshape(m, n), row.expand(m, n), rtol=1e-4, atol=1e-4)


@kiln.jit
def swizzle_kernel(out_ptr, size_i, size_j, size_g, BLOCK_I: kl.constexpr, BLOCK_J: kl.constexpr):
    i = kl.arange(0, BLOCK_I)[:, None]
    j = kl.arange(0, BLOCK_J)[None, :]
    mask = (i < size_i) & (j < size_j)
    new_i, new_j = kl.swizzle2d(i, j, size_i, size_j, size_g)
    kl.store(out_ptr + new_i * size_j + new_j, i * size_j + j, mask=mask)


def grouped_order(size_i: int, size_j: int, size_g: int) -> list[list[int]]:
    """The reference: walk the groups of size_g rows, each column by column."""
    out = [[-1] * size_j for _ in range(size_i)]
    visited = 0
    for first in range(0, size_i, size_g):
        for col in range(size_j):
            for row in range(first, min(first + size_g, size_i)):
                out[row][col] = visited
                visited += 1
    return out


def test_swizzle2d(arrays) -> None:
    for size_i, size_j, size_g in [(5, 7, 3), (8, 4, 2), (6, 6, 6), (3, 5, 1)]:
        out = arrays.full(size_i * size_j, -1, torch.int32)
        swizzle_kernel[(1,)](out, size_i, size_j, size_g, BLOCK_I=8, BLOCK_J=8)
        expected = torch.tensor(grouped_order(size_i, size_j, size_g), dtype=torch.int32)
        assert torch.equal(out.cpu().reshape(size_i, size_j), expected), (size_i, size_j, size_g)


@kiln.jit
def item_kernel(x_ptr, out_ptr, N: kl.constexpr):
    offs = kl.arange(0, N)
    fourth = kl.sum(kl.load(x_ptr + offs, mask=offs == 3, other=0.0), axis=0, keep_dims=True)
    kl.static_assert(fourth.shape == [1])
    kl.store(out_ptr + offs, kl.load(x_ptr + offs) * fourth.item() + kl.full((1, 1), 2.0, kl.float32).item())


def test_item_turns_a_one_element_block_into_a_scalar(arrays) -> None:
    n = 32
    x = arrays.randn(n, seed=4)
    out = arrays.full(n, float("nan"), torch.float32)
    item_kernel[(1,)](x, out, N=n)
    torch.testing.assert_close(out, x * x[3] + 2.0, rtol=1e-5, atol=1e-5)
