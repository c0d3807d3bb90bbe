"""
Fused Softmax
=============

A row-wise softmax that reads its input once and writes its output once,
for matrices whose rows fit on chip. You will learn:

* why fusing a chain of memory-bound operations into one kernel pays;
* reductions over a block (``kl.max``, ``kl.sum``);
* padding a row to a power-of-two block, and masking the padding out;
* persistent kernels: a fixed number of programs that loop over the rows,
  sized from the compiled kernel's register use.

Run it::

    python docs/tutorials/02-fused-softmax.py [--device cuda|cpu] [--check-only] [--save-path DIR]

Without a CUDA GPU (or with ``--device cpu``) it runs on the CPU backend at
small sizes.
"""

# %%
# Why fuse
# --------
#
# Softmax of a row ``x`` is ``exp(x - max(x)) / sum(exp(x - max(x)))``;
# subtracting the maximum changes nothing mathematically but keeps ``exp``
# from overflowing. Written with one torch operation per step, each step is
# its own kernel that reads its input from memory and writes its result
# back:

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

import kiln
import kiln.language as kl
from kiln.runtime import driver
from kiln.testing import Benchmark, Mark, assert_close, do_bench, perf_report

from tutorial_support import comparison_triton, run_tutorial, triton_twin


def naive_softmax(x: torch.Tensor) -> torch.Tensor:
    """Row-wise softmax of an M x N matrix, one torch operation per step.

    Memory traffic, in elements: the max reads MN and writes M; the
    subtraction reads MN + M and writes MN; exp reads and writes MN; the sum
    reads MN and writes M; the division reads MN + M and writes MN. In all
    5MN + 2M read and 3MN + 2M written.
    """
    row_max = x.max(dim=1)[0]
    shifted = x - row_max[:, None]
    numerator = torch.exp(shifted)
    denominator = numerator.sum(dim=1)
    return numerator / denominator[:, None]


# %%
# A fused kernel needs to read ``x`` once and write the result once: 2MN
# elements instead of 8MN + 4M, so up to four times faster for a
# bandwidth-bound operation, as long as a row can stay in registers (or
# shared memory) between its steps.
#
# The kernel
# ----------
#
# Each program handles whole rows. A block's length must be a power of two,
# so a row of ``n_cols`` values is loaded into a block of ``BLOCK_SIZE =
# next_power_of_2(n_cols)`` lanes; the lanes past the row's end are masked
# and read as ``-inf``, which neither the maximum nor the sum of
# ``exp(-inf) = 0`` notices.
#
# Rather than one program per row, the kernel is *persistent*: the grid
# has only as many programs as the machine runs at once, and program ``p``
# handles rows ``p``, ``p + P``, ``p + 2P``, ... where ``P =
# kl.num_programs(0)``. That saves launching and scheduling a program per
# row. ``kl.range(..., num_stages=...)`` is the loop's software-pipelining
# hint, as in Triton: it allows a compiler to load the next row while the
# current one is computed. Kiln pipelines only the operands of ``kl.dot``
# so far (see ``docs/design/dot.md``), so the hint does not change Kiln's
# code here; Triton, compiling the same text in the benchmark, uses it.
#
# ``kl.max`` and ``kl.sum`` reduce a whole block to a scalar; on a GPU the
# compiler spreads the row over the program's threads and combines their
# partial results with warp shuffles and shared memory.


@kiln.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: kl.constexpr, NUM_STAGES: kl.constexpr):
    first_row = kl.program_id(0)
    row_step = kl.num_programs(0)
    cols = kl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    for row in kl.range(first_row, n_rows, row_step, num_stages=NUM_STAGES):
        x = kl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
        # Compute in float32 whatever the storage type, for accuracy.
        x = x.to(kl.float32)
        shifted = x - kl.max(x, axis=0)
        numerator = kl.exp(shifted)
        denominator = kl.sum(numerator, axis=0)
        y = numerator / denominator
        kl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


# %%
# Sizing the grid
# ---------------
#
# How many programs fit on the machine at once depends on the compiled
# kernel: a GPU multiprocessor has a fixed register file (and shared
# memory), so a kernel that uses more registers per thread leaves room for
# fewer programs. ``softmax_kernel.warmup`` compiles the kernel for these
# arguments without launching it; after ``_init_handles()`` (which loads it
# on the GPU) the compiled kernel reports ``n_regs``, registers per thread,
# and ``metadata.shared``, bytes of shared memory per program. From those
# and the device's properties we get the programs per multiprocessor.
#
# The CPU backend runs one program per worker thread at a time and has no
# register file to share: there ``n_regs`` is None and one program per core
# is enough.
#
# More warps per program suit longer rows: each thread then holds fewer of
# the row's values. The rule below is the one Kiln's own softmax benchmark
# uses.


def num_warps_for(block_size: int) -> int:
    """Warps per program for a row of ``block_size`` lanes."""
    if block_size >= 4096:
        return 16
    if block_size >= 2048:
        return 8
    return 4


