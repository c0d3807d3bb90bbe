"""Reductions and scans on every backend present: kl.sum/max/min/argmax/
argmin/xor_sum/reduce over one axis or all, kl.cumsum/cumprod/
associative_scan forward and reverse, with masks for sizes that are not
powers of two. Compared with torch in float64 on fresh random inputs; on
the GPU each runs at several warp counts, so that reductions cross lanes
and warps (through shared memory)."""

import pytest
import torch

import kiln
import kiln.language as kl


def _random(arrays, shape, dtype, seed):
    if dtype.is_floating_point:
        return arrays.randn(int(torch.tensor(shape).prod()), seed=seed).reshape(shape).to(dtype)
    low, high = (-50, 50) if dtype.is_signed else (0, 100)
    return arrays.randint(low, high, int(torch.tensor(shape).prod()), dtype, seed=seed).reshape(shape)


def _fill(dtype, kind):
    """The value a masked element must read as to leave `kind` unchanged."""
    if kind in ("sum", "xor_sum", "cumsum"):
        return 0
    if kind == "cumprod":
        return 1
    if dtype.is_floating_point:
        return float("-inf") if kind in ("max", "argmax") else float("inf")
    info = torch.iinfo(dtype)
    return info.min if kind in ("max", "argmax") else info.max


@kiln.jit
def reduce_rows_kernel(x_ptr, out_ptr, M, N, stride, FILL: kl.constexpr, KIND: kl.constexpr, AXIS: kl.constexpr,
                       BM: kl.constexpr, BN: kl.constexpr):
    rows = kl.arange(0, BM)
    cols = kl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = kl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=FILL)
    if KIND == "sum":
        r = kl.sum(x, axis=AXIS)
    elif KIND == "max":
        r = kl.max(x, axis=AXIS)
    elif KIND == "min":
        r = kl.min(x, axis=AXIS)
    elif KIND == "argmax":
        r = kl.argmax(x, axis=AXIS)
    elif KIND == "argmin":
        r = kl.argmin(x, axis=AXIS)
    else:
        r = kl.xor_sum(x, axis=AXIS)
    if AXIS == 1:
        kl.store(out_ptr + rows, r, mask=rows < M)
    else:
        kl.store(out_ptr + cols, r, mask=cols < N)


def _torch_reduce(x, kind, axis):
    if kind == "sum":
        return x.double().sum(axis)
    if kind == "max":
        return x.double().amax(axis)
    if kind == "min":
        return x.double().amin(axis)
    if kind == "argmax":
        return x.double().argmax(axis)
    if kind == "argmin":
        return x.double().argmin(axis)
    result = x[0] if axis == 0 else x[:, 0]
    for i in range(1, x.shape[axis]):
        result = result ^ (x[i] if axis == 0 else x[:, i])
    return result


@pytest.mark.parametrize("kind", ["sum", "max", "min", "argmax", "argmin", "xor_sum"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float16])
def test_reduce_axis(arrays, kind, axis, dtype) -> None:
    if kind == "xor_sum" and dtype.is_floating_point:
        pytest.skip("xor_sum takes integers")
    M, N, BM, BN = 13, 50, 16, 64
    x = _random(arrays, (M, N + 3), dtype, seed=hash((kind, axis)) % 1000)[:, :N]
    out_dtype = {"argmax": torch.int32, "argmin": torch.int32}.get(kind, dtype)
    if kind in ("max", "min") and dtype == torch.float16:
        out_dtype = torch.float32  # computed in fp32, as Triton
    if kind == "sum" and dtype == torch.float16:
        out_dtype = torch.float16
    size = M if axis == 1 else N
    out = arrays.full(size, -7, out_dtype)
    for num_warps in (1, 4, 8) if arrays.backend == "cuda" else (4,):
        reduce_rows_kernel[(1,)](x, out, M, N, x.stride(0), FILL=_fill(dtype, kind), KIND=kind, AXIS=axis, BM=BM,
                                 BN=BN, num_warps=num_warps)
        expected = _torch_reduce(x.cpu(), kind, axis)
        got = out.cpu()
        if kind in ("argmax", "argmin") and dtype == torch.float16:
            # Ties are likely in fp16: the chosen element must hold the extreme.
            picked = x.cpu().gather(axis, got.long().unsqueeze(axis)).squeeze(axis)
            extreme = x.cpu().amax(axis) if kind == "argmax" else x.cpu().amin(axis)
            assert torch.equal(picked, extreme)
        elif dtype == torch.float16 and kind == "sum":
            torch.testing.assert_close(got.double(), expected, rtol=1e-2, atol=5e-2)
        elif dtype.is_floating_point and kind == "sum":
            torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-4)
        else:
            assert torch.equal(got.to(expected.dtype), expected), (num_warps, got, expected)


