"""Tensor descriptors (kl.make_tensor_descriptor, host TensorDescriptor
arguments) on every backend present, against torch in float64: tiled
copies and transposes over ragged shapes, zero (or NaN) fill of
out-of-bounds loads, no out-of-bounds stores, and the errors."""

import inspect

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.tools.tensor_descriptor import TensorDescriptor

POISON = -777.0


def poisoned(arrays, shape, pad=(3, 5), dtype=torch.float64):
    """A view of `shape` inside a larger buffer full of POISON, and the buffer."""
    full = arrays.full(tuple(s + p for s, p in zip(shape, pad)), POISON, dtype)
    view = full[tuple(slice(0, s) for s in shape)]
    return view, full


def outside(full, shape):
    """The elements of `full` outside the leading `shape` block."""
    keep = torch.ones_like(full, dtype=torch.bool)
    keep[tuple(slice(0, s) for s in shape)] = False
    return full[keep]


def randn(arrays, shape, seed):
    generator = torch.Generator(device=arrays.device)
    generator.manual_seed(seed)
    return torch.randn(shape, dtype=torch.float64, device=arrays.device, generator=generator)


# -- in-kernel descriptors ----------------------------------------------------------


@kiln.jit
def copy_2d_kernel(src, dst, M, N, stride_src, stride_dst, BM: kl.constexpr, BN: kl.constexpr):
    src_desc = kl.make_tensor_descriptor(src, shape=[M, N], strides=[stride_src, 1], block_shape=[BM, BN])
    dst_desc = kl.make_tensor_descriptor(dst, shape=[M, N], strides=[stride_dst, 1], block_shape=[BM, BN])
    off_m = kl.program_id(0) * BM
    off_n = kl.program_id(1) * BN
    dst_desc.store([off_m, off_n], src_desc.load([off_m, off_n]))


@pytest.mark.parametrize("M, N", [(1, 1), (37, 50), (64, 32), (100, 3)])
def test_in_kernel_copy_2d_ragged(arrays, M, N) -> None:
    src = randn(arrays, (M, N), seed=M * 1000 + N)
    dst, full = poisoned(arrays, (M, N))
    BM, BN = 16, 32
    copy_2d_kernel[(kiln.cdiv(M, BM), kiln.cdiv(N, BN))](src, dst, M, N, src.stride(0), dst.stride(0), BM=BM, BN=BN)
    arrays.synchronize()
    assert torch.equal(dst, src)
    assert bool((outside(full, (M, N)) == POISON).all())


@kiln.jit
def window_kernel(src, out, M, N, off_m, off_n, BM: kl.constexpr, BN: kl.constexpr):
    # One block at any offsets (negative ones too), stored densely.
    desc = kl.make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    block = kl.load_tensor_descriptor(desc, [off_m, off_n])
    rows = kl.arange(0, BM)[:, None]
    cols = kl.arange(0, BN)[None, :]
    kl.store(out + rows * BN + cols, block)


@pytest.mark.parametrize("off_m, off_n", [(0, 0), (20, 10), (-3, 5), (30, -7), (40, 40)])
def test_out_of_bounds_loads_read_zero(arrays, off_m, off_n) -> None:
    M, N, BM, BN = 25, 19, 16, 16
    src = randn(arrays, (M, N), seed=3)
    out = arrays.full((BM, BN), POISON, torch.float64)
    window_kernel[(1,)](src, out, M, N, off_m, off_n, BM=BM, BN=BN)
    expected = torch.zeros((BM, BN), dtype=torch.float64, device=arrays.device)
    for i in range(BM):
        for j in range(BN):
            r, c = off_m + i, off_n + j
            if 0 <= r < M and 0 <= c < N:
                expected[i, j] = src[r, c]
    assert torch.equal(out, expected)