def persistent_programs(kernel: Any, device: str, num_warps: int, n_rows: int) -> int:
    """How many programs of the compiled ``kernel`` to launch: as many as
    run at once on ``device`` (but no more than there are rows)."""
    if device == "cpu":
        return min(n_rows, driver.active.utils.get_device_properties("cpu")["multiprocessor_count"])
    kernel._init_handles()
    properties = driver.active.utils.get_device_properties(torch.cuda.current_device())
    per_sm = properties["max_num_regs"] // (max(kernel.n_regs, 1) * properties["warpSize"] * num_warps)
    if kernel.metadata.shared:
        per_sm = min(per_sm, properties["max_shared_mem"] // kernel.metadata.shared)
    return min(n_rows, properties["multiprocessor_count"] * max(per_sm, 1))


def softmax(x: torch.Tensor, kernel: Any = softmax_kernel) -> torch.Tensor:
    """Row-wise softmax of a 2-D tensor whose rows are contiguous, with
    ``kernel`` (``softmax_kernel``, or its Triton twin)."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(f"softmax: expected a 2-D tensor with contiguous rows, got shape {tuple(x.shape)} "
                         f"and strides {x.stride()}")
    n_rows, n_cols = x.shape
    block_size = kiln.next_power_of_2(n_cols)
    num_warps = num_warps_for(block_size)
    num_stages = 2
    out = torch.empty_like(x)
    device = "cuda" if x.is_cuda else "cpu"
    args = (out, x, x.stride(0), out.stride(0), n_rows, n_cols)
    # Compiles (or finds in the cache) the kernel for these arguments.
    compiled = kernel.warmup(*args, BLOCK_SIZE=block_size, NUM_STAGES=num_stages, num_warps=num_warps, grid=(1,))
    programs = persistent_programs(compiled, device, num_warps, n_rows)
    kernel[(programs,)](*args, BLOCK_SIZE=block_size, NUM_STAGES=num_stages, num_warps=num_warps)
    return out


# %%
# Checking the result
# -------------------
#
# The reference is torch's softmax in float64 of the same inputs. Shapes
# with an odd number of rows and columns test the padding, and fewer rows
# than programs as well as many more rows than programs test the persistent
# loop. The tolerances: for float32 results, 1e-6 absolute plus 1e-5
# relative (``exp`` on a GPU is a fast approximation, a few float32 ulps off);
# for float16 results, 1e-3 absolute (rounding a value below 1 to float16
# alone costs up to 2.4e-4).

TOLERANCE = {torch.float32: (1e-6, 1e-5), torch.float16: (1e-3, 0.0)}


def check(device: str) -> None:
    """Compares ``softmax`` with torch's in float64 on fresh random matrices
    on ``device``; raises AssertionError outside TOLERANCE."""
    generator = torch.Generator(device=device).manual_seed(0)
    shapes = [(1823, 781), (3, 4096), (65, 1)] if device == "cuda" else [(123, 781), (3, 200), (65, 1)]
    for dtype in (torch.float32, torch.float16):
        for rows, cols in shapes:
            x = torch.randn(rows, cols, device=device, generator=generator).to(dtype)
            expected = torch.softmax(x.double(), dim=1)
            atol, rtol = TOLERANCE[dtype]
            assert_close(softmax(x).double(), expected, atol=atol, rtol=rtol,
                         err_msg=f"softmax of a {rows}x{cols} {dtype} matrix on {device}")
    print("fused softmax: Kiln matches torch (float64) within tolerance")


# %%
# Benchmark
# ---------
#
# Bandwidth as a function of the row length, with 4096 rows on a GPU: the
# fused kernel moves 2MN elements, and the rate is computed from that for
# every provider, so the naive version's extra traffic shows as a lower
# rate. Triton compiles the same kernel text when it is installed.


def make_benchmark(device: str) -> Mark:
    """GB/s of Kiln, torch's softmax, the naive torch version and (on a GPU
    with Triton installed) Triton, against the number of columns."""
    triton_kernel = None
    compilers = comparison_triton(device)
    if compilers is not None:
        triton_kernel = triton_twin(softmax_kernel, *compilers)
    providers = ["kiln", "torch", "naive"] + (["triton"] if triton_kernel is not None else [])
    names = {"kiln": "Kiln", "torch": "Torch", "naive": "Naive torch", "triton": "Triton"}
    colours = {"kiln": ("red", "-"), "torch": ("green", "-"), "naive": ("orange", "-"), "triton": ("blue", "--")}

    @perf_report(
        Benchmark(
            x_names=["N"],
            x_vals=[256 * i for i in range(1, 65)] if device == "cuda" else [128, 512, 2048],
            line_arg="provider",
            line_vals=providers,
            line_names=[names[p] for p in providers],
            styles=[colours[p] for p in providers],
            ylabel="GB/s",
            plot_name=f"softmax-performance-{device}",
            args={"M": 4096 if device == "cuda" else 256},
        ))
    def benchmark(M: int, N: int, provider: str) -> tuple[float, float, float]:
        x = torch.randn(M, N, device=device, dtype=torch.float32)
        fns = {
            "kiln": lambda: softmax(x),
            "triton": lambda: softmax(x, triton_kernel),
            "torch": lambda: torch.softmax(x, dim=-1),
            "naive": lambda: naive_softmax(x),
        }
        ms, low_ms, high_ms = do_bench(fns[provider], quantiles=[0.5, 0.2, 0.8], device=device)
        gbps = lambda t: 2 * x.numel() * x.element_size() * 1e-9 / (t * 1e-3)  # noqa: E731
        return gbps(ms), gbps(high_ms), gbps(low_ms)

    return benchmark


# %%
# Running the script
# ------------------
#
# What every tutorial needs besides its topic (the command line, the choice
# of device, finding the real Triton and compiling a Kiln kernel's text with
# it, printing and saving the benchmark) is in ``tutorial_support.py`` next
# to this file.


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Checks the kernel, then (unless ``--check-only``) benchmarks it."""
    run_tutorial(argv, "Kiln tutorial 02: fused softmax", check, make_benchmark)


if __name__ == "__main__":
    main()
