"""Triton 3.6's kl.map_elementwise, kl.reduce_or, kl.slice, kl.condition
and kl.target_info in kernels, on every backend present; results compared
with torch (float64 or exact integers) on random inputs."""

import functools
import operator

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.errors import CompilationError


# -- map_elementwise ------------------------------------------------------------


@kiln.jit
def _sign_compare(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@kiln.jit
def _piecewise(x, lo, hi):
    # Assignments merged per element, nested ifs, a helper call and an
    # early return under an element-dependent condition.
    y = x * 2.0
    if x < lo:
        y = lo - x
        if x < lo * 2.0:
            y = y * 3.0
    elif x > hi:
        return _clip_high(x, hi)
    return y + 1.0


@kiln.jit
def _clip_high(x, hi):
    return hi + kl.exp(hi - x)


@kiln.jit
def _safe_div(a, b):
    # The division runs on whole blocks, b == 0 included: those elements must
    # get the other branch's values.
    if b != 0:
        return a // b, a % b
    return a, 0


@kiln.jit
def _safe_div_pair(a0, a1, b0, b1):
    q0, r0 = _safe_div(a0, b0)
    q1, r1 = _safe_div(a1, b1)
    return q0, q1, r0, r1


@kiln.jit
def _pack_swap(a0, a1, a2, a3, b0, b1, b2, b3):
    # Four elements of a and b per call; returns them crossed, to check
    # which elements form a call's pack.
    return a3 + b0, a2 + b1, a1 + b2, a0 + b3


@kiln.jit
def compare_kernel(x_ptr, y_ptr, out_ptr, N: kl.constexpr):
    offs = kl.arange(0, N)
    z = kl.map_elementwise(_sign_compare, kl.load(x_ptr + offs), kl.load(y_ptr + offs))
    kl.store(out_ptr + offs, z)


@kiln.jit
def piecewise_kernel(x_ptr, out_ptr, M: kl.constexpr, N: kl.constexpr):
    offs = kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :]
    # A scalar argument is broadcast, as a block argument of another shape.
    z = kl.map_elementwise(_piecewise, kl.load(x_ptr + offs), -0.5, kl.full([1, N], 0.75, kl.float32))
    kl.store(out_ptr + offs, z)


@kiln.jit
def divmod_kernel(a_ptr, b_ptr, q_ptr, r_ptr, N: kl.constexpr, PACK: kl.constexpr):
    offs = kl.arange(0, N)
    if PACK == 1:
        q, r = kl.map_elementwise(_safe_div, kl.load(a_ptr + offs), kl.load(b_ptr + offs))
    else:
        q, r = kl.map_elementwise(_safe_div_pair, kl.load(a_ptr + offs), kl.load(b_ptr + offs), pack=2)
    kl.store(q_ptr + offs, q)
    kl.store(r_ptr + offs, r)


@kiln.jit
def pack_kernel(a_ptr, b_ptr, out_ptr, N: kl.constexpr):
    offs = kl.arange(0, N)
    z = kl.map_elementwise(_pack_swap, kl.load(a_ptr + offs), kl.load(b_ptr + offs), pack=4)
    kl.store(out_ptr + offs, z)


def test_map_elementwise_branches_on_values(arrays):
    x = arrays.randint(-3, 3, 256, torch.int32, seed=1)
    y = arrays.randint(-3, 3, 256, torch.int32, seed=2)
    out = arrays.full(256, 7, torch.int32)
    compare_kernel[(1,)](x, y, out, N=256)
    expected = (x > y).to(torch.int32) - (x < y).to(torch.int32)
    assert torch.equal(out.cpu(), expected.cpu())


