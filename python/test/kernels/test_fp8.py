"""fp8 (kl.float8e4nv, kl.float8e5): loads and stores of bytes, conversions
to and from the wider float types checked against torch's own fp8
conversions, bit casts, promotion, and the errors for fp8 arithmetic; run on
every backend, plus PTX for sm_80 and sm_90a."""

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.backends.nvidia import find_ptxas

FP8_TYPES = {"fp8e4nv": kl.float8e4nv, "fp8e5": kl.float8e5}
FLOATS = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64}
MAX_FINITE = {"fp8e4nv": 448.0, "fp8e5": 57344.0}
# Older torch lacks the fp8 dtypes: there the kernels get byte tensors and
# the references come from the model below.
TORCH_FP8 = {"fp8e4nv": getattr(torch, "float8_e4m3fn", None), "fp8e5": getattr(torch, "float8_e5m2", None)}
HAS_TORCH_FP8 = TORCH_FP8["fp8e4nv"] is not None
ALL_BYTES = torch.arange(256, dtype=torch.uint8)


def model_decode(bytes_: torch.Tensor, fmt: str) -> torch.Tensor:
    """fp8 bytes -> fp32 from the formats' definitions (OCP 8-bit floats)."""
    bias, m = (7, 3) if fmt == "fp8e4nv" else (15, 2)
    out = []
    for byte in bytes_.tolist():
        sign = -1.0 if byte & 0x80 else 1.0
        exponent, fraction = (byte & 0x7F) >> m, byte & ((1 << m) - 1)
        if fmt == "fp8e4nv" and byte & 0x7F == 0x7F or fmt == "fp8e5" and exponent == 31 and fraction:
            out.append(float("nan"))
        elif fmt == "fp8e5" and exponent == 31:
            out.append(sign * float("inf"))
        elif exponent == 0:
            out.append(sign * fraction * 2.0 ** (1 - bias - m))
        else:
            out.append(sign * (1 + fraction / 2**m) * 2.0 ** (exponent - bias))
    return torch.tensor(out, dtype=torch.float32)


def model_encode(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """fp32 -> fp8 bytes as Triton's cvt.rn.satfinite: the nearest finite
    value (ties to the even code), beyond the largest one that one, NaN to
    0x7f; found by searching the table of values, not by bit tricks."""
    max_code = 0x7E if fmt == "fp8e4nv" else 0x7B
    table = model_decode(ALL_BYTES[: max_code + 1], fmt).double()
    a = x.float().abs().double()
    hi = torch.searchsorted(table, a.clamp(max=table[-1].item())).clamp(max=max_code)
    lo = (hi - 1).clamp(min=0)
    d_lo, d_hi = a - table[lo], table[hi] - a
    code = torch.where((d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0)), hi, lo)
    code = code | torch.where(x.float().signbit(), 0x80, 0)
    return torch.where(x.isnan(), torch.full_like(code, 0x7F), code).to(torch.uint8)


def reference_decode(bytes_: torch.Tensor, fmt: str) -> torch.Tensor:
    if HAS_TORCH_FP8:
        return bytes_.view(TORCH_FP8[fmt]).float()
    return model_decode(bytes_.cpu(), fmt).to(bytes_.device)


