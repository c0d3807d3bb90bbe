"""Fused row softmax: Kiln vs Triton vs torch on a CUDA machine.

One program per row, the whole row in registers, as in Triton's fused
softmax tutorial; the same kernel text in Kiln and in Triton, with the
tutorial's num_warps rule. Each result is first checked against torch's
softmax computed in float64 on fresh random inputs, then timed with
do_bench (median). Bandwidth counts one read and one write of the matrix.

With --checked, Kiln's kernel runs in checked mode (KILN_CHECKED=1, every
access bounds-checked; each launch then waits for the kernel to read its
error record): compare with a run without it.

    python bench/softmax.py [--shapes fp16:32768x4096,fp32:8192x8192,fp16:65536x1024] [--checked]
"""

from __future__ import annotations

import argparse
import os
from typing import Callable

import torch

import kiln
import kiln.language as kl
from kiln.testing import do_bench

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None


@kiln.jit
def kiln_softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: kl.constexpr):
    row = kl.program_id(0)
    offs = kl.arange(0, BLOCK)
    mask = offs < n_cols
    x = kl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x - kl.max(x, axis=0)
    numerator = kl.exp(x)
    denominator = kl.sum(numerator, axis=0)
    kl.store(out_ptr + row * out_stride + offs, numerator / denominator, mask=mask)


if triton is not None:

    @triton.jit
    def triton_softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        numerator = tl.exp(x)
        denominator = tl.sum(numerator, axis=0)
        tl.store(out_ptr + row * out_stride + offs, numerator / denominator, mask=mask)


def num_warps_for(block: int) -> int:
    """The tutorial's rule: more warps for longer rows."""
    if block >= 4096:
        return 16
    if block >= 2048:
        return 8
    return 4


def launchers(x: torch.Tensor, out: torch.Tensor) -> dict[str, Callable[[], torch.Tensor]]:
    """One zero-argument callable per implementation, returning its result."""
    rows, cols = x.shape
    block = kiln.next_power_of_2(cols)
    warps = num_warps_for(block)
    args = (out, x, x.stride(0), out.stride(0), cols)
    result = {"kiln": lambda: (kiln_softmax[(rows,)](*args, BLOCK=block, num_warps=warps), out)[1]}
    if triton is not None:
        result["triton"] = lambda: (triton_softmax[(rows,)](*args, BLOCK=block, num_warps=warps), out)[1]
    result["torch"] = lambda: torch.softmax(x, dim=1)
    return result


def measure(dtype: torch.dtype, rows: int, cols: int) -> dict[str, float]:
    """GB/s per implementation, after checking each result."""
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    reference = torch.softmax(x.double(), dim=1)
    tolerance = 1e-2 if dtype != torch.float32 else 1e-5
    result = {}
    for name, run in launchers(x, out).items():
        out.fill_(float("nan"))
        error = (run().double() - reference).abs().max().item()
        if not error <= tolerance * reference.abs().max().item():
            raise AssertionError(f"{name}: wrong softmax ({dtype}, {rows}x{cols}): max error {error}")
        ms = do_bench(run, return_mode="median")
        result[name] = 2 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="fp16:32768x4096,fp32:8192x8192,fp16:65536x1024")
    parser.add_argument("--checked", action="store_true", help="run Kiln's kernel in checked mode (KILN_CHECKED=1)")
    args = parser.parse_args()
    if args.checked:
        os.environ["KILN_CHECKED"] = "1"  # read at each launch
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    print(f"device: {torch.cuda.get_device_name()}" + (", Kiln checked" if args.checked else ""))
    print(f"{'shape':>22} | {'kiln GB/s':>10} | {'triton GB/s':>11} | {'torch GB/s':>10} | kiln/triton")
    for spec in args.shapes.split(","):
        name, dims = spec.split(":")
        rows, cols = (int(v) for v in dims.split("x"))
        r = measure(dtypes[name], rows, cols)
        ratio = f"{r['kiln'] / r['triton']:.3f}" if "triton" in r else "-"
        print(f"{spec:>22} | {r['kiln']:10.0f} | {r.get('triton', float('nan')):11.0f} | "
              f"{r['torch']:10.0f} | {ratio}")


if __name__ == "__main__":
    main()
