"""kl.dot on every backend present: a tiled matmul in the style of Triton's
tutorial (grouped program order, a loop over K with masked loads, ragged
and strided and transposed operands) for every operand dtype and input
precision, batched (3-D) dots, dots of computed operands, and launch
options. Results are compared with torch in float64 by the relative
Frobenius error on fresh random inputs, into outputs poisoned with NaN."""

import pytest
import torch

import kiln
import kiln.language as kl

# Relative Frobenius error allowed per case: fp32 exactly multiplied (ieee,
# and tf32x3, which is close to it), fp32 as sums of 3 or 6 bf16 products
# (bf16x3 keeps about 16 bits of each operand, bf16x6 about 24; one bf16
# product would miss 1e-4), tf32 operands (10 mantissa bits), the 16-bit
# floats, and fp8 operands, whose products are exact in fp32 (only the sum
# is rounded, as for fp16). int8 must be exact.
TOLERANCE = {"fp64": 1e-13, "ieee": 1e-5, "tf32x3": 1e-5, "bf16x3": 1e-4, "bf16x6": 1e-5, "tf32": 1e-3, "fp16": 1e-2,
             "bf16": 1e-2, "fp8": 1e-2}


@kiln.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr, BLOCK_K: kl.constexpr, GROUP_SIZE_M: kl.constexpr,
                  PRECISION: kl.constexpr, OUT_DTYPE: kl.constexpr, FP8: kl.constexpr, CHAIN: kl.constexpr):
    # Programs run in groups of GROUP_SIZE_M rows of tiles, column by column,
    # so that neighbouring programs share tiles of `a` and `b`.
    pid = kl.program_id(0)
    num_pid_m = kl.cdiv(M, BLOCK_M)
    num_pid_n = kl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = kl.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + kl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + kl.arange(0, BLOCK_N)
    offs_k = kl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = kl.zeros((BLOCK_M, BLOCK_N), dtype=OUT_DTYPE)
    for k in range(0, kl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = kl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0)
        b = kl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0)
        if FP8 != "none":
            a = a.to(FP8, bitcast=True)
            b = b.to(FP8, bitcast=True)
        if CHAIN:
            acc = kl.dot(a, b, acc, input_precision=PRECISION, out_dtype=OUT_DTYPE)
        else:
            acc += kl.dot(a, b, input_precision=PRECISION, out_dtype=OUT_DTYPE)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    kl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


# name: (torch dtype of the inputs, kl.dot input_precision, out_dtype, fp8 format or "none")
CASES = {
    "fp16": (torch.float16, "ieee", kl.float32, "none"),
    "fp16-acc-fp16": (torch.float16, "ieee", kl.float16, "none"),
    "bf16": (torch.bfloat16, "ieee", kl.float32, "none"),
    "fp32-ieee": (torch.float32, "ieee", kl.float32, "none"),
    "fp64": (torch.float64, "ieee", kl.float64, "none"),
    "fp32-tf32": (torch.float32, "tf32", kl.float32, "none"),
    "fp32-tf32x3": (torch.float32, "tf32x3", kl.float32, "none"),
    "fp32-bf16x3": (torch.float32, "bf16x3", kl.float32, "none"),
    "fp32-bf16x6": (torch.float32, "bf16x6", kl.float32, "none"),
    "int8": (torch.int8, "ieee", kl.int32, "none"),
    "fp8e4nv": (torch.uint8, "ieee", kl.float32, kl.float8e4nv),
    "fp8e5": (torch.uint8, "ieee", kl.float32, kl.float8e5),
}


def tolerance(case: str) -> float:
    dtype, precision, _, fp8 = CASES[case]
    if fp8 != "none":
        return TOLERANCE["fp8"]
    if dtype == torch.float64:
        return TOLERANCE["fp64"]
    return TOLERANCE[precision] if dtype == torch.float32 else TOLERANCE["bf16" if dtype == torch.bfloat16 else "fp16"]


