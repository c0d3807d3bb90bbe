"""Shape ops on every backend present: kl.reshape/view/ravel, kl.trans/
permute and x.T, kl.broadcast, kl.join/split/interleave, kl.cat, kl.flip,
kl.gather, kl.histogram, kl.zeros_like and kl.expand_dims with a tuple.
Each is compared with torch on fresh random float64 values (or exact
integers); on the GPU each runs at several warp counts, so that elements
move between threads and warps. Then PTX for sm_80 and sm_90a, assembled,
and the compile errors the type checker can see."""

import random

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.backends.nvidia import find_ptxas


def _warps(arrays):
    return (1, 4, 8) if arrays.backend == "cuda" else (4,)


def _values(arrays, shape):
    """Fresh random float64 values of `shape`."""
    n = 1
    for d in shape:
        n *= d
    return arrays.randn(n, dtype=torch.float64, seed=random.randrange(1 << 30)).reshape(shape)


@kiln.jit
def _offsets3(A: kl.constexpr, B: kl.constexpr, C: kl.constexpr):
    return (kl.arange(0, A)[:, None, None] * (B * C) + kl.arange(0, B)[None, :, None] * C
            + kl.arange(0, C)[None, None, :])


@kiln.jit
def _offsets2(A: kl.constexpr, B: kl.constexpr):
    return kl.arange(0, A)[:, None] * B + kl.arange(0, B)[None, :]


# -- reshape, view, ravel --------------------------------------------------------


@kiln.jit
def reshape3_kernel(x_ptr, out_ptr, A: kl.constexpr, B: kl.constexpr, C: kl.constexpr, D: kl.constexpr,
                    E: kl.constexpr, F: kl.constexpr):
    x = kl.load(x_ptr + _offsets3(A, B, C))
    kl.store(out_ptr + _offsets3(D, E, F), kl.reshape(x, D, E, F))


@pytest.mark.parametrize("src,dst", [
    ((2, 4, 8), (8, 4, 2)),
    ((4, 8, 4), (1, 16, 8)),
    ((1, 32, 2), (2, 2, 16)),
    ((8, 8, 8), (4, 16, 8)),
    ((1, 1, 1), (1, 1, 1)),
])
def test_reshape(arrays, src, dst) -> None:
    x = _values(arrays, src)
    for num_warps in _warps(arrays):
        out = arrays.full(dst, float("nan"), torch.float64)
        reshape3_kernel[(1,)](x, out, *src, *dst, num_warps=num_warps)
        assert torch.equal(out.cpu(), x.cpu().reshape(dst)), num_warps


@kiln.jit
def flatten_kernel(x_ptr, out_ptr, view_ptr, A: kl.constexpr, B: kl.constexpr):
    x = kl.load(x_ptr + _offsets2(A, B))
    flat = kl.ravel(x)
    kl.store(out_ptr + kl.arange(0, A * B), flat)
    # Back to 2-D through the tensor method and the deprecated view, swapped.
    kl.store(view_ptr + _offsets2(B, A), kl.view(flat.reshape((A, B)), B, A))


@pytest.mark.parametrize("shape", [(4, 16), (1, 8), (32, 1)])
def test_ravel_and_view(arrays, shape) -> None:
    A, B = shape
    x = _values(arrays, shape)
    for num_warps in _warps(arrays):
        flat = arrays.full(A * B, float("nan"), torch.float64)
        swapped = arrays.full((B, A), float("nan"), torch.float64)
        with pytest.warns(UserWarning, match="view is deprecated"):
            flatten_kernel[(1,)](x, flat, swapped, A=A, B=B, num_warps=num_warps)
        assert torch.equal(flat.cpu(), x.cpu().reshape(-1))
        assert torch.equal(swapped.cpu(), x.cpu().reshape(B, A))


# -- trans, permute, .T ----------------------------------------------------------


@kiln.jit
def permute3_kernel(x_ptr, out_ptr, A: kl.constexpr, B: kl.constexpr, C: kl.constexpr, D0: kl.constexpr,
                    D1: kl.constexpr, D2: kl.constexpr):
    x = kl.load(x_ptr + _offsets3(A, B, C))
    y = kl.permute(x, D0, D1, D2)
    z = x.trans((D0, D1, D2))
    kl.store(out_ptr + _offsets3(y.shape[0], y.shape[1], y.shape[2]), y + z)


