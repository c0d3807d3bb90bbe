"""Tuples through helpers (arguments, results, nested), tuple unpacking,
constant indexing and len(), kiln.constexpr_function, and early returns in
if statements, on every backend present, against torch."""

import typing

import pytest
import torch

import kiln
import kiln.language as kl


@kiln.constexpr_function
def next_power_of_two(n):
    return 1 << (n - 1).bit_length()


@kiln.jit
def _min_max(x, y):
    return kl.minimum(x, y), kl.maximum(x, y)


@kiln.jit
def _sum_pair(pair, scale):
    lo, hi = pair
    return (lo + hi) * scale


@kiln.jit
def _stats(values):
    # A nested tuple in, a nested tuple out.
    (a, b), c = values
    return (a + b + c, (a * b, len(values)))


@kiln.jit
def tuple_kernel(x_ptr, y_ptr, out_ptr, n, N: kl.constexpr):
    BLOCK: kl.constexpr = next_power_of_two(N)
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=0.0)
    y = kl.load(y_ptr + offs, mask=mask, other=0.0)
    pair = _min_max(x, y)
    total, (product, count) = _stats((pair, 1.0))
    kl.store(out_ptr + offs, _sum_pair(pair, 2.0) + total * pair[1] - product + count, mask=mask)


def test_tuples_through_helpers(arrays) -> None:
    n = 1000
    x, y = arrays.randn(n, seed=1), arrays.randn(n, seed=2)
    out = arrays.full(n, float("nan"), torch.float32)
    tuple_kernel[(kiln.cdiv(n, 128),)](x, y, out, n, N=100)  # BLOCK = 128
    lo, hi = torch.minimum(x, y).double(), torch.maximum(x, y).double()
    expected = (lo + hi) * 2 + (lo + hi + 1) * hi - lo * hi + 2
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5)


@kiln.jit
def _classify(v, limit):
    # Early returns in nested ifs, with a tuple result.
    if v < 0:
        return -v, 1
    if v > limit:
        return limit, 2
    return v, 0


@kiln.jit
def early_return_kernel(x_ptr, out_ptr, code_ptr, n, limit):
    pid = kl.program_id(0)
    if pid >= n:
        return
    v, code = _classify(kl.load(x_ptr + pid), limit)
    kl.store(out_ptr + pid, v)
    kl.store(code_ptr + pid, code)


def test_early_return(arrays) -> None:
    n, limit = 64, 40
    x = arrays.randint(-100, 100, n, torch.int32, seed=4)
    out = arrays.full(n + 8, -7, torch.int32)
    code = arrays.full(n + 8, -7, torch.int32)
    # More programs than elements: the extra ones return at once.
    early_return_kernel[(n + 8,)](x, out, code, n, limit)
    expected = torch.where(x < 0, -x, torch.where(x > limit, torch.full_like(x, limit), x))
    expected_code = torch.where(x < 0, 1, torch.where(x > limit, 2, 0)).to(torch.int32)
    assert torch.equal(out[:n], expected) and torch.equal(code[:n], expected_code)
    assert torch.equal(out[n:], torch.full_like(out[n:], -7))


@kiln.jit
def carried_tuple_kernel(out_ptr, n):
    # A tuple carried through a runtime loop and an if.
    state = (0, 1)
    for i in range(n):
        a, b = state
        if i % 3 == 0:
            state = (b, a + b)
        else:
            state = (b, a)
    kl.store(out_ptr, state[0])
    kl.store(out_ptr + 1, state[1])


@pytest.mark.parametrize("n", [0, 1, 7, 20])
def test_tuple_loop_carried(arrays, n) -> None:
    out = arrays.full(2, -1, torch.int32)
    carried_tuple_kernel[(1,)](out, n)
    a, b = 0, 1
    for i in range(n):
        a, b = (b, a + b) if i % 3 == 0 else (b, a)
    assert out.tolist() == [a, b]


# -- tuples as kernel launch arguments (Triton 3.x) ------------------------------


@kiln.jit
def _weighted(pair, weights):
    # A kernel's tuple argument passed on to a helper.
    return pair[0] * weights[0] + pair[1] * weights[1]