def test_map_elementwise_assignments_nested_ifs_and_helpers(arrays):
    x = arrays.randn(16 * 32, seed=3) * 2
    out = arrays.full(16 * 32, 0.0, torch.float32)
    piecewise_kernel[(1,)](x, out, M=16, N=32)
    xd = x.cpu().double()
    lo, hi = -0.5, 0.75
    low = torch.where(xd < 2 * lo, (lo - xd) * 3, lo - xd)
    expected = torch.where(xd < lo, low + 1, torch.where(xd > hi, hi + torch.exp(hi - xd), xd * 2 + 1))
    torch.testing.assert_close(out.cpu().double(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pack", [1, 2])
def test_map_elementwise_divides_only_where_the_branch_is_taken(arrays, pack):
    a = arrays.randint(-100, 100, 128, torch.int32, seed=4)
    b = arrays.randint(-3, 4, 128, torch.int32, seed=5)  # many zeros
    q, r = arrays.full(128, 0, torch.int32), arrays.full(128, 0, torch.int32)
    divmod_kernel[(1,)](a, b, q, r, N=128, PACK=pack)
    a64, b64 = a.cpu().long(), b.cpu().long()
    safe = torch.where(b64 == 0, torch.ones_like(b64), b64)
    # Triton's (C's) integer division truncates toward zero.
    q_ref = torch.where(b64 == 0, a64, torch.div(a64, safe, rounding_mode="trunc"))
    r_ref = torch.where(b64 == 0, torch.zeros_like(a64), a64 - torch.div(a64, safe, rounding_mode="trunc") * safe)
    assert torch.equal(q.cpu().long(), q_ref)
    assert torch.equal(r.cpu().long(), r_ref)


def test_map_elementwise_pack_takes_consecutive_elements(arrays):
    a = arrays.randint(0, 1000, 64, torch.int32, seed=6)
    b = arrays.randint(0, 1000, 64, torch.int32, seed=7)
    out = arrays.full(64, 0, torch.int32)
    pack_kernel[(1,)](a, b, out, N=64)
    a4, b4 = a.cpu().reshape(16, 4), b.cpu().reshape(16, 4)
    expected = torch.stack([a4[:, 3] + b4[:, 0], a4[:, 2] + b4[:, 1], a4[:, 1] + b4[:, 2], a4[:, 0] + b4[:, 3]], 1)
    assert torch.equal(out.cpu(), expected.reshape(64))


@kiln.jit
def _stores_under_condition(p, x):
    if x > 0:
        kl.store(p, x)
    return x


@kiln.jit
def bad_map_kernel(out_ptr, N: kl.constexpr):
    offs = kl.arange(0, N)
    kl.map_elementwise(_stores_under_condition, out_ptr + offs, offs)


@kiln.jit
def bad_pack_kernel(out_ptr, N: kl.constexpr):
    offs = kl.arange(0, N)
    kl.store(out_ptr + offs, kl.map_elementwise(_sign_compare, offs, offs, pack=3))


def test_map_elementwise_refuses_memory_access_under_element_conditions():
    with pytest.raises(CompilationError, match="store cannot run under an if on element values"):
        kiln.compile(bad_map_kernel, {"out_ptr": "*i32"}, {"N": 16}, target="cpu")


def test_map_elementwise_refuses_a_pack_that_is_not_a_power_of_two():
    with pytest.raises(CompilationError, match="pack must be a constexpr power of two"):
        kiln.compile(bad_pack_kernel, {"out_ptr": "*i32"}, {"N": 16}, target="cpu")


# -- reduce_or -------------------------------------------------------------------


@kiln.jit
def reduce_or_kernel(x_ptr, rows_ptr, cols_ptr, all_ptr, M: kl.constexpr, N: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :])
    kl.store(rows_ptr + kl.arange(0, M), kl.reduce_or(x, 1))
    kl.store(cols_ptr + kl.arange(0, N)[None, :], x.reduce_or(0, keep_dims=True))
    kl.store(all_ptr, kl.reduce_or(x, None))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64])
def test_reduce_or(arrays, dtype):
    # Sparse bits, so that the or of a row is not simply all ones.
    bits = arrays.randint(0, 7, 8 * 16, torch.int64, seed=8)
    x = torch.where(bits < 6, torch.ones_like(bits) << bits, torch.zeros_like(bits)).to(dtype).reshape(8, 16)
    rows, cols, total = arrays.full(8, 0, dtype), arrays.full(16, 0, dtype), arrays.full(1, 0, dtype)
    reduce_or_kernel[(1,)](x, rows, cols, total, M=8, N=16)
    xc = x.cpu().long()

    def ored(t, dim):
        out = torch.zeros(t.shape[1 - dim], dtype=torch.long)
        for i in range(t.shape[dim]):
            out |= t.select(dim, i)
        return out

    assert torch.equal(rows.cpu().long(), ored(xc, 1))
    assert torch.equal(cols.cpu().long(), ored(xc, 0))
    assert total.cpu().item() == functools.reduce(operator.or_, ored(xc, 1).tolist(), 0)


@kiln.jit
def reduce_or_float_kernel(x_ptr, N: kl.constexpr):
    kl.store(x_ptr, kl.reduce_or(kl.load(x_ptr + kl.arange(0, N)), 0))


def test_reduce_or_refuses_floats():
    with pytest.raises(CompilationError, match="reduce_or needs integers"):
        kiln.compile(reduce_or_float_kernel, {"x_ptr": "*fp32"}, {"N": 16}, target="cpu")


# -- slice, condition, target_info --------------------------------------------------


@kiln.jit
def slice_kernel(out_ptr):
    t = (1, 2, 3, 4, 5)
    s = t[1:4]
    u = t[kl.slice(None, None, 2)]
    x = kl.arange(0, 4)[kl.slice(None, None, None)]
    kl.store(out_ptr + kl.arange(0, 4), x + s[0] * 100 + u[2] * 1000 + len(s) * 10000)


def test_slices_index_tuples_and_whole_axes(arrays):
    out = arrays.full(4, 0, torch.int32)
    slice_kernel[(1,)](out)
    assert out.cpu().tolist() == [v + 200 + 5000 + 30000 for v in range(4)]


@kiln.jit
def condition_kernel(out_ptr, n):
    i = 0
    total = 0
    while kl.condition(i < n, disable_licm=True):
        total += i
        i += 1
    j = 0
    while kl.condition(j < n):
        total += 1
        j += 1
    kl.store(out_ptr, total)


def test_condition_is_the_while_test(arrays):
    out = arrays.full(1, 0, torch.int32)
    condition_kernel[(1,)](out, 10)
    assert out.cpu().item() == sum(range(10)) + 10


@kiln.jit
def target_kernel(out_ptr):
    value = 0
    if kl.target_info.is_cuda():
        value += 1
    if kl.target_info.cuda_capability_geq(8, 0):
        value += 10
    if kl.target_info.cuda_capability_geq(100, 0):
        value += 100
    if kl.target_info.is_hip():
        value += 1000
    kl.store(out_ptr, value)


def test_target_info_answers_for_the_compile_target(arrays):
    out = arrays.full(1, -1, torch.int32)
    target_kernel[(1,)](out)
    assert out.cpu().item() == (11 if arrays.backend == "cuda" else 0)
    # While compiling for another target, the queries answer for it.
    ir = kiln.compile(target_kernel, {"out_ptr": "*i32"}, {}, target="sm_90a").asm["kiln"]
    assert "11" in ir and "arith.constant 0 : i32" not in ir