def reference_encode(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """Triton's encoding: torch's round to nearest even after saturating
    finite values and infinities to the largest finite value."""
    if HAS_TORCH_FP8:
        wide, limit = x.float(), MAX_FINITE[fmt]
        return torch.where(wide.isnan(), wide, wide.clamp(-limit, limit)).to(TORCH_FP8[fmt]).view(torch.uint8)
    return model_encode(x.cpu(), fmt).to(x.device)


def as_fp8(bytes_: torch.Tensor, fmt: str) -> torch.Tensor:
    """A torch fp8 tensor viewing ``bytes_``, or the bytes on older torch."""
    return bytes_.view(TORCH_FP8[fmt]) if HAS_TORCH_FP8 else bytes_


def as_bytes(x: torch.Tensor) -> torch.Tensor:
    return x.view(torch.uint8)


@kiln.jit
def decode_kernel(x_ptr, out_ptr, n, FP8: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    value = kl.load(x_ptr + offs, mask=mask).to(FP8, bitcast=True)  # a no-op on fp8 tensors
    kl.store(out_ptr + offs, value.to(out_ptr.dtype.element_ty), mask=mask)


@kiln.jit
def encode_kernel(x_ptr, out_ptr, n, FP8: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    value = kl.load(x_ptr + offs, mask=mask).to(FP8, bitcast=x_ptr.dtype.element_ty.primitive_bitwidth == 8 and
                                               not x_ptr.dtype.element_ty.is_floating())
    kl.store(out_ptr + offs, value.to(out_ptr.dtype.element_ty, bitcast=True), mask=mask)


def decode(x: torch.Tensor, fmt: str, dtype: torch.dtype) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=dtype, device=x.device)
    decode_kernel[(kiln.cdiv(x.numel(), 512),)](x, out, x.numel(), FP8=FP8_TYPES[fmt], BLOCK=512)
    return out


def encode(x: torch.Tensor, fmt: str) -> torch.Tensor:
    out = as_fp8(torch.empty(x.shape, dtype=torch.uint8, device=x.device), fmt)
    encode_kernel[(kiln.cdiv(x.numel(), 512),)](x, out, x.numel(), FP8=FP8_TYPES[fmt], BLOCK=512)
    return as_bytes(out)


def is_nan_byte(bytes_: torch.Tensor, fmt: str) -> torch.Tensor:
    magnitude = bytes_ & 0x7F
    return magnitude == 0x7F if fmt == "fp8e4nv" else magnitude > 0x7C


def assert_same_fp8(out: torch.Tensor, ref: torch.Tensor, fmt: str) -> None:
    """Equal bytes, except that any NaN matches any NaN."""
    out, ref = out.cpu(), ref.cpu()
    out_nan, ref_nan = is_nan_byte(out, fmt), is_nan_byte(ref, fmt)
    if not torch.equal(out_nan, ref_nan) or not torch.equal(out[~out_nan], ref[~ref_nan]):
        bad = (out != ref) & ~(out_nan & ref_nan)
        raise AssertionError(f"{int(bad.sum())} bytes differ; first: {out[bad][:8].tolist()} != {ref[bad][:8].tolist()}")


def interesting_fp32(fmt: str, arrays) -> torch.Tensor:
    """Every fp8 value, the midpoints between neighbours (ties), points just
    off them, values below the smallest subnormal, beyond the largest
    finite value, infinities, NaNs, and random values over many binades."""
    values = model_decode(ALL_BYTES, fmt)
    finite = values[values.isfinite()].unique()
    mids = (finite[1:].double() + finite[:-1].double()) / 2
    near = torch.cat([mids, mids * (1 + 2.0**-20), mids * (1 - 2.0**-20)]).float()
    limit = MAX_FINITE[fmt]
    special = torch.tensor([0.0, -0.0, 2.0**-30, -(2.0**-30), 2.0**-149, limit * 1.03, limit * 1.1, -limit * 1.1,
                            1e30, -1e30, float("inf"), float("-inf"), float("nan"), -float("nan")])
    generator = torch.Generator().manual_seed(0)
    scale = 2.0 ** torch.randint(-24, 20, (4000,), generator=generator).float()
    random = torch.randn(4000, generator=generator) * scale
    return arrays.to_backend(torch.cat([values, near, -near, special, random]))


def test_model_matches_torch() -> None:
    if not HAS_TORCH_FP8:
        pytest.skip(f"torch {torch.__version__} has no fp8 dtypes")
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(20000, generator=generator) * 2.0 ** torch.randint(-24, 20, (20000,), generator=generator)
    for fmt in FP8_TYPES:
        decoded = ALL_BYTES.view(TORCH_FP8[fmt]).float()
        model = model_decode(ALL_BYTES, fmt)
        assert torch.equal(decoded.isnan(), model.isnan()) and torch.equal(decoded[~decoded.isnan()],
                                                                            model[~model.isnan()])
        assert_same_fp8(model_encode(x, fmt), reference_encode(x, fmt), fmt)


def test_model_spot_values() -> None:
    assert model_decode(torch.tensor([0x7E, 0x01, 0x38, 0xFE], dtype=torch.uint8), "fp8e4nv").tolist() == \
        [448.0, 2.0**-9, 1.0, -448.0]
    assert model_decode(torch.tensor([0x7B, 0x01, 0x3C, 0x7C], dtype=torch.uint8), "fp8e5").tolist() == \
        [57344.0, 2.0**-16, 1.0, float("inf")]
    # 1 + 1/16 is halfway between 1 and 1.125 in e4m3: ties go to the even code 0x38 (1.0).
    x = torch.tensor([1.0625, 1.1875, 500.0, -float("inf"), 2.0**-10, 2.0**-10 * 1.01])
    assert model_encode(x, "fp8e4nv").tolist() == [0x38, 0x3A, 0x7E, 0xFE, 0x00, 0x01]


@pytest.mark.parametrize("fmt", list(FP8_TYPES))
@pytest.mark.parametrize("wide", list(FLOATS))
def test_every_byte_decodes_as_torch_decodes_it(arrays, fmt: str, wide: str) -> None:
    x = as_fp8(arrays.to_backend(ALL_BYTES), fmt)
    out, ref = decode(x, fmt, FLOATS[wide]).cpu(), reference_decode(as_bytes(x), fmt).to(FLOATS[wide]).cpu()
    assert torch.equal(out.isnan(), ref.isnan())
    assert torch.equal(out[~ref.isnan()], ref[~ref.isnan()])
    assert torch.equal(out[~ref.isnan()].signbit(), ref[~ref.isnan()].signbit())  # -0.0 too


@pytest.mark.parametrize("fmt", list(FP8_TYPES))
def test_fp32_encodes_with_round_to_nearest_even_and_saturation(arrays, fmt: str) -> None:
    x = interesting_fp32(fmt, arrays)
    assert_same_fp8(encode(x, fmt), reference_encode(x, fmt), fmt)


@pytest.mark.parametrize("fmt", list(FP8_TYPES))
@pytest.mark.parametrize("wide", ["fp16", "bf16", "fp64"])
def test_other_floats_encode_through_fp32(arrays, fmt: str, wide: str) -> None:
    x = interesting_fp32(fmt, arrays).to(FLOATS[wide])
    assert_same_fp8(encode(x, fmt), reference_encode(x.float(), fmt), fmt)


@pytest.mark.parametrize("fmt", list(FP8_TYPES))
def test_round_trip_keeps_every_byte(arrays, fmt: str) -> None:
    x = as_fp8(arrays.to_backend(ALL_BYTES), fmt)
    back = encode(decode(x, fmt, torch.float32), fmt)
    expected = ALL_BYTES.clone()
    if fmt == "fp8e5":  # the conversion from fp32 saturates infinities, as Triton's satfinite
        expected[[0x7C, 0xFC]] = torch.tensor([0x7B, 0xFB], dtype=torch.uint8)
    assert_same_fp8(back, expected, fmt)
    # Every NaN, negative ones too, becomes 0x7f (cvt.rn.satfinite's canonical NaN).
    assert back.cpu()[is_nan_byte(ALL_BYTES, fmt)].tolist() == [0x7F] * int(is_nan_byte(ALL_BYTES, fmt).sum())


@pytest.mark.parametrize("src, dst", [("fp8e4nv", "fp8e5"), ("fp8e5", "fp8e4nv")])
def test_fp8_to_fp8(arrays, src: str, dst: str) -> None:
    x = as_fp8(arrays.to_backend(ALL_BYTES), src)
    assert_same_fp8(encode(decode(x, src, torch.float32), dst),
                    reference_encode(reference_decode(as_bytes(x), src), dst), dst)


@kiln.jit
def fp8_to_fp8_kernel(x_ptr, out_ptr, SRC: kl.constexpr, DST: kl.constexpr):
    offs = kl.arange(0, 256)
    value = kl.load(x_ptr + offs).to(SRC, bitcast=True).to(DST)
    kl.store(out_ptr + offs, value.to(out_ptr.dtype.element_ty, bitcast=True))


@pytest.mark.parametrize("src, dst", [("fp8e4nv", "fp8e5"), ("fp8e5", "fp8e4nv")])
def test_direct_fp8_to_fp8_cast(arrays, src: str, dst: str) -> None:
    x = arrays.to_backend(ALL_BYTES)
    out = torch.zeros_like(x)
    fp8_to_fp8_kernel[(1,)](x, out, SRC=FP8_TYPES[src], DST=FP8_TYPES[dst])
    assert_same_fp8(out, reference_encode(reference_decode(x, src), dst), dst)


@kiln.jit
def bitcast_kernel(x_ptr, bytes_ptr, back_ptr, FP8: kl.constexpr):
    offs = kl.arange(0, 256)
    as_int = kl.load(x_ptr + offs).to(FP8, bitcast=True).to(bytes_ptr.dtype.element_ty, bitcast=True)
    kl.store(bytes_ptr + offs, as_int)
    kl.store(back_ptr + offs, as_int.to(FP8, bitcast=True).to(back_ptr.dtype.element_ty, bitcast=True))


@pytest.mark.parametrize("fmt", list(FP8_TYPES))
@pytest.mark.parametrize("int_type", [torch.int8, torch.uint8])
def test_bitcast_to_and_from_bytes(arrays, fmt: str, int_type: torch.dtype) -> None:
    x = as_fp8(arrays.to_backend(ALL_BYTES), fmt)
    ints, back = torch.zeros(256, dtype=int_type, device=x.device), torch.zeros_like(x)
    bitcast_kernel[(1,)](x, ints, back, FP8=FP8_TYPES[fmt])
    assert torch.equal(ints, as_bytes(x).view(int_type))
    assert torch.equal(as_bytes(back), as_bytes(x))


@kiln.jit
def promotion_kernel(a_ptr, b_ptr, out_ptr, FP8: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(a_ptr + offs).to(FP8, bitcast=True) * kl.load(b_ptr + offs))


@pytest.mark.parametrize("fmt", list(FP8_TYPES))
@pytest.mark.parametrize("other", [torch.float16, torch.float32])
def test_fp8_promotes_to_the_wider_float(arrays, fmt: str, other: torch.dtype) -> None:
    a = reference_encode(arrays.randn(64), fmt)
    b = arrays.randn(64, seed=1).to(other)
    out = torch.zeros(64, dtype=other, device=b.device)
    promotion_kernel[(1,)](as_fp8(a, fmt), b, out, FP8=FP8_TYPES[fmt], BLOCK=64)
    assert torch.equal(out, reference_decode(a, fmt).to(other) * b)


@kiln.jit
def constants_kernel(x_ptr, out_ptr, FP8: kl.constexpr):
    offs = kl.arange(0, 4)
    loaded = kl.load(x_ptr + offs).to(FP8, bitcast=True)
    big = kl.full((4,), 1e6, FP8)  # saturates
    value = kl.where(offs < 3, kl.where(offs < 2, loaded, -1.5), big)
    kl.store(out_ptr + offs, value.to(out_ptr.dtype.element_ty, bitcast=True))


@pytest.mark.parametrize("fmt", list(FP8_TYPES))
def test_constants_and_where(arrays, fmt: str) -> None:
    x = reference_encode(arrays.to_backend(torch.tensor([0.5, 3.0, 7.0, 9.0])), fmt)
    out = torch.zeros_like(x)
    constants_kernel[(1,)](as_fp8(x, fmt), as_fp8(out, fmt), FP8=FP8_TYPES[fmt])
    assert reference_decode(out, fmt).tolist() == [0.5, 3.0, -1.5, MAX_FINITE[fmt]]


@kiln.jit
def load_other_kernel(x_ptr, out_ptr):
    offs = kl.arange(0, 4)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=offs < 2, other=-1.5).to(kl.float32))


