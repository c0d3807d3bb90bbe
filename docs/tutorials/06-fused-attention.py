"""
Fused Attention
===============

Scaled dot-product attention, forward and backward, in the manner of
FlashAttention-2 (Dao, 2023): the ``N x N`` matrix of attention scores is
never written to memory. You will learn:

* the online softmax, which normalizes a row seen one block at a time;
* two chained ``kl.dot`` products per block, with the probabilities kept
  in registers between them;
* causal masking, and stopping a loop early where the mask covers every
  remaining block;
* ``kiln.heuristics`` under ``kiln.autotune``: a constexpr derived from the
  config the tuner is trying;
* a backward pass that recomputes the probabilities instead of storing
  them, and an autograd function around it all.

Run it::

    python docs/tutorials/06-fused-attention.py [--device cuda|cpu] [--check-only] [--save-path DIR]

Without a CUDA GPU (or with ``--device cpu``) it runs on the CPU backend at
small sizes.
"""

# %%
# The problem
# -----------
#
# For one head, with queries ``Q``, keys ``K`` and values ``V`` of shape
# ``N_CTX x HEAD_DIM``, attention is
#
# .. math::
#    O = \mathrm{softmax}(s \cdot Q K^T) \, V
#
# with the softmax over each row and ``s = 1 / sqrt(HEAD_DIM)``. Computed
# as written, ``Q K^T`` is an ``N_CTX x N_CTX`` matrix that is written to
# memory, read back for the softmax, written again and read again for the
# product with ``V``: at ``N_CTX = 16384`` that is 512 MB per head in
# float16, and the computation is limited by memory instead of by the
# tensor cores.
#
# The online softmax
# ------------------
#
# One program instead takes ``BLOCK_M`` rows of ``Q`` and walks over ``K``
# and ``V`` in blocks of ``BLOCK_N`` rows, keeping for each of its query
# rows three running values: the largest score so far ``m``, the sum ``l``
# of ``exp(score - m)`` so far, and the output accumulator ``acc`` (the
# sum of ``exp(score - m) * v``). When a new block raises a row's maximum
# from ``m`` to ``m'``, everything accumulated so far was scaled by
# ``exp(-m)`` where it should now be scaled by ``exp(-m')``: multiplying
# ``l`` and ``acc`` by ``alpha = exp(m - m')`` fixes that, and the new
# block's terms are added. After the last block, ``acc / l`` is the
# softmax-weighted sum, exact, without a second pass over the keys.
#
# The kernel works in base 2: ``exp(x) = exp2(x * log2(e))``, and folding
# ``log2(e)`` into the scale ``s`` leaves one multiply per score; ``exp2``
# is the GPU's native exponential. It also stores, per row, ``m + log2(l)``,
# the log-sum-exp of the row's scaled scores in base 2: the backward pass
# recomputes any probability from it with one ``exp2``.

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import torch

import kiln
import kiln.language as kl
from kiln.testing import Benchmark, Mark, do_bench, perf_report

from tutorial_support import comparison_triton, run_tutorial, triton_twin

# %%
# The forward kernel
# ------------------
#
# Program ``(i, hz)`` computes rows ``[i * BLOCK_M, (i + 1) * BLOCK_M)`` of
# the output of head ``hz`` (batch ``hz // H``, head ``hz % H``). ``K`` is
# loaded as a ``HEAD_DIM x BLOCK_N`` block, transposed by its pointers, so
# that the scores are ``kl.dot(q, k)``. The probabilities ``p`` go straight
# into the second product, converted to ``V``'s type as tensor cores want.
#
# Sequence lengths need not be multiples of the blocks: rows of ``Q`` past
# ``N_CTX`` are loaded as zeros and never stored, and key columns past
# ``N_CTX`` get the score ``-inf``, hence the probability 0. ``MASK_KEYS``
# says whether that can happen at all; it is a ``constexpr``, so a length
# that is a multiple of ``BLOCK_N`` compiles without the masking. With
# ``CAUSAL``, query ``i`` sees only keys ``j <= i``: scores above the
# diagonal become ``-inf``, and the loop stops after the block that holds
# the program's last row, since every later key is masked for all its rows.


