"""Block pointers (kl.make_block_ptr, kl.advance, loads and stores with
boundary_check and padding_option) on every backend present, compared with
torch on fresh random inputs: tiles at and past the edges, strided and
transposed views, block pointers carried through for and while loops and if
branches, and passed to and returned from helpers."""

import pytest
import torch

import kiln
import kiln.language as kl


@kiln.jit
def copy_tile_kernel(x_ptr, out_ptr, M, N, sxm, sxn, som, son, BM: kl.constexpr, BN: kl.constexpr,
                     PADDING: kl.constexpr):
    pid_m = kl.program_id(0)
    pid_n = kl.program_id(1)
    x = kl.make_block_ptr(x_ptr, shape=(M, N), strides=(sxm, sxn), offsets=(pid_m * BM, pid_n * BN),
                          block_shape=(BM, BN), order=(1, 0))
    # The output is a (grid_m * BM, grid_n * BN) buffer: no check needed.
    o = kl.make_block_ptr(out_ptr, (kl.num_programs(0) * BM, kl.num_programs(1) * BN), (som, son),
                          (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    kl.store(o, kl.load(x, boundary_check=(0, 1), padding_option=PADDING))


@pytest.mark.parametrize("padding", ["zero", "nan"])
@pytest.mark.parametrize("shape", [(37, 45), (64, 32), (5, 130)])
def test_load_padding(arrays, shape, padding) -> None:
    M, N = shape
    BM, BN = 16, 32
    x = arrays.randn(M * N, seed=M * 7 + N).reshape(M, N)
    gm, gn = kiln.cdiv(M, BM), kiln.cdiv(N, BN)
    out = arrays.full((gm * BM, gn * BN), 123.0, torch.float32)
    copy_tile_kernel[(gm, gn)](x, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BM=BM, BN=BN,
                               PADDING=padding)
    expected = torch.full_like(out, 0.0 if padding == "zero" else float("nan"))
    expected[:M, :N] = x
    assert torch.equal(out[:M, :N], x)
    assert torch.allclose(out, expected, equal_nan=True, rtol=0, atol=0)


def test_transposed_view(arrays) -> None:
    # A transposed (column-major) view: strides (1, M), not contiguous rows.
    M, N = 40, 24
    base = arrays.randn(N * M, seed=3).reshape(N, M)
    x = base.t()
    out = arrays.full((64, 32), 0.0, torch.float32)
    copy_tile_kernel[(1, 1)](x, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BM=64, BN=32,
                             PADDING="zero")
    assert torch.equal(out[:M, :N], x)
    assert torch.count_nonzero(out[M:, :]) == 0 and torch.count_nonzero(out[:, N:]) == 0


@kiln.jit
def store_clipped_kernel(x_ptr, out_ptr, M, N, BM: kl.constexpr, BN: kl.constexpr):
    x = kl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    o = kl.make_block_ptr(out_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    kl.store(o, kl.load(x, boundary_check=(0, 1)) * 2.0, boundary_check=(0, 1))


def test_store_boundary_check(arrays) -> None:
    # A guard row after the output: a store past the bounds would change it.
    M, N = 13, 27
    x = arrays.randn(M * N, seed=11).reshape(M, N)
    out = arrays.full((M + 4, N), -1.0, torch.float32)
    store_clipped_kernel[(1,)](x, out, M, N, BM=16, BN=32)
    assert torch.equal(out[:M], x * 2.0)
    assert torch.equal(out[M:], torch.full_like(out[M:], -1.0))


@kiln.jit
def row_block_sums_kernel(a_ptr, out_ptr, M, K, sam, sak, BM: kl.constexpr, BK: kl.constexpr):
    # The matmul pattern: walk a row of tiles, advancing the block pointer.
    pid = kl.program_id(0)
    a = kl.make_block_ptr(a_ptr, (M, K), (sam, sak), (pid * BM, 0), (BM, BK), (1, 0))
    acc = kl.zeros((BM, BK), dtype=kl.float32)
    for _ in range(0, K, BK):
        acc += kl.load(a, boundary_check=(0, 1), padding_option="zero")
        a = kl.advance(a, (0, BK))
    rows = pid * BM + kl.arange(0, BM)
    cols = kl.arange(0, BK)
    kl.store(out_ptr + rows[:, None] * BK + cols[None, :], acc, mask=rows[:, None] < M)


@pytest.mark.parametrize("shape", [(33, 100), (16, 64), (70, 7)])
def test_advance_in_for_loop(arrays, shape) -> None:
    M, K = shape
    BM, BK = 16, 32
    a = arrays.randn(M * K, seed=M + K).reshape(M, K)
    out = arrays.full((M, BK), float("nan"), torch.float32)
    row_block_sums_kernel[(kiln.cdiv(M, BM),)](a, out, M, K, a.stride(0), a.stride(1), BM=BM, BK=BK)
    padded = torch.zeros(M, kiln.cdiv(K, BK) * BK, dtype=torch.float64, device=a.device)
    padded[:, :K] = a.double()
    expected = padded.reshape(M, -1, BK).sum(dim=1)
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5)


@kiln.jit
def _load_tile(ptr, BOUNDS: kl.constexpr):
    return kl.load(ptr, boundary_check=BOUNDS, padding_option="zero")


@kiln.jit
def _step(ptr, delta):
    # Takes and returns a block pointer and a tuple.
    return kl.advance(ptr, (delta, 0)), (delta, delta * 2)


@kiln.jit
def column_walk_kernel(x_ptr, out_ptr, M, N, flip, BM: kl.constexpr, BN: kl.constexpr):
    # Walks down the rows with a while loop; on odd steps an if picks which
    # of two block pointers to read through.
    x = kl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    alt = kl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    acc = kl.zeros((BM, BN), kl.float32)
    row = 0
    i = 0
    while row < M:
        if (i % 2 == 1) & (flip != 0):
            src = alt
        else:
            src = x
        acc += _load_tile(src, (0, 1)) * (i + 1)
        x, pair = _step(x, BM)
        alt = kl.advance(alt, (pair[1] - pair[0], 0))
        row += pair[0]
        i += 1
    o = kl.make_block_ptr(out_ptr, (BM, BN), (BN, 1), (0, 0), (BM, BN), (0, 1))
    kl.store(o, acc)


@pytest.mark.parametrize("flip", [0, 1])
def test_while_if_and_helpers(arrays, flip) -> None:
    M, N, BM, BN = 45, 20, 8, 32
    x = arrays.randn(M * N, seed=5 + flip).reshape(M, N)
    out = arrays.full((BM, BN), float("nan"), torch.float32)
    column_walk_kernel[(1,)](x, out, M, N, flip, BM=BM, BN=BN)
    padded = torch.zeros(kiln.cdiv(M, BM) * BM, BN, dtype=torch.float64, device=x.device)
    padded[:M, :N] = x.double()
    tiles = padded.reshape(-1, BM, BN)
    expected = torch.zeros(BM, BN, dtype=torch.float64, device=x.device)
    for i in range(tiles.shape[0]):
        # Both pointers advance by BM per step, so either reads tile i.
        expected += tiles[i] * (i + 1)
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5)


@kiln.jit
def one_d_kernel(x_ptr, out_ptr, n, start, BLOCK: kl.constexpr):
    x = kl.make_block_ptr(x_ptr, (n,), (1,), (start,), (BLOCK,), (0,))
    x = kl.advance(x, (-1,))
    o = kl.make_block_ptr(out_ptr, (BLOCK,), (1,), (0,), (BLOCK,), (0,))
    kl.store(o, kl.load(x, boundary_check=(0,), padding_option="zero") + 1)


def test_one_dimension_and_negative_offsets(arrays) -> None:
    # Starting before the tensor: offsets below zero are padded too.
    n = 20
    x = arrays.randint(-100, 100, n, torch.int32, seed=9)
    out = arrays.full(32, 7, torch.int32)
    one_d_kernel[(1,)](x, out, n, -4, BLOCK=32)
    expected = torch.zeros(32, dtype=torch.int32, device=x.device)
    expected[5:25] = x[:20]  # element i reads x[i - 5]
    assert torch.equal(out, expected + 1)
