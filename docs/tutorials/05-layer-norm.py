"""
Layer Normalization
===================

Layer normalization, forward and backward, as a ``torch.autograd.Function``
backed by three Kiln kernels. You will learn:

* loops over a row longer than one block, and reductions in float32;
* writing a backward pass: the gradient with respect to the input, per
  row, and the gradients of the weight and bias, which sum over all rows;
* a two-stage parallel reduction in which programs take turns on shared
  partial sums under spin locks (``kl.atomic_cas`` / ``kl.atomic_xchg``);
* plugging kernels into autograd.

Run it::

    python docs/tutorials/05-layer-norm.py [--device cuda|cpu] [--check-only] [--save-path DIR]

Without a CUDA GPU (or with ``--device cpu``) it runs on the CPU backend at
small sizes.
"""

# %%
# The forward pass
# ----------------
#
# Layer normalization (Ba et al., 2016) normalizes each row ``x`` of ``N``
# values to zero mean and unit variance, then applies a learned per-column
# scale ``w`` and shift ``b``:
#
# .. math::
#    y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \odot w + b
#
# One program handles one row, in three passes of ``BLOCK_SIZE`` columns at
# a time (so a row may be longer than a block): the sum for the mean, the
# sum of squared deviations for the variance (computed from the mean rather
# than as ``E[x^2] - E[x]^2``, which loses precision when the mean is large
# compared with the spread), and the normalization itself. The loads are
# converted to float32, so float16 inputs are reduced in float32. The mean
# and ``rstd = 1 / sqrt(Var + eps)`` of each row are stored for the
# backward pass.

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

import kiln
import kiln.language as kl
from kiln.testing import Benchmark, Mark, assert_close, do_bench, perf_report

from tutorial_support import comparison_triton, run_tutorial, triton_twin


@kiln.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd,
                   stride,  # elements between the starts of two rows of X (and of Y)
                   N,  # columns
                   eps, BLOCK_SIZE: kl.constexpr):
    row = kl.program_id(0)
    X += row * stride
    Y += row * stride
    total = kl.zeros([BLOCK_SIZE], dtype=kl.float32)
    for start in range(0, N, BLOCK_SIZE):
        cols = start + kl.arange(0, BLOCK_SIZE)
        total += kl.load(X + cols, mask=cols < N, other=0.0).to(kl.float32)
    mean = kl.sum(total, axis=0) / N
    squares = kl.zeros([BLOCK_SIZE], dtype=kl.float32)
    for start in range(0, N, BLOCK_SIZE):
        cols = start + kl.arange(0, BLOCK_SIZE)
        x = kl.load(X + cols, mask=cols < N, other=0.0).to(kl.float32)
        deviation = kl.where(cols < N, x - mean, 0.0)  # padding must not count
        squares += deviation * deviation
    rstd = 1 / kl.sqrt(kl.sum(squares, axis=0) / N + eps)
    kl.store(Mean + row, mean)
    kl.store(Rstd + row, rstd)
    for start in range(0, N, BLOCK_SIZE):
        cols = start + kl.arange(0, BLOCK_SIZE)
        mask = cols < N
        x = kl.load(X + cols, mask=mask, other=0.0).to(kl.float32)
        w = kl.load(W + cols, mask=mask).to(kl.float32)
        b = kl.load(B + cols, mask=mask).to(kl.float32)
        y = (x - mean) * rstd * w + b
        kl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)


# %%
# The backward pass
# -----------------
#
# Write ``xhat = (x - mean) * rstd`` and ``g = dy * w`` (``dy`` is the
# gradient arriving from above). Differentiating through the mean and the
# variance, the gradient with respect to the row is
#
# .. math::
#    dx = rstd \cdot \Big(g - \hat{x} \cdot \frac{1}{N}\sum_j g_j \hat{x}_j - \frac{1}{N}\sum_j g_j\Big)
#
# which needs two sums over the row, so a program again handles one row,
# this time with the whole row in one block. The weight and bias gradients
# are sums over *all rows*:
#
# .. math::
#    dw = \sum_{rows} dy \odot \hat{x}, \qquad db = \sum_{rows} dy
#
# Every row program contributes to every column of ``dw`` and ``db``. Adding
# its contribution to one shared vector would make all ``M`` programs
# contend for it; instead the rows are spread over ``GROUP_SIZE_M`` partial
# sums (row ``r`` adds to partial sum ``r % GROUP_SIZE_M``), so only
# ``M / GROUP_SIZE_M`` programs share each, and a second kernel adds up the
# ``GROUP_SIZE_M`` partial sums.
#
# Programs that share a partial sum take turns through a spin lock, one
# int32 per partial sum, 0 when free: ``kl.atomic_cas(lock, 0, 1)`` swaps
# in 1 if the lock holds 0 and returns what it held, so the loop ends for
# exactly one program at a time. That program reads, adds and writes back
# its partial sums, then ``kl.debug_barrier()`` waits until every thread of
# the program has written its part of the row before ``kl.atomic_xchg``
# frees the lock. (On a GPU a program is many threads, each storing its
# share of the row, while the lock is one atomic on one address; the
# barrier puts every thread's stores before the release.) The partial sums
# are float32 and start at zero.


