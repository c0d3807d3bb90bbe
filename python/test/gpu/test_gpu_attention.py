"""GPU-only attention tests: the FlashAttention-2 kernels of
attention_kernels.py at the sizes and block shapes the tensor cores run
(head dimensions 64 and 128, blocks of 64 and 128 rows, 4 and 8 warps,
2 and 3 stages, the configurations bench/attention.py tunes over), forward
and backward, causal and not, fp16 and bf16, sequence lengths that are not
multiples of the blocks. Against attention computed in float64 on the GPU
by its definition (autograd for the gradients), on fresh random inputs,
with every output poisoned with NaN first. The same kernels at small sizes
on every backend: ../kernels/test_attention.py."""

import math

import pytest
import torch

import attention_kernels
import kiln
from attention_kernels import assert_close

# (BLOCK_M, BLOCK_N, num_warps, num_stages) of the forward kernel.
FORWARD_CONFIGS = [(128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3), (64, 128, 4, 3)]

# The backward kernels' (BLOCK_M, BLOCK_N) for dK/dV and for dQ, num_warps, num_stages.
BACKWARD_CONFIGS = [((32, 64), (64, 32), 4, 3), ((64, 128), (128, 64), 8, 2)]

# float32 M: the only error is that of exp2, log2 and the float32 sums.
M_TOLERANCE = 1e-3


def random_operands(shape, dtype, seed):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn(shape, device="cuda", generator=generator).to(dtype) for _ in range(4)]


def check_forward(dtype, causal, head_dim, config, n_ctx, seed, **forward_options):
    """Runs `attention_kernels.forward` (with `forward_options`) on fresh
    [2, 3, n_ctx, head_dim] operands into NaN-poisoned outputs and checks O
    and M against the float64 definition."""
    block_m, block_n, num_warps, num_stages = config
    q, k, v, _ = random_operands((2, 3, n_ctx, head_dim), dtype, seed=seed)
    sm_scale = head_dim ** -0.5
    out = torch.full_like(q, math.nan)
    m = torch.full((6, n_ctx), math.nan, device="cuda")
    attention_kernels.forward(q, k, v, causal, sm_scale, block_m, block_n, num_warps, num_stages, out=out, m=m,
                              **forward_options)
    expected_out, expected_m = attention_kernels.reference(q, k, v, causal, sm_scale)
    assert_close("O", out, expected_out, dtype)
    assert not m.isnan().any(), "M: some rows were not written"
    assert (m.double() - expected_m).abs().max().item() <= M_TOLERANCE


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("config", FORWARD_CONFIGS, ids=lambda c: "m{}-n{}-w{}-s{}".format(*c))
def test_forward(dtype, causal, head_dim, config):
    # 1000: a partial last block for every BLOCK_M and BLOCK_N.
    check_forward(dtype, causal, head_dim, config, 1000, seed=head_dim + config[0] + config[1])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("config", FORWARD_CONFIGS, ids=lambda c: "m{}-n{}-w{}-s{}".format(*c))
def test_forward_descriptors(dtype, causal, head_dim, config):
    """The forward through tensor descriptors made in the kernel (K read as
    `desc_k.load().T`, copied into its slot as loaded)."""
    check_forward(dtype, causal, head_dim, config, 1000, seed=3 * head_dim + config[0] + config[1],
                  kernel=attention_kernels.attention_forward_descriptors)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("config", FORWARD_CONFIGS, ids=lambda c: "m{}-n{}-w{}-s{}".format(*c))
