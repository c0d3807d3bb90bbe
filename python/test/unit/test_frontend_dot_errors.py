"""Every misuse of kl.dot raises a CompilationError at the kl.dot line,
saying what is wrong; the valid forms build IR with the dot's attributes."""

from __future__ import annotations

import inspect

import pytest

import kiln.language as kl
from kiln.errors import CompilationError


def dot_line(kernel) -> tuple[int, str]:
    """The file line of the kernel's kl.dot call, and its text."""
    fn = getattr(kernel, "fn", kernel)
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if "kl.dot(" in line:
            return first + i, line
    raise AssertionError("no kl.dot in the kernel")


def check_error(build_ir, kernel, signature, *fragments: str, constexprs=None) -> None:
    with pytest.raises(CompilationError) as info:
        build_ir(kernel, signature, constexprs or {})
    err = info.value
    line, text = dot_line(kernel)
    assert err.filename == __file__
    assert err.lineno == line, str(err)
    assert err.source_line is not None and err.source_line.strip() == text.strip()
    message = str(err)
    assert message.startswith(f"{__file__}:{line}:"), message
    for fragment in fragments:
        assert fragment in message, message


def test_inner_dimensions_differ(jit, build_ir):
    @jit
    def kernel(out):
        a = kl.zeros((16, 32), dtype=kl.float16)
        b = kl.zeros((16, 64), dtype=kl.float16)
        c = kl.dot(a, b)

    check_error(build_ir, kernel, {"out": "*fp32"}, "inner dimensions", "[16, 32]", "[16, 64]")


def test_ranks_differ(jit, build_ir):
    @jit
    def kernel(out):
        a = kl.zeros((2, 16, 16), dtype=kl.float16)
        b = kl.zeros((16, 16), dtype=kl.float16)
        c = kl.dot(a, b)

    check_error(build_ir, kernel, {"out": "*fp32"}, "different ranks", "[2, 16, 16]", "[16, 16]")


def test_one_dimensional_operand(jit, build_ir):
    @jit
    def kernel(out):
        a = kl.zeros((16,), dtype=kl.float16)
        c = kl.dot(a, a)

    check_error(build_ir, kernel, {"out": "*fp32"}, "2 or more dimensions", "[16]")


def test_batch_dimensions_differ(jit, build_ir):
    @jit
    def kernel(out):
        a = kl.zeros((2, 16, 16), dtype=kl.float16)
        b = kl.zeros((4, 16, 16), dtype=kl.float16)
        c = kl.dot(a, b)

    check_error(build_ir, kernel, {"out": "*fp32"}, "batch dimensions")


def test_batch_dimensions_of_rank_4_differ(jit, build_ir):
    @jit
    def kernel(out):
        a = kl.zeros((2, 2, 16, 16), dtype=kl.float16)
        b = kl.zeros((2, 4, 16, 16), dtype=kl.float16)
        c = kl.dot(a, b)

    check_error(build_ir, kernel, {"out": "*fp32"}, "batch dimensions", "[2, 2, 16, 16]", "[2, 4, 16, 16]")


@pytest.mark.parametrize("shape_a,shape_b,dtype,fragment", [
    ((16, 8), (8, 16), "float16", "Input shapes should have M >= 1, N >= 1 and K >= 16"),
    ((16, 16), (16, 16), "int8", "Input shapes should have M >= 1, N >= 1 and K >= 32"),
    ((16, 16), (16, 16), "float8e5", "Input shapes should have M >= 1, N >= 1 and K >= 32"),
])
def test_dimension_too_small(jit, build_ir, shape_a, shape_b, dtype, fragment):
    @jit
    def kernel(out, SA: kl.constexpr, SB: kl.constexpr, DT: kl.constexpr):
        a = kl.zeros(SA, dtype=DT)
        b = kl.zeros(SB, dtype=DT)
        c = kl.dot(a, b)

    check_error(build_ir, kernel, {"out": "*fp32"}, fragment,
                constexprs={"SA": shape_a, "SB": shape_b, "DT": getattr(kl, dtype)})


@pytest.mark.parametrize("da,db,fragments", [
    ("float16", "bfloat16", ("one dtype", "fp16", "bf16")),
    ("float16", "float8e5", ("fp8 partner", "fp16")),
    ("int8", "uint8", ("one dtype", "int8", "uint8")),
    ("uint8", "uint8", ("uint8", "int8")),
    ("float64", "float32", ("one dtype", "fp64", "fp32")),
    ("int16", "int16", ("unsupported operand dtype", "int16")),
])
def test_operand_dtypes(jit, build_ir, da, db, fragments):
    @jit
    def kernel(out, DA: kl.constexpr, DB: kl.constexpr):
        a = kl.zeros((16, 16), dtype=DA)
        b = kl.zeros((16, 16), dtype=DB)
        c = kl.dot(a, b)

    check_error(build_ir, kernel, {"out": "*fp32"}, *fragments,
                constexprs={"DA": getattr(kl, da), "DB": getattr(kl, db)})