@kiln.jit
def layer_norm_bwd_dx(DX, DY, PartialDW, PartialDB, X, W, Mean, Rstd, Locks, stride, N,
                      GROUP_SIZE_M: kl.constexpr, BLOCK_SIZE_N: kl.constexpr):
    row = kl.program_id(0)
    cols = kl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    x = kl.load(X + row * stride + cols, mask=mask, other=0.0).to(kl.float32)
    dy = kl.load(DY + row * stride + cols, mask=mask, other=0.0).to(kl.float32)
    w = kl.load(W + cols, mask=mask, other=0.0).to(kl.float32)
    mean = kl.load(Mean + row)
    rstd = kl.load(Rstd + row)
    xhat = kl.where(mask, (x - mean) * rstd, 0.0)
    g = dy * w  # zero in the padding: dy and w were loaded as 0 there
    mean_gx = kl.sum(g * xhat, axis=0) / N
    mean_g = kl.sum(g, axis=0) / N
    dx = (g - (xhat * mean_gx + mean_g)) * rstd
    kl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)

    # This row's share of dw and db, added to partial sum row % GROUP_SIZE_M.
    group = row % GROUP_SIZE_M
    lock = Locks + group
    partial_dw_ptrs = PartialDW + group * N + cols
    partial_db_ptrs = PartialDB + group * N + cols
    while kl.atomic_cas(lock, 0, 1) == 1:
        pass
    kl.store(partial_dw_ptrs, kl.load(partial_dw_ptrs, mask=mask) + dy * xhat, mask=mask)
    kl.store(partial_db_ptrs, kl.load(partial_db_ptrs, mask=mask) + dy, mask=mask)
    kl.debug_barrier()
    kl.atomic_xchg(lock, 0)


# %%
# The second stage sums the ``GROUP_SIZE_M`` partial rows, one program per
# ``BLOCK_SIZE_N`` columns, reading ``BLOCK_SIZE_M`` partial rows at a time
# as a 2-D block and reducing it over its first axis at the end.


@kiln.jit
def layer_norm_bwd_dwdb(PartialDW, PartialDB, DW, DB, GROUPS, N,
                        BLOCK_SIZE_M: kl.constexpr, BLOCK_SIZE_N: kl.constexpr):
    cols = kl.program_id(0) * BLOCK_SIZE_N + kl.arange(0, BLOCK_SIZE_N)
    dw = kl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=kl.float32)
    db = kl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=kl.float32)
    for start in range(0, GROUPS, BLOCK_SIZE_M):
        rows = start + kl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < GROUPS) & (cols[None, :] < N)
        offsets = rows[:, None] * N + cols[None, :]
        dw += kl.load(PartialDW + offsets, mask=mask, other=0.0)
        db += kl.load(PartialDB + offsets, mask=mask, other=0.0)
    kl.store(DW + cols, kl.sum(dw, axis=0).to(DW.dtype.element_ty), mask=cols < N)
    kl.store(DB + cols, kl.sum(db, axis=0).to(DB.dtype.element_ty), mask=cols < N)


# %%
# Plugging into autograd
# ----------------------
#
# A ``torch.autograd.Function`` pairs a forward with its backward: the
# forward launches ``layer_norm_fwd`` and saves what the backward needs
# (the input, the weight, and each row's mean and rstd), and the backward
# launches the two backward kernels. Narrower rows are cheaper, so the
# lock contention matters more: they get more partial sums. The kernels
# come in as an argument so that the benchmark can run Triton's compilation
# of the same text through the same code.

KILN_KERNELS = (layer_norm_fwd, layer_norm_bwd_dx, layer_norm_bwd_dwdb)