@pytest.mark.parametrize("dims", [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)])
def test_permute(arrays, dims) -> None:
    shape = (2, 4, 8)
    x = _values(arrays, shape)
    expected = 2 * x.cpu().permute(dims)
    for num_warps in _warps(arrays):
        out = arrays.full(expected.shape, float("nan"), torch.float64)
        permute3_kernel[(1,)](x, out, *shape, *dims, num_warps=num_warps)
        assert torch.equal(out.cpu(), expected), num_warps


@kiln.jit
def transpose_kernel(x_ptr, out_ptr, A: kl.constexpr, B: kl.constexpr):
    x = kl.load(x_ptr + _offsets2(A, B))
    t = _offsets2(B, A)
    kl.store(out_ptr + t, kl.trans(x))
    kl.store(out_ptr + A * B + t, x.T)
    kl.store(out_ptr + 2 * A * B + t, x.permute(1, 0))


@pytest.mark.parametrize("shape", [(16, 8), (1, 32), (32, 1), (64, 64)])
def test_transpose(arrays, shape) -> None:
    A, B = shape
    x = _values(arrays, shape)
    for num_warps in _warps(arrays):
        out = arrays.full((3, B, A), float("nan"), torch.float64)
        transpose_kernel[(1,)](x, out, A=A, B=B, num_warps=num_warps)
        for i in range(3):
            assert torch.equal(out[i].cpu(), x.cpu().T), (i, num_warps)


# -- broadcast, expand_dims, zeros_like --------------------------------------------


@kiln.jit
def broadcast_kernel(x_ptr, y_ptr, a_ptr, b_ptr, z_ptr, M: kl.constexpr, N: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, M))
    y = kl.load(y_ptr + kl.arange(0, N))
    a, b = kl.broadcast(kl.expand_dims(x, 1), y[None, :])
    kl.store(a_ptr + _offsets2(M, N), a)
    kl.store(b_ptr + _offsets2(M, N), b)
    # A tuple of axes, indexed in the result: [1, M, 1].
    z = kl.expand_dims(x, (0, 2)) + kl.zeros_like(x)[None, :, None]
    kl.store(z_ptr + kl.arange(0, M)[None, :, None], z)


def test_broadcast_and_expand_dims(arrays) -> None:
    M, N = 8, 16
    x, y = _values(arrays, (M,)), _values(arrays, (N,))
    a = arrays.full((M, N), float("nan"), torch.float64)
    b = arrays.full((M, N), float("nan"), torch.float64)
    z = arrays.full(M, float("nan"), torch.float64)
    broadcast_kernel[(1,)](x, y, a, b, z, M=M, N=N)
    assert torch.equal(a.cpu(), x.cpu()[:, None].expand(M, N))
    assert torch.equal(b.cpu(), y.cpu()[None, :].expand(M, N))
    assert torch.equal(z.cpu(), x.cpu())


# -- join, split, interleave -------------------------------------------------------


@kiln.jit
def join_split_kernel(a_ptr, b_ptr, joined_ptr, inter_ptr, back_ptr, M: kl.constexpr, N: kl.constexpr):
    a = kl.load(a_ptr + _offsets2(M, N))
    b = kl.load(b_ptr + _offsets2(M, N))
    j = kl.join(a, b)
    kl.store(joined_ptr + _offsets3(M, N, 2), j)
    kl.store(inter_ptr + _offsets2(M, 2 * N), kl.interleave(a, b))
    lo, hi = kl.split(j)
    rest, again = j.split()
    kl.store(back_ptr + _offsets2(M, N), lo - b)
    kl.store(back_ptr + M * N + _offsets2(M, N), hi - a + rest - again)


@pytest.mark.parametrize("shape", [(4, 16), (1, 1), (16, 1), (32, 32)])
def test_join_split_interleave(arrays, shape) -> None:
    M, N = shape
    a, b = _values(arrays, shape), _values(arrays, shape)
    for num_warps in _warps(arrays):
        joined = arrays.full((M, N, 2), float("nan"), torch.float64)
        inter = arrays.full((M, 2 * N), float("nan"), torch.float64)
        back = arrays.full((2, M, N), float("nan"), torch.float64)
        join_split_kernel[(1,)](a, b, joined, inter, back, M=M, N=N, num_warps=num_warps)
        expected = torch.stack([a.cpu(), b.cpu()], dim=-1)
        assert torch.equal(joined.cpu(), expected), num_warps
        assert torch.equal(inter.cpu(), expected.reshape(M, 2 * N)), num_warps
        assert torch.equal(back[0].cpu(), a.cpu() - b.cpu()), num_warps
        assert torch.equal(back[1].cpu(), b.cpu() - a.cpu() + a.cpu() - b.cpu()), num_warps