@kiln.jit
def tuple_args_kernel(ptrs, sizes, out_ptr, weights, BLOCK: kl.constexpr):
    x_ptr, y_ptr = ptrs
    n = sizes[0]
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=0.0)
    y = kl.load(ptrs[1] + offs, mask=mask, other=0.0)
    acc = _weighted((x, y), weights)
    # Iterating over a tuple argument at compile time.
    for i in kl.static_range(len(sizes)):
        acc += sizes[i]
    kl.store(out_ptr + offs, acc, mask=mask)


@pytest.mark.parametrize("n", [1, 100, 256])
def test_tuple_kernel_arguments(arrays, n) -> None:
    x, y = arrays.randn(n, seed=5), arrays.randn(n, seed=6)
    out = arrays.full(n, float("nan"), torch.float32)
    # Ints of every specialization (== 1, divisible by 16, neither) and floats.
    sizes = (n, 1, 32, 7)
    tuple_args_kernel[(kiln.cdiv(n, 64),)]((x, y), sizes, out, (0.5, -2.0), BLOCK=64)
    expected = x.double() * 0.5 - 2.0 * y.double() + sum(sizes)
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5)


@kiln.jit
def nested_tuple_kernel(out_ptr, spec, n):
    # spec = ((src_ptr, (scale, SHIFT)), count): a pointer, a float and a
    # kl.constexpr nested two deep.
    (src_ptr, (scale, shift)), count = spec
    kl.static_assert(shift == 3)
    offs = kl.arange(0, 128)
    mask = offs < n
    v = kl.load(src_ptr + offs, mask=mask, other=0)
    total = v * scale + (shift + count)
    kl.store(out_ptr + offs, total, mask=mask)


def test_nested_tuple_argument_with_constexpr(arrays) -> None:
    n = 100
    src = arrays.randn(n, seed=7)
    out = arrays.full(n, float("nan"), torch.float32)
    nested_tuple_kernel[(1,)](out, ((src, (2.5, kl.constexpr(3))), 4), n)
    torch.testing.assert_close(out.double(), src.double() * 2.5 + 7, rtol=1e-6, atol=1e-6)
    # Another constexpr is another kernel; the static_assert proves the value is compiled in.
    with pytest.raises(kiln.CompilationError, match="static_assert"):
        nested_tuple_kernel[(1,)](out, ((src, (2.5, kl.constexpr(4))), 4), n)


@kiln.jit
def tuple_loop_kernel(out_ptr, bounds, steps):
    # A tuple argument read inside a runtime loop, and a tuple argument as a
    # loop-carried value's start.
    lo, hi = bounds
    state = steps
    for i in range(lo, hi):
        state = (state[0] + i, state[1] * 2)
    kl.store(out_ptr, state[0])
    kl.store(out_ptr + 1, state[1])


def test_tuple_argument_in_a_loop(arrays) -> None:
    out = arrays.full(2, -1, torch.int32)
    tuple_loop_kernel[(1,)](out, (2, 7), (10, 1))
    assert out.tolist() == [10 + sum(range(2, 7)), 2 ** 5]


def test_tuple_structure_is_in_the_key(arrays) -> None:
    out = arrays.full(2, -1, torch.int32)
    tuple_loop_kernel[(1,)](out, (0, 3), (1, 1))
    tuple_loop_kernel[(1,)](out, (0, 3), (16, 1))  # another specialization of steps[0]
    tuple_loop_kernel[(1,)](out, (0, 3), (5, 3))
    assert out.tolist() == [5 + 3, 3 * 8]
    cache = tuple_loop_kernel.cache[arrays.cache_device]
    assert len(cache) >= 3


@kiln.jit
def _kl_tuple_of(x, y):
    v = 5.0  # the comprehension's own v hides this one, and leaves it as it was
    pair = kl.tuple([x, y * 2.0])
    bumped = kl.tuple([v + 1.0 for v in pair])
    return bumped[0], bumped[1] + (v - 5.0)


@kiln.jit
def kl_tuple_kernel(x_ptr, out_ptr, flags_ptr, N: kl.constexpr):
    offs = kl.arange(0, N)
    x = kl.load(x_ptr + offs)
    a, b = _kl_tuple_of(x, x)
    joined = kl.tuple((a, )) + (b, 3.0)
    kl.store(out_ptr + offs, joined[0] + joined[1] * joined[2])
    kl.store(flags_ptr + 0, kl.tuple((1, 2)) == (1, 2))
    kl.store(flags_ptr + 1, kl.tuple([1, 2]) == (1, 3))
    kl.store(flags_ptr + 2, isinstance((1, 2), kl.tuple) and isinstance(joined, kl.tuple))
    kl.store(flags_ptr + 3, len(kl.tuple(())))


