"""FlashAttention-2 on every backend present: the forward kernel (online
softmax in base 2, the causal mask, partial last blocks of keys and
queries) and the backward (delta = rowsum(O * dO), a dK/dV kernel and a dQ
kernel that recompute the softmax from the forward's base-2 log-sum-exp M),
against attention computed in float64 by its definition, with autograd for
the gradients. Sequence lengths are not multiples of the blocks, so every
load and store is masked somewhere; all results start as NaN. Shapes are
small so that the file runs in seconds on the CPU backend; the GPU sizes
are in ../gpu/test_gpu_attention.py."""

import math

import pytest
import torch

import attention_kernels
import kiln
from attention_kernels import assert_close

# O and the gradients are allowed attention_kernels.TOLERANCE (they are
# sums of products of rounded operands: P is rounded to the operand dtype
# before the second dot, dS before dK's and dQ's); M is computed in float32
# throughout.
M_TOLERANCE = 1e-4

# (N_CTX, HEAD_DIM, (BLOCK_M, BLOCK_N)): a partial last block of keys and
# of queries, BLOCK_N above and below BLOCK_M (with the causal mask, a key
# block then crosses the diagonal or ends before it), N_CTX below one
# block, and N_CTX a multiple of both (no key masking: MASK_KEYS=False).
FORWARD_CASES = [(40, 16, (16, 16)), (72, 32, (32, 16)), (72, 32, (16, 32)), (5, 16, (16, 16)), (64, 16, (32, 16))]

# (N_CTX, HEAD_DIM, dK/dV kernel's (BLOCK_M, BLOCK_N), dQ kernel's (BLOCK_M, BLOCK_N))
BACKWARD_CASES = [(40, 16, (16, 32), (32, 16)), (72, 32, (16, 16), (16, 16)), (64, 16, (32, 16), (16, 32))]


def random_operands(shape, dtype, device, seed):
    """q, k, v and an output gradient: fresh normal values."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator).to(dtype).to(device) for _ in range(4)]


def assert_m_close(m, expected):
    assert not m.isnan().any(), "M: some rows were not written"
    error = (m.double() - expected.to(m.device)).abs().max().item()
    assert error <= M_TOLERANCE, f"M: max error {error:.3g} > {M_TOLERANCE:g}"


def poisoned_outputs(q):
    z, h, n_ctx, _ = q.shape
    return torch.full_like(q, math.nan), torch.full((z * h, n_ctx), math.nan, device=q.device)


def check_forward(arrays, dtype, causal, shape, blocks, seed, **forward_options):
    """Runs `attention_kernels.forward` (with `forward_options`) on fresh
    operands of `shape` into NaN-poisoned outputs and checks O and M
    against the float64 definition."""
    q, k, v, _ = random_operands(shape, dtype, arrays.device, seed=seed)
    sm_scale = shape[-1] ** -0.5
    out, m = poisoned_outputs(q)
    attention_kernels.forward(q, k, v, causal, sm_scale, *blocks, num_warps=4, out=out, m=m, **forward_options)
    expected_out, expected_m = attention_kernels.reference(q, k, v, causal, sm_scale)
    assert_close("O", out, expected_out, dtype)
    assert_m_close(m, expected_m)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n_ctx,head_dim,blocks", FORWARD_CASES)
def test_forward(arrays, dtype, causal, n_ctx, head_dim, blocks):
    check_forward(arrays, dtype, causal, (1, 2, n_ctx, head_dim), blocks, seed=n_ctx + head_dim)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n_ctx,head_dim,blocks", FORWARD_CASES)
def test_forward_descriptors(arrays, causal, n_ctx, head_dim, blocks):
    """The forward written with tensor descriptors made in the kernel (K
    read as the transpose of its [BLOCK_N, HEAD_DIM] block): rows past
    N_CTX come from the descriptors' bounds."""
    check_forward(arrays, torch.float16, causal, (2, 3, n_ctx, head_dim), blocks, seed=5 * n_ctx + head_dim,
                  kernel=attention_kernels.attention_forward_descriptors)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n_ctx,head_dim,blocks", [(64, 16, (32, 16)), (64, 32, (16, 32))])