def random_fp8(shape, fp8, generator) -> tuple:
    """Bytes of random normal fp8 values (exponents -3..3 in e4m3, -4..4 in
    e5m2, every mantissa and sign) and the values they encode, in float64.
    Built from the formats' definitions, so no torch fp8 type is needed."""
    mantissa_bits, bias, span = (3, 7, 3) if fp8 is kl.float8e4nv else (2, 15, 4)
    sign = torch.randint(0, 2, shape, generator=generator)
    exponent = torch.randint(-span, span + 1, shape, generator=generator)
    mantissa = torch.randint(0, 2**mantissa_bits, shape, generator=generator)
    code = (sign << 7) | ((exponent + bias) << mantissa_bits) | mantissa
    value = (1 - 2 * sign.double()) * (1 + mantissa.double() / 2**mantissa_bits) * 2.0**exponent.double()
    return code.to(torch.uint8), value


def random_operand(shape, case: str, seed: int, device: str) -> tuple:
    """A fresh random operand of `case`'s dtype (never all zeros) and its
    exact value in float64."""
    dtype, _, _, fp8 = CASES[case]
    generator = torch.Generator().manual_seed(seed)
    if fp8 != "none":
        x, value = random_fp8(shape, fp8, generator)
    elif dtype == torch.int8:
        x = torch.randint(-128, 128, shape, generator=generator, dtype=torch.int8)
        value = x.double()
    else:
        x = torch.randn(shape, generator=generator).to(dtype)
        value = x.double()
    return x.to(device), value


def poisoned(shape, dtype, device: str) -> torch.Tensor:
    """An output full of NaN (or, for integers, a value no result takes)."""
    fill = float("nan") if dtype.is_floating_point else -(2**31)
    return torch.full(shape, fill, dtype=dtype, device=device)


def output_dtype(case: str) -> torch.dtype:
    out = CASES[case][2]
    return {kl.int32: torch.int32, kl.float16: torch.float16, kl.float64: torch.float64}.get(out, torch.float32)


def check(out: torch.Tensor, ref: torch.Tensor, case: str) -> None:
    out = out.cpu().double()
    assert not out.isnan().any(), "some outputs were not written"
    if CASES[case][0] == torch.int8:
        assert torch.equal(out, ref), f"{int((out != ref).sum())} int8 results differ"
        return
    error = (torch.linalg.norm(out - ref) / torch.linalg.norm(ref)).item()
    assert error < tolerance(case), f"relative error {error:.3g} >= {tolerance(case):g}"


def matmul(a, b, case: str, blocks=(32, 32, 32), group_size_m=4, chain=False, out=None, **launch):
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = poisoned((M, N), output_dtype(case), a.device.type)
    _, precision, out_dtype, fp8 = CASES[case]
    BM, BN, BK = blocks
    grid = (kiln.cdiv(M, BM) * kiln.cdiv(N, BN),)
    matmul_kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        out.stride(0), out.stride(1), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_SIZE_M=group_size_m,
                        PRECISION=precision, OUT_DTYPE=out_dtype, FP8=fp8, CHAIN=chain, **launch)
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_ragged_matmul_every_dtype(arrays, case: str) -> None:
    """M, N and K not multiples of the blocks: the masked loads pad with
    zeros and the masked store keeps the edges."""
    M, N, K = 100, 70, 50
    a, a_ref = random_operand((M, K), case, 1, arrays.device)
    b, b_ref = random_operand((K, N), case, 2, arrays.device)
    check(matmul(a, b, case), a_ref @ b_ref, case)


@pytest.mark.parametrize("case", ["fp16", "fp32-ieee", "fp64", "fp8e5", "int8"])
@pytest.mark.parametrize("blocks", [(1, 2, 32), (2, 16, 32), (16, 4, 32)])
def test_tiles_below_16_rows_or_columns(arrays, case: str, blocks: tuple) -> None:
    """M or N below 16, which tensor cores cannot take: multiplied by FMAs."""
    M, N, K = 20, 18, 64
    a, a_ref = random_operand((M, K), case, 3, arrays.device)
    b, b_ref = random_operand((K, N), case, 4, arrays.device)
    check(matmul(a, b, case, blocks=blocks), a_ref @ b_ref, case)


@pytest.mark.parametrize("case", ["fp16", "fp32-ieee", "int8"])
def test_square_matmul_chaining_the_accumulator(arrays, case: str) -> None:
    """`acc = kl.dot(a, b, acc)`, on a square product of 64x64 tiles."""
    n = 192
    a, a_ref = random_operand((n, n), case, 3, arrays.device)
    b, b_ref = random_operand((n, n), case, 4, arrays.device)
    check(matmul(a, b, case, blocks=(64, 64, 32), chain=True), a_ref @ b_ref, case)