def test_load_other_is_encoded(arrays) -> None:
    if not HAS_TORCH_FP8:  # an fp8 pointer needs a torch fp8 tensor at launch; compile it at least
        kernel = kiln.compile(load_other_kernel, signature={"x_ptr": "*fp8e4nv", "out_ptr": "*fp32"}, target="cpu")
        assert kernel is not None
        pytest.skip(f"torch {torch.__version__} has no fp8 dtypes to launch with")
    x = arrays.to_backend(torch.tensor([0.5, 3.0, 7.0, 9.0])).to(TORCH_FP8["fp8e4nv"])
    out = arrays.full(4, 0.0, torch.float32)
    load_other_kernel[(1,)](x, out)
    assert out.tolist() == [0.5, 3.0, -1.5, -1.5]


@kiln.jit
def add_kernel(x_ptr, out_ptr):
    offs = kl.arange(0, 16)
    x = kl.load(x_ptr + offs)
    kl.store(out_ptr + offs, x + x)


@kiln.jit
def exp_kernel(x_ptr, out_ptr):
    offs = kl.arange(0, 16)
    kl.store(out_ptr + offs, kl.exp(kl.load(x_ptr + offs)))


@kiln.jit
def compare_kernel(x_ptr, out_ptr):
    offs = kl.arange(0, 16)
    x = kl.load(x_ptr + offs)
    kl.store(out_ptr + offs, x < x)


