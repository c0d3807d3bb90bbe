"""kiln.autotune on every backend present: a vector add tuned over block
sizes, one of them uncompilable, timed with the backend's own clock (CUDA
events on the GPU, the wall clock on the CPU); results are compared with a
float64 reference on fresh random inputs."""

import pytest
import torch

import kiln
import kiln.language as kl


@kiln.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


CONFIGS = [kiln.Config({"BLOCK": 128}), kiln.Config({"BLOCK": 1024}, num_warps=8),
           kiln.Config({"BLOCK": 3 * 128}), kiln.Config({"BLOCK": 512}, num_warps=2)]


@pytest.mark.parametrize("n", [1, 4097, 98432])
def test_autotuned_vector_add(arrays, n):
    tuned = kiln.autotune(CONFIGS, key=["n"], warmup=2, rep=10)(add_kernel)
    x, y = arrays.randn(n, seed=n), arrays.randn(n, seed=n + 1)
    out = arrays.full(n, float("nan"), torch.float32)
    with pytest.warns(UserWarning, match=r"config \{BLOCK: 384, num_warps: 4, num_stages: 3\} skipped"):
        kernel = tuned[lambda meta: (kiln.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n)
    arrays.synchronize()
    assert torch.equal(out.cpu(), (x.cpu().double() + y.cpu().double()).float())
    assert tuned.best_config.kwargs["BLOCK"] != 384
    assert kernel.metadata["num_warps"] == tuned.best_config.num_warps
    [key] = tuned.cache
    assert key[:2] == (n, "torch.float32")
    assert key[-1] == ("cpu" if arrays.backend == "cpu" else f"cuda:{torch.cuda.current_device()}")
    median, p20, p80 = tuned.configs_timings[tuned.best_config]
    assert 0 < p20 <= median <= p80
