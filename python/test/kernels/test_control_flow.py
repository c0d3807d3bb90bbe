"""Runtime and constexpr control flow, nested jit calls, conversions between
element types and scalar arguments of every kind, run on every backend
present and compared with torch on fresh random inputs."""

import pytest
import torch

import kiln
import kiln.language as kl


@kiln.jit
def _double_plus(x, y):
    return x * 2 + y


@kiln.jit
def control_flow_kernel(x_ptr, out_ptr, n, steps, flag, scale, BLOCK: kl.constexpr, UNROLL: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    acc = kl.zeros((BLOCK,), dtype=kl.float32)
    for i in range(steps):
        acc = acc + kl.load(x_ptr + offs, mask=mask, other=0.0) * i
    for j in kl.static_range(UNROLL):
        acc = acc * 1.5
    if flag > 0:
        acc = acc + scale
    else:
        acc = acc - scale
    if UNROLL > 1:
        acc = _double_plus(acc, acc)
    kl.store(out_ptr + offs, acc, mask=mask)


@pytest.mark.parametrize("flag", [1, -1])
@pytest.mark.parametrize("unroll", [1, 3])
def test_control_flow(arrays, flag: int, unroll: int) -> None:
    n, steps, scale = 3000, 5, 0.75
    x = arrays.randn(n, seed=unroll)
    out = torch.full_like(x, float("nan"))
    control_flow_kernel[(kiln.cdiv(n, 256),)](x, out, n, steps, flag, scale, BLOCK=256, UNROLL=unroll)
    ref = x.double() * sum(range(steps)) * 1.5**unroll
    ref = ref + scale if flag > 0 else ref - scale
    if unroll > 1:
        ref = ref * 3
    assert torch.allclose(out.double(), ref, rtol=1e-5, atol=1e-5)


@kiln.jit
def convert_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    value = kl.load(x_ptr + offs, mask=mask)
    kl.store(out_ptr + offs, (value + value).to(out_ptr.dtype.element_ty), mask=mask)


TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64,
         "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}


@pytest.mark.parametrize("source", list(TORCH))
@pytest.mark.parametrize("destination", ["fp32", "i64", "fp16"])
def test_conversions(arrays, source: str, destination: str) -> None:
    n = 1001
    src, dst = TORCH[source], TORCH[destination]
    if src.is_floating_point:
        x = (arrays.randn(n) * 20).to(src)
    else:
        x = arrays.randint(0, 50, n, torch.int64).to(src)
    out = arrays.full(n, 0, dst)
    out.fill_(77)
    convert_kernel[(kiln.cdiv(n, 512),)](x, out, n, BLOCK=512)
    assert torch.equal(out, (x + x).to(dst))


@kiln.jit
def scalar_arguments_kernel(out_ptr, a, b, c, d, e):
    kl.store(out_ptr, (a + b + c + e).to(kl.float64) + d)


def test_scalar_arguments(arrays) -> None:
    out = arrays.full(1, float("nan"), torch.float64)
    # bool, i32 and i64 sum in i64; + fp32 converts to fp32 (Triton's
    # promotion); the fp64 cast and + d (a Python float, so fp32) follow.
    a, b, c, d, e = True, 7, -(2**40) + 3, 0.125, 3.5
    scalar_arguments_kernel[(1,)](out, a, b, c, d, e)
    as_fp32 = torch.tensor(1 + b + c, dtype=torch.int64).to(torch.float32) + torch.tensor(e, dtype=torch.float32)
    assert out.item() == as_fp32.double().item() + d


@kiln.jit
def countdown_kernel(out_ptr, lo, hi, STEP: kl.constexpr):
    # Sum and count of range(lo, hi, STEP) with a constant (often negative)
    # step and runtime bounds, plus the last value the loop saw.
    total = 0
    total = total.to(kl.int64)
    count = 0
    last = lo - lo - 12345
    for i in range(lo, hi, STEP):
        total += i
        count += 1
        last = i
    kl.store(out_ptr, total)
    kl.store(out_ptr + 1, count.to(kl.int64))
    kl.store(out_ptr + 2, last.to(kl.int64))


@pytest.mark.parametrize("lo,hi,step", [(15, -16, -1), (15, -16, -3), (-18, -22, -1), (22, 18, -2),
                                        (5, 5, -1), (3, 9, -1), (0, 10, 3), (2**35 + 20, 2**35, -7)])
def test_for_constant_step_either_sign(arrays, lo, hi, step) -> None:
    out = arrays.full(3, -1, torch.int64)
    countdown_kernel[(1,)](out, lo, hi, STEP=step)
    values = list(range(lo, hi, step))
    assert out.cpu().tolist() == [sum(values), len(values), values[-1] if values else -12345]


@kiln.jit
def scalar_attributes_kernel(out_ptr):
    # A Python number assigned in a kernel answers the attributes of the
    # scalar Triton makes of it: its literal type, .to(), ...
    one = 1
    big = 2**40
    half = 0.5
    huge = 1e50
    kl.static_assert(one.dtype == kl.int32)
    kl.static_assert(big.dtype == kl.int64)
    kl.static_assert(half.dtype == kl.float32)
    kl.static_assert(huge.dtype == kl.float64)
    kl.static_assert(float("inf").dtype == kl.float32)
    kl.static_assert(1e-40.dtype == kl.float64)  # below float32's normal range
    kl.store(out_ptr + kl.arange(0, 4), kl.full([4], one, dtype=one.dtype).to(kl.float64) + huge.to(kl.float64))


def test_python_numbers_have_scalar_attributes(arrays) -> None:
    out = arrays.full(4, 0.0, torch.float64)
    scalar_attributes_kernel[(1,)](out)
    assert out.cpu().tolist() == [1e50 + 1] * 4


def test_zero_step_is_an_error(arrays) -> None:
    with pytest.raises(kiln.CompilationError, match="step of a runtime for loop"):
        countdown_kernel[(1,)](arrays.full(3, 0, torch.int64), 0, 4, STEP=0)


@kiln.jit
def constexpr_type_kernel(out_ptr, strides, N: kl.constexpr):
    # A compile-time value's .type is kl.constexpr_type(value), as Triton's.
    kl.static_assert(N.type == kl.constexpr_type(4))
    kl.static_assert(N.type != kl.constexpr_type(4.0))
    kl.static_assert((1, 2).type == kl.constexpr_type((1, 2)))
    kl.static_assert(isinstance(strides[1].type, kl.constexpr_type))  # a stride of 1 is compiled in
    kl.store(out_ptr + kl.arange(0, N), kl.full([N], strides[0], dtype=kl.int32))


def test_constexpr_type(arrays) -> None:
    out = arrays.full(4, 0, torch.int32)
    constexpr_type_kernel[(1,)](out, (7, 1), N=4)
    assert out.cpu().tolist() == [7] * 4
    assert kl.constexpr(5).type == kl.constexpr_type(5) != kl.constexpr_type(6)
