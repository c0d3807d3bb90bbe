"""kl.dot_scaled on every backend present: each operand format (e2m1, e4m3,
e5m2, bf16, fp16) on either side, scales on the lhs, the rhs, both or
neither, e2m1 packed along K or along M/N, fp8 operands given as bytes or as
fp8 blocks, an accumulator, batched (3-D) operands, NaN scales and extreme
exponents; compared with a float64 numpy model written from the formats'
definitions (OCP MX: e2m1 and the fp8 formats, e8m0 scales 2^(s - 127) with
0xFF NaN), in which each scaled operand is rounded once to the compute type
(fp16 if either format is fp16, else bf16) and the product is exact."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl

E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def fp8_values(fmt: str) -> np.ndarray:
    """The 256 values of an fp8 format, by byte (NaN where the byte is one)."""
    bias, mantissa_bits = (7, 3) if fmt == "e4m3" else (15, 2)
    out = np.empty(256)
    for byte in range(256):
        sign = -1.0 if byte & 0x80 else 1.0
        exponent, fraction = (byte & 0x7F) >> mantissa_bits, byte & ((1 << mantissa_bits) - 1)
        if fmt == "e4m3" and byte & 0x7F == 0x7F or fmt == "e5m2" and exponent == 31 and fraction:
            out[byte] = np.nan
        elif fmt == "e5m2" and exponent == 31:
            out[byte] = sign * np.inf
        elif exponent == 0:
            out[byte] = sign * fraction * 2.0 ** (1 - bias - mantissa_bits)
        else:
            out[byte] = sign * (1 + fraction / 2**mantissa_bits) * 2.0 ** (exponent - bias)
    return out


def e2m1_value(nibble: np.ndarray) -> np.ndarray:
    return np.where(nibble & 8, -1.0, 1.0) * E2M1_VALUES[nibble & 7]


def round_to(x: np.ndarray, compute: str) -> np.ndarray:
    """float64 -> the compute type (round to nearest even) -> float64."""
    if compute == "fp16":
        return x.astype(np.float16).astype(np.float64)
    # bf16: every value here is exact in fp32; round fp32's 23 mantissa bits to 7.
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
    return np.where(np.isfinite(x), rounded.view(np.float32).astype(np.float64), x)


def logical_values(data: torch.Tensor, fmt: str, side: str, k_pack: bool) -> np.ndarray:
    """An operand's values (float64), unpacked to [.., M, K] or [.., K, N]."""
    if fmt in ("bf16", "fp16"):
        return data.float().numpy().astype(np.float64)
    raw = data.numpy().astype(np.int64)
    if fmt != "e2m1":
        return fp8_values(fmt)[raw]
    low, high = e2m1_value(raw & 0xF), e2m1_value(raw >> 4)
    # The lhs's K is its last dimension, the rhs's its second to last.
    axis = -1 if k_pack == (side == "lhs") else -2
    joined = np.stack([low, high], axis=axis)  # the pair right after `axis`
    shape = list(low.shape)
    shape[axis] *= 2
    return joined.reshape(shape)


def scale_factors(scale: torch.Tensor) -> np.ndarray:
    """e8m0 bytes [.., R, K//32] -> 2^(s - 127) (NaN for 0xFF), [.., R, K]."""
    s = scale.numpy().astype(np.float64)
    factors = np.where(s == 255, np.nan, 2.0 ** (s - 127))
    return np.repeat(factors, 32, axis=-1)


def reference(a, a_scale, fmt_a, a_k_pack, b, b_scale, fmt_b, b_k_pack, acc):
    compute = "fp16" if "fp16" in (fmt_a, fmt_b) else "bf16"
    x = logical_values(a, fmt_a, "lhs", a_k_pack)
    y = logical_values(b, fmt_b, "rhs", b_k_pack)
    if a_scale is not None:
        x = x * scale_factors(a_scale)
    if b_scale is not None:
        y = y * np.swapaxes(scale_factors(b_scale), -1, -2)
    out = round_to(x, compute) @ round_to(y, compute)
    return out if acc is None else out + acc.numpy().astype(np.float64)