@pytest.mark.parametrize("case", ["fp16", "fp32-tf32"])
def test_strided_and_transposed_operands(arrays, case: str) -> None:
    """`a` is a column slice of a wider array (a row stride that is not its
    width), `b` is the transpose of a [N, K] array (unit stride along N is
    lost), and the output is a strided view of a larger poisoned one."""
    M, N, K = 96, 80, 64
    wide, wide_ref = random_operand((M, K + 24), case, 5, arrays.device)
    a, a_ref = wide[:, 8:8 + K], wide_ref[:, 8:8 + K]
    bt, bt_ref = random_operand((N, K), case, 6, arrays.device)
    b, b_ref = bt.T, bt_ref.T
    big = poisoned((M, 2 * N), output_dtype(case), arrays.device)
    out = big[:, ::2]
    matmul(a, b, case, blocks=(32, 16, 16), group_size_m=2, out=out)
    check(out, a_ref @ b_ref, case)
    assert big[:, 1::2].cpu().isnan().all(), "the store wrote between the output's columns"


@pytest.mark.parametrize("case", ["fp32-ieee", "bf16"])
def test_transposed_a(arrays, case: str) -> None:
    M, N, K = 64, 48, 40
    at, at_ref = random_operand((K, M), case, 7, arrays.device)
    b, b_ref = random_operand((K, N), case, 8, arrays.device)
    check(matmul(at.T, b, case, blocks=(16, 16, 16)), at_ref.T @ b_ref, case)


# num_stages and num_warps shape the GPU code; the CPU accepts and ignores
# them, so there a few combinations stand for all.
LAUNCH = [(stages, warps) for stages in range(1, 6) for warps in (4, 8)]
CPU_LAUNCH = [(1, 4), (3, 8), (5, 4)]


@pytest.mark.parametrize("num_stages,num_warps", LAUNCH)
def test_launch_options(arrays, num_stages: int, num_warps: int) -> None:
    if arrays.backend == "cpu" and (num_stages, num_warps) not in CPU_LAUNCH:
        pytest.skip("the CPU ignores num_stages and num_warps: three combinations cover it")
    case = "fp16"
    M, N, K = 256, 128, 160
    a, a_ref = random_operand((M, K), case, 9, arrays.device)
    b, b_ref = random_operand((K, N), case, 10, arrays.device)
    out = matmul(a, b, case, blocks=(64, 64, 32), num_stages=num_stages, num_warps=num_warps)
    check(out, a_ref @ b_ref, case)


@kiln.jit
def batched_kernel(a_ptr, b_ptr, c_ptr, BATCH: kl.constexpr, M: kl.constexpr, N: kl.constexpr, K: kl.constexpr,
                   PRECISION: kl.constexpr, OUT_DTYPE: kl.constexpr):
    """One program multiplies whole [BATCH, M, K] and [BATCH, K, N] blocks."""
    i = kl.arange(0, BATCH)[:, None, None]
    m = kl.arange(0, M)[None, :, None]
    n = kl.arange(0, N)[None, None, :]
    k_cols = kl.arange(0, K)[None, None, :]
    k_rows = kl.arange(0, K)[None, :, None]
    a = kl.load(a_ptr + i * (M * K) + m * K + k_cols)
    b = kl.load(b_ptr + i * (K * N) + k_rows * N + n)
    c = kl.dot(a, b, input_precision=PRECISION, out_dtype=OUT_DTYPE)
    kl.store(c_ptr + i * (M * N) + m * N + n, c)


@pytest.mark.parametrize("case", ["fp16", "bf16", "fp32-ieee", "fp32-tf32", "fp32-tf32x3", "int8"])
@pytest.mark.parametrize("B,M,N,K", [(4, 32, 16, 64), (2, 64, 32, 32)])
def test_batched_dot(arrays, case: str, B: int, M: int, N: int, K: int) -> None:
    """[B, M, K] @ [B, K, N] (on the GPU, mma.sync per batch, except the
    exactly multiplied fp32)."""
    a, a_ref = random_operand((B, M, K), case, 11, arrays.device)
    b, b_ref = random_operand((B, K, N), case, 12, arrays.device)
    out = poisoned((B, M, N), output_dtype(case), arrays.device)
    _, precision, out_dtype, _ = CASES[case]
    batched_kernel[(1,)](a, b, out, BATCH=B, M=M, N=N, K=K, PRECISION=precision, OUT_DTYPE=out_dtype)
    check(out, a_ref @ b_ref, case)


