"""Triton's JIT hooks (knobs.runtime.jit_cache_hook and
jit_post_compile_hook), preload from their specialization data, and
device_caches, on every backend present."""

import pytest
import torch

import kiln
import kiln.language as kl
from kiln import knobs


@kiln.jit
def scale_kernel(x_ptr, out_ptr, n, SCALE: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)


@pytest.fixture
def hooks():
    """Restores the hook knobs after the test."""
    yield knobs.runtime
    knobs.runtime.jit_cache_hook = None
    knobs.runtime.jit_post_compile_hook = None


def test_hooks_see_each_compile_and_preload_rebuilds_it(arrays, hooks) -> None:
    calls = []
    hooks.jit_cache_hook = lambda **kwargs: calls.append(("cache", kwargs)) and False
    hooks.jit_post_compile_hook = lambda **kwargs: calls.append(("post", kwargs))
    scale_kernel.device_caches[arrays.cache_device][0].clear()
    x = arrays.randn(100, seed=3)
    out = arrays.full(100, 0.0, torch.float32)
    warm = scale_kernel.warmup(x, out, 100, SCALE=3.0, BLOCK=64, grid=(2,))
    assert [kind for kind, _ in calls] == ["cache", "post"]
    kwargs = calls[0][1]
    assert kwargs["fn"].jit_function is scale_kernel and kwargs["fn"].name == "scale_kernel"
    assert kwargs["is_manual_warmup"] is True and kwargs["compile"]["is_warmup"] is True
    assert kwargs["compile"]["constants"] == {"SCALE": 3.0, "BLOCK": 64}
    assert kwargs["compile"]["signature"]["x_ptr"] == "*fp32"
    assert "scale_kernel[num_warps=4" in kwargs["repr"]
    # A launch of the same specialization hits the cache: no further calls.
    scale_kernel[(2,)](x, out, 100, SCALE=3.0, BLOCK=64)
    arrays.synchronize()
    assert len(calls) == 2
    torch.testing.assert_close(out, x * 3.0)
    preloaded = scale_kernel.preload(kwargs["compile"]["specialization_data"])
    assert preloaded.hash == warm.hash
    # Another specialization (SCALE) has another hash.
    other = scale_kernel.warmup(x, out, 100, SCALE=2.0, BLOCK=64, grid=(2,))
    assert other.hash != warm.hash and len(calls) == 4


def test_a_true_cache_hook_skips_the_compile_and_the_launch(arrays, hooks) -> None:
    hooks.jit_cache_hook = lambda **kwargs: True
    scale_kernel.device_caches[arrays.cache_device][0].clear()
    x = arrays.randn(100, seed=4)
    out = arrays.full(100, -1.0, torch.float32)
    assert scale_kernel[(2,)](x, out, 100, SCALE=5.0, BLOCK=64) is None
    arrays.synchronize()
    assert bool((out == -1.0).all())
    hooks.jit_cache_hook = None
    scale_kernel[(2,)](x, out, 100, SCALE=5.0, BLOCK=64)
    arrays.synchronize()
    torch.testing.assert_close(out, x * 5.0)


def test_device_caches_clear_makes_the_next_launch_compile(arrays, hooks) -> None:
    x = arrays.randn(64, seed=6)
    out = arrays.full(64, 0.0, torch.float32)
    scale_kernel[(1,)](x, out, 64, SCALE=7.0, BLOCK=64)
    cache = scale_kernel.device_caches[arrays.cache_device][0]
    assert len(cache) >= 1
    compiles = []
    hooks.jit_post_compile_hook = lambda **kwargs: compiles.append(kwargs["compile"]["constants"])
    cache.clear()
    assert len(cache) == 0
    scale_kernel[(1,)](x, out, 64, SCALE=7.0, BLOCK=64)
    arrays.synchronize()
    assert compiles == [{"SCALE": 7.0, "BLOCK": 64}]
    torch.testing.assert_close(out, x * 7.0)


def test_preload_refuses_other_data(hooks) -> None:
    with pytest.raises(ValueError, match="not specialization data"):
        scale_kernel.preload("{}")