@kiln.jit
def reduce_all_kernel(x_ptr, out_ptr, idx_ptr, M, N, BM: kl.constexpr, BN: kl.constexpr, KEEP: kl.constexpr):
    rows = kl.arange(0, BM)
    cols = kl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = kl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=float("-inf"))
    value, index = kl.max(x, axis=None, return_indices=True, keep_dims=KEEP)
    total = kl.sum(kl.where(mask, x, 0.0), axis=None, keep_dims=KEEP)
    if KEEP:
        kl.static_assert(len(total.shape) == 2)
        kl.store(out_ptr + kl.arange(0, 1)[:, None] + kl.arange(0, 1)[None, :], value)
        kl.store(out_ptr + 1 + kl.arange(0, 1)[:, None] + kl.arange(0, 1)[None, :], total)
        kl.store(idx_ptr + kl.arange(0, 1)[:, None] + kl.arange(0, 1)[None, :], index)
    else:
        kl.store(out_ptr, value)
        kl.store(out_ptr + 1, total)
        kl.store(idx_ptr, index)


@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (32, 32)])
def test_reduce_all_axes(arrays, shape, keep_dims) -> None:
    M, N = shape
    x = arrays.randn(M * N, seed=M * 7 + N).reshape(M, N)
    out = arrays.full(2, float("nan"), torch.float32)
    idx = arrays.full(1, -1, torch.int32)
    reduce_all_kernel[(1,)](x, out, idx, M, N, BM=32, BN=32, KEEP=keep_dims)
    ref = x.cpu().double()
    assert out[0].item() == ref.max().item()
    assert idx[0].item() == ref.argmax().item()
    assert abs(out[1].item() - ref.sum().item()) <= 1e-4 * max(1.0, ref.abs().sum().item())


@kiln.jit
def _combine_sum_and_max(s1, m1, s2, m2):
    return s1 + s2, kl.maximum(m1, m2)


@kiln.jit
def custom_reduce_kernel(x_ptr, sum_ptr, max_ptr, N, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + kl.program_id(0) * N + offs, mask=offs < N, other=0.0)
    s, m = kl.reduce((x, kl.abs(x)), 0, _combine_sum_and_max)
    kl.store(sum_ptr + kl.program_id(0), s)
    kl.store(max_ptr + kl.program_id(0), m)


@pytest.mark.parametrize("N", [1, 17, 1000])
def test_custom_tuple_reduce(arrays, N) -> None:
    rows = 3
    x = arrays.randn(rows * N, seed=N).reshape(rows, N)
    sums = arrays.full(rows, float("nan"), torch.float32)
    maxes = arrays.full(rows, float("nan"), torch.float32)
    custom_reduce_kernel[(rows,)](x, sums, maxes, N, BLOCK=1024)
    ref = x.cpu().double()
    torch.testing.assert_close(sums.cpu().double(), ref.sum(1), rtol=1e-5, atol=1e-4)
    assert torch.equal(maxes.cpu().double(), ref.abs().amax(1))


@kiln.jit
def scan_kernel(x_ptr, out_ptr, M, N, KIND: kl.constexpr, AXIS: kl.constexpr, REVERSE: kl.constexpr,
                BM: kl.constexpr, BN: kl.constexpr):
    rows = kl.arange(0, BM)
    cols = kl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offsets = rows[:, None] * N + cols[None, :]
    if KIND == "cumprod":
        x = kl.load(x_ptr + offsets, mask=mask, other=1)
        y = kl.cumprod(x, axis=AXIS, reverse=REVERSE)
    else:
        x = kl.load(x_ptr + offsets, mask=mask, other=0)
        y = kl.cumsum(x, axis=AXIS, reverse=REVERSE)
    kl.store(out_ptr + offsets, y, mask=mask)