@kiln.jit
def rank4_kernel(a_ptr, b_ptr, c_ptr, M: kl.constexpr, N: kl.constexpr, K: kl.constexpr,
                 TRANSPOSE_B: kl.constexpr):
    """[2, 4, M, K] @ [2, 4, K, N] in one dot (B loaded as [2, 4, N, K] and
    transposed by `kl.trans` without dims when TRANSPOSE_B)."""
    a = kl.load(a_ptr + kl.arange(0, 8 * M * K)).reshape(2, 4, M, K)
    if TRANSPOSE_B:
        b = kl.trans(kl.load(b_ptr + kl.arange(0, 8 * K * N)).reshape(2, 4, N, K))
    else:
        b = kl.load(b_ptr + kl.arange(0, 8 * K * N)).reshape(2, 4, K, N)
    c = kl.dot(a, b)
    kl.store(c_ptr + kl.arange(0, 8 * M * N), c.reshape(8 * M * N))


@pytest.mark.parametrize("transpose_b", [False, True])
def test_dot_of_rank_4(arrays, transpose_b: bool) -> None:
    """Batch dimensions beyond one (as Triton's dot takes them), and
    `kl.trans` without dims swapping the last two dimensions of a 4-D block."""
    M, N, K = 16, 32, 16
    a, a_ref = random_operand((2, 4, M, K), "fp16", 13, arrays.device)
    b, b_ref = random_operand((2, 4, N, K) if transpose_b else (2, 4, K, N), "fp16", 14, arrays.device)
    out = poisoned((2, 4, M, N), output_dtype("fp16"), arrays.device)
    rank4_kernel[(1,)](a, b, out, M=M, N=N, K=K, TRANSPOSE_B=transpose_b)
    check(out, a_ref @ (b_ref.transpose(-1, -2) if transpose_b else b_ref), "fp16")


@kiln.jit
def mixed_fp8_kernel(a_ptr, b_ptr, c_ptr, M: kl.constexpr, N: kl.constexpr, K: kl.constexpr,
                     IMPRECISE: kl.constexpr):
    """An e4m3 [M, K] block times an e5m2 [K, N] block, both loaded as bytes,
    with `max_num_imprecise_acc` IMPRECISE."""
    m = kl.arange(0, M)
    n = kl.arange(0, N)
    k = kl.arange(0, K)
    a = kl.load(a_ptr + m[:, None] * K + k[None, :]).to(kl.float8e4nv, bitcast=True)
    b = kl.load(b_ptr + k[:, None] * N + n[None, :]).to(kl.float8e5, bitcast=True)
    kl.store(c_ptr + m[:, None] * N + n[None, :], kl.dot(a, b, max_num_imprecise_acc=IMPRECISE))


@pytest.mark.parametrize("M,N,K,imprecise", [(64, 64, 64, None), (128, 32, 32, None),
                                              (64, 64, 128, 32), (64, 128, 64, 0)])
def test_mixed_fp8_formats(arrays, M: int, N: int, K: int, imprecise) -> None:
    """Two different fp8 formats in one dot, as Triton allows. On sm_90a:
    wgmma of e4m3 by e5m2 at 64x64, decoded to f16 at N = 32 (wgmma reads
    B in blocks of 64 columns); with max_num_imprecise_acc under K, partial
    sums of that many products (at least one instruction's) added into the
    accumulator."""
    generator = torch.Generator().manual_seed(M + N + K)
    a, a_ref = random_fp8((M, K), kl.float8e4nv, generator)
    b, b_ref = random_fp8((K, N), kl.float8e5, generator)
    out = poisoned((M, N), torch.float32, arrays.device)
    mixed_fp8_kernel[(1,)](a.to(arrays.device), b.to(arrays.device), out, M=M, N=N, K=K,
                           IMPRECISE=imprecise)
    check(out, a_ref @ b_ref, "fp8e4nv")


