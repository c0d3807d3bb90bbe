"""The tiled matmul kernel of Triton's tutorial, shared by the matmul tests:
one program per (BLOCK_M, BLOCK_N) tile of C, programs in groups of
GROUP_SIZE_M rows, a loop over K with masked loads, fp32 accumulation
(``acc = dot(a, b, acc)``, or ``acc += dot(a, b)`` with ACC_IN_DOT=False);
and a plainer one for operands of any dtype and input precision."""

import kiln
import kiln.language as kl


@kiln.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr,
                  BLOCK_K: kl.constexpr, GROUP_SIZE_M: kl.constexpr, ACC_IN_DOT: kl.constexpr):
    pid = kl.program_id(axis=0)
    num_pid_m = kl.cdiv(M, BLOCK_M)
    num_pid_n = kl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + kl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + kl.arange(0, BLOCK_N)) % N
    offs_k = kl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = kl.zeros((BLOCK_M, BLOCK_N), dtype=kl.float32)
    for k in range(0, kl.cdiv(K, BLOCK_K)):
        a = kl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = kl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        if ACC_IN_DOT:
            acc = kl.dot(a, b, acc)
        else:
            acc += kl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + kl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + kl.arange(0, BLOCK_N)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    kl.store(c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :], c, mask=c_mask)


@kiln.jit
def typed_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_bn, stride_cm,
                        BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr, BLOCK_K: kl.constexpr,
                        ACC: kl.constexpr, PRECISION: kl.constexpr):
    """A row-major A and a B of any strides, of any dtype, an ACC
    accumulator, `input_precision` PRECISION."""
    offs_m = kl.program_id(0) * BLOCK_M + kl.arange(0, BLOCK_M)
    offs_n = kl.program_id(1) * BLOCK_N + kl.arange(0, BLOCK_N)
    offs_k = kl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_m[:, None] % M) * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + (offs_n[None, :] % N) * stride_bn
    acc = kl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    for k in range(0, kl.cdiv(K, BLOCK_K)):
        a = kl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0)
        b = kl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0)
        acc = kl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    kl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc, mask=mask)


def run_matmul(a, b, c, bm, bn, bk, num_warps, num_stages=3, acc_in_dot=True):
    m, k = a.shape
    n = b.shape[1]
    grid = (kiln.cdiv(m, bm) * kiln.cdiv(n, bn),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_SIZE_M=4,
                        ACC_IN_DOT=acc_in_dot, num_warps=num_warps, num_stages=num_stages)
    return c


@kiln.jit
def descriptor_matmul_kernel(a_desc, b_desc, c_desc, K, BLOCK_K: kl.constexpr, B_TRANSPOSED: kl.constexpr):
    """C = A @ B through host tensor descriptors (Triton's TMA matmul): A
    [M, K]; B [K, N], or with B_TRANSPOSED its [N, K] transpose, read as
    `b.T`. On sm_90a the operands are copied by the TMA unit."""
    BLOCK_M = a_desc.block_shape[0]
    BLOCK_N = c_desc.block_shape[1]
    off_m = kl.program_id(0) * BLOCK_M
    off_n = kl.program_id(1) * BLOCK_N
    acc = kl.zeros((BLOCK_M, BLOCK_N), dtype=kl.float32)
    for k in range(0, kl.cdiv(K, BLOCK_K)):
        a = a_desc.load([off_m, k * BLOCK_K])
        if B_TRANSPOSED:
            b = b_desc.load([off_n, k * BLOCK_K]).T
        else:
            b = b_desc.load([k * BLOCK_K, off_n])
        acc = kl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def run_descriptor_matmul(a, b, c, bm, bn, bk, num_warps, num_stages=3, b_transposed=False):
    """Runs descriptor_matmul_kernel; `b` is [N, K] when `b_transposed`."""
    from kiln.tools.tensor_descriptor import TensorDescriptor
    m, k = a.shape
    n = c.shape[1]
    a_desc = TensorDescriptor.from_tensor(a, [bm, bk])
    b_desc = TensorDescriptor.from_tensor(b, [bn, bk] if b_transposed else [bk, bn])
    c_desc = TensorDescriptor.from_tensor(c, [bm, bn])
    grid = (kiln.cdiv(m, bm), kiln.cdiv(n, bn))
    return descriptor_matmul_kernel[grid](a_desc, b_desc, c_desc, k, BLOCK_K=bk, B_TRANSPOSED=b_transposed,
                                          num_warps=num_warps, num_stages=num_stages)
