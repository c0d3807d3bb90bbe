"""GPU-only matmul tests: the tensor-core path of kl.dot.

The tiled matmul of Triton's tutorial (grouped program order, loop over K,
masked loads) on f16/bf16, over block shapes and warp counts that each
choose a different split of the warps over the tile, against a float64
reference by relative Frobenius error, outputs poisoned first. The PTX
must use mma.sync with ldmatrix: the FMA lowering would pass the
correctness checks too, slowly. Dot semantics on every backend (dtypes,
precisions, 3-D, ...) are tested in ../kernels/test_dot.py.
"""

import pytest
import torch

from matmul_kernels import run_matmul


def relative_error(out, reference):
    return ((out.double() - reference).norm() / reference.norm()).item()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("bm,bn,bk,num_warps", [
    (128, 128, 32, 4), (128, 128, 64, 8), (64, 64, 32, 4), (128, 256, 64, 8),
    (16, 64, 64, 4), (32, 16, 16, 4), (64, 32, 16, 8),
])
def test_tiled_matmul_on_tensor_cores(dtype, bm, bn, bk, num_warps):
    generator = torch.Generator(device="cuda")
    generator.manual_seed(bm * 7 + bn * 3 + bk + num_warps)
    m, n, k = 300, 200, 170  # not multiples of any block
    a = torch.randn(m, k, device="cuda", dtype=dtype, generator=generator)
    b = torch.randn(k, n, device="cuda", dtype=dtype, generator=generator)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    reference = a.double() @ b.double()
    assert relative_error(run_matmul(a, b, c, bm, bn, bk, num_warps), reference) < 1e-2


@pytest.mark.parametrize("acc_in_dot", [True, False])
def test_accumulate_forms_and_transposed_operands(acc_in_dot):
    """`acc = dot(a, b, acc)` and `acc += dot(a, b)` (folded into the dot);
    operands given as transposed views (strides swapped)."""
    generator = torch.Generator(device="cuda")
    generator.manual_seed(11)
    m, n, k = 257, 129, 96
    a = torch.randn(k, m, device="cuda", dtype=torch.float16, generator=generator).T
    b = torch.randn(n, k, device="cuda", dtype=torch.float16, generator=generator).T
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
    reference = a.double() @ b.double()
    out = run_matmul(a, b, c, 64, 64, 32, 4, acc_in_dot=acc_in_dot)
    assert relative_error(out, reference) < 1e-2


@pytest.mark.parametrize("num_stages", [1, 2, 3, 4, 5])
def test_num_stages(num_stages):
    generator = torch.Generator(device="cuda")
    generator.manual_seed(num_stages)
    a = torch.randn(256, 512, device="cuda", dtype=torch.float16, generator=generator)
    b = torch.randn(512, 256, device="cuda", dtype=torch.float16, generator=generator)
    c = torch.full((256, 256), float("nan"), device="cuda", dtype=torch.float16)
    out = run_matmul(a, b, c, 128, 128, 64, 4, num_stages=num_stages)
    assert relative_error(out, a.double() @ b.double()) < 1e-2


@pytest.mark.parametrize("k", [16, 32, 48, 96, 160])
@pytest.mark.parametrize("num_stages", [2, 3])
def test_trip_counts_of_the_k_loop(k, num_stages):
    """K loops of 1 to 5 iterations: with asynchronous dots (num_stages=3
    on sm_90a) the loop is unrolled by two, so odd and even counts take
    different paths (the remainder loop, an empty main loop)."""
    generator = torch.Generator(device="cuda")
    generator.manual_seed(k + num_stages)
    a = torch.randn(256, k, device="cuda", dtype=torch.bfloat16, generator=generator)
    b = torch.randn(k, 256, device="cuda", dtype=torch.bfloat16, generator=generator)
    c = torch.full((256, 256), float("nan"), device="cuda", dtype=torch.float32)
    out = run_matmul(a, b, c, 128, 128, 32, 8, num_stages=num_stages)
    assert relative_error(out, a.double() @ b.double()) < 1e-2
