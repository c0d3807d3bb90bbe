"""Pointer casts in the frontend (Triton's rules): pointer to pointer is
kiln.ptr_bitcast, pointer to a 64-bit integer kiln.ptr_to_int (narrower
integers truncate it, int1 tests it against null), a 64-bit integer to a
pointer kiln.int_to_ptr; every other cast involving a pointer is a
CompilationError at its source line."""

from __future__ import annotations

import re

import kiln.language as kl
from kiln_test_support import assert_located_error


def test_pointer_to_pointer_is_one_bitcast(jit, build_ir):
    @jit
    def kernel(out, x, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        kl.store(out.to(kl.pointer_type(kl.float64)), 1e50)
        q = kl.cast(x + offs, kl.pointer_type(kl.uint8), bitcast=True)
        kl.store(q, kl.load(q))

    text = build_ir(kernel, {"out": "*fp32", "x": "*fp32"}, {"BLOCK": 16}).str()
    assert "kiln.ptr_bitcast %out : !kiln.ptr<f32> -> !kiln.ptr<f64>" in text
    assert re.search(r"kiln.ptr_bitcast %\w+ : tensor<16x!kiln.ptr<f32>> -> tensor<16x!kiln.ptr<i8>>", text), text
    assert "arith.constant 1.000000e+50 : f64" in text


def test_constness_or_signedness_is_no_op(jit, build_ir):
    @jit
    def kernel(x, i, BLOCK: kl.constexpr):
        y = x.to(kl.pointer_type(kl.float32, const=True))
        kl.store(x, kl.load(y))
        u = i.to(kl.pointer_type(kl.uint32))
        kl.static_assert(u.dtype == kl.pointer_type(kl.uint32))
        kl.store(i, kl.load(u).to(kl.int32))

    text = build_ir(kernel, {"x": "*fp32", "i": "*i32"}, {"BLOCK": 16}).str()
    assert "ptr_bitcast" not in text


def test_pointer_to_integers(jit, build_ir):
    @jit
    def kernel(out64, out32, outb, x, BLOCK: kl.constexpr):
        kl.store(out64, x.to(kl.int64) + kl.cast(x, kl.uint64).to(kl.int64))
        kl.store(out32, x.to(kl.int32))
        kl.store(outb, x.to(kl.int1))

    text = build_ir(kernel, {"out64": "*i64", "out32": "*i32", "outb": "*i1", "x": "*fp16"},
                    {"BLOCK": 16}).str()
    assert "kiln.ptr_to_int %x : !kiln.ptr<f16> -> i64" in text
    assert "arith.trunci" in text and "arith.cmpi ne" in text


def test_integer_to_pointer(jit, build_ir):
    @jit
    def kernel(a, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        addresses = kl.load(a + offs)
        p = addresses.to(kl.pi32_t)
        kl.store(p, offs)

    text = build_ir(kernel, {"a": "*i64"}, {"BLOCK": 16}).str()
    assert re.search(r"kiln.int_to_ptr %\w+ : tensor<16xi64> -> tensor<16x!kiln.ptr<i32>>", text), text


def test_float_to_pointer_is_located(jit, build_ir):
    @jit
    def kernel(out, f, BLOCK: kl.constexpr):
        p = f.to(kl.pointer_type(kl.float32))
        kl.store(p, f)

    assert_located_error(build_ir, kernel, {"out": "*fp32", "f": "fp32"}, {"BLOCK": 16}, "f.to(kl.pointer_type",
                         "cannot cast fp32 to pointer<fp32>", "only a 64-bit integer")


def test_pointer_to_float_is_located(jit, build_ir):
    @jit
    def kernel(out, BLOCK: kl.constexpr):
        kl.store(out, kl.cast(out, kl.float32))

    assert_located_error(build_ir, kernel, {"out": "*fp32"}, {"BLOCK": 16}, "kl.cast(out, kl.float32)",
                         "cannot cast pointer<fp32> to fp32", "an integer type or another pointer type")


def test_narrow_integer_to_pointer_is_located(jit, build_ir):
    @jit
    def kernel(out, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        kl.store(offs.to(kl.pointer_type(kl.int32)), offs)

    assert_located_error(build_ir, kernel, {"out": "*fp32"}, {"BLOCK": 16}, "offs.to(kl.pointer_type",
                         "cannot cast int32 to pointer<int32>", "only a 64-bit integer")


def test_bool_to_pointer_is_located(jit, build_ir):
    @jit
    def kernel(out, BLOCK: kl.constexpr):
        flag = kl.arange(0, BLOCK) < 3
        kl.store(out, kl.load(flag.to(kl.pointer_type(kl.float32))))

    assert_located_error(build_ir, kernel, {"out": "*fp32"}, {"BLOCK": 16}, "flag.to(kl.pointer_type",
                         "cannot cast int1 to pointer<fp32>")


def test_other_address_space_is_located(jit, build_ir):
    @jit
    def kernel(out, BLOCK: kl.constexpr):
        p = out.to(kl.pointer_type(kl.float32, 3))
        kl.store(p, 1.0)

    assert_located_error(build_ir, kernel, {"out": "*fp32"}, {"BLOCK": 16}, "out.to(kl.pointer_type",
                         "different address spaces (1 and 3)")


def test_fp8_to_pointer_is_located(jit, build_ir):
    @jit
    def kernel(out, x, BLOCK: kl.constexpr):
        v = kl.load(x)
        kl.store(out, kl.load(v.to(kl.pointer_type(kl.float32))))

    assert_located_error(build_ir, kernel, {"out": "*fp32", "x": "*fp8e5"}, {"BLOCK": 16}, "v.to(kl.pointer_type",
                         "cannot cast fp8e5 to pointer<fp32>")
