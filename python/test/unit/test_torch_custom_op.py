"""kiln.torch: Kiln kernels as torch.library operators, for torch.compile.

The skipping of launches runs everywhere; the operator tests need torch 2.4
or later (torch.library.custom_op) and run on the CPU backend, and on the
GPU where there is one."""

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl
import kiln.torch as ktorch

HAS_CUSTOM_OP = hasattr(getattr(torch, "library", None), "custom_op")
needs_custom_op = pytest.mark.skipif(not HAS_CUSTOM_OP, reason=f"torch {torch.__version__} has no "
                                     "torch.library.custom_op (2.4 or later)")
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@kiln.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, alpha * kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask),
             mask=mask)


#: The same kernel, autotuned over its block size.
tuned_add_kernel = kiln.autotune(configs=[kiln.Config({"BLOCK": 64}), kiln.Config({"BLOCK": 128})],
                                 key=["n"])(kiln.jit(scaled_add_kernel.fn))


def launch_scaled_add(x, y, alpha):
    out = torch.empty_like(x)
    n = x.numel()
    scaled_add_kernel[(kiln.cdiv(n, 128),)](x, y, out, n, alpha, BLOCK=128)
    return out


def test_skipping_launches_launches_nothing():
    x = torch.randn(300, generator=torch.Generator().manual_seed(1))
    out = torch.full_like(x, float("nan"))
    with ktorch.skipping_launches():
        assert ktorch.launches_skipped()
        assert scaled_add_kernel[(3,)](x, x, out, 300, 2.0, BLOCK=128) is None
        assert tuned_add_kernel[lambda meta: (kiln.cdiv(300, meta["BLOCK"]),)](x, x, out, 300, 2.0) is None
    assert not ktorch.launches_skipped()
    assert torch.isnan(out).all()
    scaled_add_kernel[(3,)](x, x, out, 300, 2.0, BLOCK=128)
    np.testing.assert_allclose(out.numpy(), 3.0 * x.numpy().astype(np.float64), rtol=1e-6)


@pytest.mark.skipif(HAS_CUSTOM_OP, reason="this torch has torch.library.custom_op")
def test_custom_op_needs_torch_2_4():
    with pytest.raises(RuntimeError, match=r"kiln.torch.custom_op needs torch 2.4 or later"):
        ktorch.custom_op("kiln_test::nothing", lambda x: x, mutates_args=())


if HAS_CUSTOM_OP:
    @ktorch.custom_op("kiln_test::scaled_add", mutates_args=())
    def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
        return launch_scaled_add(x, y, alpha)

    def _scaled_add_backward(ctx, grad):
        return scaled_add(grad, torch.zeros_like(grad), ctx.alpha), grad, None

    def _scaled_add_setup(ctx, inputs, output):
        ctx.alpha = inputs[2]

    scaled_add.register_autograd(_scaled_add_backward, setup_context=_scaled_add_setup)


def random_pair(n, device, seed):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(n, generator=generator).to(device), torch.randn(n, generator=generator).to(device))


@needs_custom_op
@pytest.mark.parametrize("device", DEVICES)
def test_operator_runs_eagerly(device):
    x, y = random_pair(1000, device, 3)
    out = scaled_add(x, y, 0.5)
    expected = 0.5 * x.cpu().double() + y.cpu().double()
    np.testing.assert_allclose(out.cpu().double().numpy(), expected.numpy(), rtol=1e-6, atol=1e-6)


@needs_custom_op
@pytest.mark.parametrize("device", DEVICES)
def test_compiled_once_without_graph_break(device):
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("aot_eager")

    def step(x, y):
        return torch.relu(scaled_add(x, y, 2.0)) * 3.0

    compiled = torch.compile(step, backend=counter, fullgraph=True)
    for seed in range(3):
        x, y = random_pair(777, device, 10 + seed)
        out = compiled(x, y)
        expected = torch.relu(2.0 * x.cpu().double() + y.cpu().double()) * 3.0
        np.testing.assert_allclose(out.cpu().double().numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    assert counter.frame_count == 1


@needs_custom_op
@pytest.mark.parametrize("device", DEVICES)
def test_autograd_through_the_operator(device):
    x, y = random_pair(500, device, 21)
    x.requires_grad_(True)
    y.requires_grad_(True)
    loss = (scaled_add(x, y, 1.5) ** 2).sum()
    loss.backward()
    reference = 1.5 * x.detach().cpu().double() + y.detach().cpu().double()
    np.testing.assert_allclose(x.grad.cpu().double().numpy(), (2 * 1.5 * reference).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y.grad.cpu().double().numpy(), (2 * reference).numpy(), rtol=1e-5, atol=1e-5)


@needs_custom_op
def test_inductor_calls_the_operator_on_the_gpu():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    x, y = random_pair(4096, "cuda", 31)
    compiled = torch.compile(lambda a, b: scaled_add(a, b, -1.0).sum(), fullgraph=True)
    expected = (-x.cpu().double() + y.cpu().double()).sum()
    assert abs(compiled(x, y).item() - expected.item()) < 1e-3