@kiln.jit
def scalar_join_kernel(x_ptr, out_ptr):
    s = kl.load(x_ptr)
    t = kl.load(x_ptr + 1)
    pair = kl.join(s, t)  # two scalars: shape [2]
    kl.store(out_ptr + kl.arange(0, 2), pair)
    u, v = kl.split(pair)  # shape [2]: two scalars
    kl.store(out_ptr + 2, v)
    kl.store(out_ptr + 3, u)


def test_join_and_split_of_scalars(arrays) -> None:
    x = _values(arrays, (2,))
    out = arrays.full(4, float("nan"), torch.float64)
    scalar_join_kernel[(1,)](x, out)
    xs = x.cpu()
    assert torch.equal(out.cpu(), torch.stack([xs[0], xs[1], xs[1], xs[0]]))


# -- cat, flip -------------------------------------------------------------------


@kiln.jit
def cat_kernel(x_ptr, y_ptr, out_ptr, N: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, N))
    y = kl.load(y_ptr + kl.arange(0, N))
    kl.store(out_ptr + kl.arange(0, 2 * N), kl.cat(x, y, can_reorder=True))


@pytest.mark.parametrize("N", [1, 16, 512])
def test_cat(arrays, N) -> None:
    x, y = _values(arrays, (N,)), _values(arrays, (N,))
    for num_warps in _warps(arrays):
        out = arrays.full(2 * N, float("nan"), torch.float64)
        cat_kernel[(1,)](x, y, out, N=N, num_warps=num_warps)
        # Kiln keeps the order (one of the orders can_reorder allows).
        assert torch.equal(out.cpu(), torch.cat([x.cpu(), y.cpu()])), num_warps


@kiln.jit
def flip_kernel(x_ptr, out_ptr, A: kl.constexpr, B: kl.constexpr):
    x = kl.load(x_ptr + _offsets2(A, B))
    o = _offsets2(A, B)
    kl.store(out_ptr + o, kl.flip(x, 0))
    kl.store(out_ptr + A * B + o, kl.flip(x, dim=1))
    kl.store(out_ptr + 2 * A * B + o, x.flip())
    kl.store(out_ptr + 3 * A * B + o, kl.flip(x, -2))


@pytest.mark.parametrize("shape", [(8, 16), (1, 4), (16, 1), (2, 2)])
def test_flip(arrays, shape) -> None:
    A, B = shape
    x = _values(arrays, shape)
    xs = x.cpu()
    expected = torch.stack([xs.flip(0), xs.flip(1), xs.flip(1), xs.flip(0)])
    for num_warps in _warps(arrays):
        out = arrays.full((4, A, B), float("nan"), torch.float64)
        flip_kernel[(1,)](x, out, A=A, B=B, num_warps=num_warps)
        assert torch.equal(out.cpu(), expected), num_warps


# -- gather, histogram -------------------------------------------------------------


@kiln.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, SA: kl.constexpr, SB: kl.constexpr, IA: kl.constexpr,
                  IB: kl.constexpr, AXIS: kl.constexpr):
    src = kl.load(src_ptr + _offsets2(SA, SB))
    idx = kl.load(idx_ptr + _offsets2(IA, IB))
    kl.store(out_ptr + _offsets2(IA, IB), kl.gather(src, idx, AXIS))


@pytest.mark.parametrize("axis,src,index", [
    (0, (8, 4), (16, 4)),
    (1, (4, 8), (4, 16)),
    (0, (32, 1), (4, 1)),
    (1, (1, 1), (1, 1)),
    (1, (16, 32), (16, 8)),
])
def test_gather(arrays, axis, src, index) -> None:
    x = _values(arrays, src)
    idx = arrays.randint(0, src[axis], index[0] * index[1], torch.int32,
                         seed=random.randrange(1 << 30)).reshape(index)
    expected = torch.gather(x.cpu(), axis, idx.cpu().long())
    for num_warps in _warps(arrays):
        out = arrays.full(index, float("nan"), torch.float64)
        gather_kernel[(1,)](x, idx, out, *src, *index, AXIS=axis, num_warps=num_warps)
        assert torch.equal(out.cpu(), expected), num_warps