def operand(fmt: str, shape: tuple[int, ...], compute: str, generator: torch.Generator) -> torch.Tensor:
    """Random finite data of a format: bytes for e2m1 and fp8 (NaN and
    infinity codes replaced by small values), floats for bf16 and fp16."""
    if fmt in ("bf16", "fp16"):
        values = torch.randn(shape, generator=generator) * 4
        return values.to(torch.bfloat16 if fmt == "bf16" else torch.float16)
    data = torch.randint(0, 256, shape, generator=generator, dtype=torch.int32)
    if fmt == "e4m3":
        data = torch.where(data & 0x7F == 0x7F, data & 0x8F, data)
    elif fmt == "e5m2":
        # With fp16 arithmetic keep |x| <= 2^7 so that scaled values stay in fp16's range.
        limit = 0x58 if compute == "fp16" else 0x7C
        data = torch.where(data & 0x7F >= limit, data & 0x8F, data)
    return data.to(torch.uint8)


def scales(rows: int, k: int, compute: str, generator: torch.Generator, batch=()) -> torch.Tensor:
    # fp16 holds 2^-14 .. 2^15: scales of 2^-4 .. 2^4 keep every scaled value
    # (fp8 values 2^-9 .. 448) representable.
    low, high = (123, 131) if compute == "fp16" else (107, 147)
    return torch.randint(low, high + 1, tuple(batch) + (rows, k // 32), generator=generator, dtype=torch.uint8)


@kiln.jit
def scaled_dot_kernel(a_ptr, a_scale, b_ptr, b_scale, acc_ptr, out_ptr,
                      A0: kl.constexpr, A1: kl.constexpr, B0: kl.constexpr, B1: kl.constexpr,
                      M: kl.constexpr, N: kl.constexpr, K: kl.constexpr,
                      FMT_A: kl.constexpr, FMT_B: kl.constexpr, A_K_PACK: kl.constexpr, B_K_PACK: kl.constexpr,
                      FAST_MATH: kl.constexpr, FP8_DTYPES: kl.constexpr):
    a = kl.load(a_ptr + kl.arange(0, A0)[:, None] * A1 + kl.arange(0, A1)[None, :])
    b = kl.load(b_ptr + kl.arange(0, B0)[:, None] * B1 + kl.arange(0, B1)[None, :])
    if FP8_DTYPES:
        # fp8 operands as fp8 blocks instead of their bytes.
        if FMT_A == "e4m3":
            a = a.to(kl.float8e4nv, bitcast=True)
        if FMT_A == "e5m2":
            a = a.to(kl.float8e5, bitcast=True)
        if FMT_B == "e4m3":
            b = b.to(kl.float8e4nv, bitcast=True)
        if FMT_B == "e5m2":
            b = b.to(kl.float8e5, bitcast=True)
    KS: kl.constexpr = K // 32
    if a_scale is not None:
        a_scale = kl.load(a_scale + kl.arange(0, M)[:, None] * KS + kl.arange(0, KS)[None, :])
    if b_scale is not None:
        b_scale = kl.load(b_scale + kl.arange(0, N)[:, None] * KS + kl.arange(0, KS)[None, :])
    out_offsets = kl.arange(0, M)[:, None] * N + kl.arange(0, N)[None, :]
    acc = None
    if acc_ptr is not None:
        acc = kl.load(acc_ptr + out_offsets)
    c = kl.dot_scaled(a, a_scale, FMT_A, b, b_scale, FMT_B, acc, fast_math=FAST_MATH, lhs_k_pack=A_K_PACK,
                      rhs_k_pack=B_K_PACK)
    kl.store(out_ptr + out_offsets, c)


def packed_shape(fmt: str, side: str, k_pack: bool, m_or_n: int, k: int) -> tuple[int, int]:
    rows, cols = (m_or_n, k) if side == "lhs" else (k, m_or_n)
    if fmt == "e2m1":
        if k_pack == (side == "lhs"):
            cols //= 2
        else:
            rows //= 2
    return rows, cols


def run_case(arrays, fmt_a, fmt_b, scaled, m=32, n=32, k=64, a_k_pack=True, b_k_pack=True, with_acc=False,
             fp8_dtypes=False, fast_math=False, edit_data=None, seed=0):
    generator = torch.Generator().manual_seed(seed)
    compute = "fp16" if "fp16" in (fmt_a, fmt_b) else "bf16"
    a_shape = packed_shape(fmt_a, "lhs", a_k_pack, m, k)
    b_shape = packed_shape(fmt_b, "rhs", b_k_pack, n, k)
    a = operand(fmt_a, a_shape, compute, generator)
    b = operand(fmt_b, b_shape, compute, generator)
    a_scale = scales(m, k, compute, generator) if "lhs" in scaled else None
    b_scale = scales(n, k, compute, generator) if "rhs" in scaled else None
    if edit_data is not None:
        edit_data(a, a_scale, b, b_scale)
    acc = torch.randn((m, n), generator=generator) if with_acc else None
    out = arrays.full((m, n), float("nan"), torch.float32)
    put = lambda t: None if t is None else arrays.to_backend(t)  # noqa: E731
    scaled_dot_kernel[(1,)](put(a), put(a_scale), put(b), put(b_scale), put(acc), out,
                            a_shape[0], a_shape[1], b_shape[0], b_shape[1], m, n, k, fmt_a, fmt_b,
                            a_k_pack, b_k_pack, fast_math, fp8_dtypes)
    expected = reference(a, a_scale, fmt_a, a_k_pack, b, b_scale, fmt_b, b_k_pack, acc)
    return out.cpu().numpy().astype(np.float64), expected, (a, a_scale, b, b_scale)


def assert_close(out: np.ndarray, expected: np.ndarray) -> None:
    """The products are exact; only fp32's sum is rounded: within K ulps of
    the sum of magnitudes (bounded here by 1e-5 of the largest)."""
    assert np.array_equal(np.isnan(out), np.isnan(expected)), "NaNs differ"
    finite = ~np.isnan(expected)
    bound = 1e-5 * np.max(np.abs(expected[finite]), initial=1.0)
    np.testing.assert_allclose(out[finite], expected[finite], rtol=1e-5, atol=bound)


FORMATS = ["e2m1", "e4m3", "e5m2", "bf16", "fp16"]


@pytest.mark.parametrize("fmt_a", FORMATS)
@pytest.mark.parametrize("fmt_b", ["e2m1", "e5m2", "bf16"])
def test_formats_with_both_scales(arrays, fmt_a, fmt_b):
    out, expected, _ = run_case(arrays, fmt_a, fmt_b, ("lhs", "rhs"))
    assert_close(out, expected)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("scaled", [(), ("lhs",), ("rhs",)], ids=["none", "lhs", "rhs"])
def test_scale_placement(arrays, fmt, scaled):
    # The format on the scaled side (the lhs when neither is), bf16 or fp16 on the other.
    partner = "fp16" if fmt == "e4m3" else "bf16"
    fmt_a, fmt_b = (partner, fmt) if scaled == ("rhs",) else (fmt, partner)
    out, expected, _ = run_case(arrays, fmt_a, fmt_b, scaled, m=16, n=64, k=32)
    assert_close(out, expected)


@pytest.mark.parametrize("a_k_pack,b_k_pack", [(False, True), (True, False), (False, False)])
def test_e2m1_packed_along_m_or_n(arrays, a_k_pack, b_k_pack):
    out, expected, _ = run_case(arrays, "e2m1", "e2m1", ("lhs", "rhs"), m=32, n=64, k=64,
                                a_k_pack=a_k_pack, b_k_pack=b_k_pack)
    assert_close(out, expected)


def test_accumulator_and_fp8_blocks(arrays):
    out, expected, _ = run_case(arrays, "e4m3", "e5m2", ("lhs", "rhs"), with_acc=True, fp8_dtypes=True)
    assert_close(out, expected)


def test_nan_scale(arrays):
    """0xFF scales are NaN: every output of that lhs row / rhs column."""
    def edit(a, a_scale, b, b_scale):
        a_scale[3, 1] = 0xFF
        b_scale[5, 0] = 0xFF

    out, expected, _ = run_case(arrays, "e2m1", "e4m3", ("lhs", "rhs"), edit_data=edit)
    assert np.isnan(out[3]).all() and np.isnan(out[:, 5]).all()
    assert np.isnan(out).sum() == 32 + 32 - 1
    assert_close(out, expected)


def test_fast_math_same_without_nan_scales(arrays):
    out, expected, _ = run_case(arrays, "e5m2", "e2m1", ("lhs", "rhs"), fast_math=True)
    assert_close(out, expected)


def test_extreme_scales(arrays):
    """Scale byte 0 is 2^-127, not zero, and 200 is 2^73. The fp4 values
    under a 0 scale are kept at magnitude >= 2 so that the scaled values are
    normal bf16 numbers (subnormal ones may be flushed by a backend's
    conversion)."""
    def edit(a, a_scale, b, b_scale):
        a_scale[:, 0] = 0
        a_scale[:, 1] = 200
        a_scale[0, :] = 0
        a[:, :16] |= 0x44
        a[0, :] |= 0x44

    out, expected, _ = run_case(arrays, "e2m1", "bf16", ("lhs",), edit_data=edit)
    assert_close(out, expected)
    assert 1e-40 < np.abs(expected[0]).max() < 1e-30
    np.testing.assert_allclose(out[0], expected[0], rtol=1e-5, atol=1e-5 * np.abs(expected[0]).max())


@kiln.jit
def batched_kernel(a_ptr, a_scale, b_ptr, out_ptr, B: kl.constexpr, M: kl.constexpr, N: kl.constexpr,
                   K: kl.constexpr):
    KP: kl.constexpr = K // 2
    KS: kl.constexpr = K // 32
    ib = kl.arange(0, B)[:, None, None]
    a = kl.load(a_ptr + ib * (M * KP) + kl.arange(0, M)[None, :, None] * KP + kl.arange(0, KP)[None, None, :])
    b = kl.load(b_ptr + ib * (K * N) + kl.arange(0, K)[None, :, None] * N + kl.arange(0, N)[None, None, :])
    s = kl.load(a_scale + ib * (M * KS) + kl.arange(0, M)[None, :, None] * KS + kl.arange(0, KS)[None, None, :])
    c = kl.dot_scaled(a, s, "e2m1", b, None, "bf16")
    kl.store(out_ptr + ib * (M * N) + kl.arange(0, M)[None, :, None] * N + kl.arange(0, N)[None, None, :], c)


def test_batched(arrays):
    generator = torch.Generator().manual_seed(1)
    nb, m, n, k = 2, 16, 32, 64
    a = operand("e2m1", (nb, m, k // 2), "bf16", generator)
    b = operand("bf16", (nb, k, n), "bf16", generator)
    a_scale = scales(m, k, "bf16", generator, batch=(nb,))
    out = arrays.full((nb, m, n), float("nan"), torch.float32)
    batched_kernel[(1,)](arrays.to_backend(a), arrays.to_backend(a_scale), arrays.to_backend(b), out, nb, m, n, k)
    expected = reference(a, a_scale, "e2m1", True, b, None, "bf16", True, None)
    assert_close(out.cpu().numpy().astype(np.float64), expected)