@kiln.jit
def int_mix_kernel(x_ptr, i_ptr, out_ptr):
    offs = kl.arange(0, 16)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs) + kl.load(i_ptr + offs))


@pytest.mark.parametrize("kernel, signature, message", [
    (add_kernel, {"x_ptr": "*fp8e4nv", "out_ptr": "*fp8e4nv"}, r"\+ is not supported on kl.float8e4nv values"),
    (exp_kernel, {"x_ptr": "*fp8e5", "out_ptr": "*fp8e5"}, r"kl.exp is not supported on kl.float8e5 values"),
    (compare_kernel, {"x_ptr": "*fp8e4nv", "out_ptr": "*i1"}, r"< is not supported on kl.float8e4nv values"),
    (int_mix_kernel, {"x_ptr": "*fp8e5", "i_ptr": "*i32", "out_ptr": "*fp32"},
     r"cannot combine kl.float8e5 with kl.int32"),
])
def test_fp8_arithmetic_is_an_error(kernel, signature: dict, message: str) -> None:
    with pytest.raises(kiln.CompilationError, match=message) as info:
        kiln.compile(kernel, signature=signature, target="cpu")
    assert ".to(kl.float32)" in str(info.value)


def test_rtz_rounding_to_fp8_is_an_error() -> None:
    @kiln.jit
    def rtz_kernel(x_ptr, out_ptr):
        offs = kl.arange(0, 16)
        kl.store(out_ptr + offs, kl.load(x_ptr + offs).to(kl.float8e5, fp_downcast_rounding="rtz"))

    with pytest.raises(kiln.CompilationError, match="fp_downcast_rounding='rtz' is not supported for kl.float8e5"):
        kiln.compile(rtz_kernel, signature={"x_ptr": "*fp32", "out_ptr": "*fp8e5"}, target="cpu")