@pytest.mark.parametrize("warp_specialize", [False, True], ids=["own-copies", "warp-specialized"])
def test_forward_host_descriptors(arrays, causal, n_ctx, head_dim, blocks, warp_specialize):
    """The same kernel given host TensorDescriptors of the whole arrays,
    its loop also asking for warp specialization (a request that changes
    the result nowhere)."""
    check_forward(arrays, torch.float16, causal, (2, 3, n_ctx, head_dim), blocks, seed=7 * n_ctx + head_dim,
                  kernel=attention_kernels.attention_forward_descriptors, host_descriptors=True,
                  warp_specialize=warp_specialize)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("host_descriptors", [False, True], ids=["made-in-kernel", "host"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_forward_whole_descriptors(arrays, causal, host_descriptors, dtype):
    """Tutorial 06's signature: descriptors over the whole [Z * H * N_CTX,
    HEAD_DIM] arrays, made by the kernel from its arguments (on sm_90a
    tensor maps that the launcher encodes) or given by the host, Out
    written through one."""
    check_forward(arrays, dtype, causal, (2, 3, 64, 32), (32, 16), seed=11 + causal,
                  kernel=attention_kernels.attention_forward_whole_descriptors, host_descriptors=host_descriptors,
                  warp_specialize=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n_ctx,head_dim,blocks_dkdv,blocks_dq", BACKWARD_CASES)
def test_backward(arrays, dtype, causal, n_ctx, head_dim, blocks_dkdv, blocks_dq):
    """dQ, dK and dV from the kernels' own forward, against autograd of the
    float64 definition."""
    q, k, v, do = random_operands((2, 1, n_ctx, head_dim), dtype, arrays.device, seed=3 * n_ctx + head_dim)
    sm_scale = 0.5
    out, m = attention_kernels.forward(q, k, v, causal, sm_scale, 16, 16)
    grads = attention_kernels.backward(q, k, v, out, m, do, causal, sm_scale, blocks_dkdv, blocks_dq)
    expected = attention_kernels.reference(q, k, v, causal, sm_scale, do)
    for name, result, reference in zip(("dQ", "dK", "dV"), grads, expected[2:]):
        assert_close(name, result, reference, dtype)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("layout", attention_kernels.LAYOUTS)
@pytest.mark.parametrize("blocks", [(32, 16), (16, 32)], ids=lambda b: "m{}-n{}".format(*b))
def test_forward_pointer_tensor_maps(arrays, monkeypatch, causal, layout, blocks):
    """The plain forward compiled with KILN_POINTER_TENSOR_MAPS: K's and V's
    loads get tensor maps, read through by the programs that pass their
    check (on the CPU, as the TMA unit would read them: the maps'
    coordinates are what is tested). Contiguous and tokens-outer operands
    pass it; with padded heads only the heads that start at a row do."""
    monkeypatch.setenv("KILN_POINTER_TENSOR_MAPS", "1")
    # A kernel of its own: the variable is read when a kernel is compiled.
    kernel = kiln.jit(attention_kernels.attention_forward.fn)
    shape = (2, 3, 64, 16)  # N_CTX a multiple of every block: unmasked K and V
    q, k, v, _ = (attention_kernels.with_layout(array, layout)
                  for array in random_operands(shape, torch.float16, arrays.device, seed=len(layout) + blocks[1]))
    out, m = poisoned_outputs(q)
    out = attention_kernels.with_layout(out, layout)
    attention_kernels.forward(q, k, v, causal, 0.25, *blocks, num_warps=4, kernel=kernel, out=out, m=m)
    (loaded,) = (loaded for per_device in kernel.cache.values() for loaded in per_device.values())
    # (On a GPU the maps stay only where the pipeline copies the blocks by
    # TMA, which these small blocks need not be; on the CPU they always do.)
    metadata = loaded.kernel.metadata
    if metadata["backend"] == "cpu":
        assert "pointer-tensor-maps=true" in metadata["pipelines"][0]
    expected_out, expected_m = attention_kernels.reference(q, k, v, causal, 0.25)
    assert_close("O", out, expected_out, torch.float16)
    assert_m_close(m, expected_m)


#: The backward's kernels, and a forward, of their own for the tests that
#: compile them with KILN_POINTER_TENSOR_MAPS (read when a kernel compiles).
POINTER_MAP_KERNELS = tuple(kiln.jit(kernel.fn) for kernel in (
    attention_kernels.attention_forward, attention_kernels.attention_backward_preprocess,
    attention_kernels.attention_backward_dkdv, attention_kernels.attention_backward_dq))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("layout", attention_kernels.LAYOUTS)
@pytest.mark.parametrize("n_ctx", [64, 72])
def test_backward_pointer_tensor_maps(arrays, monkeypatch, causal, layout, n_ctx):
    """The backward compiled with KILN_POINTER_TENSOR_MAPS: the dQ loop's K
    and V (pointers computed from the induction variable, masked to N_CTX)
    get tensor maps where the masks are true over every block of the loop,
    as at N_CTX 64; at 72 the last block's are not, and the programs read
    through their pointers. (The dK/dV loop also loads rows that no map
    takes, and is left as it is.)"""
    monkeypatch.setenv("KILN_POINTER_TENSOR_MAPS", "1")
    forward, *backward = POINTER_MAP_KERNELS
    q, k, v, do = (attention_kernels.with_layout(array, layout)
                   for array in random_operands((2, 3, n_ctx, 16), torch.float16, arrays.device, seed=n_ctx))
    out, m = poisoned_outputs(q)
    out = attention_kernels.with_layout(out, layout)
    attention_kernels.forward(q, k, v, causal, 0.5, 16, 16, kernel=forward, out=out, m=m)
    grads = attention_kernels.backward(q, k, v, out, m, do, causal, 0.5, (16, 32), (32, 16), kernels=tuple(backward))
    expected = attention_kernels.reference(q, k, v, causal, 0.5, do)
    for name, result, reference in zip(("dQ", "dK", "dV"), grads, expected[2:]):
        assert_close(name, result, reference, torch.float16)


def test_strided_operands(arrays):
    """Q, K, V, dO and O in the [Z, N_CTX, H, HEAD_DIM] layout of a
    projection's output, seen as [Z, H, N_CTX, HEAD_DIM] (no dimension but
    the last is contiguous)."""
    z, h, n_ctx, head_dim = 2, 3, 40, 16
    q, k, v, do = (x.transpose(1, 2) for x in
                   random_operands((z, n_ctx, h, head_dim), torch.float16, arrays.device, seed=7))
    out, m = poisoned_outputs(q)
    attention_kernels.forward(q, k, v, True, 0.3, 32, 16, out=out, m=m)
    expected = attention_kernels.reference(q, k, v, True, 0.3, do)
    assert_close("O", out, expected[0], torch.float16)
    assert_m_close(m, expected[1])
    grads = attention_kernels.backward(q, k, v, out, m, do, True, 0.3, (16, 16), (16, 16))
    for name, result, reference in zip(("dQ", "dK", "dV"), grads, expected[2:]):
        assert result.stride() == q.stride()
        assert_close(name, result, reference, torch.float16)


def test_operands_of_different_layouts_are_refused():
    q = torch.zeros(1, 2, 16, 16, dtype=torch.float16)
    with pytest.raises(ValueError, match="one shape, strides and dtype"):
        attention_kernels.forward(q, q, q.transpose(1, 2).contiguous().transpose(1, 2), False, 1.0)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_very_negative_scores(arrays, causal):
    """Every score far below zero (q near -k): the base-2 log-sum-exp M is
    about -370, so exp2(-M) overflows float32, and keys past N_CTX must be
    masked out of P, not merely multiplied by their zero K. Compared by the
    relative Frobenius error, with room for the rounding of dS to fp16
    before dQ = dS K: the rows of dS sum to zero, so K's large common
    direction cancels from dQ, but the rounding errors of dS do not (1.6%
    against float64 with the same roundings)."""
    z, h, n_ctx, head_dim = 1, 2, 40, 16
    generator = torch.Generator().manual_seed(11)
    direction = torch.randn(head_dim, generator=generator)
    direction *= head_dim ** 0.5 / direction.norm()
    noise = [0.1 * torch.randn(z, h, n_ctx, head_dim, generator=generator) for _ in range(4)]
    q = (4 * direction + noise[0]).half().to(arrays.device)
    k = (-4 * direction + noise[1]).half().to(arrays.device)
    v, do = (10 * x.half().to(arrays.device) for x in noise[2:])
    out, m = attention_kernels.forward(q, k, v, causal, 1.0, 16, 16)
    grads = attention_kernels.backward(q, k, v, out, m, do, causal, 1.0, (16, 16), (16, 16))
    expected = attention_kernels.reference(q, k, v, causal, 1.0, do)
    assert expected[1].max() < -300
    assert_m_close(m, expected[1])
    for name, result, reference in zip(("O", "dQ", "dK", "dV"), (out,) + grads, expected[:1] + expected[2:]):
        error = ((result.cpu().double() - reference.cpu()).norm() / reference.norm()).item()
        assert error < 4e-2, f"{name}: relative error {error:.3g}"