@kiln.jit
def attention_fwd(Q, K, V, Out, M, sm_scale,
                  stride_z, stride_h, stride_tok, stride_d,  # strides of Q, K, V and Out (all alike)
                  H, N_CTX,
                  HEAD_DIM: kl.constexpr, BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr,
                  CAUSAL: kl.constexpr, MASK_KEYS: kl.constexpr):
    start_m = kl.program_id(0)
    off_hz = kl.program_id(1)
    # int64: batch * head offsets of large inputs overflow int32.
    head = (off_hz // H).to(kl.int64) * stride_z + (off_hz % H).to(kl.int64) * stride_h
    offs_m = start_m * BLOCK_M + kl.arange(0, BLOCK_M)
    offs_n = kl.arange(0, BLOCK_N)
    offs_d = kl.arange(0, HEAD_DIM)
    q = kl.load(Q + head + offs_m[:, None] * stride_tok + offs_d[None, :] * stride_d,
                mask=offs_m[:, None] < N_CTX, other=0.0)
    k_ptrs = K + head + offs_d[:, None] * stride_d + offs_n[None, :] * stride_tok  # [HEAD_DIM, BLOCK_N]
    v_ptrs = V + head + offs_n[:, None] * stride_tok + offs_d[None, :] * stride_d  # [BLOCK_N, HEAD_DIM]

    m_i = kl.zeros([BLOCK_M], dtype=kl.float32) - float("inf")
    # l starts at 1, not 0: the first block's alpha = exp2(-inf - m') = 0 clears it.
    l_i = kl.zeros([BLOCK_M], dtype=kl.float32) + 1.0
    acc = kl.zeros([BLOCK_M, HEAD_DIM], dtype=kl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e)
    end = kl.minimum((start_m + 1) * BLOCK_M, N_CTX) if CAUSAL else N_CTX
    for start_n in range(0, end, BLOCK_N):
        keys = start_n + offs_n
        if MASK_KEYS:
            k = kl.load(k_ptrs, mask=keys[None, :] < N_CTX, other=0.0)
        else:
            k = kl.load(k_ptrs)
        scores = kl.dot(q, k)
        if MASK_KEYS:
            scores = kl.where(keys[None, :] < N_CTX, scores, -float("inf"))
        if CAUSAL:
            scores = kl.where(offs_m[:, None] >= keys[None, :], scores, -float("inf"))
        # The online softmax step.
        m_new = kl.maximum(m_i, kl.max(scores, 1) * qk_scale)
        p = kl.exp2(scores * qk_scale - m_new[:, None])
        alpha = kl.exp2(m_i - m_new)
        l_i = l_i * alpha + kl.sum(p, 1)
        acc = acc * alpha[:, None]
        if MASK_KEYS:
            v = kl.load(v_ptrs, mask=keys[:, None] < N_CTX, other=0.0)
        else:
            v = kl.load(v_ptrs)
        acc = kl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
        k_ptrs += BLOCK_N * stride_tok
        v_ptrs += BLOCK_N * stride_tok

    kl.store(M + off_hz * N_CTX + offs_m, m_i + kl.log2(l_i), mask=offs_m < N_CTX)
    out = acc / l_i[:, None]
    kl.store(Out + head + offs_m[:, None] * stride_tok + offs_d[None, :] * stride_d,
             out.to(Out.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


# %%
# Tuning the forward
# ------------------
#
# The block shape, warps and pipeline depth are tuned per sequence length
# and head dimension with ``kiln.autotune``. ``MASK_KEYS`` depends on the
# ``BLOCK_N`` of the config being tried, so the host cannot pass it:
# ``kiln.heuristics``, placed between the tuner and the kernel, computes it
# at every launch from the arguments *and* the config's meta-parameters.
# The configs below are the ones Kiln's GPU tests check; the CPU backend
# gets small blocks, which compile quickly there.

#: (BLOCK_M, BLOCK_N, num_warps, num_stages)
GPU_FWD_CONFIGS = [(128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3), (64, 128, 4, 3)]
CPU_FWD_CONFIGS = [(32, 32, 4, 1), (16, 32, 4, 1)]
#: The backward kernels' (BLOCK_M, BLOCK_N) for dK/dV and for dQ, num_warps, num_stages.
GPU_BWD_CONFIG = ((64, 128), (128, 64), 8, 2)
CPU_BWD_CONFIG = ((16, 32), (32, 16), 4, 1)

FWD_KEY = ["N_CTX", "HEAD_DIM", "CAUSAL"]
MASK_KEYS_RULE = {"MASK_KEYS": lambda args: args["N_CTX"] % args["BLOCK_N"] != 0}


def fwd_configs(device: str, make_config: Any = kiln.Config) -> list[Any]:
    """The forward's autotuning space on ``device`` as ``make_config``
    objects (``kiln.Config`` or ``triton.Config``)."""
    return [make_config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages)
            for bm, bn, warps, stages in (GPU_FWD_CONFIGS if device == "cuda" else CPU_FWD_CONFIGS)]


# %%
# The backward pass
# -----------------
#
# With ``P = softmax(S)``, ``S = s * Q K^T`` and ``dO`` the gradient of the
# output, the gradients are
#
# .. math::
#    dV = P^T dO, \quad dP = dO \, V^T, \quad dS = P \odot (dP - \delta), \quad
#    dQ = s \, dS \, K, \quad dK = s \, dS^T Q
#
# where ``delta`` is, per row, ``sum(P * dP) = sum(O * dO)``. ``P`` is not
# stored: each kernel recomputes the blocks of it that it needs as
# ``exp2(s * log2(e) * Q K^T - M)`` from the forward's ``M``. Three kernels:
#
# 1. ``attention_bwd_delta``: ``delta = rowsum(O * dO)``;
# 2. ``attention_bwd_dkdv``: one program per block of *keys*, looping over
#    the queries, accumulating ``dK`` and ``dV`` in registers. It works
#    with ``P^T`` (keys down, queries across), so that both products
#    contract over the queries;
# 3. ``attention_bwd_dq``: one program per block of *queries*, looping over
#    the keys, accumulating ``dQ``.
#
# Splitting ``dK, dV`` from ``dQ`` lets every program write only its own
# rows, with no atomics, at the price of computing ``Q K^T`` twice.
# ``kl.trans`` transposes a 2-D block.


@kiln.jit
def attention_bwd_delta(Out, DO, Delta, stride_z, stride_h, stride_tok, stride_d, H, N_CTX,
                        HEAD_DIM: kl.constexpr, BLOCK_M: kl.constexpr):
    off_hz = kl.program_id(1)
    head = (off_hz // H).to(kl.int64) * stride_z + (off_hz % H).to(kl.int64) * stride_h
    offs_m = kl.program_id(0) * BLOCK_M + kl.arange(0, BLOCK_M)
    offs_d = kl.arange(0, HEAD_DIM)
    rows = head + offs_m[:, None] * stride_tok + offs_d[None, :] * stride_d
    o = kl.load(Out + rows, mask=offs_m[:, None] < N_CTX, other=0.0).to(kl.float32)
    do = kl.load(DO + rows, mask=offs_m[:, None] < N_CTX, other=0.0).to(kl.float32)
    kl.store(Delta + off_hz * N_CTX + offs_m, kl.sum(o * do, axis=1), mask=offs_m < N_CTX)


# %%
# Step by step, an ``attention_bwd_dkdv`` program loads its ``BLOCK_N``
# rows of ``K`` and ``V`` once, then for each block of ``BLOCK_M`` queries:
#
# 1. loads that block of ``Q`` transposed (``qT``, ``HEAD_DIM x BLOCK_M``)
#    and the queries' ``M``, and recomputes ``P^T = exp2(K qT * s *
#    log2(e) - M)``; a query past ``N_CTX`` gets ``M = +inf``, so its
#    probabilities are 0 and it adds nothing below;
# 2. with ``CAUSAL``, sets ``P^T`` to 0 where the key comes after the query;
# 3. adds ``P^T dO`` to ``dV``;
# 4. computes ``dP^T = V dO^T`` and ``dS^T = P^T * (dP^T - delta)``, and
#    adds ``dS^T Q`` to ``dK``.
#
# With ``CAUSAL`` the loop starts at the block of queries that holds the
# program's first key, since earlier queries see none of its keys. The
# factor ``s`` of ``dK`` is applied once, after the loop.


@kiln.jit
def attention_bwd_dkdv(Q, K, V, sm_scale, DO, DK, DV, M, Delta,
                       stride_z, stride_h, stride_tok, stride_d, H, N_CTX,
                       HEAD_DIM: kl.constexpr, BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr,
                       CAUSAL: kl.constexpr):
    start_n = kl.program_id(0) * BLOCK_N
    off_hz = kl.program_id(1)
    head = (off_hz // H).to(kl.int64) * stride_z + (off_hz % H).to(kl.int64) * stride_h
    offs_n = start_n + kl.arange(0, BLOCK_N)
    offs_d = kl.arange(0, HEAD_DIM)
    kv_rows = head + offs_n[:, None] * stride_tok + offs_d[None, :] * stride_d
    k = kl.load(K + kv_rows, mask=offs_n[:, None] < N_CTX, other=0.0)
    v = kl.load(V + kv_rows, mask=offs_n[:, None] < N_CTX, other=0.0)
    dk = kl.zeros([BLOCK_N, HEAD_DIM], dtype=kl.float32)
    dv = kl.zeros([BLOCK_N, HEAD_DIM], dtype=kl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    # Causal: queries before this block's first key see none of its keys.
    start = (start_n // BLOCK_M) * BLOCK_M if CAUSAL else 0
    for start_m in range(start, N_CTX, BLOCK_M):
        offs_m = start_m + kl.arange(0, BLOCK_M)
        queries = offs_m < N_CTX
        qT = kl.load(Q + head + offs_m[None, :] * stride_tok + offs_d[:, None] * stride_d,
                     mask=queries[None, :], other=0.0)
        # M = +inf past N_CTX makes those queries' probabilities exp2(-inf) = 0.
        m = kl.load(M + off_hz * N_CTX + offs_m, mask=queries, other=float("inf"))
        pT = kl.exp2(kl.dot(k, qT) * qk_scale - m[None, :])  # [BLOCK_N keys, BLOCK_M queries]
        if CAUSAL:
            pT = kl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        do = kl.load(DO + head + offs_m[:, None] * stride_tok + offs_d[None, :] * stride_d,
                     mask=queries[:, None], other=0.0)
        dv = kl.dot(pT.to(do.dtype), do, dv)
        delta = kl.load(Delta + off_hz * N_CTX + offs_m, mask=queries, other=0.0)
        dpT = kl.dot(v, kl.trans(do))
        dsT = pT * (dpT - delta[None, :])
        dk = kl.dot(dsT.to(qT.dtype), kl.trans(qT), dk)
    dk *= sm_scale
    kl.store(DK + kv_rows, dk.to(DK.dtype.element_ty), mask=offs_n[:, None] < N_CTX)
    kl.store(DV + kv_rows, dv.to(DV.dtype.element_ty), mask=offs_n[:, None] < N_CTX)


# %%
# An ``attention_bwd_dq`` program is the mirror image: it loads its
# ``BLOCK_M`` queries' ``Q``, ``dO``, ``M`` and ``delta`` once, then for
# each block of ``BLOCK_N`` keys:
#
# 1. loads that block of ``K`` and ``V`` transposed (``kT``, ``vT``) and
#    recomputes ``P = exp2(q kT * s * log2(e) - M)``;
# 2. sets ``P`` to 0 for keys past ``N_CTX`` (loaded as zeros, they would
#    get ``exp2(-M)``, not 0) and, with ``CAUSAL``, for keys after the
#    query;
# 3. computes ``dS = P * (dO V^T - delta)`` and adds ``dS K`` to ``dQ``.
#
# With ``CAUSAL`` the loop stops after the block of keys that holds the
# program's last query, as the forward's does; ``dQ`` is multiplied by
# ``s`` after the loop.


@kiln.jit
def attention_bwd_dq(Q, K, V, sm_scale, DO, DQ, M, Delta,
                     stride_z, stride_h, stride_tok, stride_d, H, N_CTX,
                     HEAD_DIM: kl.constexpr, BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr,
                     CAUSAL: kl.constexpr):
    start_m = kl.program_id(0) * BLOCK_M
    off_hz = kl.program_id(1)
    head = (off_hz // H).to(kl.int64) * stride_z + (off_hz % H).to(kl.int64) * stride_h
    offs_m = start_m + kl.arange(0, BLOCK_M)
    offs_d = kl.arange(0, HEAD_DIM)
    q_rows = head + offs_m[:, None] * stride_tok + offs_d[None, :] * stride_d
    q = kl.load(Q + q_rows, mask=offs_m[:, None] < N_CTX, other=0.0)
    do = kl.load(DO + q_rows, mask=offs_m[:, None] < N_CTX, other=0.0)
    m = kl.load(M + off_hz * N_CTX + offs_m, mask=offs_m < N_CTX, other=0.0)
    delta = kl.load(Delta + off_hz * N_CTX + offs_m, mask=offs_m < N_CTX, other=0.0)
    dq = kl.zeros([BLOCK_M, HEAD_DIM], dtype=kl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    end = kl.minimum(start_m + BLOCK_M, N_CTX) if CAUSAL else N_CTX
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + kl.arange(0, BLOCK_N)
        kv_cols = head + offs_n[None, :] * stride_tok + offs_d[:, None] * stride_d
        kT = kl.load(K + kv_cols, mask=offs_n[None, :] < N_CTX, other=0.0)
        vT = kl.load(V + kv_cols, mask=offs_n[None, :] < N_CTX, other=0.0)
        p = kl.exp2(kl.dot(q, kT) * qk_scale - m[:, None])
        # Keys past N_CTX were loaded as zeros, whose p = exp2(-m) is not 0.
        keep = offs_n[None, :] < N_CTX
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        p = kl.where(keep, p, 0.0)
        ds = p * (kl.dot(do, vT) - delta[:, None])
        dq = kl.dot(ds.to(kT.dtype), kl.trans(kT), dq)
    dq *= sm_scale
    kl.store(DQ + q_rows, dq.to(DQ.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


# %%
# The autograd function
# ---------------------
#
# ``Attention`` launches the forward (tuned) and saves ``Q, K, V, O`` and
# ``M``; its backward launches the three backward kernels. The kernels come
# in as an argument, a ``Kernels`` object, so that the benchmark can run
# Triton's compilation of the same text through the same host code.


class Kernels:
    """One compiler's attention kernels: the tuned forward and the three backward kernels."""

    def __init__(self, fwd: Any, delta: Any, dkdv: Any, dq: Any) -> None:
        self.fwd, self.delta, self.dkdv, self.dq = fwd, delta, dkdv, dq


_KILN_KERNELS: dict[str, Kernels] = {}


def kiln_kernels(device: str) -> Kernels:
    """Kiln's kernels, the forward tuned over ``device``'s configs."""
    if device not in _KILN_KERNELS:
        tuned = kiln.autotune(configs=fwd_configs(device), key=FWD_KEY)(kiln.heuristics(MASK_KEYS_RULE)(attention_fwd))
        _KILN_KERNELS[device] = Kernels(tuned, attention_bwd_delta, attention_bwd_dkdv, attention_bwd_dq)
    return _KILN_KERNELS[device]


def _check_operands(*arrays: torch.Tensor) -> None:
    if arrays[0].dim() != 4:
        raise ValueError(f"attention: operands are [Z, H, N_CTX, HEAD_DIM], got shape {tuple(arrays[0].shape)}")
    for array in arrays[1:]:
        if array.shape != arrays[0].shape or array.stride() != arrays[0].stride() or array.dtype != arrays[0].dtype:
            raise ValueError("attention: operands must share one shape, strides and dtype")


class Attention(torch.autograd.Function):
    """softmax(sm_scale * Q K^T) V over the last two dimensions of [Z, H, N_CTX, HEAD_DIM] operands."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, sm_scale: float,
                kernels: Kernels) -> torch.Tensor:
        _check_operands(q, k, v)
        z, h, n_ctx, head_dim = q.shape
        if head_dim not in (16, 32, 64, 128, 256):
            raise ValueError(f"attention: HEAD_DIM must be a power of two from 16 to 256, got {head_dim}")
        out = torch.empty_like(q)
        m = torch.empty((z * h, n_ctx), device=q.device, dtype=torch.float32)
        grid = lambda meta: (kiln.cdiv(n_ctx, meta["BLOCK_M"]), z * h)  # noqa: E731
        kernels.fwd[grid](q, k, v, out, m, sm_scale, *q.stride(), h, n_ctx, HEAD_DIM=head_dim, CAUSAL=causal)
        ctx.save_for_backward(q, k, v, out, m)
        ctx.causal, ctx.sm_scale, ctx.kernels = causal, sm_scale, kernels
        return out

    @staticmethod
    def backward(ctx: Any, do: torch.Tensor) -> tuple:
        q, k, v, out, m = ctx.saved_tensors
        if do.stride() != q.stride():
            do = torch.empty_like(q).copy_(do)  # the kernels read dO with Q's strides
        z, h, n_ctx, head_dim = q.shape
        kernels = ctx.kernels
        (dkdv_m, dkdv_n), (dq_m, dq_n), num_warps, num_stages = GPU_BWD_CONFIG if q.is_cuda else CPU_BWD_CONFIG
        delta = torch.empty_like(m)
        kernels.delta[(kiln.cdiv(n_ctx, 64), z * h)](out, do, delta, *q.stride(), h, n_ctx, HEAD_DIM=head_dim,
                                                     BLOCK_M=64)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        kernels.dkdv[(kiln.cdiv(n_ctx, dkdv_n), z * h)](
            q, k, v, ctx.sm_scale, do, dk, dv, m, delta, *q.stride(), h, n_ctx, HEAD_DIM=head_dim,
            BLOCK_M=dkdv_m, BLOCK_N=dkdv_n, CAUSAL=ctx.causal, num_warps=num_warps, num_stages=num_stages)
        kernels.dq[(kiln.cdiv(n_ctx, dq_m), z * h)](
            q, k, v, ctx.sm_scale, do, dq, m, delta, *q.stride(), h, n_ctx, HEAD_DIM=head_dim,
            BLOCK_M=dq_m, BLOCK_N=dq_n, CAUSAL=ctx.causal, num_warps=num_warps, num_stages=num_stages)
        return dq, dk, dv, None, None, None


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, sm_scale: float,
              kernels: Optional[Kernels] = None) -> torch.Tensor:
    """Differentiable fused attention by Kiln's kernels (or ``kernels``)."""
    if kernels is None:
        kernels = kiln_kernels("cuda" if q.is_cuda else "cpu")
    return Attention.apply(q, k, v, causal, sm_scale, kernels)


# %%
# Checking the result
# -------------------
#
# The reference is attention by its definition in float64, with autograd
# for the gradients, on the same float16 inputs (fresh normal random
# numbers; ``s = 1 / sqrt(HEAD_DIM)``). Sequence lengths that are not
# multiples of any block exercise every mask. Every output must be within
# 1e-2 of the reference: the probabilities are rounded to float16 before
# the second product, and the outputs are float16 (spacing 2^-11 near 1).


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, sm_scale: float,
              do: torch.Tensor) -> tuple:
    """(O, dQ, dK, dV) in float64, by the definition and autograd."""
    q, k, v = (x.detach().double().requires_grad_(True) for x in (q, k, v))
    scores = sm_scale * q @ k.transpose(-1, -2)
    if causal:
        n_ctx = q.shape[-2]
        later = torch.ones(n_ctx, n_ctx, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(later, -math.inf)
    out = torch.softmax(scores, dim=-1) @ v
    out.backward(do.double())
    return out.detach(), q.grad, k.grad, v.grad


def check(device: str) -> None:
    """Compares ``attention`` (forward and gradients) with the float64
    reference on ``device``; raises AssertionError beyond 1e-2."""
    generator = torch.Generator(device=device).manual_seed(0)
    shapes = [(2, 3, 1000, 64), (1, 2, 256, 128)] if device == "cuda" else [(2, 2, 80, 32)]
    for z, h, n_ctx, head_dim in shapes:
        for causal in (False, True):
            q, k, v, do = (torch.randn(z, h, n_ctx, head_dim, device=device, generator=generator).half()
                           for _ in range(4))
            leaves = [x.clone().requires_grad_(True) for x in (q, k, v)]
            sm_scale = head_dim ** -0.5
            out = attention(*leaves, causal, sm_scale)
            out.backward(do)
            expected = reference(q, k, v, causal, sm_scale, do)
            results = (out.detach(),) + tuple(x.grad for x in leaves)
            for name, got, want in zip(("O", "dQ", "dK", "dV"), results, expected):
                error = (got.double() - want).abs().max().item()
                if not error <= 1e-2:  # also fails on NaN
                    raise AssertionError(f"attention {name} ({z}x{h}x{n_ctx}x{head_dim}, causal={causal}) on "
                                         f"{device}: max error {error:.3g} over 1e-2")
    print("fused attention: forward and backward match the float64 definition within 1e-2")


# %%
# Benchmark
# ---------
#
# Throughput in FLOP/s against the sequence length, for the forward and
# for the backward alone, causal and not, for head dimensions 64 and 128 on
# a GPU (float16, 32 heads, a batch of 4). The forward does ``4 N_CTX^2
# HEAD_DIM`` operations per head (two products), half of that when causal;
# the backward is counted as 2.5 forwards (five products instead of two).
# torch's line is ``scaled_dot_product_attention`` (its fastest available
# backend), or the plain formula on torch builds without it. When Triton is
# installed it compiles the same kernel text, tuned over the same configs.
# On the CPU backend everything is float32 (older torch builds have no
# float16 matmul on the CPU), at small sizes, causal only.


def torch_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, sm_scale: float) -> torch.Tensor:
    """torch's attention: SDPA where this torch has it, else the formula."""
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:
        if sm_scale == q.shape[-1] ** -0.5:
            return sdpa(q, k, v, is_causal=causal)  # its default scale; torch 2.0's SDPA takes no `scale`
        return sdpa(q, k, v, is_causal=causal, scale=sm_scale)
    scores = sm_scale * q @ k.transpose(-1, -2)
    if causal:
        n_ctx = q.shape[-2]
        scores = scores.masked_fill(torch.ones(n_ctx, n_ctx, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    return torch.softmax(scores, dim=-1) @ v


def make_benchmark(device: str) -> Mark:
    """FLOP/s of Kiln, torch and (on a GPU with Triton installed) Triton."""
    triton_kernels = None
    compilers = comparison_triton(device)
    if compilers is not None:
        triton, tl = compilers
        fwd = triton.autotune(configs=fwd_configs(device, triton.Config), key=FWD_KEY)(
            triton.heuristics(MASK_KEYS_RULE)(triton_twin(attention_fwd, triton, tl)))
        triton_kernels = Kernels(fwd, *(triton_twin(kernel, triton, tl)
                                       for kernel in (attention_bwd_delta, attention_bwd_dkdv, attention_bwd_dq)))
    providers = ["kiln", "torch"] + (["triton"] if triton_kernels is not None else [])
    names = {"kiln": "Kiln", "torch": "Torch", "triton": "Triton"}
    colours = {"kiln": ("red", "-"), "torch": ("green", "-"), "triton": ("blue", "--")}
    dtype = torch.float16 if device == "cuda" else torch.float32
    batch, heads = (4, 32) if device == "cuda" else (1, 2)
    benchmarks = [
        Benchmark(
            x_names=["N_CTX"],
            x_vals=[2**i for i in range(10, 15)] if device == "cuda" else [64, 128],
            line_arg="provider",
            line_vals=providers,
            line_names=[names[p] for p in providers],
            styles=[colours[p] for p in providers],
            ylabel="TFLOP/s" if device == "cuda" else "GFLOP/s",
            plot_name=f"fused-attention-d{head_dim}-{'causal' if causal else 'full'}-{mode}-{device}",
            args={"HEAD_DIM": head_dim, "causal": causal, "mode": mode},
        )
        for head_dim in ((64, 128) if device == "cuda" else (32,))
        for causal in ((False, True) if device == "cuda" else (True,))
        for mode in ("fwd", "bwd")
    ]

    @perf_report(benchmarks)
    def benchmark(N_CTX: int, HEAD_DIM: int, causal: bool, mode: str, provider: str) -> tuple[float, float, float]:
        q, k, v = (torch.randn(batch, heads, N_CTX, HEAD_DIM, device=device, dtype=dtype, requires_grad=True)
                   for _ in range(3))
        sm_scale = HEAD_DIM ** -0.5
        if provider == "torch":
            fn = lambda: torch_attention(q, k, v, causal, sm_scale)  # noqa: E731
        else:
            kernels = kiln_kernels(device) if provider == "kiln" else triton_kernels
            fn = lambda: attention(q, k, v, causal, sm_scale, kernels)  # noqa: E731
        if mode == "bwd":
            out = fn()
            do = torch.randn_like(out)
            fn = lambda: out.backward(do, retain_graph=True)  # noqa: E731
        ms, low_ms, high_ms = do_bench(fn, quantiles=[0.5, 0.2, 0.8], grad_to_none=[q, k, v], device=device)
        flops = 4.0 * batch * heads * N_CTX * N_CTX * HEAD_DIM * (0.5 if causal else 1.0)
        flops *= 2.5 if mode == "bwd" else 1.0
        unit = 1e12 if device == "cuda" else 1e9
        rate = lambda t: flops / unit / (t * 1e-3)  # noqa: E731
        return rate(ms), rate(high_ms), rate(low_ms)

    return benchmark


# %%
# Where to go from here
# ---------------------
#
# * The causal loop masks every block; only the blocks on the diagonal
#   need it. Split the loop in two (unmasked blocks, then the diagonal
#   ones) and compare.
# * ``kl.make_tensor_descriptor`` can load ``Q``, ``K`` and ``V`` by
#   descriptor (on Hopper through the TMA unit);
#   ``docs/design/tensor_descriptors.md`` describes Kiln's.
# * ``docs/design/attention.md`` explains, from the compiled code, what
#   Kiln does with this forward on Hopper and what it does not do yet.


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
    run_tutorial(argv, "Kiln tutorial 06: fused attention", check, make_benchmark)


if __name__ == "__main__":
    main()