def test_dtype_names() -> None:
    assert repr(kl.float8e4nv) == "kl.float8e4nv" and kl.float8e4nv.is_fp8e4nv() and kl.float8e4nv.is_floating()
    assert repr(kl.float8e5) == "kl.float8e5" and kl.float8e5.is_fp8e5() and kl.float8e5.primitive_bitwidth == 8


@kiln.jit
def convert_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask).to(out_ptr.dtype.element_ty), mask=mask)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("src, dst", [("fp32", "fp8e4nv"), ("fp8e4nv", "fp16"), ("bf16", "fp8e5"), ("fp8e5", "fp32")])
def test_ptx(target: str, src: str, dst: str) -> None:
    kernel = kiln.compile(convert_kernel, signature={"x_ptr": "*" + src, "out_ptr": "*" + dst, "n": "i32"},
                          constexprs={"BLOCK": 512}, target=target)
    ptx = kernel.asm["ptx"]
    assert ".entry convert_kernel" in ptx
    # Rounding to fp8: one cvt per pair of elements from sm_90, integer ops
    # (kiln-expand-float8-rounding) before it.
    if dst.startswith("fp8"):
        fmt = "e4m3" if dst == "fp8e4nv" else "e5m2"
        assert ptx.count(f"cvt.rn.satfinite.{fmt}x2.f32") == (2 if target == "sm_90a" else 0)
        assert ("min.u32" in ptx) == (target == "sm_80")
    if find_ptxas() is not None:
        assert kernel.asm["cubin"][:4] == b"\x7fELF"
