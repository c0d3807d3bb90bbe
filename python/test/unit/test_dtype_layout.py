"""The float layout attributes of kl.dtype (Triton's fp_mantissa_width and
exponent_bias), checked against torch's finfo where torch has the format."""

from __future__ import annotations

import pytest
import torch

import kiln.language as kl

_TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64}
# torch's fp8 types, where this torch has them.
_TORCH.update({name: getattr(torch, attr) for name, attr in (("fp8e4nv", "float8_e4m3fn"), ("fp8e5", "float8_e5m2"))
               if hasattr(torch, attr)})


@pytest.mark.parametrize("name", sorted(_TORCH))
def test_float_layout_matches_torch(name: str) -> None:
    ty = kl.dtype(name)
    info = torch.finfo(_TORCH[name])
    # eps = 2**-mantissa_bits; smallest normal = 2**(1 - bias).
    assert 2.0 ** -ty.fp_mantissa_width == info.eps
    assert 2.0 ** (1 - ty.exponent_bias) == info.tiny
    exponent_bits = ty.primitive_bitwidth - ty.fp_mantissa_width - 1
    assert 1 + exponent_bits + ty.fp_mantissa_width == info.bits


def test_other_fp8_layouts() -> None:
    # OCP E4M3FN / E5M2 (smallest normals 2**-6 and 2**-14), and the
    # formats torch lacks: the same widths with other biases.
    assert (kl.float8e4nv.fp_mantissa_width, kl.float8e4nv.exponent_bias) == (3, 7)
    assert (kl.float8e5.fp_mantissa_width, kl.float8e5.exponent_bias) == (2, 15)
    assert (kl.float8e4b15.fp_mantissa_width, kl.float8e4b15.exponent_bias) == (3, 15)
    assert (kl.float8e4b8.fp_mantissa_width, kl.float8e4b8.exponent_bias) == (3, 8)
    assert (kl.float8e5b16.fp_mantissa_width, kl.float8e5b16.exponent_bias) == (2, 16)
    assert kl.float8e4b15.is_fp8e4b15() and kl.float8e4b8.is_fp8e4b8() and kl.float8e5b16.is_fp8e5b16()
    assert not kl.float8e4nv.is_fp8e4b15()


def test_integers_have_no_float_layout() -> None:
    assert not hasattr(kl.int32, "fp_mantissa_width")
    with pytest.raises(AttributeError, match="only defined for floating-point dtypes, not int32"):
        kl.int32.exponent_bias
