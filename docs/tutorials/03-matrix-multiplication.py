"""
Matrix Multiplication
=====================

A float16 matrix multiplication ``C = A @ B`` with float32 accumulation,
in one short kernel. You will learn:

* block-level matrix products with ``kl.dot``;
* pointer arithmetic over 2-D blocks, and masks on two axes;
* ordering the programs in groups so that the blocks they read are reused
  from the L2 cache;
* fusing an activation into the kernel's epilogue;
* picking block sizes automatically with ``kiln.autotune``.

Run it::

    python docs/tutorials/03-matrix-multiplication.py [--device cuda|cpu] [--check-only] [--save-path DIR]

Without a CUDA GPU (or with ``--device cpu``) it runs on the CPU backend at
small sizes, with block sizes that suit the CPU.
"""

# %%
# The blocked algorithm
# ---------------------
#
# Cut ``C`` (``M x N``) into tiles of ``BLOCK_SIZE_M x BLOCK_SIZE_N``. One
# program computes one tile: it walks along ``K`` in steps of
# ``BLOCK_SIZE_K``, multiplying a ``BLOCK_SIZE_M x BLOCK_SIZE_K`` block of
# ``A`` by a ``BLOCK_SIZE_K x BLOCK_SIZE_N`` block of ``B`` and adding the
# product into a float32 accumulator that lives in registers the whole
# time. In pseudo-code, for the program of tile ``(m, n)``::
#
#     acc = zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), float32)
#     for k in range(0, K, BLOCK_SIZE_K):
#         acc += A[m:m + BLOCK_SIZE_M, k:k + BLOCK_SIZE_K] @ B[k:k + BLOCK_SIZE_K, n:n + BLOCK_SIZE_N]
#     C[m:m + BLOCK_SIZE_M, n:n + BLOCK_SIZE_N] = acc
#
# ``kl.dot(a, b, acc)`` is that block product and sum; on an NVIDIA GPU it
# becomes tensor-core instructions (``wgmma`` on Hopper, ``mma.sync``
# before), on the CPU backend a loop nest of multiply-adds.
#
# Pointers to a 2-D block
# -----------------------
#
# Element ``(i, j)`` of a matrix with strides ``(s0, s1)`` is at ``ptr + i
# * s0 + j * s1``. With ``rows`` a block of row indices and ``cols`` a
# block of column indices, ``rows[:, None] * s0 + cols[None, :] * s1`` is a
# 2-D block of offsets by broadcasting (a column plus a row), so
# ``a_ptr + that`` points at every element of the block at once. After each
# step along ``K`` the pointers simply move ``BLOCK_SIZE_K`` columns of
# ``A`` and ``BLOCK_SIZE_K`` rows of ``B`` further.
#
# Row and column indices past ``M`` or ``N`` are wrapped back into range
# with ``% M`` and ``% N``: those lanes compute garbage that is never
# stored, but every load stays in bounds without a mask. Along ``K`` a
# mask is needed, because the padding must contribute zeros to the sum:
# the masked lanes read ``other=0.0``.
#
# Program order and the L2 cache
# ------------------------------
#
# Every tile of row ``m`` reads the same panel of ``A`` (``BLOCK_SIZE_M``
# rows by all of ``K``), and every tile of column ``n`` the same panel of
# ``B``. Programs that run at the same time share what they read through
# the L2 cache. Numbering the tiles row by row, the first nine programs of
# a wide matrix compute nine tiles of one row: one panel of ``A`` and nine
# of ``B``, ten panels in all. Numbering them in groups of
# ``GROUP_SIZE_M`` rows, going down a group's rows before moving to the
# next column, the first nine programs with ``GROUP_SIZE_M = 3`` compute a
# 3 x 3 square: three panels of ``A`` and three of ``B``, six in all, for
# the same work. The kernel below turns its program id into such a
# grouped ``(pid_m, pid_n)``; ``grouped_order`` does the same arithmetic on
# the host to show the order (``kl.swizzle2d`` is a library form of it).

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

import kiln
import kiln.language as kl
from kiln.testing import Benchmark, Mark, assert_close, do_bench, perf_report

