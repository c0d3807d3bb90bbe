"""FlashAttention-2 in its plainest form, shared by the attention tests and
bench/attention.py: a forward kernel, and a backward made of a preprocess
kernel and one kernel each for dK/dV and for dQ (the structure of Triton's
fused-attention tutorial, written with pointers), plus the host functions
that launch them and a float64 reference.

Q, K, V and O are [Z, H, N_CTX, HEAD_DIM] arrays of one shape and strides.
The forward saves, per row, M = m + log2(l): the row's log-sum-exp of the
scaled scores in base 2, from which the backward recomputes the softmax.
N_CTX need not be a multiple of any block: loads and stores are masked, and
key columns past N_CTX get a score of -inf.

bench/attention.py compiles `attention_forward` with Triton too, from this
same text: the kernels name the language only through the global `kl`, and
use nothing that Triton lacks.
"""

import importlib
import math
from typing import Optional

import torch

import kiln
import kiln.language as kl
from kiln.tools.tensor_descriptor import TensorDescriptor

#: (absolute, relative) error allowed against a float32 or float64
#: reference, by operand dtype: Triton's tutorial allows 1e-2 for fp16. bf16
#: keeps 3 fewer mantissa bits; causal rows near the start average few rows
#: of V (row 0 is V's row 0), so there the error grows with the values; and
#: the backward's delta = rowsum(O * dO) is taken, as in FlashAttention-2
#: and Triton's tutorial, from O rounded to the operand dtype, which alone
#: costs up to about 2e-2 in dK at the tests' sizes (seen against float64
#: with the same roundings).
TOLERANCE = {torch.float16: (1e-2, 0.0), torch.bfloat16: (3e-2, 1e-2)}


