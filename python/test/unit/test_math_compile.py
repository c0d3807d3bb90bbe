"""Math on the NVIDIA target without a GPU: every kl math function and
every libdevice function compiles to PTX that ptxas assembles for sm_80 and
sm_90a, with the fast paths and precise operations the design promises,
libdevice linked in; and the errors of the math surface, with locations."""

from __future__ import annotations

import re

import pytest

import kiln
import kiln.language as kl
from kiln.backends.nvidia import find_ptxas
from kiln.language.extra import libdevice

TARGETS = ["sm_80", "sm_90a"]
# A kl.constexpr: kernels read only constexpr globals.
KL_FUNCTIONS = kl.constexpr(("exp", "exp2", "log", "log2", "sin", "cos", "sqrt", "rsqrt", "floor", "ceil", "erf",
                             "tanh", "abs"))


@kiln.jit
def all_kl_math(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=1)
    for i in kl.static_range(len(KL_FUNCTIONS)):
        kl.store(out_ptr + i * n + offs, getattr(kl, KL_FUNCTIONS[i])(x), mask=mask)


def compile_for(fn, dtype, target, enable_reflect_ftz=True, **constexprs):
    signature = {"x_ptr": "*" + dtype, "out_ptr": "*" + dtype, "n": "i32"}
    return kiln.compile(fn, signature=signature, constexprs={"BLOCK": 256, **constexprs}, target=target,
                        enable_reflect_ftz=enable_reflect_ftz)


def assert_self_contained(kernel):
    ptx = kernel.asm["ptx"]
    assert "__nv_" not in ptx and "__nvvm_reflect" not in ptx and ".extern" not in ptx
    if find_ptxas() is not None:
        assert kernel.asm["cubin"][:4] == b"\x7fELF"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32", "fp64"])
def test_kl_math_assembles(target, dtype):
    assert_self_contained(compile_for(all_kl_math, dtype, target))


UNARY_LIBDEVICE = sorted(name for name in dir(libdevice) if hasattr(getattr(libdevice, name), "accepted_types")
                         and len(getattr(libdevice, name).accepted_types[0]) == 1)


@kiln.jit
def all_unary_libdevice(x_ptr, out_ptr, n, NAMES: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=1)
    for i in kl.static_range(len(NAMES)):
        kl.store(out_ptr + i * n + offs, getattr(libdevice, NAMES[i])(x).to(x.dtype), mask=mask)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_libdevice_assembles(target, dtype):
    names = tuple(name for name in UNARY_LIBDEVICE
                  if any(types[0].name == dtype for types in getattr(libdevice, name).accepted_types))
    assert len(names) > 30
    assert_self_contained(compile_for(all_unary_libdevice, dtype, target, NAMES=names))


@kiln.jit
def one_function(x_ptr, out_ptr, n, FN: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=1)
    if FN == "div_rn":
        y = kl.div_rn(x, x + 1)
    else:
        y = getattr(kl, FN)(x)
    kl.store(out_ptr + offs, y, mask=mask)


@pytest.mark.parametrize("fn,instruction", [("exp", "ex2.approx.ftz.f32"), ("exp2", "ex2.approx.ftz.f32"),
                                            ("rsqrt", "rsqrt.approx.ftz.f32"), ("sqrt_rn", "sqrt.rn.f32"),
                                            ("sqrt", "sqrt.rn.f32"), ("div_rn", "div.rn.f32")])
def test_fp32_instructions(fn, instruction):
    ptx = compile_for(one_function, "fp32", "sm_90a", FN=fn).asm["ptx"]
    assert re.search(re.escape(instruction) + r"\s", ptx), ptx


@pytest.mark.parametrize("fn,instruction", [("exp", "ex2.approx"), ("exp2", "ex2.approx"),
                                            ("rsqrt", "rsqrt.approx"), ("log", None), ("div_rn", None)])
def test_enable_reflect_ftz(fn, instruction):
    """Triton's option: on (the default) the f32 approximations and
    libdevice flush denormals (.ftz); off, they keep them. The correctly
    rounded division keeps them either way (as in Triton 3.6)."""
    flushing = compile_for(one_function, "fp32", "sm_90a", FN=fn).asm["ptx"]
    keeping = compile_for(one_function, "fp32", "sm_90a", FN=fn, enable_reflect_ftz=False).asm["ptx"]
    assert ".ftz" not in keeping, keeping
    if instruction is not None:
        assert f"{instruction}.ftz.f32" in flushing, flushing
        assert f"{instruction}.f32" in keeping, keeping
    elif fn == "div_rn":
        assert ".ftz" not in flushing and "div.rn.f32" in flushing, flushing
    else:
        assert ".ftz." in flushing, flushing  # libdevice's polynomial, in its flushing form