@pytest.mark.parametrize("kind", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape,blocks", [((5, 100), (8, 128)), ((32, 32), (32, 32)), ((1, 1), (2, 4))])
def test_scan(arrays, kind, axis, reverse, shape, blocks) -> None:
    M, N = shape
    BM, BN = blocks
    # Integers keep the comparison exact (products wrap as in C, as torch's).
    x = arrays.randint(-3, 4, M * N, torch.int32, seed=M + N + axis).reshape(M, N)
    if kind == "cumprod":
        x = torch.where(x == 0, torch.ones_like(x), x)
    out = arrays.full((M, N), -12345, torch.int32)
    for num_warps in (1, 4, 8) if arrays.backend == "cuda" else (4,):
        scan_kernel[(1,)](x, out, M, N, KIND=kind, AXIS=axis, REVERSE=reverse, BM=BM, BN=BN, num_warps=num_warps)
        ref = x.cpu().long()
        if reverse:
            ref = ref.flip(axis)
        ref = ref.cumsum(axis) if kind == "cumsum" else ref.cumprod(axis)
        if reverse:
            ref = ref.flip(axis)
        assert torch.equal(out.cpu().long(), ref.to(torch.int32).long()), num_warps


@kiln.jit
def _first_nonzero_combine(a_value, a_seen, b_value, b_seen):
    # Not commutative: keeps the earlier value once one was seen.
    return kl.where(a_seen != 0, a_value, b_value), a_seen | b_seen


@kiln.jit
def float_scan_kernel(x_ptr, out_ptr, seen_ptr, N, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs, mask=offs < N, other=0.0)
    s = kl.cumsum(x, 0)
    kl.store(out_ptr + offs, s, mask=offs < N)
    seen = (x > 1.0).to(kl.int32)
    first, any_seen = kl.associative_scan((x, seen), 0, _first_nonzero_combine)
    kl.store(seen_ptr + offs, kl.where(any_seen != 0, first, 0.0), mask=offs < N)


def test_float_and_tuple_scan(arrays) -> None:
    N = 1000
    x = arrays.randn(N, seed=5)
    out = arrays.full(N, float("nan"), torch.float32)
    first = arrays.full(N, float("nan"), torch.float32)
    for num_warps in (1, 4, 8) if arrays.backend == "cuda" else (4,):
        float_scan_kernel[(1,)](x, out, first, N, BLOCK=1024, num_warps=num_warps)
        ref = x.cpu().double().cumsum(0)
        torch.testing.assert_close(out.cpu().double(), ref, rtol=1e-4, atol=1e-3)
        xs = x.cpu()
        expected = torch.zeros(N)
        current = None
        for i in range(N):
            if current is None and xs[i] > 1.0:
                current = xs[i].item()
            expected[i] = 0.0 if current is None else current
        assert torch.equal(first.cpu(), expected), num_warps


@kiln.jit
def softmax_kernel(x_ptr, out_ptr, N, BLOCK: kl.constexpr):
    row = kl.program_id(0)
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + row * N + offs, mask=offs < N, other=-float("inf"))
    kl.store(out_ptr + row * N + offs, kl.softmax(x), mask=offs < N)


@pytest.mark.parametrize("N", [1, 100, 1024])
def test_softmax(arrays, N) -> None:
    x = arrays.randn(4 * N, seed=N).reshape(4, N)
    out = arrays.full((4, N), float("nan"), torch.float32)
    softmax_kernel[(4,)](x, out, N, BLOCK=1024)
    torch.testing.assert_close(out.cpu().double(), torch.softmax(x.cpu().double(), 1), rtol=1e-5, atol=1e-6)


