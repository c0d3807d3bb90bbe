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

import kiln
import kiln.language as kl
from matmul_kernels import run_descriptor_matmul, run_matmul, typed_matmul_kernel


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


@kiln.jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: kl.constexpr,
                             BLOCK_N: kl.constexpr, BLOCK_K: kl.constexpr):
    """Row-major contiguous operands; each program loops over several C tiles,
    each tile a pipelined loop over K: consecutive inner loops reuse the
    same shared-memory slots."""
    num_n = kl.cdiv(N, BLOCK_N)
    num_tiles = kl.cdiv(M, BLOCK_M) * num_n
    for tile in range(kl.program_id(0), num_tiles, kl.num_programs(0)):
        offs_m = (tile // num_n) * BLOCK_M + kl.arange(0, BLOCK_M)
        offs_n = (tile % num_n) * BLOCK_N + kl.arange(0, BLOCK_N)
        offs_k = kl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + (offs_m[:, None] % M) * K + offs_k[None, :]
        b_ptrs = b_ptr + offs_k[:, None] * N + (offs_n[None, :] % N)
        acc = kl.zeros((BLOCK_M, BLOCK_N), dtype=kl.float32)
        for k in range(0, kl.cdiv(K, BLOCK_K)):
            a = kl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = kl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
            acc = kl.dot(a, b, acc)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K * N
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        kl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(kl.float16), mask=mask)


@pytest.mark.parametrize("bm,bn,num_warps,num_stages", [
    (128, 128, 8, 3), (128, 128, 4, 4), (64, 64, 4, 2),
])
def test_persistent_matmul_reuses_the_slots(bm, bn, num_warps, num_stages):
    """Several pipelined K loops one after another in a program (a
    persistent kernel, 4 programs over 16+ tiles): the slots a loop's last
    dots read are only overwritten once every warp is past them."""
    generator = torch.Generator(device="cuda")
    generator.manual_seed(bm + num_warps + num_stages)
    m, n, k = 4 * bm + 16, 4 * bn, 320  # K a multiple of 16: both operands copied
    a = torch.randn(m, k, device="cuda", dtype=torch.float16, generator=generator)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16, generator=generator)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    persistent_matmul_kernel[(4,)](a, b, c, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=32,
                                   num_warps=num_warps, num_stages=num_stages)
    assert relative_error(c, a.double() @ b.double()) < 1e-2


# Absent from torch builds without fp8 (then only the CPU tests run anyway).
E4M3 = getattr(torch, "float8_e4m3fn", None)
E5M2 = getattr(torch, "float8_e5m2", None)

#: (A dtype, B dtype, input_precision, relative error bound; None: exact).
#: fp8 products are exact in fp32; wgmma sums them at its own reduced
#: precision (the default max_num_imprecise_acc), well within fp16's bound.
TYPED_CASES = {
    "tf32": (torch.float32, torch.float32, "tf32", 1e-3),
    "tf32x3": (torch.float32, torch.float32, "tf32x3", 1e-5),
    "int8": (torch.int8, torch.int8, "ieee", None),
    "fp8e4nv": (E4M3, E4M3, "ieee", 1e-2),
    "fp8-mixed": (E4M3, E5M2, "ieee", 1e-2),
}


def run_typed_matmul(case, m, n, k, bm, bn, bk, num_warps, num_stages, seed, b_column_major=False):
    a_dtype, b_dtype, precision, bound = TYPED_CASES[case]
    generator = torch.Generator(device="cuda")
    generator.manual_seed(seed)
    if a_dtype == torch.int8:
        a = torch.randint(-128, 128, (m, k), device="cuda", dtype=a_dtype, generator=generator)
        b = torch.randint(-128, 128, (k, n), device="cuda", dtype=b_dtype, generator=generator)
        c = torch.full((m, n), -(2**31), device="cuda", dtype=torch.int32)
        acc = kl.int32
    else:
        a = torch.randn(m, k, device="cuda", generator=generator).to(a_dtype)
        b = torch.randn(k, n, device="cuda", generator=generator).to(b_dtype)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
        acc = kl.float32
    if b_column_major:
        b = b.t().contiguous().t()
    grid = (kiln.cdiv(m, bm), kiln.cdiv(n, bn))
    typed_matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), b.stride(0), b.stride(1), c.stride(0),
                              BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, ACC=acc, PRECISION=precision,
                              num_warps=num_warps, num_stages=num_stages)
    reference = a.float().double() @ b.float().double()
    if bound is None:
        assert torch.equal(c.double(), reference), f"{int((c.double() != reference).sum())} differ"
    else:
        assert relative_error(c, reference) < bound


@pytest.mark.parametrize("case", list(TYPED_CASES))
@pytest.mark.parametrize("m,n,k", [(300, 200, 170), (256, 192, 320)])
@pytest.mark.parametrize("bm,bn,bk,num_warps", [
    (128, 128, 32, 4), (128, 128, 64, 8), (64, 64, 32, 4), (32, 32, 32, 4), (128, 256, 64, 8),
    (64, 64, 64, 8),
])
def test_typed_dots_on_tensor_cores(case, m, n, k, bm, bn, bk, num_warps):
    """tf32 (rounded to nearest), tf32x3 (split into two tf32 parts), int8
    and fp8 dots on the tensor cores: wgmma where the block allows (not
    tf32x3, not int8 with N over 224), else mma.sync (fp8 decoded to f16).
    K of 170 leaves rows unaligned, so operands go through registers; K of
    320 lets int8 and fp8 A be copied asynchronously."""
    run_typed_matmul(case, m, n, k, bm, bn, bk, num_warps, 3, seed=bm + bn + bk + num_warps + k)


