"""Matmul through host tensor descriptors: Kiln vs Triton vs cuBLAS.

The kernel of Triton's TMA matmul: A [M, K] and B [N, K] (read as `b.T`,
as the tutorial does) are host ``TensorDescriptor`` arguments, loaded a
block at a time in a loop over K, with the grouped program order of the
matmul tutorial; on the H200 both compilers copy them with the TMA
unit. The same kernel text in Kiln and in Triton, timed on the same
tensors, each the best of a few configurations, against ``torch.matmul``
(cuBLAS) on A @ B^T. Prints one table row per shape.

    python3 bench/matmul_tma.py [--shapes fp16:8192x8192x8192,...]
"""

from __future__ import annotations

import argparse
from typing import Any

import torch

import kiln
import kiln.language as kl
from kiln.testing import do_bench
from kiln.tools.tensor_descriptor import TensorDescriptor as KilnDescriptor

try:
    import triton
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor as TritonDescriptor
except ImportError:  # pragma: no cover - the GPU machine has Triton
    triton = None

#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
CONFIGS = [
    (128, 256, 64, 8, 3),
    (128, 128, 64, 4, 4),
    (128, 128, 64, 4, 3),
    (128, 128, 64, 8, 3),
    (64, 256, 64, 4, 3),
]


@kiln.jit
def kiln_descriptor_matmul(a_desc, b_desc, c_desc, M, N, K, BLOCK_K: kl.constexpr, GROUP_SIZE_M: kl.constexpr):
    BLOCK_M = a_desc.block_shape[0]
    BLOCK_N = b_desc.block_shape[0]
    pid = kl.program_id(axis=0)
    num_pid_m = kl.cdiv(M, BLOCK_M)
    num_pid_n = kl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    off_m = (first_pid_m + ((pid % num_pid_in_group) % group_size_m)) * BLOCK_M
    off_n = ((pid % num_pid_in_group) // group_size_m) * BLOCK_N
    acc = kl.zeros((BLOCK_M, BLOCK_N), dtype=kl.float32)
    for k in range(0, kl.cdiv(K, BLOCK_K)):
        a = a_desc.load([off_m, k * BLOCK_K])
        b = b_desc.load([off_n, k * BLOCK_K])
        acc = kl.dot(a, b.T, acc)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


if triton is not None:

    @triton.jit
    def triton_descriptor_matmul(a_desc, b_desc, c_desc, M, N, K, BLOCK_K: tl.constexpr,
                                 GROUP_SIZE_M: tl.constexpr):
        BLOCK_M: tl.constexpr = a_desc.block_shape[0]
        BLOCK_N: tl.constexpr = b_desc.block_shape[0]
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        first_pid_m = (pid // num_pid_in_group) * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        off_m = (first_pid_m + ((pid % num_pid_in_group) % group_size_m)) * BLOCK_M
        off_n = ((pid % num_pid_in_group) // group_size_m) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([off_m, k * BLOCK_K])
            b = b_desc.load([off_n, k * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def run(compiler: str, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, config: tuple) -> Any:
    bm, bn, bk, warps, stages = config
    descriptor = KilnDescriptor if compiler == "kiln" else TritonDescriptor
    kernel = kiln_descriptor_matmul if compiler == "kiln" else triton_descriptor_matmul
    a_desc = descriptor.from_tensor(a, [bm, bk])
    b_desc = descriptor.from_tensor(b, [bn, bk])
    c_desc = descriptor.from_tensor(c, [bm, bn])
    m, n, k = a.shape[0], b.shape[0], a.shape[1]
    grid = (kiln.cdiv(m, bm) * kiln.cdiv(n, bn),)
    return lambda: kernel[grid](a_desc, b_desc, c_desc, m, n, k, BLOCK_K=bk, GROUP_SIZE_M=8, num_warps=warps,
                                num_stages=stages)


def tune(compiler: str, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, reference: torch.Tensor) -> tuple:
    times = {}
    for config in CONFIGS:
        try:
            launch = run(compiler, a, b, c, config)
            c.fill_(float("nan"))
            launch()
            error = ((c.double() - reference).norm() / reference.norm()).item()
            if not error < 1e-2:
                raise AssertionError(f"relative error {error:.3g}")
            times[config] = do_bench(launch, return_mode="median")
        except Exception as error:  # noqa: BLE001 - reported, the config skipped
            print(f"  {compiler} {config}: skipped ({type(error).__name__}: {str(error).splitlines()[0][:120]})")
    best = min(times, key=times.get)
    return times[best], best, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="fp16:4096x4096x4096,fp16:8192x8192x8192,bf16:8192x8192x8192")
    args = parser.parse_args()
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    print(f"device: {torch.cuda.get_device_name()}")
    print(f"{'shape (MxNxK)':>24} | {'kiln TFLOP/s':>12} | {'triton TFLOP/s':>14} | {'cuBLAS TFLOP/s':>14} | "
          f"kiln/cuBLAS | kiln/triton | kiln config")
    for spec in args.shapes.split(","):
        name, dims = spec.split(":")
        m, n, k = (int(v) for v in dims.split("x"))
        a = torch.randn(m, k, device="cuda").to(dtypes[name])
        b = torch.randn(n, k, device="cuda").to(dtypes[name])
        c = torch.empty(m, n, device="cuda", dtype=dtypes[name])
        reference = a.double() @ b.double().T
        tflops = lambda ms: 2 * m * n * k / (ms * 1e-3) / 1e12  # noqa: E731
        kiln_ms, kiln_config, kiln_times = tune("kiln", a, b, c, reference)
        triton_ms = tune("triton", a, b, c, reference)[0] if triton is not None else float("nan")
        torch_ms = do_bench(lambda: torch.matmul(a, b.T), return_mode="median")
        print(f"{spec:>24} | {tflops(kiln_ms):12.1f} | {tflops(triton_ms):14.1f} | {tflops(torch_ms):14.1f} | "
              f"{torch_ms / kiln_ms:11.3f} | {triton_ms / kiln_ms:11.3f} | {kiln_config}")
        for config, ms in kiln_times.items():
            print(f"    kiln {config}: {tflops(ms):7.1f} TFLOP/s")


if __name__ == "__main__":
    main()