def test_softmax_of_wide_rows(arrays) -> None:
    """A 16384-element row: on the CPU, reductions split the kernel into
    chunk loops (whole-block vectors took tens of seconds to compile)."""
    N = 12_345
    x = arrays.randn(3 * N, seed=7).reshape(3, N)
    out = arrays.full((3, N), float("nan"), torch.float32)
    softmax_kernel[(3,)](x, out, N, BLOCK=16384, num_warps=8)
    torch.testing.assert_close(out.cpu().double(), torch.softmax(x.cpu().double(), 1), rtol=1e-5, atol=1e-7)


# -- errors ----------------------------------------------------------------------


@kiln.jit
def bad_axis_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    kl.store(x_ptr, kl.sum(x, axis=1))


@kiln.jit
def _three_args(a, b, c):
    return a + b + c


@kiln.jit
def bad_combine_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    kl.store(x_ptr, kl.reduce(x, 0, _three_args))


@kiln.jit
def bad_xor_kernel(x_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    kl.store(x_ptr, kl.xor_sum(x, 0))


@pytest.mark.parametrize("kernel,message", [
    (bad_axis_kernel, "axis 1 is out of range for a block of rank 1"),
    (bad_combine_kernel, "takes 3 arguments, but combining 1 block(s) needs 2"),
    (bad_xor_kernel, "kl.xor_sum needs integers, got fp32"),
])
def test_reduction_errors(kernel, message) -> None:
    with pytest.raises(kiln.CompilationError) as info:
        kiln.compile(kernel, signature={"x_ptr": "*fp32"}, constexprs={"BLOCK": 16}, target="cpu")
    assert message in str(info.value)
    assert "kl." in str(info.value)  # the source line is shown


@kiln.jit
def sort_kernel(x_ptr, out_ptr, M: kl.constexpr, N: kl.constexpr, DESCENDING: kl.constexpr):
    offs = kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :]
    kl.store(out_ptr + offs, kl.sort(kl.load(x_ptr + offs), descending=DESCENDING))


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
@pytest.mark.parametrize("shape", [(1, 1), (4, 64)])
def test_sort(arrays, shape, dtype, descending) -> None:
    M, N = shape
    x = _random(arrays, shape, dtype, seed=M * N)
    out = arrays.full(shape, -1, dtype)
    for num_warps in (1, 4) if arrays.backend == "cuda" else (4,):
        sort_kernel[(1,)](x, out, M=M, N=N, DESCENDING=descending, num_warps=num_warps)
        expected = torch.sort(x.cpu(), dim=1, descending=descending).values
        assert torch.equal(out.cpu(), expected), num_warps


def test_sort_error() -> None:
    @kiln.jit
    def sort_rows(x_ptr, N: kl.constexpr):
        offs = kl.arange(0, N)[:, None] * N + kl.arange(0, N)[None, :]
        kl.store(x_ptr + offs, kl.sort(kl.load(x_ptr + offs), dim=0))

    with pytest.raises(kiln.CompilationError, match=r"kl.sort only works along the last dimension \(1\), got dim=0"):
        kiln.compile(sort_rows, signature={"x_ptr": "*fp32"}, constexprs={"N": 8}, target="cpu")


@kiln.jit
def topk_kernel(x_ptr, out_ptr, M: kl.constexpr, N: kl.constexpr, K: kl.constexpr):
    rows = kl.arange(0, M)[:, None]
    x = kl.load(x_ptr + rows * N + kl.arange(0, N)[None, :])
    kl.store(out_ptr + rows * K + kl.arange(0, K)[None, :], x.topk(K))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bfloat16])
@pytest.mark.parametrize("shape,k", [((1, 1), 1), ((4, 64), 8), ((2, 32), 1), ((8, 16), 16), ((1, 128), 32)])
def test_topk(arrays, shape, k, dtype) -> None:
    M, N = shape
    x = _random(arrays, shape, dtype, seed=M * N + k)
    out = arrays.full((M, k), -1, dtype)
    for num_warps in (1, 4) if arrays.backend == "cuda" else (4,):
        topk_kernel[(1,)](x, out, M=M, N=N, K=k, num_warps=num_warps)
        expected = torch.topk(x.cpu().float(), k, dim=1).values.to(dtype)
        assert torch.equal(out.cpu(), expected), num_warps