@kiln.jit
def computed_operands_kernel(a_ptr, bt_ptr, c_ptr, M: kl.constexpr, N: kl.constexpr, K: kl.constexpr):
    """`a * 2` and the transpose of a loaded [N, K] block: operands that
    are not loads."""
    m = kl.arange(0, M)
    n = kl.arange(0, N)
    k = kl.arange(0, K)
    a = kl.load(a_ptr + m[:, None] * K + k[None, :])
    bt = kl.load(bt_ptr + n[:, None] * K + k[None, :])
    c = kl.dot(a * 2, kl.trans(bt), input_precision="ieee")
    kl.store(c_ptr + m[:, None] * N + n[None, :], c)


def test_dot_of_computed_operands(arrays) -> None:
    case = "fp32-ieee"
    M, N, K = 32, 64, 16
    a, a_ref = random_operand((M, K), case, 13, arrays.device)
    bt, bt_ref = random_operand((N, K), case, 14, arrays.device)
    out = poisoned((M, N), torch.float32, arrays.device)
    computed_operands_kernel[(1,)](a, bt, out, M=M, N=N, K=K)
    check(out, (2 * a_ref) @ bt_ref.T, case)


@kiln.jit
def broadcast_product_kernel(a_ptr, b_ptr, c_ptr, M: kl.constexpr, N: kl.constexpr, K: kl.constexpr):
    """A matrix product written without kl.dot: the [M, K, N] products of
    broadcast operands summed over K (compiled as a dot)."""
    m = kl.arange(0, M)
    n = kl.arange(0, N)
    k = kl.arange(0, K)
    a = kl.load(a_ptr + m[:, None] * K + k[None, :])
    b = kl.load(b_ptr + k[:, None] * N + n[None, :])
    c = kl.sum(kl.expand_dims(a, 2) * kl.expand_dims(b, 0), axis=1)
    kl.store(c_ptr + m[:, None] * N + n[None, :], c)


@pytest.mark.parametrize("case", ["fp32-ieee", "fp64"])
def test_matrix_product_of_broadcasts(arrays, case: str) -> None:
    M, N, K = 128, 32, 32
    a, a_ref = random_operand((M, K), case, 15, arrays.device)
    b, b_ref = random_operand((K, N), case, 16, arrays.device)
    dtype = torch.float64 if case == "fp64" else torch.float32
    out = poisoned((M, N), dtype, arrays.device)
    broadcast_product_kernel[(1,)](a, b, out, M=M, N=N, K=K)
    check(out, a_ref @ b_ref, case)


@kiln.jit
def tf32_rounding_kernel(a_ptr, c_ptr, N: kl.constexpr):
    rows = kl.arange(0, N)[:, None]
    cols = kl.arange(0, N)[None, :]
    a = kl.load(a_ptr + rows * N + cols)
    identity = kl.where(rows == cols, 1.0, 0.0)
    kl.store(c_ptr + rows * N + cols, kl.dot(a, identity, input_precision="tf32"))


def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """fp32 -> tf32 to nearest, ties away from zero (cvt.rna.tf32.f32), on
    finite values."""
    bits = x.view(torch.int32).long() & 0xFFFFFFFF
    rounded = ((bits + 0x1000) & 0xFFFFE000).to(torch.int64)
    rounded = torch.where(rounded >= 2**31, rounded - 2**32, rounded).to(torch.int32)
    return rounded.view(torch.float32)


def test_tf32_rounds_operands_to_nearest_away_on_the_cpu() -> None:
    """a @ I with tf32 operands is a rounded to tf32: ties (the dropped 13
    bits exactly 0x1000) go away from zero, values below halfway down."""
    N = 16
    base = torch.randn(N * N, generator=torch.Generator().manual_seed(15)).view(torch.int32) & ~0x1FFF
    low = torch.tensor([0x1000, 0x0FFF, 0x1001, 0x1FFF, 0x0001, 0], dtype=torch.int32).repeat(N * N // 6 + 1)[:N * N]
    a = (base | low).view(torch.float32).reshape(N, N)
    out = poisoned((N, N), torch.float32, "cpu")
    tf32_rounding_kernel[(1,)](a, out, N=N, backend="cpu")
    expected = round_to_tf32(a)
    assert not torch.equal(expected, a)
    assert torch.equal(out, expected)
