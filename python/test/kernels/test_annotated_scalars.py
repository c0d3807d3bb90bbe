"""Scalar parameters typed by a dtype annotation (``v: kl.uint8``, or the
string ``"kl.float16"``), as Triton's: the launcher converts the Python value
to the annotated type and the kernel sees that type, on every backend
present, checked against numpy's conversions on fresh random values (the
seed is in the failure message). Other annotations are ignored.
"""

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl
from kiln import _C

INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = {"float16": np.float16, "bfloat16": None, "float32": np.float32, "float64": np.float64}


def fresh_rng() -> tuple[np.random.Generator, int]:
    seed = int(np.random.SeedSequence().entropy % 2**32)
    return np.random.default_rng(seed), seed


def annotated(fn, **types):
    """``fn`` with these parameter annotations (the kernels below are
    written once for every type)."""
    fn.__annotations__ = dict(types)
    return fn


def integer_kernel(name: str):
    def store_value(out, v):
        kl.static_assert(v.dtype == out.dtype.element_ty)
        kl.store(out, v)
    return kiln.jit(annotated(store_value, v=f"kl.{name}"))


@pytest.mark.parametrize("name", INTEGERS)
def test_integer_annotation_converts_the_value(arrays, name) -> None:
    rng, seed = fresh_rng()
    info = np.iinfo(name)
    kernel = integer_kernel(name)
    values = [int(info.min), int(info.max), 0, 1] + [int(v) for v in rng.integers(info.min, info.max, size=4,
                                                                                    dtype=name, endpoint=True)]
    for value in values:
        signed = torch.zeros(1, dtype=getattr(torch, name.lstrip("u")))
        out = kiln.reinterpret(arrays.to_backend(signed), getattr(kl, name)) if name.startswith("u") else \
            arrays.to_backend(signed)
        kernel[(1,)](out, value)
        stored = (out.base if name.startswith("u") else out).cpu().numpy().view(name)[0]
        assert int(stored) == value, f"{name} {value}, seed {seed}"


@kiln.jit
def offset_kernel(x_ptr, v: "kl.uint8"):
    kl.store(x_ptr + v, 1.0)


def test_unsigned_offset_is_zero_extended(arrays) -> None:
    """200 as a uint8 offset moves forward 200 elements (not back 56)."""
    x = arrays.to_backend(torch.zeros(256))
    offset_kernel[(1,)](x, 200)
    expected = torch.zeros(256)
    expected[200] = 1.0
    torch.testing.assert_close(x.cpu(), expected, rtol=0, atol=0)
    text = offset_kernel[(1,)](x, 3).asm["kiln"]
    assert "%v: i8" in text and "arith.extui %v : i8 to i64" in text


def float_kernel(name: str):
    def store_value(out, val):
        kl.store(out, val.to(kl.float64))
    return kiln.jit(annotated(store_value, val=getattr(kl, name)))


def rounded(value: float, name: str) -> float:
    """``value`` rounded to nearest even in the type ``name`` (numpy's
    conversions; bfloat16 through torch, from a float32-exact value)."""
    if name == "bfloat16":
        return float(torch.tensor(value, dtype=torch.float64).to(torch.float32).to(torch.bfloat16).double())
    with np.errstate(over="ignore"):  # values past the type's range round to infinities
        return float(np.float64(value).astype(FLOATS[name]))


@pytest.mark.parametrize("name", list(FLOATS))
def test_float_annotation_rounds_the_value(arrays, name) -> None:
    rng, seed = fresh_rng()
    kernel = float_kernel(name)
    # float32-exact values, so that bfloat16's reference rounds once.
    randoms = [float(np.float32(v)) for v in rng.standard_normal(4) * 1000.0]
    values = [0.0, -0.0, 1.0, float("inf"), float("-inf"), float("nan"), 1e6, -1e40, 3, *randoms]
    out = arrays.to_backend(torch.zeros(1, dtype=torch.float64))
    for value in values:
        kernel[(1,)](out, value)
        got = float(out.cpu()[0])
        expected = rounded(float(value), name)
        if np.isnan(expected):
            assert np.isnan(got), f"{name} {value}, seed {seed}"
        else:
            assert got == expected, f"{name} {value}: got {got}, expected {expected}, seed {seed}"


def test_annotated_types_appear_in_the_ir(arrays) -> None:
    """The kernel's first stage names arguments after their parameters and
    gives them the annotated types; the text parses back."""
    kernel = float_kernel("float16")
    out = arrays.to_backend(torch.zeros(1, dtype=torch.float64))
    text = kernel[(1,)](out, 2.5).asm["kiln"]
    assert "%out: !kiln.ptr<f64>" in text and "%val: f16" in text
    assert "arith.extf %val : f16 to f64" in text
    _C.ir.Module.parse(_C.ir.Context(), text).verify()


def test_out_of_range_and_float_values_are_refused(arrays) -> None:
    out = arrays.to_backend(torch.zeros(1, dtype=torch.int16))
    kernel = integer_kernel("int16")
    with pytest.raises(OverflowError, match="'v' = 40000 does not fit in its annotated type i16"):
        kernel[(1,)](out, 40000)
    with pytest.raises(TypeError, match="'v' is annotated i16 but got the float 1.5"):
        kernel[(1,)](out, 1.5)


@kiln.jit
def unknown_annotations_kernel(x: torch.Tensor, n: int, flag: "some.thing", BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(x + offs, n + flag, mask=offs < n)


def test_other_annotations_are_ignored(arrays) -> None:
    x = arrays.to_backend(torch.zeros(8, dtype=torch.int32))
    unknown_annotations_kernel[(1,)](x, 5, 2, BLOCK=8)
    torch.testing.assert_close(x.cpu(), torch.tensor([7] * 5 + [0] * 3, dtype=torch.int32))