def group_size_for(n_cols: int) -> int:
    """How many partial sums of dw and db the backward pass uses."""
    if n_cols <= 1024:
        return 256
    if n_cols <= 4096:
        return 128
    return 64


class LayerNorm(torch.autograd.Function):
    """Layer norm over the last dimension, by Kiln kernels (or their twins)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float,
                kernels: tuple = KILN_KERNELS) -> torch.Tensor:
        x_2d = x.reshape(-1, x.shape[-1])
        if x_2d.stride(-1) != 1:
            x_2d = x_2d.contiguous()
        M, N = x_2d.shape
        # The backward holds a row in one block: at most 64 KB of it.
        block_size = kiln.next_power_of_2(N)
        if block_size * x.element_size() > 65536:
            raise ValueError(f"layer_norm: rows of {N} {x.dtype} elements are over this kernel's 64 KB")
        num_warps = min(max(block_size // 256, 1), 8)
        y = torch.empty_like(x_2d)
        mean = torch.empty(M, dtype=torch.float32, device=x.device)
        rstd = torch.empty(M, dtype=torch.float32, device=x.device)
        kernels[0][(M,)](x_2d, y, weight, bias, mean, rstd, x_2d.stride(0), N, eps,
                         BLOCK_SIZE=block_size, num_warps=num_warps)
        ctx.save_for_backward(x_2d, weight, mean, rstd)
        ctx.block_size, ctx.num_warps, ctx.kernels, ctx.shape = block_size, num_warps, kernels, x.shape
        return y.reshape(x.shape)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple:
        x, weight, mean, rstd = ctx.saved_tensors
        M, N = x.shape
        dy = dy.reshape(M, N)
        if dy.stride() != x.stride():
            dy = torch.empty_like(x).copy_(dy)  # the kernel reads dy with x's row stride
        groups = min(group_size_for(N), M)
        locks = torch.zeros(groups, dtype=torch.int32, device=x.device)
        partial_dw = torch.zeros((groups, N), dtype=torch.float32, device=x.device)
        partial_db = torch.zeros((groups, N), dtype=torch.float32, device=x.device)
        dx = torch.empty_like(x)
        dw = torch.empty_like(weight)
        db = torch.empty_like(weight)
        _, bwd_dx, bwd_dwdb = ctx.kernels
        bwd_dx[(M,)](dx, dy, partial_dw, partial_db, x, weight, mean, rstd, locks, x.stride(0), N,
                     GROUP_SIZE_M=groups, BLOCK_SIZE_N=ctx.block_size, num_warps=ctx.num_warps)
        bwd_dwdb[(kiln.cdiv(N, 128),)](partial_dw, partial_db, dw, db, groups, N, BLOCK_SIZE_M=32,
                                       BLOCK_SIZE_N=128)
        return dx.reshape(ctx.shape), dw, db, None, None


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5,
               kernels: tuple = KILN_KERNELS) -> torch.Tensor:
    """``torch.nn.functional.layer_norm(x, weight.shape, weight, bias, eps)``
    over the last dimension, differentiable, by Kiln's kernels."""
    return LayerNorm.apply(x, weight, bias, eps, kernels)


# %%
# Checking the result
# -------------------
#
# The reference is torch's layer norm, forward and backward, in float64 on
# the same inputs (fresh random rows with a non-zero mean, random weights
# and biases, a random upstream gradient). The row count is not a multiple
# of the number of partial sums and the row length is not a power of two.
# Tolerances: float32 results within 1e-4 absolute and relative (dw and db
# sum over a thousand rows); float16 results within 1e-2 absolute plus 1e-2
# relative: rounding to float16 alone costs up to 2^-11 relative.

TOLERANCE = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2)}