@kiln.jit
def bitonic_merge_kernel(x_ptr, out_ptr, M: kl.constexpr, N: kl.constexpr, DESCENDING: kl.constexpr):
    offs = kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :]
    kl.store(out_ptr + offs, kl.bitonic_merge(kl.load(x_ptr + offs), descending=DESCENDING))


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("shape", [(1, 2), (4, 64), (2, 128)])
def test_bitonic_merge(arrays, shape, descending) -> None:
    # Each row: an ascending half then a descending half (a bitonic
    # sequence), which one merge sorts.
    M, N = shape
    x = _random(arrays, shape, torch.float32, seed=M + N).cpu()
    half = N // 2
    rows = torch.cat([torch.sort(x[:, :half], dim=1).values,
                      torch.sort(x[:, half:], dim=1, descending=True).values], dim=1)
    x = arrays.full(shape, 0, torch.float32)
    x.copy_(rows)
    out = arrays.full(shape, -1, torch.float32)
    bitonic_merge_kernel[(1,)](x, out, M=M, N=N, DESCENDING=descending)
    expected = torch.sort(rows, dim=1, descending=descending).values
    assert torch.equal(out.cpu(), expected)


@kiln.jit
def bad_topk_kernel(x_ptr, N: kl.constexpr, CALL: kl.constexpr):
    offs = kl.arange(0, N)[:, None] * N + kl.arange(0, N)[None, :]
    x = kl.load(x_ptr + offs)
    if CALL == "k3":
        kl.store(x_ptr + offs, kl.topk(x, 3))
    elif CALL == "k32":
        kl.store(x_ptr + offs, kl.topk(x, 32))
    elif CALL == "dim0":
        kl.store(x_ptr + offs, kl.topk(x, 4, dim=0))
    else:
        kl.store(x_ptr + offs, kl.bitonic_merge(x, dim=0))


@pytest.mark.parametrize("call,message", [
    ("k3", "kl.topk needs a power of two for k, got 3"),
    ("k32", "kl.topk needs k at most the size of the last dimension (16), got k=32"),
    ("dim0", "kl.topk only works along the last dimension (1), got dim=0"),
    ("merge", "kl.bitonic_merge only works along the last dimension (1), got dim=0"),
])
def test_topk_errors(call, message) -> None:
    with pytest.raises(kiln.CompilationError) as info:
        kiln.compile(bad_topk_kernel, signature={"x_ptr": "*fp32"}, constexprs={"N": 16, "CALL": call},
                     target="cpu")
    assert message in str(info.value)
    assert "kl." in str(info.value)  # the source line is shown


@kiln.jit
def promotion_kernel(x_ptr, i8_ptr, out_ptr, N: kl.constexpr):
    offs = kl.arange(0, N)
    x = kl.load(x_ptr + offs)  # bfloat16
    i = kl.load(i8_ptr + offs)  # int8
    # The types Triton gives each result.
    kl.static_assert(kl.cumsum(x, 0).dtype == kl.float32)
    kl.static_assert(kl.cumprod(x, 0).dtype == kl.float32)
    kl.static_assert(kl.cumsum(i, 0).dtype == kl.int32)
    kl.static_assert(kl.cumprod(i, 0).dtype == kl.int8)
    kl.static_assert(kl.sum(x).dtype == kl.bfloat16)
    kl.static_assert(kl.max(x).dtype == kl.float32)
    kl.static_assert(kl.max(i).dtype == kl.int32)
    kl.static_assert(kl.max(x, 0, return_indices=True)[0].dtype == kl.float32)
    kl.static_assert(kl.max(i, 0, return_indices=True)[0].dtype == kl.int8)
    kl.static_assert(kl.min(i.to(kl.float16), 0, return_indices=True)[0].dtype == kl.float16)
    kl.store(out_ptr + offs, kl.cumsum(x, 0))
    kl.store(out_ptr + N + offs, kl.cumprod(x, 0))


