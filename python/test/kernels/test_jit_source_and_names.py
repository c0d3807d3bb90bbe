"""Triton's jit hooks that its own tests rely on, on every backend present:
``JITFunction._unsafe_update_src`` (recompiles from the new text) and
``jit(repr=...)`` (names the compiled kernel after its specialization)."""

import pytest
import torch

import kiln
import kiln.language as kl


@kiln.jit
def fill_template(out_ptr, N: kl.constexpr):
    kl.store(out_ptr + kl.arange(0, N), kl.full((N,), 1.5, kl.float32) + 0.0)


def test_unsafe_update_src_recompiles(arrays) -> None:
    out = arrays.full(16, float("nan"), torch.float32)
    fill_template[(1,)](out, 16)
    assert torch.equal(out, arrays.full(16, 1.5, torch.float32))
    # A second JITFunction over the same function, patched, as Triton's tests do.
    patched = kiln.JITFunction(fill_template.fn)
    patched._unsafe_update_src(patched.src.replace("+ 0.0", "* 4.0"))
    assert "* 4.0" in patched.src and "+ 0.0" in fill_template.src
    patched[(1,)](out, 16)
    assert torch.equal(out, arrays.full(16, 6.0, torch.float32))
    # Already compiled, then patched: the next launch compiles the new text.
    patched._unsafe_update_src(patched.src.replace("* 4.0", "- 1.0"))
    patched[(1,)](out, 16)
    assert torch.equal(out, arrays.full(16, 0.5, torch.float32))
    fill_template[(1,)](out, 16)  # the original is untouched
    assert torch.equal(out, arrays.full(16, 1.5, torch.float32))


def test_src_is_read_only() -> None:
    with pytest.raises(AttributeError, match="use _unsafe_update_src"):
        fill_template.src = "def fill_template(out_ptr, N): pass"
    with pytest.raises(TypeError, match="expects the source as a str"):
        kiln.JITFunction(fill_template.fn)._unsafe_update_src(b"def f(): pass")


def _name_by_specialization(specialization) -> str:
    ones = "_".join(name for name, value in specialization.constants.items() if value == 1)
    return f"scale_{specialization.signature['factor']}_{ones}"


@kiln.jit(repr=_name_by_specialization)
def named_scale(out_ptr, factor, step, N: kl.constexpr):
    kl.store(out_ptr + kl.arange(0, N), kl.full((N,), 2.0, kl.float32) * factor * step)


def test_repr_names_the_kernel(arrays) -> None:
    out = arrays.full(8, float("nan"), torch.float32)
    compiled = named_scale[(1,)](out, 3, 1, N=8)
    assert torch.equal(out, arrays.full(8, 6.0, torch.float32))
    assert compiled.name == compiled.metadata["name"] == "scale_i32_step"
    compiled = named_scale.warmup(out, 2**40, 5, N=8, grid=(1,))
    assert compiled.name == "scale_i64_"
    binary_text = compiled.asm.get("ptx") or compiled.asm["llir"]
    assert "scale_i64_" in binary_text


@kiln.jit(repr=lambda specialization: "not a symbol")
def badly_named(out_ptr):
    kl.store(out_ptr, 1.0)


def test_repr_must_return_a_symbol(arrays) -> None:
    with pytest.raises(ValueError, match="kernel badly_named: its repr function must return a symbol name"):
        badly_named[(1,)](arrays.full(1, 0.0, torch.float32))