@pytest.mark.parametrize("case", list(TYPED_CASES))
@pytest.mark.parametrize("num_stages", [1, 2, 4])
def test_typed_dots_num_stages(case, num_stages):
    run_typed_matmul(case, 256, 256, 512, 128, 128, 64, 4, num_stages, seed=num_stages)


@pytest.mark.parametrize("case", ["int8", "fp8e4nv", "fp8-mixed", "tf32"])
@pytest.mark.parametrize("bm,bn,bk,num_warps", [(128, 128, 64, 4), (128, 256, 64, 8), (64, 64, 32, 4)])
@pytest.mark.parametrize("num_stages", [1, 3, 4])
def test_column_major_b_typed(case, bm, bn, bk, num_warps, num_stages):
    """B contiguous along K: 8-bit B is copied into K-major slots (tf32 goes
    through registers), against the same float64 reference."""
    run_typed_matmul(case, 256, 192, 320, bm, bn, bk, num_warps, num_stages,
                     seed=bm + bn + num_stages, b_column_major=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("bm,bn,bk,num_warps", [(128, 128, 64, 4), (128, 256, 32, 8), (64, 64, 32, 4),
                                                (128, 128, 32, 8)])
@pytest.mark.parametrize("num_stages", [1, 2, 3, 4])
def test_column_major_b(dtype, bm, bn, bk, num_warps, num_stages):
    """`x @ w.T` for a row-major [N, K] weight: B copied into K-major slots
    and read without transposing (wgmma, or ldmatrix without .trans)."""
    generator = torch.Generator(device="cuda")
    generator.manual_seed(bm + bn + bk + num_warps + num_stages)
    m, n, k = 300, 256, 320
    a = torch.randn(m, k, device="cuda", dtype=dtype, generator=generator)
    w = torch.randn(n, k, device="cuda", dtype=dtype, generator=generator)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    reference = a.double() @ w.double().T
    out = run_matmul(a, w.T, c, bm, bn, bk, num_warps, num_stages=num_stages)
    assert relative_error(out, reference) < 1e-2


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16", "float8_e4m3fn"])
@pytest.mark.parametrize("b_transposed", [False, True])
@pytest.mark.parametrize("bm,bn,bk,num_warps,num_stages", [
    (128, 128, 64, 4, 2), (128, 128, 64, 4, 3), (128, 128, 64, 4, 4), (128, 256, 64, 8, 2),
    (128, 256, 64, 8, 3), (64, 64, 32, 4, 2), (64, 64, 32, 4, 3), (64, 64, 32, 4, 5), (128, 128, 128, 8, 2),
])
def test_descriptor_matmul(dtype_name, b_transposed, bm, bn, bk, num_warps, num_stages):
    """Host tensor descriptors feeding a dot: on sm_90a the TMA unit copies
    both operands into the slots (A in boxes of 8 rows, B as it lies, or
    K-major when the dot reads `b.T`), completing an mbarrier per slot."""
    dtype = getattr(torch, dtype_name)
    if dtype == torch.float8_e4m3fn and not b_transposed:
        pytest.skip("the tensor cores read an 8-bit B K-major only")
    generator = torch.Generator(device="cuda")
    generator.manual_seed(bm + bn + bk + num_warps + num_stages + b_transposed)
    m, n, k = 300, 200, 176  # ragged; rows of 16-byte multiples, as descriptors need
    scale = 1.0 if dtype.itemsize == 2 else 0.5
    a = (torch.randn(m, k, device="cuda", generator=generator) * scale).to(dtype)
    b_shape = (n, k) if b_transposed else (k, n)
    b = (torch.randn(*b_shape, device="cuda", generator=generator) * scale).to(dtype)
    out_dtype = torch.float16 if dtype.itemsize == 1 else dtype
    c = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)
    compiled = run_descriptor_matmul(a, b, c, bm, bn, bk, num_warps, num_stages, b_transposed)
    reference = a.double() @ (b.double().T if b_transposed else b.double())
    assert relative_error(c, reference) < 1e-2
    if torch.cuda.get_device_capability() == (9, 0):
        ptx = compiled.asm["ptx"]
        assert "cp.async.bulk.tensor.2d" in ptx and "mbarrier.try_wait.parity" in ptx
        assert "cp.async.cg" not in ptx
        assert set(compiled.metadata["tensor_maps"]) == {"a_desc[5]", "b_desc[5]"}


def test_descriptor_matmul_relaunch_reencodes():
    """A second launch on other tensors of the same shapes hits the kernel
    cache; its tensor maps are encoded for the new tensors."""
    generator = torch.Generator(device="cuda")
    generator.manual_seed(11)
    for _ in range(2):
        a = torch.randn(256, 128, device="cuda", dtype=torch.float16, generator=generator)
        b = torch.randn(128, 192, device="cuda", dtype=torch.float16, generator=generator)
        c = torch.full((256, 192), float("nan"), device="cuda", dtype=torch.float16)
        run_descriptor_matmul(a, b, c, 128, 64, 64, 4, 3)
        assert relative_error(c, a.double() @ b.double()) < 1e-2
