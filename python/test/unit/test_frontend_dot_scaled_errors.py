"""Every misuse of kl.dot_scaled raises a CompilationError at the
kl.dot_scaled line saying what is wrong (Triton's message for a scale of
the wrong shape); the valid forms build IR."""

from __future__ import annotations

import inspect

import pytest

import kiln.language as kl
from kiln.errors import CompilationError


def call_line(kernel) -> int:
    fn = getattr(kernel, "fn", kernel)
    lines, first = inspect.getsourcelines(fn)
    return next(first + i for i, line in enumerate(lines) if "kl.dot_scaled(" in line)


def make_kernel(jit):
    @jit
    def kernel(out, SA: kl.constexpr, DA: kl.constexpr, FA: kl.constexpr, SB: kl.constexpr, DB: kl.constexpr,
               FB: kl.constexpr, SS: kl.constexpr, DS: kl.constexpr, ACC: kl.constexpr, A_K_PACK: kl.constexpr,
               OUT: kl.constexpr):
        a = kl.zeros(SA, dtype=DA)
        b = kl.zeros(SB, dtype=DB)
        s = None
        if SS is not None:
            s = kl.zeros(SS, dtype=DS)
        acc = None
        if ACC is not None:
            acc = kl.zeros(ACC, dtype=kl.float32)
        c = kl.dot_scaled(a, s, FA, b, None, FB, acc, lhs_k_pack=A_K_PACK, out_dtype=OUT)

    return kernel


#: A valid call: e2m1 lhs [32, 64] packed along K (K = 128), bf16 rhs [128, 16].
VALID = {"SA": (32, 64), "DA": kl.uint8, "FA": "e2m1", "SB": (128, 16), "DB": kl.bfloat16, "FB": "bf16",
         "SS": (32, 4), "DS": kl.uint8, "ACC": None, "A_K_PACK": True, "OUT": kl.float32}


def build(jit, build_ir, **changes):
    kernel = make_kernel(jit)
    return kernel, build_ir(kernel, {"out": "*fp32"}, {**VALID, **changes})


@pytest.mark.parametrize("changes", [
    {},
    {"SS": None},
    {"ACC": (32, 16)},
    {"SA": (64, 128), "A_K_PACK": False, "SS": (128, 4)},
    {"FA": "e4m3", "SA": (32, 128)},
    {"FA": "e5m2", "DA": kl.float8e5, "SA": (32, 128)},
    {"FA": "fp16", "DA": kl.float16, "SA": (32, 128)},
    {"FA": "bf16", "DA": kl.int16, "SA": (32, 128)},
], ids=["scaled", "unscaled", "acc", "packed-along-m", "e4m3-bytes", "e5m2-block", "fp16", "bf16-bits"])
def test_valid_forms_build(jit, build_ir, changes):
    build(jit, build_ir, **changes)


@pytest.mark.parametrize("changes,fragments", [
    ({"FA": "e3m2"}, ["lhs_format must be one of e2m1, e4m3, e5m2, bf16, fp16", "'e3m2'"]),
    ({"FB": "fp32"}, ["rhs_format must be one of"]),
    ({"SS": (32, 2)}, ["lhs_scale must be a tensor of shape [32, 4]. Got ['32', '2']"]),
    ({"DS": kl.int8}, ["lhs_scale", "must be uint8", "int8"]),
    ({"DA": kl.float16}, ["e2m1 lhs", "uint8", "fp16"]),
    ({"FA": "e4m3", "SA": (32, 128), "DA": kl.float8e5}, ["e4m3 lhs must be fp8e4nv", "fp8e5"]),
    ({"FB": "fp16"}, ["fp16 rhs must be fp16", "bf16"]),
    ({"SB": (64, 16)}, ["different numbers of elements along K", "128", "64"]),
    ({"FA": "e4m3", "SA": (32, 128), "A_K_PACK": False}, ["only e2m1", "lhs_k_pack=False"]),
    ({"OUT": kl.float16}, ["out_dtype must be float32"]),
    ({"ACC": (16, 32)}, ["acc must be a fp32 block of shape [32, 16]"]),
    ({"SA": (32, 4), "SB": (8, 16), "SS": None}, ["K must be at least 16, got 8"]),
    ({"SA": (32, 8), "SB": (16, 16), "SS": (32, 1)}, ["K to be a multiple of 32", "K = 16"]),
    ({"SA": (32, 8, 64), "SS": None}, ["both operands must be 2-D or both 3-D"]),
    ({"A_K_PACK": 1}, ["lhs_k_pack must be a compile-time bool"]),
], ids=["lhs-format", "rhs-format", "scale-shape", "scale-dtype", "e2m1-dtype", "fp8-dtype", "fp16-dtype",
        "k-mismatch", "k-pack-fp8", "out-dtype", "acc-shape", "small-k", "scaled-k", "ranks", "k-pack-type"])
def test_errors_name_the_call(jit, build_ir, changes, fragments):
    kernel = make_kernel(jit)
    with pytest.raises(CompilationError) as info:
        build_ir(kernel, {"out": "*fp32"}, {**VALID, **changes})
    err = info.value
    assert err.filename == __file__ and err.lineno == call_line(kernel), str(err)
    for fragment in fragments:
        assert fragment in str(err), str(err)