def test_bad_input_precision(jit, build_ir):
    @jit
    def kernel(out):
        a = kl.zeros((16, 16), dtype=kl.float32)
        c = kl.dot(a, a, input_precision="tf64")

    check_error(build_ir, kernel, {"out": "*fp32"}, "input_precision", "tf32, tf32x3, ieee", "'tf64'")


def test_allow_tf32_and_input_precision(jit, build_ir):
    @jit
    def kernel(out):
        a = kl.zeros((16, 16), dtype=kl.float32)
        c = kl.dot(a, a, input_precision="ieee", allow_tf32=True)

    check_error(build_ir, kernel, {"out": "*fp32"}, "only one of input_precision and allow_tf32")


@pytest.mark.parametrize("operand,out_dtype", [("bfloat16", "float16"), ("float32", "float16"),
                                               ("float16", "bfloat16"), ("float16", "int32")])
def test_bad_out_dtype(jit, build_ir, operand, out_dtype):
    @jit
    def kernel(out, D: kl.constexpr, OUT: kl.constexpr):
        a = kl.zeros((16, 16), dtype=D)
        c = kl.dot(a, a, out_dtype=OUT)

    check_error(build_ir, kernel, {"out": "*fp32"}, "out_dtype", "not supported",
                constexprs={"D": getattr(kl, operand), "OUT": getattr(kl, out_dtype)})


def test_acc_shape(jit, build_ir):
    @jit
    def kernel(out):
        a = kl.zeros((16, 32), dtype=kl.float16)
        b = kl.zeros((32, 64), dtype=kl.float16)
        acc = kl.zeros((16, 32), dtype=kl.float32)
        c = kl.dot(a, b, acc)

    check_error(build_ir, kernel, {"out": "*fp32"}, "acc has shape [16, 32]", "expected [16, 64]")


@pytest.mark.parametrize("operand,acc", [("int8", "float32"), ("float32", "float16"), ("float16", "bfloat16")])
def test_acc_dtype(jit, build_ir, operand, acc):
    @jit
    def kernel(out, D: kl.constexpr, ACC: kl.constexpr):
        a = kl.zeros((16, 16), dtype=D)
        acc = kl.zeros((16, 16), dtype=ACC)
        c = kl.dot(a, a, acc)

    check_error(build_ir, kernel, {"out": "*fp32"}, "acc",
                constexprs={"D": getattr(kl, operand), "ACC": getattr(kl, acc)})


def test_max_num_imprecise_acc_must_be_a_constant(jit, build_ir):
    @jit
    def kernel(out, n):
        a = kl.zeros((16, 16), dtype=kl.float16)
        c = kl.dot(a, a, max_num_imprecise_acc=n)

    check_error(build_ir, kernel, {"out": "*fp32", "n": "i32"}, "max_num_imprecise_acc", "constant")


def test_max_num_imprecise_acc_at_most_k_for_fp8(jit, build_ir):
    @jit
    def kernel(out):
        a = kl.zeros((16, 32), dtype=kl.float8e5)
        b = kl.zeros((32, 16), dtype=kl.float8e5)
        c = kl.dot(a, b, max_num_imprecise_acc=64)

    check_error(build_ir, kernel, {"out": "*fp32"}, "max_num_imprecise_acc (64)", "K (32)")


@pytest.mark.parametrize("precision,allow_tf32,expected", [
    ("none", None, "tf32"),  # Triton's default for fp32 operands
    ("none", False, "ieee"),
    ("none", True, "tf32"),
    ("TF32x3", None, "tf32x3"),  # any case, as Triton
])
def test_fp32_precision_reaches_the_ir(jit, build_ir, monkeypatch, precision, allow_tf32, expected):
    monkeypatch.delenv("KILN_F32_DEFAULT", raising=False)

    @jit
    def kernel(out, PRECISION: kl.constexpr, ALLOW: kl.constexpr):
        a = kl.zeros((16, 16), dtype=kl.float32)
        if PRECISION == "none":
            c = kl.dot(a, a, allow_tf32=ALLOW)
        else:
            c = kl.dot(a, a, input_precision=PRECISION)

    text = str(build_ir(kernel, {"out": "*fp32"}, {"PRECISION": precision, "ALLOW": allow_tf32}))
    assert f"#kiln.precision<{expected}>" in text, text


def test_fp8_operands_keep_their_bytes_and_formats(jit, build_ir):
    @jit
    def kernel(out):
        a = kl.zeros((16, 32), dtype=kl.float8e4nv)
        b = kl.zeros((32, 16), dtype=kl.float8e5)
        c = kl.dot(a, b, out_dtype=kl.float16)

    text = str(build_ir(kernel, {"out": "*fp16"}))
    assert "aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e5m2>" in text, text
    # Left out, max_num_imprecise_acc lets the whole K = 32 accumulate
    # imprecisely: Triton's sm_90 default, 2**30, a bound over any K.
    assert "maxNumImpreciseAcc = 1073741824" in text, text
    assert "tensor<16x32xi8> * tensor<32x16xi8> -> tensor<16x16xf16>" in text, text
