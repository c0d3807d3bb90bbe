"""Block pointers in the frontend: the IR they lower to, and each misuse
reported as a CompilationError at its source line."""

from __future__ import annotations

import inspect
import linecache

import pytest

import kiln.language as kl
from kiln.errors import CompilationError

SIG = {"p": "*fp32", "n": "i32"}


def located_error(build_ir, kernel, text: str, *fragments: str, signature=None, constexprs=None) -> None:
    with pytest.raises(CompilationError) as info:
        build_ir(kernel, signature or SIG, constexprs or {})
    err = info.value
    lines, first = inspect.getsourcelines(getattr(kernel, "fn", kernel))
    line = next(first + i for i, s in enumerate(lines) if text in s and i > 0)
    assert (err.filename, err.lineno) == (__file__, line), str(err)
    for fragment in fragments:
        assert fragment in str(err), str(err)


def test_load_lowers_to_masked_pointer_block(jit, build_ir):
    @jit
    def kernel(p, n):
        b = kl.make_block_ptr(p, (n, n), (n, 1), (0, 0), (16, 32), (1, 0))
        kl.store(b, kl.load(b, boundary_check=(1,), padding_option="nan"))

    text = str(build_ir(kernel, SIG))
    assert "tensor<16x32x!kiln.ptr<f32>>" in text
    assert "kiln.load" in text and "kiln.store" in text
    # Only dimension 1 is checked: one comparison pair, on the 1x32 row.
    assert text.count("arith.cmpi slt") == 1 and "tensor<1x32xi64>" in text
    assert "0x7FC00000" in text  # the NaN padding


def test_loop_carries_only_runtime_fields(jit, build_ir):
    @jit
    def kernel(p, n):
        b = kl.make_block_ptr(p, (n,), (1,), (0,), (64,), (0,))
        for _ in range(0, n, 64):
            kl.store(b, 1.0, boundary_check=(0,))
            b = kl.advance(b, (64,))

    text = str(build_ir(kernel, SIG))
    # base, shape, stride and offset: four loop-carried values.
    assert "-> (!kiln.ptr<f32>, i64, i64, i32)" in text


@pytest.mark.parametrize("snippet,fragments", [
    ("order=(0, 0)", ("order must be a permutation of [0, 1]", "got [0, 0]")),
    ("order=(1, 0, 2)", ("expected order of rank 2",)),
    ("strides=(n,)", ("expected strides of rank 2", "got 1")),
    ("block_shape=(16, 24)", ("block_shape dimensions must be powers of two",)),
    ("base=n", ("base must be a scalar pointer",)),
])
def test_make_block_ptr_errors(jit, build_ir, snippet, fragments):
    args = dict(base="p", shape="(n, n)", strides="(n, 1)", offsets="(0, 0)", block_shape="(16, 32)",
                order="(1, 0)")
    key, value = snippet.split("=", 1)
    args[key] = value
    call = ", ".join(f"{k}={v}" for k, v in args.items())
    namespace = {"kl": kl}
    source = f"def kernel(p, n):\n    b = kl.make_block_ptr({call})\n"
    path = f"<block_ptr_{key}>"
    # The frontend reads kernel source through linecache, as for a file.
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    exec(compile(source, path, "exec"), namespace)
    kernel = jit(namespace["kernel"])
    with pytest.raises(CompilationError) as info:
        build_ir(kernel, SIG)
    assert info.value.lineno == 2, str(info.value)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_boundary_check_out_of_range(jit, build_ir):
    @jit
    def kernel(p, n):
        b = kl.make_block_ptr(p, (n, n), (n, 1), (0, 0), (16, 32), (1, 0))
        x = kl.load(b, boundary_check=(0, 2))  # noqa: F841

    located_error(build_ir, kernel, "boundary_check=(0, 2)", "boundary_check dimension 2 is out of range",
                  "rank 2")


def test_unknown_padding_option(jit, build_ir):
    @jit
    def kernel(p, n):
        b = kl.make_block_ptr(p, (n,), (1,), (0,), (16,), (0,))
        x = kl.load(b, boundary_check=(0,), padding_option="inf")  # noqa: F841

    located_error(build_ir, kernel, 'padding_option="inf"', "unknown padding_option 'inf'")


def test_nan_padding_needs_floats(jit, build_ir):
    @jit
    def kernel(p, n):
        b = kl.make_block_ptr(p, (n,), (1,), (0,), (16,), (0,))
        x = kl.load(b, boundary_check=(0,), padding_option="nan")  # noqa: F841

    located_error(build_ir, kernel, 'padding_option="nan"', "needs a floating-point block pointer",
                  signature={"p": "*i32", "n": "i32"})


def test_mask_with_block_pointer(jit, build_ir):
    @jit
    def kernel(p, n):
        b = kl.make_block_ptr(p, (n,), (1,), (0,), (16,), (0,))
        x = kl.load(b, mask=n > 0)  # noqa: F841

    located_error(build_ir, kernel, "mask=n > 0", "takes no mask or other")


def test_boundary_check_needs_block_pointer(jit, build_ir):
    @jit
    def kernel(p, n):
        x = kl.load(p + kl.arange(0, 16), boundary_check=(0,))  # noqa: F841

    located_error(build_ir, kernel, "boundary_check=(0,)", "boundary_check needs a block pointer")


def test_advance_rank_mismatch(jit, build_ir):
    @jit
    def kernel(p, n):
        b = kl.make_block_ptr(p, (n, n), (n, 1), (0, 0), (16, 32), (1, 0))
        b = kl.advance(b, (16,))

    located_error(build_ir, kernel, "kl.advance(b, (16,))", "expected 2 offsets", "got 1")


def test_store_shape_mismatch(jit, build_ir):
    @jit
    def kernel(p, n):
        b = kl.make_block_ptr(p, (n, n), (n, 1), (0, 0), (16, 32), (1, 0))
        kl.store(b, kl.zeros((32, 16), kl.float32))

    located_error(build_ir, kernel, "kl.store(b,", "block shape [16, 32]", "shape [32, 16]")


def test_branches_with_different_block_shapes(jit, build_ir):
    @jit
    def kernel(p, n):
        if n > 0:
            b = kl.make_block_ptr(p, (n,), (1,), (0,), (16,), (0,))
        else:
            b = kl.make_block_ptr(p, (n,), (1,), (0,), (32,), (0,))
        kl.store(b, 1.0)

    located_error(build_ir, kernel, "kl.store(b, 1.0)", "'b' holds block pointers of different", "block shape")


def test_loop_cannot_change_block_shape(jit, build_ir):
    @jit
    def kernel(p, n):
        b = kl.make_block_ptr(p, (n,), (1,), (0,), (16,), (0,))
        for _ in range(n):
            b = kl.make_block_ptr(p, (n,), (1,), (0,), (32,), (0,))

    located_error(build_ir, kernel, "for _ in range(n):", "block shapes", "'b'")