from tutorial_support import comparison_triton, run_tutorial, triton_twin


def grouped_order(num_pid_m: int, num_pid_n: int, group_size_m: int) -> list[list[int]]:
    """Which program computes each tile: ``table[pid_m][pid_n]``, by the
    kernel's grouped numbering."""
    table = [[-1] * num_pid_n for _ in range(num_pid_m)]
    for pid in range(num_pid_m * num_pid_n):
        num_pid_in_group = group_size_m * num_pid_n
        first_pid_m = (pid // num_pid_in_group) * group_size_m
        group_rows = min(num_pid_m - first_pid_m, group_size_m)
        pid_m = first_pid_m + (pid % num_pid_in_group) % group_rows
        pid_n = (pid % num_pid_in_group) // group_rows
        table[pid_m][pid_n] = pid
    return table


# %%
# The kernel
# ----------
#
# ``ACTIVATION`` is a ``constexpr`` string: the branch on it is taken while
# compiling, so each activation gets its own kernel and the others cost
# nothing. The activation runs on the float32 accumulator, before the
# single conversion to the output's type; ``leaky_relu`` is itself a
# ``@kiln.jit`` function, which kernels can call like any Python function.
#
# ``kl.assume`` tells the compiler facts it cannot see (that the program
# ids and strides are positive), which lets it simplify the address
# arithmetic.


@kiln.jit
def leaky_relu(x):
    return kl.where(x >= 0, x, 0.01 * x)


@kiln.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr,  # the matrices
                  M, N, K,  # C is M x N, A is M x K, B is K x N
                  stride_am, stride_ak,  # how far apart, in elements, A's rows and columns are
                  stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: kl.constexpr, BLOCK_SIZE_N: kl.constexpr, BLOCK_SIZE_K: kl.constexpr,
                  GROUP_SIZE_M: kl.constexpr, ACTIVATION: kl.constexpr):
    # The tile this program computes, in grouped order.
    pid = kl.program_id(axis=0)
    num_pid_m = kl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = kl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_SIZE_M
    group_rows = min(num_pid_m - first_pid_m, GROUP_SIZE_M)  # the last group may be shorter
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_rows
    pid_n = (pid % num_pid_in_group) // group_rows
    kl.assume(pid_m >= 0)
    kl.assume(pid_n >= 0)
    kl.assume(stride_am > 0)
    kl.assume(stride_ak > 0)
    kl.assume(stride_bk > 0)
    kl.assume(stride_bn > 0)

    # Pointers to the first K block of A's and B's panels.
    rows = (pid_m * BLOCK_SIZE_M + kl.arange(0, BLOCK_SIZE_M)) % M
    cols = (pid_n * BLOCK_SIZE_N + kl.arange(0, BLOCK_SIZE_N)) % N
    ks = kl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = kl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=kl.float32)
    for k in range(0, kl.cdiv(K, BLOCK_SIZE_K)):
        k_left = K - k * BLOCK_SIZE_K  # columns of A (rows of B) not yet summed
        a = kl.load(a_ptrs, mask=ks[None, :] < k_left, other=0.0)
        b = kl.load(b_ptrs, mask=ks[:, None] < k_left, other=0.0)
        acc = kl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if ACTIVATION == "leaky_relu":
        acc = leaky_relu(acc)
    c = acc.to(c_ptr.dtype.element_ty)

    # Store the tile; here the rows and columns past M and N must be masked.
    out_rows = pid_m * BLOCK_SIZE_M + kl.arange(0, BLOCK_SIZE_M)
    out_cols = pid_n * BLOCK_SIZE_N + kl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn
    kl.store(c_ptrs, c, mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))