def test_enable_reflect_ftz_on_launch_options():
    """The launch option reaches the compile, with its own cache entry, on
    kernel.warmup as in Triton's test; a non-bool is a TypeError."""
    import torch

    x = torch.ones(128)
    with pytest.raises(TypeError, match="enable_reflect_ftz must be True, False or None"):
        one_function.warmup(x, x, 128, grid=(1,), BLOCK=128, FN="exp2", enable_reflect_ftz="yes", backend="cpu")
    one_function.warmup(x, x, 128, grid=(1,), BLOCK=128, FN="exp2", enable_reflect_ftz=False, backend="cpu")


def test_fp64_exp_is_libdevice():
    ptx = compile_for(one_function, "fp64", "sm_90a", FN="exp").asm["ptx"]
    assert "ex2.approx" not in ptx and "fma.rn.f64" in ptx  # libdevice's polynomial, inlined


def test_missing_libdevice_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("KILN_LIBDEVICE_PATH", str(tmp_path / "nowhere.bc"))
    with pytest.raises(kiln.CompilationError, match="KILN_LIBDEVICE_PATH is '.*nowhere.bc', which does not exist"):
        compile_for(one_function, "fp32", "sm_90a", FN="erf")


# -- errors -------------------------------------------------------------------


@kiln.jit
def bad_call(x_ptr, out_ptr, n, FN: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    if FN == "libdevice.exp":
        y = libdevice.exp(x)
    elif FN == "libdevice.pow":
        y = libdevice.pow(x, x, x)
    elif FN == "sqrt_rn":
        y = kl.sqrt_rn(x)
    elif FN == "umulhi":
        y = kl.umulhi(x, x)
    elif FN == "clamp":
        y = kl.clamp(x, 0, 1)
    elif FN == "fma":
        y = kl.fma(x, x, x)
    else:
        y = kl.minimum(x, x, propagate_nan=True)
    kl.store(out_ptr + offs, y)


@pytest.mark.parametrize("fn,dtype,message", [
    ("libdevice.exp", "fp16", r"libdevice.exp does not accept arguments of type \(fp16\); it accepts \(fp32\), "
                              r"\(fp64\)"),
    ("libdevice.exp", "i32", r"libdevice.exp does not accept arguments of type \(int32\)"),
    ("libdevice.pow", "fp32", r"libdevice.pow takes 2 arguments, got 3"),
    ("sqrt_rn", "fp64", r"kl.sqrt_rn expects fp32 arguments, got fp64"),
    ("umulhi", "fp32", r"kl.umulhi expects int32 or int64 or uint32 or uint64 arguments, got fp32"),
    ("clamp", "i32", r"kl.clamp supports floating-point values only, got int32"),
    ("fma", "i32", r"kl.fma needs floating-point arguments"),
    ("minimum", "fp32", r"propagate_nan must be kl.PropagateNan.NONE or kl.PropagateNan.ALL, got True"),
])
def test_errors_name_the_function_and_the_line(fn, dtype, message):
    with pytest.raises(kiln.CompilationError, match=message) as info:
        kiln.compile(bad_call, signature={"x_ptr": "*" + dtype, "out_ptr": "*" + dtype, "n": "i32"},
                     constexprs={"BLOCK": 64, "FN": fn}, target="cpu")
    error = info.value
    lines = open(__file__).read().splitlines()
    assert error.filename == __file__
    assert fn.split(".")[-1] + "(" in lines[error.lineno - 1]


@kiln.jit
def mul24_kernel(x_ptr, y_ptr, out_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, libdevice.mul24(kl.load(x_ptr + offs), kl.load(y_ptr + offs)).to(kl.int64))


@pytest.mark.parametrize("target", TARGETS)
def test_mul24_keeps_the_low_32_bits(target):
    # The product of two 24-bit values needs 48 bits; mul24 keeps the low 32,
    # so widening the result to int64 must not widen the multiply.
    kernel = kiln.compile(mul24_kernel, signature={"x_ptr": "*i32", "y_ptr": "*i32", "out_ptr": "*i64"},
                          constexprs={"BLOCK": 128}, target=target)
    ptx = kernel.asm["ptx"]
    assert re.search(r"mul\.lo\.s32\s", ptx)
    assert not re.search(r"mul\.wide\.s32\s", ptx)