def test_kl_tuple(arrays) -> None:
    # kl.tuple (Triton's tl.tuple) makes a tuple, runtime values included,
    # that compares, concatenates, indexes and unpacks as any tuple; a list
    # comprehension over a tuple makes one too (unrolled).
    x = arrays.randn(64, seed=3)
    out = arrays.full(64, float("nan"), torch.float32)
    flags = arrays.full(4, -1, torch.int32)
    kl_tuple_kernel[(1,)](x, out, flags, N=64)
    assert torch.allclose(out.cpu(), (x + 1.0 + (x * 2.0 + 1.0) * 3.0).cpu())
    assert flags.cpu().tolist() == [1, 0, 1, 0]


@kiln.jit
def _scaled(x, factor):
    return x * factor


@kiln.jit
def _shifted(x, factor):
    return x + factor


@kiln.jit
def jit_function_argument_kernel(out_ptr, combine, closure, BLOCK: kl.constexpr):
    # A jit function passed as an argument (alone or in a tuple) is compiled
    # in and called like a global one; *t spreads a tuple into arguments.
    x = kl.load(out_ptr + kl.arange(0, BLOCK))
    y = combine(x, *closure[1])
    kl.store(out_ptr + kl.arange(0, BLOCK), closure[0](y, 2.0))


def test_jit_functions_as_arguments(arrays) -> None:
    x = arrays.randn(16, seed=8)
    expected = (x.cpu().double() * 3.0 + 2.0)
    out = x.clone()
    jit_function_argument_kernel[(1,)](out, _scaled, (_shifted, (3.0,)), BLOCK=16)
    torch.testing.assert_close(out.cpu().double(), expected)
    out = x.clone()
    jit_function_argument_kernel[(1,)](out, _shifted, (_scaled, (3.0,)), BLOCK=16)  # another pair: recompiled
    torch.testing.assert_close(out.cpu().double(), (x.cpu().double() + 3.0) * 2.0)


@kiln.jit
def bad_spread_kernel(out_ptr):
    kl.store(out_ptr, _scaled(*out_ptr))


def test_spreading_a_non_tuple_is_an_error(arrays) -> None:
    with pytest.raises(kiln.CompilationError, match=r"only a tuple can be spread into arguments with \*"):
        bad_spread_kernel[(1,)](arrays.full(1, 0.0, torch.float32))


class Matrix(typing.NamedTuple):
    ptr: typing.Any
    rows: typing.Any
    stride: typing.Any


class Swapped(typing.NamedTuple):
    # Matrix's structure and leaf types with two int fields swapped: it must
    # not share Matrix's kernels.
    ptr: typing.Any
    stride: typing.Any
    rows: typing.Any


@kiln.jit
def _matrix_view(ptr, rows, stride):
    # A named tuple built in a helper and returned whole.
    return Matrix(ptr=ptr, rows=rows, stride=stride)


@kiln.jit
def named_tuple_kernel(src, dst, BLOCK: kl.constexpr):
    out = _matrix_view(dst.ptr, dst.rows, dst.stride)
    offs = kl.arange(0, BLOCK)
    for row in range(src.rows):
        x = kl.load(src.ptr + row * src.stride + offs)
        kl.store(out.ptr + row * out.stride + offs, x * 2 + row)


def test_named_tuples(arrays) -> None:
    """Named tuples as kernel arguments (fields read by name), built in a
    helper with keywords and returned; two classes of one structure but
    other field names compile apart."""
    rows, stride, block = 3, 20, 16
    src = arrays.randn(rows * stride, seed=5)
    expected = src.reshape(rows, stride)[:, :block] * 2 + torch.arange(rows, device=src.device)[:, None]
    for make in (lambda p: Matrix(p, rows, stride), lambda p: Swapped(p, stride, rows)):
        dst = arrays.full(rows * stride, -1.0, torch.float32)
        named_tuple_kernel[(1,)](make(src), make(dst), BLOCK=block)
        arrays.synchronize()
        torch.testing.assert_close(dst.reshape(rows, stride)[:, :block], expected)