# %%
# Autotuning
# ----------
#
# The best tile shape, group size, number of warps and pipeline depth
# depend on the GPU and on the problem's shape. ``kiln.autotune`` takes a
# list of ``kiln.Config`` (constexpr values plus launch options such as
# ``num_warps`` and ``num_stages``) and a ``key``: the first launch for
# each new value of the key arguments times every config and keeps the
# fastest for later launches with that key. The usual spelling is a
# decorator stacked over ``@kiln.jit``::
#
#     @kiln.autotune(configs=[...], key=["M", "N", "K"])
#     @kiln.jit
#     def matmul_kernel(...): ...
#
# Here the list depends on the device chosen on the command line, so the
# decorator is applied as a function, once per device. On the CPU backend
# the tuner times configs by the wall clock; large tiles only make its
# compiles slow there, so the CPU list has small ones. Set
# ``KILN_PRINT_AUTOTUNING=1`` to see each choice.

#: (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, num_warps, num_stages)
GPU_CONFIGS = [
    (128, 256, 64, 8, 8, 3),
    (128, 128, 64, 8, 8, 3),
    (256, 128, 32, 8, 8, 3),
    (64, 256, 32, 8, 4, 3),
    (128, 128, 32, 8, 4, 4),
    (64, 128, 64, 8, 4, 4),
    (128, 64, 32, 8, 4, 4),
    (64, 64, 64, 8, 4, 3),
]
CPU_CONFIGS = [
    (32, 32, 32, 4, 1, 1),
    (64, 32, 32, 4, 1, 1),
]

_TUNED: dict[str, Any] = {}


def configs_for(device: str, make_config: Any = kiln.Config) -> list[Any]:
    """The autotuning search space for ``device``, as ``make_config``
    objects (``kiln.Config``, or ``triton.Config``)."""
    return [make_config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group},
                        num_warps=warps, num_stages=stages)
            for bm, bn, bk, group, warps, stages in (GPU_CONFIGS if device == "cuda" else CPU_CONFIGS)]


def tuned_kernel(device: str) -> Any:
    """``matmul_kernel`` under ``kiln.autotune`` with ``device``'s configs."""
    if device not in _TUNED:
        _TUNED[device] = kiln.autotune(configs=configs_for(device), key=["M", "N", "K"])(matmul_kernel)
    return _TUNED[device]


# %%
# The host function checks the shapes, allocates ``C`` and launches one
# program per tile. The grid is a function of the config's meta-parameters
# because the tile shape is not known until the tuner has picked one.