@kiln.jit
def transpose_add_kernel(x, y, out, M, N, BM: kl.constexpr, BN: kl.constexpr):
    # out = x + y.T with x, out of shape [M, N] and y of shape [N, M].
    x_desc = kl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    y_desc = kl.make_tensor_descriptor(y, shape=[N, M], strides=[M, 1], block_shape=[BN, BM])
    out_desc = kl.make_tensor_descriptor(out, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    off_m = kl.program_id(0) * BM
    off_n = kl.program_id(1) * BN
    total = x_desc.load([off_m, off_n]) + kl.trans(y_desc.load([off_n, off_m]))
    kl.store_tensor_descriptor(out_desc, [off_m, off_n], total)


@pytest.mark.parametrize("M, N", [(33, 70), (128, 16), (5, 129)])
def test_tiled_transpose_add(arrays, M, N) -> None:
    x, y = randn(arrays, (M, N), seed=11), randn(arrays, (N, M), seed=12)
    out = arrays.full((M, N), POISON, torch.float64)
    BM, BN = 32, 16
    transpose_add_kernel[(kiln.cdiv(M, BM), kiln.cdiv(N, BN))](x, y, out, M, N, BM=BM, BN=BN)
    torch.testing.assert_close(out, x + y.T, rtol=0, atol=0)


@kiln.jit
def _scaled(desc, offsets, scale):
    # A descriptor passed to a helper.
    return desc.load(offsets) * scale


@kiln.jit
def copy_3d_kernel(src, dst, B, M, N, BB: kl.constexpr, BM: kl.constexpr, BN: kl.constexpr):
    src_desc = kl.make_tensor_descriptor(src, shape=[B, M, N], strides=[M * N, N, 1], block_shape=[BB, BM, BN])
    # The destination's strides are compile-time constants here.
    dst_desc = kl.make_tensor_descriptor(dst, shape=[B, M, N], strides=[(M + 3) * 64, 64, 1],
                                         block_shape=[BB, BM, BN])
    offsets = (kl.program_id(0) * BB, kl.program_id(1) * BM, kl.program_id(2) * BN)
    dst_desc.store(offsets, _scaled(src_desc, offsets, 2.0))


def test_in_kernel_3d_with_helper(arrays) -> None:
    B, M, N = 3, 21, 45
    src = randn(arrays, (B, M, N), seed=21)
    full = arrays.full((B, M + 3, 64), POISON, torch.float64)
    dst = full[:, :M, :N]
    assert dst.stride() == ((M + 3) * 64, 64, 1)
    BB, BM, BN = 2, 8, 16
    copy_3d_kernel[(kiln.cdiv(B, BB), kiln.cdiv(M, BM), kiln.cdiv(N, BN))](src, dst, B, M, N, BB=BB, BM=BM, BN=BN)
    arrays.synchronize()
    assert torch.equal(dst, src * 2)
    assert bool((outside(full, (B, M, N)) == POISON).all())


@kiln.jit
def row_sum_kernel(x, out, M, N, BM: kl.constexpr, BN: kl.constexpr):
    # A descriptor read in a runtime loop, with its fields queried.
    desc = kl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    kl.static_assert(desc.block_shape[1] == BN)
    kl.static_assert(desc.dtype == kl.float64)
    off_m = kl.program_id(0) * BM
    acc = kl.zeros([BM], dtype=kl.float64)
    for start in range(0, desc.shape[1], BN):
        acc += kl.sum(desc.load([off_m, start]), axis=1)
    rows = off_m + kl.arange(0, BM)
    kl.store(out + rows, acc, mask=rows < desc.shape[0])


def test_descriptor_in_a_loop(arrays) -> None:
    M, N = 50, 77
    x = randn(arrays, (M, N), seed=31)
    out = arrays.full(M + 4, POISON, torch.float64)
    row_sum_kernel[(kiln.cdiv(M, 16),)](x, out, M, N, BM=16, BN=32)
    torch.testing.assert_close(out[:M], x.sum(dim=1), rtol=1e-12, atol=1e-12)
    assert bool((out[M:] == POISON).all())


# -- host descriptors ----------------------------------------------------------------


@kiln.jit
def host_copy_kernel(src_desc, dst_desc):
    BM: kl.constexpr = src_desc.block_shape[0]
    BN: kl.constexpr = src_desc.block_shape[1]
    off_m = kl.program_id(0) * BM
    off_n = kl.program_id(1) * BN
    dst_desc.store([off_m, off_n], src_desc.load([off_m, off_n]) + 1.0)


@pytest.mark.parametrize("M, N", [(1, 2), (45, 30), (64, 64)])
def test_host_descriptors_2d(arrays, M, N) -> None:
    src = randn(arrays, (M, N), seed=41)
    # A view into a wider buffer: its row stride (N + 6 elements) is a
    # multiple of 16 bytes when N + 6 is even.
    dst, full = poisoned(arrays, (M, N), pad=(2, 6 + N % 2))
    BM, BN = 16, 16
    host_copy_kernel[(kiln.cdiv(M, BM), kiln.cdiv(N, BN))](
        TensorDescriptor.from_tensor(src, [BM, BN]), TensorDescriptor.from_tensor(dst, [BM, BN]))
    arrays.synchronize()
    assert torch.equal(dst, src + 1)
    assert bool((outside(full, (M, N)) == POISON).all())


@kiln.jit
def host_transpose_add_kernel(x_desc, y_desc, out_desc):
    BM: kl.constexpr = x_desc.block_shape[0]
    BN: kl.constexpr = x_desc.block_shape[1]
    off_m = kl.program_id(0) * BM
    off_n = kl.program_id(1) * BN
    total = x_desc.load([off_m, off_n]) + kl.trans(y_desc.load([off_n, off_m]))
    out_desc.store([off_m, off_n], total)


def test_host_transpose_add(arrays) -> None:
    M, N, BM, BN = 70, 34, 32, 16
    x, y = randn(arrays, (M, N), seed=51), randn(arrays, (N, M), seed=52)
    out = arrays.full((M, N), POISON, torch.float64)
    host_transpose_add_kernel[(kiln.cdiv(M, BM), kiln.cdiv(N, BN))](
        TensorDescriptor.from_tensor(x, [BM, BN]), TensorDescriptor.from_tensor(y, [BN, BM]),
        TensorDescriptor(out, out.shape, out.stride(), [BM, BN]))
    torch.testing.assert_close(out, x + y.T, rtol=0, atol=0)


@kiln.jit
def host_3d_kernel(src_desc, dst_desc, scale):
    BB: kl.constexpr = src_desc.block_shape[0]
    BM: kl.constexpr = src_desc.block_shape[1]
    BN: kl.constexpr = src_desc.block_shape[2]
    offsets = (kl.program_id(0) * BB, kl.program_id(1) * BM, kl.program_id(2) * BN)
    dst_desc.store(offsets, _scaled(src_desc, offsets, scale))


def test_host_descriptors_3d(arrays) -> None:
    B, M, N = 5, 9, 34  # row strides of 34 doubles: multiples of 16 bytes
    src = randn(arrays, (B, M, N), seed=61)
    full = arrays.full((B + 1, M + 2, 40), POISON, torch.float64)
    dst = full[:B, :M, :N]
    block = [2, 8, 16]
    host_3d_kernel[(kiln.cdiv(B, 2), kiln.cdiv(M, 8), kiln.cdiv(N, 16))](
        TensorDescriptor.from_tensor(src, block), TensorDescriptor.from_tensor(dst, block), 0.5)
    arrays.synchronize()
    assert torch.equal(dst, src * 0.5)
    assert bool((outside(full, (B, M, N)) == POISON).all())


@kiln.jit
def host_window_kernel(desc, out, off_m, off_n):
    BM: kl.constexpr = desc.block_shape[0]
    BN: kl.constexpr = desc.block_shape[1]
    block = desc.load([off_m, off_n])
    kl.store(out + kl.arange(0, BM)[:, None] * BN + kl.arange(0, BN)[None, :], block)


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_host_descriptor_padding(arrays, padding) -> None:
    M, N = 10, 12
    src = randn(arrays, (M, N), seed=71).to(torch.float32)
    out = arrays.full((16, 16), POISON, torch.float32)
    host_window_kernel[(1,)](TensorDescriptor.from_tensor(src, [16, 16], padding=padding), out, 4, -4)
    fill = 0.0 if padding == "zero" else float("nan")
    expected = torch.full((16, 16), fill, dtype=torch.float32, device=arrays.device)
    expected[:M - 4, 4:] = src[4:, :12]
    torch.testing.assert_close(out, expected, equal_nan=True, rtol=0, atol=0)


def test_host_descriptor_in_a_tuple_and_the_key(arrays) -> None:
    M, N = 20, 16
    src = randn(arrays, (M, N), seed=81)
    dst = arrays.full((M, N), POISON, torch.float64)
    grid = (kiln.cdiv(M, 16), 1)
    host_copy_kernel[grid](TensorDescriptor.from_tensor(src, [16, 16]), TensorDescriptor.from_tensor(dst, [16, 16]))
    host_copy_kernel[grid](TensorDescriptor.from_tensor(src, [16, 16]), TensorDescriptor.from_tensor(dst, [16, 16]))
    assert len(host_copy_kernel.cache[arrays.cache_device]) >= 1
    before = len(host_copy_kernel.cache[arrays.cache_device])
    # Another block shape is another kernel.
    host_copy_kernel[(kiln.cdiv(M, 8), 2)](TensorDescriptor.from_tensor(src, [8, 8]),
                                           TensorDescriptor.from_tensor(dst, [8, 8]))
    assert len(host_copy_kernel.cache[arrays.cache_device]) == before + 1
    assert torch.equal(dst, src + 1)


def test_host_descriptor_validation_names_the_argument(arrays) -> None:
    x = arrays.full((16, 16), 1.0, torch.float32)
    good = TensorDescriptor.from_tensor(x, [16, 16])
    with pytest.raises(ValueError, match=r"argument 'dst_desc'.*last stride must be 1"):
        host_copy_kernel[(1, 1)](good, TensorDescriptor(x, [16, 16], [1, 16], [16, 16]))
    with pytest.raises(ValueError, match=r"argument 'src_desc'.*multiple of 16 bytes"):
        flat = arrays.full(300, 1.0, torch.float32)
        host_copy_kernel[(1, 1)](TensorDescriptor(flat[1:], [16, 16], [16, 1], [16, 16]), good)
    with pytest.raises(ValueError, match=r"argument 'src_desc'.*multiples of 16 bytes"):
        y = arrays.full((5, 5), 1.0, torch.float32)
        host_copy_kernel[(1, 1)](TensorDescriptor.from_tensor(y, [8, 8]), good)
    with pytest.raises(ValueError, match="powers of two"):
        TensorDescriptor.from_tensor(x, [16, 12])
    with pytest.raises(ValueError, match="same rank"):
        TensorDescriptor(x, [16, 16], [16, 1], [16])


# -- errors ----------------------------------------------------------------------------


def assert_located(error: kiln.CompilationError, kernel, text: str, *fragments: str) -> None:
    lines, first = inspect.getsourcelines(kernel.fn)
    line = next(first + i for i, source in enumerate(lines) if text in source and i > 0)
    assert (error.filename, error.lineno) == (__file__, line), str(error)
    for fragment in fragments:
        assert fragment in str(error), str(error)


@kiln.jit
def runtime_block_shape_kernel(x, n):
    desc = kl.make_tensor_descriptor(x, shape=[n], strides=[1], block_shape=[n])
    desc.store([0], desc.load([0]))


@kiln.jit
def wrong_offsets_kernel(x, n, BLOCK: kl.constexpr):
    desc = kl.make_tensor_descriptor(x, shape=[n, n], strides=[n, 1], block_shape=[BLOCK, BLOCK])
    block = desc.load([0])
    kl.store(x + kl.arange(0, BLOCK), kl.sum(block, axis=1))


@kiln.jit
def runtime_last_stride_kernel(x, n, stride, BLOCK: kl.constexpr):
    desc = kl.make_tensor_descriptor(x, shape=[n, n], strides=[n, stride], block_shape=[BLOCK, BLOCK])
    desc.store([0, 0], desc.load([0, 0]))


@kiln.jit
def constant_last_stride_kernel(x, n, BLOCK: kl.constexpr):
    desc = kl.make_tensor_descriptor(x, shape=[n, n], strides=[1, 2], block_shape=[BLOCK, BLOCK])
    desc.store([0, 0], desc.load([0, 0]))


@kiln.jit
def store_shape_kernel(x, n, BLOCK: kl.constexpr):
    desc = kl.make_tensor_descriptor(x, shape=[n, n], strides=[n, 1], block_shape=[BLOCK, BLOCK])
    desc.store([0, 0], kl.zeros([BLOCK, 2 * BLOCK], dtype=kl.float32))


def test_errors_name_the_source_line(arrays) -> None:
    x = arrays.full(64, 0.0, torch.float32)
    with pytest.raises(kiln.CompilationError) as info:
        runtime_block_shape_kernel[(1,)](x, 8)
    assert_located(info.value, runtime_block_shape_kernel, "block_shape=[n]", "block_shape",
                   "compile-time constant")
    with pytest.raises(kiln.CompilationError) as info:
        wrong_offsets_kernel[(1,)](x, 8, BLOCK=8)
    assert_located(info.value, wrong_offsets_kernel, "desc.load([0])", "expected 2 offsets")
    with pytest.raises(kiln.CompilationError) as info:
        runtime_last_stride_kernel[(1,)](x, 8, 3, BLOCK=8)
    assert_located(info.value, runtime_last_stride_kernel, "make_tensor_descriptor", "last stride must be")
    with pytest.raises(kiln.CompilationError) as info:
        constant_last_stride_kernel[(1,)](x, 8, BLOCK=8)
    assert_located(info.value, constant_last_stride_kernel, "make_tensor_descriptor", "got 2")
    with pytest.raises(kiln.CompilationError) as info:
        store_shape_kernel[(1,)](x, 8, BLOCK=8)
    assert_located(info.value, store_shape_kernel, "desc.store", "does not broadcast")


@kiln.jit
def pick_1d_kernel(a, b, out, n, which, BLOCK: kl.constexpr):
    # 1-D descriptors, one chosen by a runtime if (a descriptor as an if result).
    a_desc = kl.make_tensor_descriptor(a, shape=[n], strides=[1], block_shape=[BLOCK])
    b_desc = kl.make_tensor_descriptor(b, shape=[n], strides=[1], block_shape=[BLOCK])
    if which > 0:
        desc = a_desc
    else:
        desc = b_desc
    offset = kl.program_id(0) * BLOCK
    kl.store(out + offset + kl.arange(0, BLOCK), desc.load([offset]))


@pytest.mark.parametrize("which", [0, 1])
def test_descriptor_chosen_at_run_time(arrays, which) -> None:
    n, BLOCK = 45, 16
    a, b = randn(arrays, (n,), seed=91), randn(arrays, (n,), seed=92)
    out = arrays.full(64, POISON, torch.float64)
    pick_1d_kernel[(kiln.cdiv(n, BLOCK),)](a, b, out, n, which, BLOCK=BLOCK)
    expected = torch.zeros(64, dtype=torch.float64, device=arrays.device)
    expected[:n] = a if which else b
    assert torch.equal(out[:48], expected[:48])