@kiln.jit
def attention_forward(Q, K, V, Out, M, sm_scale, stride_z, stride_h, stride_tok, stride_d, H, N_CTX,
                      HEAD_DIM: kl.constexpr, BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr,
                      CAUSAL: kl.constexpr, MASK_KEYS: kl.constexpr):
    """One program per BLOCK_M rows of Q of one (batch, head): the online
    softmax over blocks of BLOCK_N keys. MASK_KEYS: N_CTX is not a multiple
    of BLOCK_N, so the last K/V block is partial."""
    start_m = kl.program_id(0)
    off_hz = kl.program_id(1)
    offset = (off_hz // H).to(kl.int64) * stride_z + (off_hz % H).to(kl.int64) * stride_h
    offs_m = start_m * BLOCK_M + kl.arange(0, BLOCK_M)
    offs_n = kl.arange(0, BLOCK_N)
    offs_d = kl.arange(0, HEAD_DIM)
    q_ptrs = Q + offset + offs_m[:, None] * stride_tok + offs_d[None, :] * stride_d
    # K is read transposed, [HEAD_DIM, BLOCK_N], so that qk = dot(q, k).
    k_ptrs = K + offset + offs_d[:, None] * stride_d + offs_n[None, :] * stride_tok
    v_ptrs = V + offset + offs_n[:, None] * stride_tok + offs_d[None, :] * stride_d
    m_i = kl.zeros([BLOCK_M], dtype=kl.float32) - float("inf")
    # l_i starts at 1, not 0: the first block's alpha is exp2(-inf) = 0,
    # which clears it.
    l_i = kl.zeros([BLOCK_M], dtype=kl.float32) + 1.0
    acc = kl.zeros([BLOCK_M, HEAD_DIM], dtype=kl.float32)
    qk_scale = sm_scale * 1.44269504  # exp(x) = exp2(x / ln 2)
    q = kl.load(q_ptrs, mask=offs_m[:, None] < N_CTX, other=0.0)
    if CAUSAL:
        # Keys past the block's last row are masked for every row: stop there.
        hi = kl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    else:
        hi = N_CTX
    for start_n in range(0, hi, BLOCK_N):
        if MASK_KEYS:
            k = kl.load(k_ptrs, mask=(start_n + offs_n)[None, :] < N_CTX, other=0.0)
        else:
            k = kl.load(k_ptrs)
        qk = kl.dot(q, k)
        if MASK_KEYS:
            qk = kl.where((start_n + offs_n)[None, :] < N_CTX, qk, -float("inf"))
        if CAUSAL:
            qk = kl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, -float("inf"))
        m_ij = kl.maximum(m_i, kl.max(qk, 1) * qk_scale)
        p = kl.exp2(qk * qk_scale - m_ij[:, None])
        alpha = kl.exp2(m_i - m_ij)
        l_ij = kl.sum(p, 1)
        acc = acc * alpha[:, None]
        if MASK_KEYS:
            v = kl.load(v_ptrs, mask=(start_n + offs_n)[:, None] < N_CTX, other=0.0)
        else:
            v = kl.load(v_ptrs)
        acc = kl.dot(p.to(v.dtype), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
        k_ptrs += BLOCK_N * stride_tok
        v_ptrs += BLOCK_N * stride_tok
    m_i += kl.log2(l_i)
    acc = acc / l_i[:, None]
    kl.store(M + off_hz * N_CTX + offs_m, m_i, mask=offs_m < N_CTX)
    o_ptrs = Out + offset + offs_m[:, None] * stride_tok + offs_d[None, :] * stride_d
    kl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


@kiln.jit
def _descriptor_forward_blocks(acc, l_i, m_i, q, desc_k, desc_v, row, lo, hi, offs_m, qk_scale, N_CTX,
                               BLOCK_N: kl.constexpr, DIAGONAL: kl.constexpr, MASK_KEYS: kl.constexpr,
                               WARP_SPECIALIZE: kl.constexpr):
    """The online softmax over the key blocks [lo, hi) of
    `attention_forward_descriptors`, carrying the descriptors' row offset
    as Triton's tutorial does. DIAGONAL: the blocks that straddle the
    causal diagonal, which need the causal mask."""
    offs_n = kl.arange(0, BLOCK_N)
    offset_kv = row + lo
    for start_n in kl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        k = desc_k.load([offset_kv, 0]).T
        qk = kl.dot(q, k)
        if MASK_KEYS:
            qk = kl.where((start_n + offs_n)[None, :] < N_CTX, qk, -float("inf"))
        if DIAGONAL:
            qk = kl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, -float("inf"))
        m_ij = kl.maximum(m_i, kl.max(qk, 1) * qk_scale)
        p = kl.exp2(qk * qk_scale - m_ij[:, None])
        alpha = kl.exp2(m_i - m_ij)
        l_ij = kl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offset_kv, 0])
        acc = kl.dot(p.to(v.dtype), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
        offset_kv += BLOCK_N
    return acc, l_i, m_i


@kiln.jit
def _descriptor_forward_rows(desc_q, desc_k, desc_v, row, start_m, offs_m, sm_scale, N_CTX, HEAD_DIM: kl.constexpr,
                             BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr, CAUSAL: kl.constexpr,
                             MASK_KEYS: kl.constexpr, WARP_SPECIALIZE: kl.constexpr):
    """The normalized output and M of query block `start_m` of the
    descriptor forwards, whose rows start at `row` in the descriptors:
    when causal, one loop over the key blocks below the diagonal (no causal
    mask) and one over the blocks on it."""
    m_i = kl.zeros([BLOCK_M], dtype=kl.float32) - float("inf")
    l_i = kl.zeros([BLOCK_M], dtype=kl.float32) + 1.0
    acc = kl.zeros([BLOCK_M, HEAD_DIM], dtype=kl.float32)
    qk_scale = sm_scale * 1.44269504
    q = desc_q.load([row + start_m * BLOCK_M, 0])
    if CAUSAL:
        # Key blocks that end at or before the block's first row need no
        # causal mask.
        diagonal = start_m * BLOCK_M // BLOCK_N * BLOCK_N
        acc, l_i, m_i = _descriptor_forward_blocks(acc, l_i, m_i, q, desc_k, desc_v, row, 0, diagonal,
                                                   offs_m, qk_scale, N_CTX, BLOCK_N, False, MASK_KEYS, WARP_SPECIALIZE)
        acc, l_i, m_i = _descriptor_forward_blocks(acc, l_i, m_i, q, desc_k, desc_v, row, diagonal,
                                                   kl.minimum((start_m + 1) * BLOCK_M, N_CTX), offs_m,
                                                   qk_scale, N_CTX, BLOCK_N, True, MASK_KEYS, WARP_SPECIALIZE)
    else:
        acc, l_i, m_i = _descriptor_forward_blocks(acc, l_i, m_i, q, desc_k, desc_v, row, 0, N_CTX, offs_m,
                                                   qk_scale, N_CTX, BLOCK_N, False, MASK_KEYS, WARP_SPECIALIZE)
    return acc / l_i[:, None], m_i + kl.log2(l_i)


@kiln.jit
def attention_forward_descriptors(Q, K, V, Out, M, sm_scale, stride_z, stride_h, stride_tok, H, N_CTX,
                                  HEAD_DIM: kl.constexpr, BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr,
                                  CAUSAL: kl.constexpr, MASK_KEYS: kl.constexpr,
                                  WARP_SPECIALIZE: kl.constexpr = None):
    """The forward of `attention_forward` written as Triton's tutorial
    writes it, with tensor descriptors, K read as `desc_k.load().T`, the
    row offset carried by the loop, and, when causal, one loop over the
    blocks below the diagonal (no causal mask) and one over the blocks on
    it: Q, K and V are either host descriptors of the
    [Z * H * N_CTX, HEAD_DIM] arrays (N_CTX then a multiple of BLOCK_M and
    BLOCK_N: a block must not cross into the next head), or pointers, from
    which the kernel makes one [N_CTX, HEAD_DIM] descriptor per (batch,
    head) and operand, rows past N_CTX reading as zero. The last dimension
    must be contiguous. WARP_SPECIALIZE is the loops' `warp_specialize`
    (None: the compiler decides). Unlike the tutorial, causal programs take
    their blocks of rows from the last, a few heads at a time: see below."""
    start_m = kl.program_id(0)
    off_hz = kl.program_id(1)
    if CAUSAL:
        # A causal block of rows reads the key blocks up to its diagonal, so
        # the work grows with start_m, and programs start in the order of
        # their index: the last wave would wait for the longest. The
        # programs of head_group (batch, head) pairs at a time take their
        # blocks of rows from the last, one pair after another, so that the
        # longest start first, the shortest fill the last wave, and the
        # programs running at once share the K and V of a few heads in L2.
        head_group = 4
        num_m = kl.num_programs(0)
        num_hz = kl.num_programs(1)
        index = off_hz * num_m + start_m
        group = index // (head_group * num_m)
        first_hz = group * head_group
        group_size = kl.minimum(num_hz - first_hz, head_group)
        within = index - first_hz * num_m
        start_m = num_m - 1 - within // group_size
        off_hz = first_hz + within % group_size
    offset = (off_hz // H).to(kl.int64) * stride_z + (off_hz % H).to(kl.int64) * stride_h
    if isinstance(Q, kl.tensor_descriptor):
        desc_q, desc_k, desc_v = Q, K, V
        row = off_hz * N_CTX
    else:
        desc_q = kl.make_tensor_descriptor(Q + offset, shape=[N_CTX, HEAD_DIM], strides=[stride_tok, 1],
                                           block_shape=[BLOCK_M, HEAD_DIM])
        desc_k = kl.make_tensor_descriptor(K + offset, shape=[N_CTX, HEAD_DIM], strides=[stride_tok, 1],
                                           block_shape=[BLOCK_N, HEAD_DIM])
        desc_v = kl.make_tensor_descriptor(V + offset, shape=[N_CTX, HEAD_DIM], strides=[stride_tok, 1],
                                           block_shape=[BLOCK_N, HEAD_DIM])
        row = 0
    offs_m = start_m * BLOCK_M + kl.arange(0, BLOCK_M)
    acc, m_i = _descriptor_forward_rows(desc_q, desc_k, desc_v, row, start_m, offs_m, sm_scale, N_CTX, HEAD_DIM,
                                        BLOCK_M, BLOCK_N, CAUSAL, MASK_KEYS, WARP_SPECIALIZE)
    kl.store(M + off_hz * N_CTX + offs_m, m_i, mask=offs_m < N_CTX)
    o_ptrs = Out + offset + offs_m[:, None] * stride_tok + kl.arange(0, HEAD_DIM)[None, :]
    kl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


@kiln.jit
def _descriptor_of(operand, shape, strides, block_shape):
    """`operand` itself where it is a descriptor, else a descriptor made
    over it (tutorial 06's `_maybe_make_tensor_desc`)."""
    if isinstance(operand, kl.tensor_descriptor):
        return operand
    return kl.make_tensor_descriptor(operand, shape, strides, block_shape)


@kiln.jit
def attention_forward_whole_descriptors(sm_scale, M, Z, H, Q, K, V, Out, N_CTX, HEAD_DIM: kl.constexpr,
                                        BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr, CAUSAL: kl.constexpr,
                                        WARP_SPECIALIZE: kl.constexpr = None):
    """`attention_forward_descriptors` with tutorial 06's signature and
    descriptors: Q, K, V and Out are host descriptors or pointers to
    contiguous [Z, H, N_CTX, HEAD_DIM] arrays, over whose whole
    [Z * H * N_CTX, HEAD_DIM] the kernel then makes its descriptors, the
    same in every program (so N_CTX must be a multiple of BLOCK_M and
    BLOCK_N: a block must not cross into the next head). Out is written
    through its descriptor."""
    rows = Z * H * N_CTX
    desc_q = _descriptor_of(Q, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    desc_k = _descriptor_of(K, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    desc_v = _descriptor_of(V, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    desc_o = _descriptor_of(Out, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    start_m = kl.program_id(0)
    off_hz = kl.program_id(1)
    row = off_hz * N_CTX
    offs_m = start_m * BLOCK_M + kl.arange(0, BLOCK_M)
    acc, m_i = _descriptor_forward_rows(desc_q, desc_k, desc_v, row, start_m, offs_m, sm_scale, N_CTX, HEAD_DIM,
                                        BLOCK_M, BLOCK_N, CAUSAL, False, WARP_SPECIALIZE)
    kl.store(M + off_hz * N_CTX + offs_m, m_i)
    desc_o.store([row + start_m * BLOCK_M, 0], acc.to(desc_o.dtype))


@kiln.jit
def attention_backward_preprocess(Out, DO, Delta, stride_z, stride_h, stride_tok, stride_d, H, N_CTX,
                                  HEAD_DIM: kl.constexpr, BLOCK_M: kl.constexpr):
    """Delta = rowsum(O * dO), the term that the softmax's backward
    subtracts from dP."""
    off_hz = kl.program_id(1)
    offset = (off_hz // H).to(kl.int64) * stride_z + (off_hz % H).to(kl.int64) * stride_h
    offs_m = kl.program_id(0) * BLOCK_M + kl.arange(0, BLOCK_M)
    offs_d = kl.arange(0, HEAD_DIM)
    rows = offset + offs_m[:, None] * stride_tok + offs_d[None, :] * stride_d
    o = kl.load(Out + rows, mask=offs_m[:, None] < N_CTX, other=0.0).to(kl.float32)
    do = kl.load(DO + rows, mask=offs_m[:, None] < N_CTX, other=0.0).to(kl.float32)
    kl.store(Delta + off_hz * N_CTX + offs_m, kl.sum(o * do, axis=1), mask=offs_m < N_CTX)


@kiln.jit
def attention_backward_dkdv(Q, K, V, sm_scale, DO, DK, DV, M, Delta, stride_z, stride_h, stride_tok, stride_d,
                            H, N_CTX, HEAD_DIM: kl.constexpr, BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr,
                            CAUSAL: kl.constexpr):
    """One program per BLOCK_N keys of one (batch, head): dV = P^T dO and
    dK = sm_scale * dS^T Q, summed over blocks of BLOCK_M queries, with the
    transposed softmax P^T recomputed from Q, K and M."""
    start_n = kl.program_id(0) * BLOCK_N
    off_hz = kl.program_id(1)
    offset = (off_hz // H).to(kl.int64) * stride_z + (off_hz % H).to(kl.int64) * stride_h
    offs_n = start_n + kl.arange(0, BLOCK_N)
    offs_d = kl.arange(0, HEAD_DIM)
    kv_rows = offset + offs_n[:, None] * stride_tok + offs_d[None, :] * stride_d
    k = kl.load(K + kv_rows, mask=offs_n[:, None] < N_CTX, other=0.0)
    v = kl.load(V + kv_rows, mask=offs_n[:, None] < N_CTX, other=0.0)
    dk = kl.zeros([BLOCK_N, HEAD_DIM], dtype=kl.float32)
    dv = kl.zeros([BLOCK_N, HEAD_DIM], dtype=kl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        # Queries before the first key of this block see none of its keys.
        lo = (start_n // BLOCK_M) * BLOCK_M
    else:
        lo = 0
    for start_m in range(lo, N_CTX, BLOCK_M):
        offs_m = start_m + kl.arange(0, BLOCK_M)
        row_mask = offs_m < N_CTX
        qT = kl.load(Q + offset + offs_m[None, :] * stride_tok + offs_d[:, None] * stride_d,
                     mask=row_mask[None, :], other=0.0)
        # +inf for rows past N_CTX makes their probabilities exp2(-inf) = 0.
        m = kl.load(M + off_hz * N_CTX + offs_m, mask=row_mask, other=float("inf"))
        pT = kl.exp2(kl.dot(k, qT) * qk_scale - m[None, :])
        if CAUSAL:
            pT = kl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        do = kl.load(DO + offset + offs_m[:, None] * stride_tok + offs_d[None, :] * stride_d,
                     mask=row_mask[:, None], other=0.0)
        dv = kl.dot(pT.to(do.dtype), do, dv)
        delta = kl.load(Delta + off_hz * N_CTX + offs_m, mask=row_mask, other=0.0)
        dpT = kl.dot(v, kl.trans(do))
        dsT = pT * (dpT - delta[None, :])
        dk = kl.dot(dsT.to(qT.dtype), kl.trans(qT), dk)
    dk *= sm_scale
    kl.store(DK + kv_rows, dk.to(DK.dtype.element_ty), mask=offs_n[:, None] < N_CTX)
    kl.store(DV + kv_rows, dv.to(DV.dtype.element_ty), mask=offs_n[:, None] < N_CTX)


@kiln.jit
def attention_backward_dq(Q, K, V, sm_scale, DO, DQ, M, Delta, stride_z, stride_h, stride_tok, stride_d, H, N_CTX,
                          HEAD_DIM: kl.constexpr, BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr,
                          CAUSAL: kl.constexpr):
    """One program per BLOCK_M queries of one (batch, head): dQ = sm_scale *
    dS K, summed over blocks of BLOCK_N keys, P recomputed from Q, K and M."""
    start_m = kl.program_id(0) * BLOCK_M
    off_hz = kl.program_id(1)
    offset = (off_hz // H).to(kl.int64) * stride_z + (off_hz % H).to(kl.int64) * stride_h
    offs_m = start_m + kl.arange(0, BLOCK_M)
    offs_d = kl.arange(0, HEAD_DIM)
    q_rows = offset + offs_m[:, None] * stride_tok + offs_d[None, :] * stride_d
    q = kl.load(Q + q_rows, mask=offs_m[:, None] < N_CTX, other=0.0)
    do = kl.load(DO + q_rows, mask=offs_m[:, None] < N_CTX, other=0.0)
    m = kl.load(M + off_hz * N_CTX + offs_m, mask=offs_m < N_CTX, other=0.0)
    delta = kl.load(Delta + off_hz * N_CTX + offs_m, mask=offs_m < N_CTX, other=0.0)
    dq = kl.zeros([BLOCK_M, HEAD_DIM], dtype=kl.float32)
    qk_scale = sm_scale * 1.44269504
    if CAUSAL:
        hi = kl.minimum(start_m + BLOCK_M, N_CTX)
    else:
        hi = N_CTX
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + kl.arange(0, BLOCK_N)
        kv_cols = offset + offs_n[None, :] * stride_tok + offs_d[:, None] * stride_d
        kT = kl.load(K + kv_cols, mask=offs_n[None, :] < N_CTX, other=0.0)
        vT = kl.load(V + kv_cols, mask=offs_n[None, :] < N_CTX, other=0.0)
        p = kl.exp2(kl.dot(q, kT) * qk_scale - m[:, None])
        # Keys past N_CTX: their zero K would still give p = exp2(-m).
        keep = offs_n[None, :] < N_CTX
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        p = kl.where(keep, p, 0.0)
        dp = kl.dot(do, vT)
        ds = p * (dp - delta[:, None])
        dq = kl.dot(ds.to(kT.dtype), kl.trans(kT), dq)
    dq *= sm_scale
    kl.store(DQ + q_rows, dq.to(DQ.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


def _check_operands(*arrays: torch.Tensor) -> None:
    first = arrays[0]
    if first.dim() != 4:
        raise ValueError(f"attention operands are [Z, H, N_CTX, HEAD_DIM], got shape {tuple(first.shape)}")
    for array in arrays[1:]:
        if array.shape != first.shape or array.stride() != first.stride() or array.dtype != first.dtype:
            raise ValueError("attention operands must have one shape, strides and dtype")


def _foreign_descriptor(kernel) -> type:
    """The host TensorDescriptor class of the compiler that made `kernel`
    (a twin compiled by Triton: Triton's)."""
    package = type(kernel).__module__.split(".")[0]
    return importlib.import_module(f"{package}.tools.tensor_descriptor").TensorDescriptor


#: Layouts of [Z, H, N_CTX, HEAD_DIM] operands that `with_layout` makes.
LAYOUTS = ("contiguous", "tokens-outer", "padded-heads")


def with_layout(array: torch.Tensor, layout: str) -> torch.Tensor:
    """A copy of `array` ([Z, H, N_CTX, HEAD_DIM]) with the strides of
    `layout`: "contiguous"; "tokens-outer", a [Z, N_CTX, H, HEAD_DIM] array
    viewed as [Z, H, N_CTX, HEAD_DIM] (a head's rows are a range of columns
    of wider rows); "padded-heads", heads 8 elements further apart than
    their rows take (many heads start mid-row)."""
    z, h, n_ctx, head_dim = array.shape
    if layout == "contiguous":
        return array.contiguous()
    if layout == "tokens-outer":
        return array.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
    if layout == "padded-heads":
        pitch = n_ctx * head_dim + 8
        storage = torch.empty(z * h * pitch, dtype=array.dtype, device=array.device)
        padded = storage.as_strided(array.shape, (h * pitch, pitch, head_dim, 1))
        padded.copy_(array)
        return padded
    raise ValueError(f"unknown layout {layout!r}; one of {', '.join(LAYOUTS)}")


def same_strides(array: torch.Tensor) -> torch.Tensor:
    """A new array of `array`'s shape, dtype and strides, whatever they are
    (empty_like keeps them only for arrays without gaps)."""
    return torch.empty_strided(array.shape, array.stride(), dtype=array.dtype, device=array.device)


def new_row_statistics(q: torch.Tensor) -> torch.Tensor:
    """An uninitialized M for the forward kernels on queries `q` ([Z, H,
    N_CTX, HEAD_DIM]): [Z*H, N_CTX] in float32."""
    return torch.empty((q.shape[0] * q.shape[1], q.shape[2]), device=q.device, dtype=torch.float32)


def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, sm_scale: float,
            block_m: int = 128, block_n: int = 64, num_warps: int = 4, num_stages: int = 3,
            kernel=attention_forward, out: torch.Tensor = None, m: torch.Tensor = None,
            host_descriptors: bool = False, warp_specialize: Optional[bool] = None) -> tuple:
    """Runs the forward kernel (`kernel`: `attention_forward`,
    `attention_forward_descriptors`, `attention_forward_whole_descriptors`,
    or a twin of one compiled by another compiler) into `out` and `m` (new
    arrays when None); returns (O, M), M of shape [Z*H, N_CTX] in float32.
    `host_descriptors` passes the descriptor kernels Kiln's host
    TensorDescriptors of the contiguous operands; `warp_specialize` asks
    them for a producer warpgroup, or declines one (None: the compiler
    decides)."""
    _check_operands(q, k, v)
    z, h, n_ctx, head_dim = q.shape
    if out is None:
        out = same_strides(q)
    _check_operands(q, out)
    if m is None:
        m = new_row_statistics(q)
    grid = (math.ceil(n_ctx / block_m), z * h)
    strides = [q.stride(0), q.stride(1), q.stride(2)]
    operands = [q, k, v]
    options = {}
    # (Compared by name: a twin compiled by another compiler is another object.)
    if kernel.fn.__name__ == attention_forward_whole_descriptors.fn.__name__:
        if not q.is_contiguous() or n_ctx % block_m or n_ctx % block_n:
            raise ValueError("attention_forward_whole_descriptors needs contiguous operands and N_CTX a multiple "
                             "of the blocks")
        operands = [q, k, v, out]
        if host_descriptors:
            descriptor = TensorDescriptor if isinstance(kernel, kiln.JITFunction) else _foreign_descriptor(kernel)
            operands = [descriptor(x, [z * h * n_ctx, head_dim], [head_dim, 1], [rows, head_dim])
                        for x, rows in ((q, block_m), (k, block_n), (v, block_n), (out, block_m))]
        if warp_specialize is not None:
            options["WARP_SPECIALIZE"] = warp_specialize
        kernel[grid](sm_scale, m, z, h, *operands, n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
                     CAUSAL=causal, num_warps=num_warps, num_stages=num_stages, **options)
        return out, m
    if kernel.fn.__name__ == attention_forward_descriptors.fn.__name__:
        if q.stride(3) != 1:
            raise ValueError("attention_forward_descriptors needs a contiguous last dimension")
        if host_descriptors:
            if not q.is_contiguous() or n_ctx % block_m or n_ctx % block_n:
                raise ValueError("host descriptors need contiguous operands and N_CTX a multiple of the blocks")
            # Each compiler's launcher takes its own descriptor class.
            descriptor = TensorDescriptor if isinstance(kernel, kiln.JITFunction) else _foreign_descriptor(kernel)
            operands = [descriptor(x, [z * h * n_ctx, head_dim], [head_dim, 1], [rows, head_dim])
                        for x, rows in ((q, block_m), (k, block_n), (v, block_n))]
        if warp_specialize is not None:
            options["WARP_SPECIALIZE"] = warp_specialize
    elif warp_specialize is not None:
        raise ValueError("only attention_forward_descriptors takes warp_specialize")
    else:
        strides.append(q.stride(3))
    kernel[grid](*operands, out, m, sm_scale, *strides, h, n_ctx,
                 HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
                 MASK_KEYS=n_ctx % block_n != 0, num_warps=num_warps, num_stages=num_stages, **options)
    return out, m


def backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, m: torch.Tensor,
             do: torch.Tensor, causal: bool, sm_scale: float, blocks_dkdv: tuple = (32, 64),
             blocks_dq: tuple = (64, 32), num_warps: int = 4, num_stages: int = 3,
             kernels: Optional[tuple] = None) -> tuple:
    """dQ, dK and dV from the forward's O and M and the output gradient dO.
    `blocks_dkdv` and `blocks_dq` are each kernel's (BLOCK_M, BLOCK_N).
    `kernels` are the preprocess, dK/dV and dQ kernels (default: this
    file's; or their twins compiled by another compiler). The results start
    as NaN, so that an element no kernel writes shows."""
    preprocess, dkdv, dq_kernel = kernels or (attention_backward_preprocess, attention_backward_dkdv,
                                              attention_backward_dq)
    if do.stride() != q.stride():
        do = same_strides(q).copy_(do)
    _check_operands(q, k, v, out, do)
    z, h, n_ctx, head_dim = q.shape
    strides = (q.stride(0), q.stride(1), q.stride(2), q.stride(3))
    delta = torch.full_like(m, math.nan)
    preprocess_block = 32
    preprocess[(math.ceil(n_ctx / preprocess_block), z * h)](
        out, do, delta, *strides, h, n_ctx, HEAD_DIM=head_dim, BLOCK_M=preprocess_block)
    dq, dk, dv = (same_strides(x).fill_(math.nan) for x in (q, k, v))
    block_m, block_n = blocks_dkdv
    dkdv[(math.ceil(n_ctx / block_n), z * h)](
        q, k, v, sm_scale, do, dk, dv, m, delta, *strides, h, n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m,
        BLOCK_N=block_n, CAUSAL=causal, num_warps=num_warps, num_stages=num_stages)
    block_m, block_n = blocks_dq
    dq_kernel[(math.ceil(n_ctx / block_m), z * h)](
        q, k, v, sm_scale, do, dq, m, delta, *strides, h, n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m,
        BLOCK_N=block_n, CAUSAL=causal, num_warps=num_warps, num_stages=num_stages)
    return dq, dk, dv


def max_error(result: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> tuple:
    """(whether `result` is within TOLERANCE[dtype] of `expected` everywhere,
    the largest absolute error); NaN anywhere fails."""
    atol, rtol = TOLERANCE[dtype]
    expected = expected.to(result.device, torch.float64)
    error = (result.double() - expected).abs()
    within = bool((error <= atol + rtol * expected.abs()).all())  # False where NaN
    return within, error.max().item()


def assert_close(name: str, result: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> None:
    """Fails unless every element of `result` was written and is within
    TOLERANCE[dtype] of `expected`."""
    assert not result.isnan().any(), f"{name}: some elements were not written"
    within, error = max_error(result, expected, dtype)
    assert within, f"{name}: max error {error:.3g}, over {TOLERANCE[dtype]} (absolute, relative)"


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, sm_scale: float,
              do: torch.Tensor = None) -> tuple:
    """Attention in float64 by its definition, softmax(sm_scale * Q K^T) V
    with keys after the query masked when `causal`; returns (O, M) with M the
    base-2 log-sum-exp per row, and, given `do`, also (dQ, dK, dV) by
    autograd."""
    q, k, v = (x.detach().double().requires_grad_(do is not None) for x in (q, k, v))
    scores = sm_scale * q @ k.transpose(-1, -2)
    if causal:
        n_ctx = q.shape[-2]
        later = torch.ones(n_ctx, n_ctx, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(later, -math.inf)
    out = torch.softmax(scores, dim=-1) @ v
    lse2 = (torch.logsumexp(scores, dim=-1) / math.log(2)).flatten(0, 1)
    if do is None:
        return out.detach(), lse2.detach()
    out.backward(do.double())
    return out.detach(), lse2.detach(), q.grad, k.grad, v.grad