def check(device: str) -> None:
    """Compares ``layer_norm`` and its gradients with float64 torch on
    fresh random inputs on ``device``; raises AssertionError outside TOLERANCE."""
    generator = torch.Generator(device=device).manual_seed(0)
    if device == "cuda":
        cases = [(dtype, M, N) for dtype in (torch.float32, torch.float16) for M, N in ((1151, 8192), (300, 781))]
    else:
        cases = [(torch.float32, 301, 781), (torch.float16, 67, 200)]
    for dtype, M, N in cases:
        x = (1.5 + 2.0 * torch.randn(M, N, device=device, generator=generator)).to(dtype)
        weight = torch.rand(N, device=device, generator=generator).to(dtype)
        bias = torch.rand(N, device=device, generator=generator).to(dtype)
        dy = (0.1 * torch.randn(M, N, device=device, generator=generator)).to(dtype)
        leaves = [t.detach().clone().requires_grad_(True) for t in (x, weight, bias)]
        y = layer_norm(*leaves)
        y.backward(dy)
        reference = [t.detach().double().requires_grad_(True) for t in (x, weight, bias)]
        expected_y = torch.nn.functional.layer_norm(reference[0], (N,), reference[1], reference[2], 1e-5)
        expected_y.backward(dy.double())
        atol, rtol = TOLERANCE[dtype]
        what = f"layer norm of {M}x{N} {dtype} on {device}"
        assert_close(y.detach().double(), expected_y.detach(), atol=atol, rtol=rtol, err_msg=f"{what}: y")
        for name, got, want in zip(("dx", "dw", "db"), leaves, reference):
            assert_close(got.grad.double(), want.grad, atol=atol, rtol=rtol, err_msg=f"{what}: {name}")
    print("layer norm: forward and backward match torch (float64) within tolerance")


# %%
# Benchmark
# ---------
#
# Bandwidth against the row length, for the forward pass and for the
# backward pass, counted as the passes over ``x``-sized data that each
# needs at least: two forward (read ``x``, write ``y``), three backward
# (read ``x`` and ``dy``, write ``dx``). On a GPU the tensors are float16
# and there are 4096 rows; on the CPU backend they are float32 (older
# torch builds have no float16 layer norm on the CPU). Triton, when
# installed, runs the same kernel text through the same autograd function.


def make_benchmark(device: str) -> Mark:
    """GB/s of Kiln, torch and (on a GPU with Triton installed) Triton, forward and backward."""
    triton_kernels = None
    compilers = comparison_triton(device)
    if compilers is not None:
        triton_kernels = tuple(triton_twin(kernel, *compilers) for kernel in KILN_KERNELS)
    providers = ["kiln", "torch"] + (["triton"] if triton_kernels is not None else [])
    names = {"kiln": "Kiln", "torch": "Torch", "triton": "Triton"}
    colours = {"kiln": ("red", "-"), "torch": ("green", "-"), "triton": ("blue", "--")}
    dtype = torch.float16 if device == "cuda" else torch.float32
    benchmarks = [
        Benchmark(
            x_names=["N"],
            x_vals=[512 * i for i in range(2, 32)] if device == "cuda" else [128, 512, 2048],
            line_arg="provider",
            line_vals=providers,
            line_names=[names[p] for p in providers],
            styles=[colours[p] for p in providers],
            ylabel="GB/s",
            plot_name=f"layer-norm-{mode}-{device}",
            args={"M": 4096 if device == "cuda" else 128, "mode": mode},
        ) for mode in ("forward", "backward")
    ]

    @perf_report(benchmarks)
    def benchmark(M: int, N: int, mode: str, provider: str) -> tuple[float, float, float]:
        x = (1.5 + 2.0 * torch.randn(M, N, device=device)).to(dtype).requires_grad_(True)
        weight = torch.rand(N, device=device, dtype=dtype, requires_grad=True)
        bias = torch.rand(N, device=device, dtype=dtype, requires_grad=True)
        dy = 0.1 * torch.randn(M, N, device=device, dtype=dtype)
        if provider == "torch":
            forward = lambda: torch.nn.functional.layer_norm(x, (N,), weight, bias, 1e-5)  # noqa: E731
        else:
            kernels = KILN_KERNELS if provider == "kiln" else triton_kernels
            forward = lambda: layer_norm(x, weight, bias, 1e-5, kernels)  # noqa: E731
        if mode == "forward":
            passes = 2
            ms, low_ms, high_ms = do_bench(forward, quantiles=[0.5, 0.2, 0.8], device=device)
        else:
            passes = 3
            y = forward()
            ms, low_ms, high_ms = do_bench(lambda: y.backward(dy, retain_graph=True), quantiles=[0.5, 0.2, 0.8],
                                           grad_to_none=[x, weight, bias], device=device)
        gbps = lambda t: passes * x.numel() * x.element_size() * 1e-9 / (t * 1e-3)  # noqa: E731
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
    """Checks the kernels, then (unless ``--check-only``) benchmarks them."""
    run_tutorial(argv, "Kiln tutorial 05: layer normalization", check, make_benchmark)


if __name__ == "__main__":
    main()
