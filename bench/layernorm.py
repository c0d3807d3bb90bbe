"""Layer norm, forward and backward: Kiln vs Triton vs torch on a CUDA machine.

The kernels are those of Triton's layer-norm tutorial, written once for
each language: a forward pass with one program per row; a backward pass
whose row programs accumulate partial weight and bias gradients into
GROUP_SIZE_M buffers under spin locks (atomic_cas / atomic_xchg), and a
second kernel that sums the buffers. GROUP_SIZE_M follows the tutorial's
heuristic (more buffers for narrower rows) unless --group-size-m sets it.
Results are checked against torch in
float64 on fresh random inputs, then timed with do_bench (median).
Bandwidth counts, as the tutorial does, 2 passes over x forward and 3
backward.

    python bench/layernorm.py [--shapes fp16:8192x8192,bf16:32768x4096] [--group-size-m 64]
"""

from __future__ import annotations

import argparse
from typing import Callable, Optional

import torch

import kiln
import kiln.language as kl
from kiln.testing import do_bench

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

EPS = 1e-5


# -- Kiln -------------------------------------------------------------------------


@kiln.jit
def kiln_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: kl.constexpr):
    row = kl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = kl.zeros([BLOCK_SIZE], dtype=kl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + kl.arange(0, BLOCK_SIZE)
        a = kl.load(X + cols, mask=cols < N, other=0.).to(kl.float32)
        _mean += a
    mean = kl.sum(_mean, axis=0) / N
    _var = kl.zeros([BLOCK_SIZE], dtype=kl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + kl.arange(0, BLOCK_SIZE)
        x = kl.load(X + cols, mask=cols < N, other=0.).to(kl.float32)
        x = kl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = kl.sum(_var, axis=0) / N
    rstd = 1 / kl.sqrt(var + eps)
    kl.store(Mean + row, mean)
    kl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + kl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = kl.load(W + cols, mask=mask)
        b = kl.load(B + cols, mask=mask)
        x = kl.load(X + cols, mask=mask, other=0.).to(kl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        kl.store(Y + cols, y, mask=mask)


@kiln.jit
def kiln_bwd_dx(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N, GROUP_SIZE_M: kl.constexpr,
                BLOCK_SIZE_N: kl.constexpr):
    row = kl.program_id(0)
    cols = kl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = kl.load(X + cols, mask=mask, other=0).to(kl.float32)
    dy = kl.load(DY + cols, mask=mask, other=0).to(kl.float32)
    w = kl.load(W + cols, mask=mask).to(kl.float32)
    mean = kl.load(Mean + row)
    rstd = kl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = kl.where(mask, xhat, 0.)
    wdy = kl.where(mask, wdy, 0.)
    c1 = kl.sum(xhat * wdy, axis=0) / N
    c2 = kl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    kl.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while kl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = kl.load(Count)
    if count == 0:
        kl.atomic_xchg(Count, 1)
    else:
        partial_dw += kl.load(DW, mask=mask)
        partial_db += kl.load(DB, mask=mask)
    kl.store(DW, partial_dw, mask=mask)
    kl.store(DB, partial_db, mask=mask)
    kl.debug_barrier()
    kl.atomic_xchg(Lock, 0)


@kiln.jit
def kiln_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: kl.constexpr, BLOCK_SIZE_N: kl.constexpr):
    pid = kl.program_id(0)
    cols = pid * BLOCK_SIZE_N + kl.arange(0, BLOCK_SIZE_N)
    dw = kl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=kl.float32)
    db = kl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=kl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + kl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += kl.load(DW + offs, mask=mask, other=0.)
        db += kl.load(DB + offs, mask=mask, other=0.)
    sum_dw = kl.sum(dw, axis=0)
    sum_db = kl.sum(db, axis=0)
    kl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    kl.store(FINAL_DB + cols, sum_db, mask=cols < N)


# -- Triton (the same text) ---------------------------------------------------------

if triton is not None:

    @triton.jit
    def triton_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        Y += row * stride
        X += row * stride
        _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            _mean += a
        mean = tl.sum(_mean, axis=0) / N
        _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            x = tl.where(cols < N, x - mean, 0.)
            _var += x * x
        var = tl.sum(_var, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask)
            b = tl.load(B + cols, mask=mask)
            x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
            x_hat = (x - mean) * rstd
            y = x_hat * w + b
            tl.store(Y + cols, y, mask=mask)

    @triton.jit
    def triton_bwd_dx(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N, GROUP_SIZE_M: tl.constexpr,
                      BLOCK_SIZE_N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE_N)
        mask = cols < N
        X += row * stride
        DY += row * stride
        DX += row * stride
        lock_id = row % GROUP_SIZE_M
        Lock += lock_id
        Count = Lock + GROUP_SIZE_M
        DW = DW + lock_id * N + cols
        DB = DB + lock_id * N + cols
        x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
        dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
        w = tl.load(W + cols, mask=mask).to(tl.float32)
        mean = tl.load(Mean + row)
        rstd = tl.load(Rstd + row)
        xhat = (x - mean) * rstd
        wdy = w * dy
        xhat = tl.where(mask, xhat, 0.)
        wdy = tl.where(mask, wdy, 0.)
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(DX + cols, dx, mask=mask)
        partial_dw = (dy * xhat).to(w.dtype)
        partial_db = (dy).to(w.dtype)
        while tl.atomic_cas(Lock, 0, 1) == 1:
            pass
        count = tl.load(Count)
        if count == 0:
            tl.atomic_xchg(Count, 1)
        else:
            partial_dw += tl.load(DW, mask=mask)
            partial_db += tl.load(DB, mask=mask)
        tl.store(DW, partial_dw, mask=mask)
        tl.store(DB, partial_db, mask=mask)
        tl.debug_barrier()
        tl.atomic_xchg(Lock, 0)

    @triton.jit
    def triton_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
        pid = tl.program_id(0)
        cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for i in range(0, M, BLOCK_SIZE_M):
            rows = i + tl.arange(0, BLOCK_SIZE_M)
            mask = (rows[:, None] < M) & (cols[None, :] < N)
            offs = rows[:, None] * N + cols[None, :]
            dw += tl.load(DW + offs, mask=mask, other=0.)
            db += tl.load(DB + offs, mask=mask, other=0.)
        sum_dw = tl.sum(dw, axis=0)
        sum_db = tl.sum(db, axis=0)
        tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
        tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


# -- drivers ------------------------------------------------------------------------------


def fwd_config(x: torch.Tensor) -> tuple[int, int]:
    """The tutorial's BLOCK_SIZE (a row in one block, up to 64 KB) and num_warps."""
    max_fused = 65536 // x.element_size()
    block = min(max_fused, kiln.next_power_of_2(x.shape[1]))
    return block, min(max(block // 256, 1), 8)


def forward(jit_fwd: object, x, w, b) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    M, N = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(M, device="cuda", dtype=torch.float32)
    rstd = torch.empty(M, device="cuda", dtype=torch.float32)
    block, warps = fwd_config(x)
    jit_fwd[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, EPS, BLOCK_SIZE=block, num_warps=warps)
    return y, mean, rstd


def tutorial_group_size_m(N: int) -> int:
    """The tutorial's number of partial-sum buffers (and locks) for rows of N
    elements: fewer rows share a lock when rows are narrow and cheap."""
    if N <= 1024:
        return 256
    if N <= 4096:
        return 128
    if N <= 8192:
        return 96
    return 64


class BackwardBuffers:
    """The backward pass's outputs and lock-protected partial sums, made once
    per shape and shared by both compilers' runs: the lock-bound dx kernel's
    time depends on where its locks lie (up to 2% in Kiln's, between locks
    aligned to 256 bytes and to 128), and buffers each run allocated for
    itself would land wherever the allocator's history put them."""

    def __init__(self, x: torch.Tensor, w: torch.Tensor, group_size_m: int) -> None:
        M, N = x.shape
        self.group_size_m = group_size_m
        self.locks = torch.zeros(2 * group_size_m, dtype=torch.int32, device="cuda")
        self.partial_dw = torch.zeros((group_size_m, N), dtype=x.dtype, device="cuda")
        self.partial_db = torch.zeros((group_size_m, N), dtype=x.dtype, device="cuda")
        self.dw = torch.empty((N,), dtype=w.dtype, device="cuda")
        self.db = torch.empty((N,), dtype=w.dtype, device="cuda")
        self.dx = torch.empty_like(x)

    def poison(self) -> None:
        """NaN in the outputs, so that a run that writes nothing cannot pass
        on what the run before it wrote."""
        for output in (self.dx, self.dw, self.db):
            output.fill_(float("nan"))


def backward(jit_dx: object, jit_dwdb: object, dy, x, w, mean, rstd,
             buffers: BackwardBuffers) -> tuple[torch.Tensor, ...]:
    """The tutorial's backward: the locks and partial sums start from zero
    on every call (as its fresh torch.zeros do)."""
    M, N = x.shape
    buffers.locks.zero_()
    buffers.partial_dw.zero_()
    buffers.partial_db.zero_()
    locks, partial_dw, partial_db = buffers.locks, buffers.partial_dw, buffers.partial_db
    dw, db, dx = buffers.dw, buffers.db, buffers.dx
    group_size_m = buffers.group_size_m
    block, warps = fwd_config(x)
    jit_dx[(M,)](dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, x.stride(0), N,
                 GROUP_SIZE_M=group_size_m, BLOCK_SIZE_N=block, num_warps=warps)
    jit_dwdb[(kiln.cdiv(N, 128),)](partial_dw, partial_db, dw, db, min(group_size_m, M), N, BLOCK_SIZE_M=32,
                                     BLOCK_SIZE_N=128, num_warps=4)
    return dx, dw, db


def implementations() -> dict[str, Optional[tuple]]:
    result = {"kiln": (kiln_fwd, kiln_bwd_dx, kiln_bwd_dwdb)}
    if triton is not None:
        result["triton"] = (triton_fwd, triton_bwd_dx, triton_bwd_dwdb)
    return result


def _check(name: str, what: str, got: torch.Tensor, expected: torch.Tensor, tolerance: float) -> None:
    error = (got.double() - expected).abs().max().item()
    scale = max(1.0, expected.abs().max().item())
    if not error <= tolerance * scale:
        raise AssertionError(f"{name}: wrong {what}: max error {error} (scale {scale})")


def measure(dtype: torch.dtype, M: int, N: int, group_size_m: int) -> dict[str, dict[str, float]]:
    x = -2.3 + 0.5 * torch.randn(M, N, device="cuda", dtype=dtype)
    w = torch.rand(N, device="cuda", dtype=dtype)
    b = torch.rand(N, device="cuda", dtype=dtype)
    dy = 0.1 * torch.randn_like(x)
    # float64 reference, forward and backward.
    x64 = x.double().requires_grad_(True)
    w64 = w.double().requires_grad_(True)
    b64 = b.double().requires_grad_(True)
    y64 = torch.nn.functional.layer_norm(x64, (N,), w64, b64, EPS)
    y64.backward(dy.double())
    tolerance = 2e-2
    buffers = BackwardBuffers(x, w, group_size_m)
    result: dict[str, dict[str, float]] = {"fwd": {}, "bwd": {}}
    for name, (fwd, dx_kernel, dwdb_kernel) in implementations().items():
        y, mean, rstd = forward(fwd, x, w, b)
        _check(name, "forward", y, y64.detach(), tolerance)
        buffers.poison()
        dx, dw, db = backward(dx_kernel, dwdb_kernel, dy, x, w, mean, rstd, buffers)
        _check(name, "dx", dx, x64.grad, tolerance)
        _check(name, "dw", dw, w64.grad, tolerance * 10)  # summed over M rows in x's precision
        _check(name, "db", db, b64.grad, tolerance * 10)
        ms = do_bench(lambda: forward(fwd, x, w, b), return_mode="median")
        result["fwd"][name] = 2 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9
        ms = do_bench(lambda: backward(dx_kernel, dwdb_kernel, dy, x, w, mean, rstd, buffers), return_mode="median")
        result["bwd"][name] = 3 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9
    layer = torch.nn.LayerNorm(N, eps=EPS, device="cuda", dtype=dtype)
    ms = do_bench(lambda: layer(x), return_mode="median")
    result["fwd"]["torch"] = 2 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9
    xg = x.clone().requires_grad_(True)
    yg = layer(xg)
    ms = do_bench(lambda: yg.backward(dy, retain_graph=True), return_mode="median", grad_to_none=[xg])
    result["bwd"]["torch"] = 3 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="fp16:8192x8192,bf16:32768x4096")
    parser.add_argument("--group-size-m", type=int, default=None,
                        help="partial-sum buffers in the backward pass (default: the tutorial's heuristic)")
    args = parser.parse_args()
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    print(f"device: {torch.cuda.get_device_name()}")
    print(f"{'shape':>18} | {'pass':>4} | {'kiln GB/s':>10} | {'triton GB/s':>11} | {'torch GB/s':>10} | kiln/triton")
    for spec in args.shapes.split(","):
        name, dims = spec.split(":")
        M, N = (int(v) for v in dims.split("x"))
        group_size_m = args.group_size_m or tutorial_group_size_m(N)
        r = measure(dtypes[name], M, N, group_size_m)
        for which in ("fwd", "bwd"):
            row = r[which]
            ratio = f"{row['kiln'] / row['triton']:.3f}" if "triton" in row else "-"
            print(f"{spec:>18} | {which:>4} | {row['kiln']:10.0f} | {row.get('triton', float('nan')):11.0f} | "
                  f"{row['torch']:10.0f} | {ratio}")


if __name__ == "__main__":
    main()