@kiln.jit
def gather_1d_kernel(src_ptr, idx_ptr, out_ptr, N: kl.constexpr, M: kl.constexpr):
    src = kl.load(src_ptr + kl.arange(0, N))
    idx = kl.load(idx_ptr + kl.arange(0, M))
    kl.store(out_ptr + kl.arange(0, M), src.gather(idx, axis=0))


def test_gather_1d_with_int64_indices(arrays) -> None:
    N, M = 32, 64
    x = arrays.randint(-1000, 1000, N, torch.int32, seed=random.randrange(1 << 30))
    idx = arrays.randint(0, N, M, torch.int64, seed=random.randrange(1 << 30))
    out = arrays.full(M, -1, torch.int32)
    gather_1d_kernel[(1,)](x, idx, out, N=N, M=M)
    assert torch.equal(out.cpu(), x.cpu()[idx.cpu()])


@kiln.jit
def histogram_kernel(x_ptr, out_ptr, masked_ptr, n, N: kl.constexpr, BINS: kl.constexpr):
    offs = kl.arange(0, N)
    x = kl.load(x_ptr + offs)
    kl.store(out_ptr + kl.arange(0, BINS), kl.histogram(x, BINS))
    kl.store(masked_ptr + kl.arange(0, BINS), x.histogram(BINS, mask=offs < n))


def _bin_counts(values, bins):
    """int32 counts of `values` (a CPU tensor) in bins 0 .. bins - 1."""
    values = values.to(torch.int64)
    counted = values[(values >= 0) & (values < bins)]
    return torch.bincount(counted, minlength=bins)[:bins].to(torch.int32)


# The products of values and bins of the last rows reach 131072: a one-hot
# block that large once aborted the CPU backend's code generator.
@pytest.mark.parametrize("N,bins,dtype", [(64, 16, torch.int32), (1, 1, torch.int32), (128, 8, torch.int32),
                                          (1024, 128, torch.int32), (256, 512, torch.int32),
                                          (512, 256, torch.uint8), (512, 64, torch.int8), (256, 64, torch.int64)])
def test_histogram(arrays, N, bins, dtype) -> None:
    # Values below 0 and at or above num_bins are not counted; an unsigned
    # byte is counted by its unsigned value.
    low, high = (0, 256) if dtype == torch.uint8 else (-2, bins + 3)
    x = arrays.randint(low, high, N, dtype, seed=random.randrange(1 << 30))
    n = N // 2 + 1
    for num_warps in _warps(arrays):
        out = arrays.full(bins, -1, torch.int32)
        masked = arrays.full(bins, -1, torch.int32)
        histogram_kernel[(1,)](x, out, masked, n, N=N, BINS=bins, num_warps=num_warps)
        xs = x.cpu()
        assert torch.equal(out.cpu(), _bin_counts(xs, bins)), num_warps
        assert torch.equal(masked.cpu(), _bin_counts(xs[:n], bins)), num_warps


# -- PTX ---------------------------------------------------------------------------


@kiln.jit
def every_shape_op_kernel(x_ptr, i_ptr, out_ptr, A: kl.constexpr, B: kl.constexpr):
    x = kl.load(x_ptr + _offsets2(A, B))
    idx = kl.load(i_ptr + _offsets2(A, B))
    y = kl.reshape(x.T, A, B) + kl.flip(x, 0) + kl.gather(x, idx, 1)
    lo, hi = kl.split(kl.join(y, x))
    y = kl.reshape(kl.interleave(lo, hi), A, 2 * B)
    z = kl.cat(kl.ravel(y), kl.ravel(y), can_reorder=True)
    kl.store(out_ptr + kl.arange(0, 4 * A * B), z)
    kl.store(out_ptr + _offsets2(A, B), kl.histogram(idx.reshape(A * B), A * B).reshape(A, B).to(kl.float32))


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_shape_ops_compile_to_ptx(target, num_warps) -> None:
    kernel = kiln.compile(every_shape_op_kernel, signature={"x_ptr": "*fp32", "i_ptr": "*i32", "out_ptr": "*fp32"},
                          constexprs={"A": 16, "B": 8}, target=target, num_warps=num_warps)
    for op in ("kiln.reshape", "kiln.trans", "kiln.flip", "kiln.gather", "kiln.join", "kiln.split", "kiln.cat"):
        assert op in kernel.asm["kiln"], op
    ptx = kernel.asm["ptx"]
    assert "bar.sync" in ptx and "st.shared" in ptx and "ld.shared" in ptx
    if find_ptxas() is not None:
        assert kernel.asm["cubin"][:4] == b"\x7fELF"


