"""kl.cast / .to with fp_downcast_rounding ("rtne", "rtz") for fp32 to fp16
and bf16, and small builtins (kl.zeros_like, x.dtype and x.shape, chained
comparisons, `not`, kl.range's scheduling hints) on every backend present,
against numpy and torch."""

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl

# fp32 subnormal inputs are left out: a backend may flush them to zero.
SPECIALS = [0.0, -0.0, 1.0, -1.0, 65504.0, 65519.0, 65520.0, -65520.0, 1e30, -1e30, 5.96e-8, -3e-8,
            float("inf"), float("-inf"), float("nan"), 3.3895314e38, 1.0009765625, 1.00048828125]


@kiln.jit
def downcast_kernel(x_ptr, h_ptr, b_ptr, n, ROUNDING: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=0.0)
    kl.store(h_ptr + offs, x.to(kl.float16, fp_downcast_rounding=ROUNDING), mask=mask)
    kl.store(b_ptr + offs, kl.cast(x, kl.bfloat16, fp_downcast_rounding=ROUNDING), mask=mask)


def fp16_toward_zero(x: np.ndarray) -> np.ndarray:
    """Independent of the kernel's method: numpy's nearest, then nextafter
    toward zero where that went away from zero."""
    with np.errstate(over="ignore", invalid="ignore"):
        nearest = x.astype(np.float16)
        away = np.abs(nearest.astype(np.float64)) > np.abs(x.astype(np.float64))
    return np.where(away, np.nextafter(nearest, np.float16(0)), nearest)


def bf16_toward_zero(x: np.ndarray) -> np.ndarray:
    """fp32 -> bf16 toward zero keeps the top 16 bits (NaNs stay NaN)."""
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), bits)


@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
def test_fp_downcast_rounding(arrays, rounding) -> None:
    n = 2048
    # Wide magnitudes (to overflow fp16 and reach its subnormals) and specials.
    mags = torch.exp2(torch.empty(n).uniform_(-30, 20, generator=torch.Generator().manual_seed(7)))
    x = (arrays.randn(n, seed=8).cpu().sign() * mags).float()
    x[:len(SPECIALS)] = torch.tensor(SPECIALS)
    x = arrays.to_backend(x)
    h = arrays.full(n, 0.0, torch.float16)
    bf = arrays.full(n, 0.0, torch.bfloat16)
    downcast_kernel[(kiln.cdiv(n, 512),)](x, h, bf, n, ROUNDING=rounding, BLOCK=512)
    xs = x.cpu().numpy()
    got_h = h.cpu().numpy()
    got_b = bf.cpu().view(torch.int16).numpy().view(np.uint16)
    if rounding == "rtne":
        with np.errstate(over="ignore"):
            expected_h = xs.astype(np.float16)
        expected_b = x.cpu().to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    else:
        expected_h = fp16_toward_zero(xs)
        expected_b = bf16_toward_zero(xs)
    np.testing.assert_array_equal(got_h.view(np.uint16)[~np.isnan(xs)], expected_h.view(np.uint16)[~np.isnan(xs)])
    assert np.isnan(got_h[np.isnan(xs)]).all()
    nan = np.isnan(xs)
    np.testing.assert_array_equal(got_b[~nan], expected_b[~nan])
    assert ((got_b[nan] & 0x7F80) == 0x7F80).all() and ((got_b[nan] & 0x7F) != 0).all()


@kiln.jit
def builtins_kernel(x_ptr, out_ptr, lo, hi, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    for start in kl.range(0, n, BLOCK, num_stages=2, loop_unroll_factor=1):
        x = kl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0)
        kl.static_assert(x.dtype == kl.float32, "loads give the pointer's element type")
        kl.static_assert(x.shape[0] == BLOCK)
        acc = kl.zeros_like(x)
        inside = lo < x <= hi
        acc = kl.where(inside, x, acc)
        acc = kl.where(not inside, acc - 1.0, acc)
        kl.store(out_ptr + start + offs, acc, mask=start + offs < n)


def test_small_builtins(arrays) -> None:
    n = 300
    x = arrays.randn(n, seed=21)
    out = arrays.full(n, float("nan"), torch.float32)
    builtins_kernel[(1,)](x, out, -0.5, 0.75, n, BLOCK=128)
    inside = (x > -0.5) & (x <= 0.75)
    assert torch.equal(out, torch.where(inside, x, torch.full_like(x, -1.0)))


@kiln.jit
def where_pointer_kernel(a_ptr, b_ptr, out_ptr, n, use_a, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    mask = offs < n
    # A block of pointers chosen per element.
    chosen = kl.where(offs % 3 == 0, a_ptr + offs, b_ptr + offs)
    kl.store(out_ptr + offs, kl.load(chosen, mask=mask), mask=mask)
    # Two scalar pointers, one chosen on a runtime scalar.
    base = kl.where(use_a != 0, a_ptr, b_ptr)
    kl.store(out_ptr + n + offs, kl.load(base + offs, mask=mask), mask=mask)
    # A scalar pointer against a block of them (broadcast).
    mixed = kl.where(offs < 4, a_ptr, b_ptr + offs)
    kl.store(out_ptr + 2 * n + offs, kl.load(mixed, mask=mask), mask=mask)


@pytest.mark.parametrize("use_a", [0, 1])
def test_where_selects_pointers(arrays, use_a) -> None:
    """kl.where on pointers, as Triton allows: loads go through the chosen ones."""
    n = 100
    a = arrays.to_backend(torch.arange(n, dtype=torch.float32) + 1000)
    b = arrays.to_backend(-torch.arange(n, dtype=torch.float32))
    out = arrays.full(3 * n, 0.5, torch.float32)
    where_pointer_kernel[(1,)](a, b, out, n, use_a, BLOCK=128)
    offs = torch.arange(n)
    a_cpu, b_cpu = a.cpu(), b.cpu()
    expected = torch.cat([torch.where(offs % 3 == 0, a_cpu, b_cpu), a_cpu if use_a else b_cpu,
                          torch.where(offs < 4, a_cpu[0], b_cpu)])
    assert torch.equal(out.cpu(), expected)