def test_bfloat16_scans_run_in_float32(arrays) -> None:
    # A running sum of bfloat16 kept in bfloat16 drifts by a few percent
    # over 256 terms; in float32 it matches the float64 sum of the inputs.
    N = 256
    x = arrays.randn(N, seed=11).to(torch.bfloat16)
    x_small = (1 + x.float() / 64).to(torch.bfloat16)  # products stay near 1
    i8 = arrays.randint(-3, 4, N, torch.int8, seed=3)
    out = arrays.full(2 * N, float("nan"), torch.float32)
    promotion_kernel[(1,)](x, i8, out, N=N)
    ref = x.cpu().double().cumsum(0)
    torch.testing.assert_close(out[:N].cpu().double(), ref, rtol=1e-5, atol=1e-4)
    out2 = arrays.full(2 * N, float("nan"), torch.float32)
    promotion_kernel[(1,)](x_small, i8, out2, N=N)
    ref_prod = x_small.cpu().double().cumprod(0)
    torch.testing.assert_close(out2[N:].cpu().double(), ref_prod, rtol=1e-5, atol=1e-6)


@kiln.jit
def count_positive_kernel(x_ptr, out_ptr, N, BLOCK: kl.constexpr):
    """How many of the first N elements are positive: a reduction of a
    widened comparison, whose halving tree over thousands of lanes LLVM's
    x86 code generator could not compile."""
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs, mask=offs < N, other=0)
    kl.store(out_ptr, kl.sum((x > 0).to(kl.int32), axis=0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8])
@pytest.mark.parametrize("block", [4096, 8192])
def test_reduce_wide_widened_comparison(arrays, dtype, block) -> None:
    n = block - 5
    x = _random(arrays, (block,), dtype, seed=block % 97)
    out = arrays.full(1, -7, torch.int32)
    count_positive_kernel[(1,)](x, out, n, BLOCK=block)
    assert out.cpu().item() == int((x.cpu()[:n] > 0).sum())


@pytest.mark.parametrize("kind", ["sum", "max", "argmin", "xor_sum"])
@pytest.mark.parametrize("shape, axis", [((32, 128), 0), ((32, 128), 1), ((512, 8), 1), ((8, 512), 0)])
def test_reduce_wide_blocks(arrays, kind, shape, axis) -> None:
    """Blocks of thousands of elements, reduced along either axis (on the
    CPU these combine slices read back from the stack before the tree)."""
    BM, BN = shape
    M, N = BM - 3, BN - 1
    dtype = torch.int32 if kind == "xor_sum" else torch.float32
    x = _random(arrays, (M, N), dtype, seed=BM + BN + axis)
    out_dtype = torch.int32 if kind == "argmin" else dtype
    size = M if axis == 1 else N
    out = arrays.full(size, -7, out_dtype)
    reduce_rows_kernel[(1,)](x, out, M, N, x.stride(0), FILL=_fill(dtype, kind), KIND=kind, AXIS=axis, BM=BM, BN=BN)
    expected = _torch_reduce(x.cpu(), kind, axis)
    if kind == "sum":
        torch.testing.assert_close(out.cpu().double(), expected, rtol=1e-5, atol=1e-4)
    else:
        assert torch.equal(out.cpu().to(expected.dtype), expected)


@kiln.jit
def compare_wide_kernel(x_ptr, out_ptr, BM: kl.constexpr, BN: kl.constexpr):
    offs = kl.arange(0, BM)[:, None] * BN + kl.arange(0, BN)[None, :]
    kl.store(out_ptr + offs, (kl.load(x_ptr + offs) > 0).to(kl.int8))


def test_cpu_refuses_boolean_blocks_llvm_cannot_compile(arrays) -> None:
    """A 2-D compare of 65536 elements (1-D blocks are cut into chunks and
    are not limited) is refused with the line that makes it; a smaller one
    compiles and runs."""
    if arrays.backend != "cpu":
        pytest.skip("a limit of the CPU backend's code generator")
    x = arrays.randn(1 << 16, seed=3)
    out = arrays.full(1 << 16, 0, torch.int8)
    with pytest.raises(kiln.CompilationError, match=r"(?s)kl.load\(x_ptr \+ offs\) > 0.*at most 65535 elements"):
        compare_wide_kernel[(1,)](x, out, BM=256, BN=256)
    compare_wide_kernel[(1,)](x, out, BM=64, BN=64)
    assert torch.equal(out[:1 << 12].cpu(), (x[:1 << 12].cpu() > 0).to(torch.int8))