# -- errors ------------------------------------------------------------------------


@kiln.jit
def bad_reshape_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    kl.store(x_ptr + kl.arange(0, BLOCK), kl.ravel(kl.reshape(x, 4, 8)))


@kiln.jit
def bad_split_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    a, b = kl.split(kl.reshape(x, 4, 4))
    kl.store(x_ptr + kl.arange(0, 4), a + b)


@kiln.jit
def bad_trans_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    kl.store(x_ptr + kl.arange(0, BLOCK), kl.ravel(kl.trans(kl.reshape(x, 4, 4), 0, 0)))


@kiln.jit
def bad_permute_rank_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    kl.store(x_ptr + kl.arange(0, BLOCK), kl.ravel(kl.permute(kl.reshape(x, 4, 4), 1, 0, 2)))


@kiln.jit
def bad_transpose_rank_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    kl.store(x_ptr + kl.arange(0, BLOCK), x.T)


@kiln.jit
def bad_gather_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    idx = kl.arange(0, BLOCK)
    kl.store(x_ptr + kl.arange(0, BLOCK), kl.ravel(kl.gather(kl.reshape(x, 4, 4), idx, 0)))


@kiln.jit
def bad_gather_dims_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    idx = kl.reshape(kl.arange(0, BLOCK), 2, 8)
    kl.store(x_ptr + kl.arange(0, BLOCK), kl.ravel(kl.gather(kl.reshape(x, 4, 4), idx, 0)))


@kiln.jit
def bad_cat_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    kl.store(x_ptr + kl.arange(0, 2 * BLOCK), kl.cat(x, x))


@kiln.jit
def bad_flip_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    kl.store(x_ptr + kl.arange(0, BLOCK), kl.flip(x, 1))


@pytest.mark.parametrize("kernel,message", [
    (bad_reshape_kernel, "kl.reshape cannot change the number of elements: shape [16] has 16, shape [4, 8] has 32"),
    (bad_split_kernel, "kl.split needs a block whose last dimension is 2, got shape [4, 4]"),
    (bad_trans_kernel, "permute dims must be a permutation of 0, 1, ..., n-1, but were (0, 0)"),
    (bad_permute_rank_kernel, "got dims (1, 0, 2) for a block of shape [4, 4]"),
    (bad_transpose_rank_kernel, "got dims (1, 0) for a block of shape [16]"),
    (bad_gather_kernel, "kl.gather needs source and index tensors of the same rank, got shapes [4, 4] and [16]"),
    (bad_gather_dims_kernel, "kl.gather index dim 1 must match the source (all dims but axis 0), got shapes "
                             "[4, 4] and [2, 8]"),
    (bad_cat_kernel, "current implementation of `cat` always may reorder elements"),
    (bad_flip_kernel, "kl.flip dim must be a constant in [-1, 1), got 1"),
])
def test_shape_errors(kernel, message) -> None:
    with pytest.raises(kiln.CompilationError) as info:
        kiln.compile(kernel, signature={"x_ptr": "*fp32"}, constexprs={"BLOCK": 16}, target="cpu")
    assert message in str(info.value)
    assert "kl." in str(info.value)  # the source line is shown


@kiln.jit
def scalar_expand_kernel(x_ptr, out_ptr, N: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, N)[:, None] * N + kl.arange(0, N)[None, :])
    total = kl.sum(kl.sum(x, 1, keep_dims=True), 0, keep_dims=True)
    # ':' past a block's last axis is a no-op (Triton's rule): the scalar
    # pointer becomes a 1x1 block of pointers.
    p = out_ptr[None, None, :]
    kl.static_assert(p.shape == (1, 1))
    kl.store(p, total)


def test_trailing_colon_on_a_scalar(arrays) -> None:
    x = arrays.randint(-50, 50, 64, torch.int32, seed=4).reshape(8, 8)
    out = arrays.full(1, 0, torch.int32)
    scalar_expand_kernel[(1,)](x, out, N=8)
    assert out.item() == int(x.cpu().sum())
