"""Matrix multiplication: Kiln vs Triton vs cuBLAS (torch.matmul) on a CUDA machine.

The kernel of Triton's matmul tutorial, the same text in Kiln and in
Triton: one program per (BLOCK_M, BLOCK_N) tile of C, programs ordered in
groups of GROUP_SIZE_M rows, a loop over K with masked loads and fp32
accumulation (int32 for int8; fp32 inputs multiply as tf32, Triton's
default). Both are tuned over the same handful of configurations (each
timed with do_bench, the fastest kept). Every result is first checked
against a float64 reference on fresh random inputs, with the output
poisoned before each run. Reported per configuration of Kiln: registers,
spills and shared memory.

    python bench/matmul.py [--shapes fp16:4096x4096x4096,...] [--configs N]

Shape prefixes: fp16, bf16, tf32 (fp32 operands), int8, fp8 (float8e4nv
operands, fp16 output, B column-major as in Triton's tutorial; cuBLAS is
torch._scaled_mm with unit scales), and fp16t, bf16t, int8t: B column-major
(contiguous along K, the `x @ w.T` of a linear layer's [N, K] weight).
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

import torch

import kiln
import kiln.language as kl
from kiln.testing import do_bench

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

#: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, num_warps, num_stages)
CONFIGS = [
    (128, 256, 64, 8, 8, 3),
    (128, 256, 32, 8, 8, 3),
    (128, 128, 32, 8, 8, 3),
    (256, 128, 32, 8, 8, 3),
    (128, 128, 64, 8, 8, 3),
    (64, 256, 32, 8, 4, 3),
    (128, 128, 64, 8, 4, 4),
    (128, 128, 32, 8, 4, 4),
    (64, 128, 64, 8, 4, 4),
    (128, 64, 32, 8, 4, 4),
    (64, 64, 64, 8, 4, 3),
    (16, 64, 64, 1, 4, 3),   # decode-shaped (small M)
    (16, 128, 128, 1, 4, 3),
]


@kiln.jit
def kiln_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                stride_cm, stride_cn, BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr,
                BLOCK_K: kl.constexpr, GROUP_SIZE_M: kl.constexpr, ACC_DTYPE: kl.constexpr):
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
    accumulator = kl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_DTYPE)
    for k in range(0, kl.cdiv(K, BLOCK_K)):
        a = kl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = kl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = kl.dot(a, b, accumulator, out_dtype=ACC_DTYPE)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + kl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + kl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    kl.store(c_ptrs, c, mask=c_mask)


if triton is not None:

    @triton.jit
    def triton_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, ACC_DTYPE: tl.constexpr):
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_DTYPE)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator, out_dtype=ACC_DTYPE)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        c = accumulator.to(c_ptr.dtype.element_ty)
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, c, mask=c_mask)


def launcher(kernel: Any, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
             config: tuple) -> Callable[[], torch.Tensor]:
    bm, bn, bk, group, warps, stages = config
    m, k = a.shape
    n = b.shape[1]
    grid = (kiln.cdiv(m, bm) * kiln.cdiv(n, bn),)
    args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            c.stride(0), c.stride(1))
    language = kl if kernel is kiln_matmul else tl
    acc_dtype = language.int32 if a.dtype == torch.int8 else language.float32

    def run() -> torch.Tensor:
        kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_SIZE_M=group,
                     ACC_DTYPE=acc_dtype, num_warps=warps, num_stages=stages)
        return c
    return run


def check(name: str, out: torch.Tensor, reference: torch.Tensor) -> None:
    error = ((out.double() - reference).norm() / reference.norm()).item()
    if not error < 1e-2:
        raise AssertionError(f"{name}: relative error {error:.3e}")


def tune(kernel: Any, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
         reference: torch.Tensor, name: str, configs: list) -> tuple[float, tuple, dict]:
    """Best time (ms) over `configs`, the config, and every config's time."""
    times = {}
    for config in configs:
        run = launcher(kernel, a, b, c, config)
        try:
            c.fill_(float("nan") if c.is_floating_point() else -(2**31))
            check(f"{name} {config}", run(), reference)
            times[config] = do_bench(run, return_mode="median")
        except Exception as error:  # a config that does not fit is skipped, as autotune does
            times[config] = float("inf")
            print(f"  {name} {config}: skipped ({type(error).__name__}: {str(error).splitlines()[0][:120]})")
    best = min(times, key=times.get)
    return times[best], best, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="fp16:4096x4096x4096,bf16:4096x4096x4096,"
                        "fp16:8192x8192x8192,bf16:8192x8192x8192,fp16:8192x8192x512,"
                        "fp16:16x8192x8192")
    parser.add_argument("--configs", type=int, default=len(CONFIGS))
    args = parser.parse_args()
    # name: (operand dtype, output dtype)
    # name: (operand dtype, output dtype, whether B is column-major)
    dtypes = {"fp16": (torch.float16, torch.float16, False),
              "bf16": (torch.bfloat16, torch.bfloat16, False),
              "tf32": (torch.float32, torch.float32, False), "int8": (torch.int8, torch.int32, False),
              "fp8": (torch.float8_e4m3fn, torch.float16, True),
              "fp16t": (torch.float16, torch.float16, True),
              "bf16t": (torch.bfloat16, torch.bfloat16, True), "int8t": (torch.int8, torch.int32, True)}
    # cuBLAS multiplies fp32 as tf32 too, as Triton and Kiln do by default.
    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"device: {torch.cuda.get_device_name()}")
    print(f"{'shape (MxNxK)':>24} | {'kiln TFLOP/s':>12} | {'triton TFLOP/s':>14} | {'cuBLAS TFLOP/s':>14} | "
          f"kiln/cuBLAS | kiln/triton | kiln config")
    for spec in args.shapes.split(","):
        name, dims = spec.split(":")
        m, n, k = (int(v) for v in dims.split("x"))
        dtype, out_dtype, b_column_major = dtypes[name]
        if dtype == torch.int8:
            a = torch.randint(-128, 128, (m, k), device="cuda", dtype=dtype)
            b = torch.randint(-128, 128, (k, n), device="cuda", dtype=dtype)
        else:
            a = torch.randn(m, k, device="cuda").to(dtype)
            b = torch.randn(k, n, device="cuda").to(dtype)
        if b_column_major:
            b = b.t().contiguous().t()
        c = torch.empty(m, n, device="cuda", dtype=out_dtype)
        reference = a.float().double() @ b.float().double()
        configs = CONFIGS[: args.configs]
        if m <= 64:
            configs = [cf for cf in CONFIGS if cf[0] <= 64]
        flops = 2 * m * n * k
        tflops = lambda ms: flops / (ms * 1e-3) / 1e12  # noqa: E731
        kiln_ms, kiln_config, kiln_times = tune(kiln_matmul, a, b, c, reference, "kiln", configs)
        triton_ms = float("nan")
        if triton is not None:
            triton_ms, _, _ = tune(triton_matmul, a, b, c, reference, "triton", configs)
        # cuBLAS's int8 GEMM is torch._int_mm (torch.matmul refuses int8 on
        # CUDA), its fp8 one torch._scaled_mm.
        torch_mm = torch._int_mm if dtype == torch.int8 else torch.matmul
        if dtype == torch.float8_e4m3fn:
            one = torch.ones((), device="cuda")
            torch_mm = lambda x, y: torch._scaled_mm(x, y, one, one, out_dtype=out_dtype)  # noqa: E731
        torch_ms = float("nan")
        try:
            check("torch", torch_mm(a, b), reference)
            torch_ms = do_bench(lambda: torch_mm(a, b), return_mode="median")
        except RuntimeError as error:  # a layout this torch build's GEMM refuses
            print(f"  torch: skipped ({str(error).splitlines()[0][:120]})")
        print(f"{spec:>24} | {tflops(kiln_ms):12.1f} | {tflops(triton_ms):14.1f} | {tflops(torch_ms):14.1f} | "
              f"{torch_ms / kiln_ms:11.3f} | {triton_ms / kiln_ms:11.3f} | {kiln_config}")
        for config, ms in kiln_times.items():
            print(f"    kiln {config}: {tflops(ms):7.1f} TFLOP/s")
    print("kiln compiled configs (registers, spills, shared memory):")
    for per_device in kiln_matmul.cache.values():
        for compiled in per_device.values():
            print(f"    {compiled!r}")


if __name__ == "__main__":
    main()