def matmul(a: torch.Tensor, b: torch.Tensor, activation: str = "", kernel: Any = None) -> torch.Tensor:
    """``activation(a @ b)`` in ``a``'s dtype, with float32 accumulation;
    ``kernel`` is the autotuned kernel (by default Kiln's for ``a``'s device)."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: cannot multiply {tuple(a.shape)} by {tuple(b.shape)}")
    if a.dtype != b.dtype or a.device != b.device:
        raise ValueError(f"matmul: a and b must share a dtype and device, got {a.dtype} on {a.device} and "
                         f"{b.dtype} on {b.device}")
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    kernel = kernel if kernel is not None else tuned_kernel("cuda" if a.is_cuda else "cpu")
    grid = lambda meta: (kiln.cdiv(M, meta["BLOCK_SIZE_M"]) * kiln.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                 ACTIVATION=activation)
    return c


# %%
# Checking the result
# -------------------
#
# The reference is the product in float64 of the same float16 inputs
# (uniform in [-0.5, 0.5)), with the activation applied in float64 too.
# Products of float16 values are exact in float32 and the sums lose little,
# so the error is dominated by the final rounding to float16, whose spacing
# is 2^-8 = 0.004 for the largest results here; the check allows 1e-2
# absolute. Shapes that are not multiples of any tile exercise the wrapped
# indices and the masks, and a transposed ``B`` exercises the strides.


def check(device: str) -> None:
    """Compares ``matmul`` with a float64 product on fresh random float16
    matrices on ``device``; raises AssertionError beyond 1e-2."""
    generator = torch.Generator(device=device).manual_seed(0)
    shapes = [(512, 512, 512), (257, 129, 333)] if device == "cuda" else [(128, 96, 64), (67, 45, 83)]
    for M, N, K in shapes:
        for activation in ("", "leaky_relu"):
            a = torch.rand(M, K, device=device, generator=generator).half() - 0.5
            b = (torch.rand(N, K, device=device, generator=generator).half() - 0.5).T  # column-major B
            expected = a.double() @ b.double()
            if activation == "leaky_relu":
                expected = torch.where(expected >= 0, expected, 0.01 * expected)
            assert_close(matmul(a, b, activation).double(), expected, atol=1e-2, rtol=0,
                         err_msg=f"matmul {M}x{K} @ {K}x{N} ({activation or 'no activation'}) on {device}")
    print("matmul: Kiln matches a float64 product within 1e-2")


# %%
# Benchmark
# ---------
#
# Square matrices of growing size, in float16 on a GPU (torch's line is
# cuBLAS), compared in FLOP/s: a product of ``M x K`` by ``K x N`` is ``2MNK``
# floating-point operations. When Triton is installed, it compiles the same
# kernel text, tuned over the same configs. On the CPU backend the matrices
# are float32 (older torch builds have no float16 matmul on the CPU) and
# Kiln's float32 ``kl.dot`` rounds its inputs to tf32 as it would on a GPU.


def make_benchmark(device: str) -> Mark:
    """FLOP/s of Kiln, torch and (on a GPU with Triton installed) Triton,
    against the size of square matrices."""
    triton_kernel = None
    compilers = comparison_triton(device)
    if compilers is not None:
        triton, tl = compilers
        triton_kernel = triton.autotune(configs=configs_for(device, triton.Config), key=["M", "N", "K"])(
            triton_twin(matmul_kernel, triton, tl))
    providers = ["kiln", "torch"] + (["triton"] if triton_kernel is not None else [])
    names = {"kiln": "Kiln", "torch": "cuBLAS (torch)" if device == "cuda" else "Torch", "triton": "Triton"}
    colours = {"kiln": ("red", "-"), "torch": ("green", "-"), "triton": ("blue", "--")}
    dtype = torch.float16 if device == "cuda" else torch.float32
    unit = 1e12 if device == "cuda" else 1e9

    @perf_report(
        Benchmark(
            x_names=["M", "N", "K"],
            x_vals=[128 * i for i in range(2, 33)] if device == "cuda" else [64, 128, 256],
            line_arg="provider",
            line_vals=providers,
            line_names=[names[p] for p in providers],
            styles=[colours[p] for p in providers],
            ylabel="TFLOP/s" if device == "cuda" else "GFLOP/s",
            plot_name=f"matmul-performance-{device}",
            args={},
        ))
    def benchmark(M: int, N: int, K: int, provider: str) -> tuple[float, float, float]:
        a = torch.randn((M, K), device=device, dtype=dtype)
        b = torch.randn((K, N), device=device, dtype=dtype)
        fns = {
            "kiln": lambda: matmul(a, b),
            "triton": lambda: matmul(a, b, kernel=triton_kernel),
            "torch": lambda: torch.matmul(a, b),
        }
        ms, low_ms, high_ms = do_bench(fns[provider], quantiles=[0.5, 0.2, 0.8], device=device)
        flops = lambda t: 2 * M * N * K / unit / (t * 1e-3)  # noqa: E731
        return flops(ms), flops(high_ms), flops(low_ms)

    return benchmark


# %%
# Running the script
# ------------------
#
# What every tutorial needs besides its topic (the command line, the choice
# of device, finding the real Triton and compiling a Kiln kernel's text with
# it, printing and saving the benchmark) is in ``tutorial_support.py`` next
# to this file.


def show_grouped_order() -> None:
    """Prints which program computes each tile of a 6 x 4 grid in groups of 3 rows."""
    print("programs of a 6 x 4 grid of tiles, GROUP_SIZE_M = 3 (row = pid_m, column = pid_n):")
    for row in grouped_order(6, 4, 3):
        print("  " + " ".join(f"{pid:2d}" for pid in row))


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Shows the grouped order, checks the kernel, then (unless
    ``--check-only``) benchmarks it."""
    run_tutorial(argv, "Kiln tutorial 03: matrix multiplication", check, make_benchmark,
                 before_check=show_grouped_order)


if __name__ == "__main__":
    main()