def test_forward_host_descriptors(dtype, causal, head_dim, config):
    """The descriptor forward given host descriptors (N_CTX a multiple of
    every block): on sm_90a the TMA unit copies K (transposed into a
    K-major slot) and V."""
    check_forward(dtype, causal, head_dim, config, 1024, seed=5 * head_dim + config[0] + config[1],
                  kernel=attention_kernels.attention_forward_descriptors, host_descriptors=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("n_ctx", [1024, 4096])
@pytest.mark.parametrize("config", [c for c in FORWARD_CONFIGS if c[2] == 8],
                         ids=lambda c: "m{}-n{}-w{}-s{}".format(*c))
def test_forward_warp_specialized(dtype, head_dim, n_ctx, config):
    """The host-descriptor forward with `warp_specialize=True`: a producer
    warpgroup issues the TMA copies, the two consumer warpgroups release
    each slot after reading it (many rounds of the ring at 4096)."""
    check_forward(dtype, False, head_dim, config, n_ctx, seed=7 * head_dim + n_ctx + config[1],
                  kernel=attention_kernels.attention_forward_descriptors, host_descriptors=True,
                  warp_specialize=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("warp_specialize", [True, None], ids=["warp-specialized", "compiler-decides"])
@pytest.mark.parametrize("config", [(128, 128, 8, 2), (128, 64, 8, 3), (64, 64, 4, 3)],
                         ids=lambda c: "m{}-n{}-w{}-s{}".format(*c))
def test_forward_whole_descriptors_made_in_the_kernel(dtype, causal, head_dim, warp_specialize, config):
    """Tutorial 06 on Hopper with warp_specialize=True: descriptors made in
    the kernel over the whole [Z * H * N_CTX, HEAD_DIM] arrays, whose tensor
    maps the launcher encodes from the launch's arguments (K and V copied
    by the TMA unit), Out stored through its descriptor."""
    check_forward(dtype, causal, head_dim, config, 2048, seed=11 * head_dim + config[1] + causal,
                  kernel=attention_kernels.attention_forward_whole_descriptors, warp_specialize=warp_specialize)


def loaded_kernels(kernel):
    """The kernels `kernel` (a JITFunction) has compiled and loaded."""
    return [loaded.kernel for per_device in kernel.cache.values() for loaded in per_device.values()]


@pytest.mark.skipif(torch.cuda.is_available() and torch.cuda.get_device_capability() < (9, 0),
                    reason="tensor maps need sm_90a")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("layout", attention_kernels.LAYOUTS)
@pytest.mark.parametrize("config", [(128, 64, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3)],
                         ids=lambda c: "m{}-n{}-w{}-s{}".format(*c))
def test_forward_pointer_tensor_maps(monkeypatch, dtype, causal, head_dim, layout, config):
    """The plain forward compiled with KILN_POINTER_TENSOR_MAPS: its loop's
    K and V pointer loads get guarded tensor maps. Contiguous operands and
    tokens-outer ones (each head at a column of the maps' rows) read through
    the maps; padded heads fail the program's check and read through the
    pointers. Both against the float64 definition."""
    monkeypatch.setenv("KILN_POINTER_TENSOR_MAPS", "1")
    # A kernel of its own: the variable is read when a kernel is compiled.
    kernel = kiln.jit(attention_kernels.attention_forward.fn)
    block_m, block_n, num_warps, num_stages = config
    n_ctx = 1024  # a multiple of every block: the loads are not masked
    q, k, v, out = (attention_kernels.with_layout(array, layout)
                    for array in random_operands((2, 3, n_ctx, head_dim), dtype, seed=13 * head_dim + config[1]))
    out.fill_(math.nan)
    sm_scale = head_dim ** -0.5
    m = torch.full((6, n_ctx), math.nan, device="cuda")
    attention_kernels.forward(q, k, v, causal, sm_scale, block_m, block_n, num_warps, num_stages, kernel=kernel,
                              out=out, m=m)
    (compiled,) = loaded_kernels(kernel)
    recipes = compiled.metadata.get("derived_tensor_maps", [])
    assert [(recipe["base"], recipe.get("guarded")) for recipe in recipes] == [(1, True), (2, True)]  # K, V
    expected_out, expected_m = attention_kernels.reference(q, k, v, causal, sm_scale)
    assert_close("O", out, expected_out, dtype)
    assert not m.isnan().any(), "M: some rows were not written"
    assert (m.double() - expected_m).abs().max().item() <= M_TOLERANCE


@pytest.mark.parametrize("n_ctx", [1024, 777])
def test_forward_sequence_lengths(n_ctx):
    """A multiple of every block (no key masking) and an odd length."""
    q, k, v, _ = random_operands((1, 4, n_ctx, 128), torch.float16, seed=n_ctx)
    for causal in (False, True):
        out, _ = attention_kernels.forward(q, k, v, causal, 0.1, 128, 64, 8, 3)
        assert_close("O", out, attention_kernels.reference(q, k, v, causal, 0.1)[0], torch.float16)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("config", BACKWARD_CONFIGS, ids=["small-blocks", "large-blocks"])
def test_backward(dtype, causal, head_dim, config):
    """dQ, dK and dV from the kernels' own forward, against autograd of the
    float64 definition."""
    blocks_dkdv, blocks_dq, num_warps, num_stages = config
    n_ctx = 1000
    q, k, v, do = random_operands((2, 3, n_ctx, head_dim), dtype, seed=2 * head_dim + num_warps)
    sm_scale = head_dim ** -0.5
    out, m = attention_kernels.forward(q, k, v, causal, sm_scale, 128, 64, 4, 3)
    grads = attention_kernels.backward(q, k, v, out, m, do, causal, sm_scale, blocks_dkdv, blocks_dq,
                                       num_warps, num_stages)
    expected = attention_kernels.reference(q, k, v, causal, sm_scale, do)
    assert_close("O", out, expected[0], dtype)
    for name, result, reference in zip(("dQ", "dK", "dV"), grads, expected[2:]):
        assert_close(name, result, reference, dtype)
