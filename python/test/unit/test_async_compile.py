"""kiln.AsyncCompileMode and kiln.FutureKernel (Triton's async compilation):
warmups inside the mode compile in the executor and return futures, a
launch waits for its kernel, compile errors reach result() and the end of
the block; and the Triton 3.6 names that the alias must provide."""

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.errors import CompilationError


@kiln.jit
def double_kernel(x_ptr, y_ptr, N: kl.constexpr):
    offs = kl.arange(0, N)
    kl.store(y_ptr + offs, kl.load(x_ptr + offs) * 2)


@kiln.jit
def broken_kernel(x_ptr, N: kl.constexpr):
    kl.store(x_ptr + kl.arange(0, N), undefined_name)  # noqa: F821


class _CountingExecutor(ThreadPoolExecutor):
    """Counts the compilations submitted to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted = 0

    def submit(self, fn, *args, **kwargs):
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def test_warmup_returns_a_future_compiled_in_the_executor():
    x = torch.arange(16, dtype=torch.float32)
    y = torch.zeros(16)
    with _CountingExecutor() as executor:
        with kiln.AsyncCompileMode(executor):
            future = double_kernel.warmup(x, y, 16, grid=(1,), backend="cpu")
            again = double_kernel.warmup(x, y, 16, grid=(1,), backend="cpu")
            assert isinstance(future, kiln.FutureKernel)
            assert again is future  # one compilation per specialization
            compiled = future.result()
            assert isinstance(compiled, kiln.CompiledKernel)
            # A launch in the mode waits for its kernel (here compiled already).
            double_kernel[(1,)](x, y, 16, backend="cpu")
        assert executor.submitted == 1
    assert torch.equal(y, x * 2)
    # Out of the mode, warmup compiles (or finds) the kernel at once.
    assert isinstance(double_kernel.warmup(x, y, 16, grid=(1,), backend="cpu"), kiln.CompiledKernel)


def test_launch_inside_the_mode_waits_for_compilation():
    x = torch.arange(32, dtype=torch.float32)
    y = torch.zeros(32)
    with ThreadPoolExecutor(1) as executor, kiln.AsyncCompileMode(executor):
        double_kernel[(1,)](x, y, 32, backend="cpu")
    assert torch.equal(y, x * 2)


def test_compile_errors_reach_result_and_the_end_of_the_block():
    x = torch.zeros(16)
    with ThreadPoolExecutor(1) as executor:
        with pytest.raises(CompilationError, match="undefined_name"):
            with kiln.AsyncCompileMode(executor):
                future = broken_kernel.warmup(x, 16, grid=(1,), backend="cpu")
        with pytest.raises(CompilationError, match="undefined_name"):
            future.result()
        assert future.result(ignore_errors=True) is None
        with kiln.AsyncCompileMode(executor, ignore_errors=True):
            broken_kernel.warmup(x, 16, grid=(1,), backend="cpu")


def test_one_mode_at_a_time():
    with ThreadPoolExecutor(1) as executor, kiln.AsyncCompileMode(executor):
        with pytest.raises(RuntimeError, match="already active"):
            with kiln.AsyncCompileMode(executor):
                pass


def test_triton_36_names_through_the_alias(monkeypatch):
    import sys

    import kiln.compat

    # The alias is undone afterwards (the meta path restored, the triton
    # names dropped): under it dtype reprs read triton.language.<name>, which
    # other tests of this process do not expect.
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    for name in [name for name in sys.modules if name == "triton" or name.startswith("triton.")]:
        monkeypatch.delitem(sys.modules, name)
    kiln.compat.install()
    import triton
    import triton.language as tl
    import triton.language.target_info as target_info

    assert triton.AsyncCompileMode is kiln.AsyncCompileMode and triton.FutureKernel is kiln.FutureKernel
    for name in ("condition", "map_elementwise", "reduce_or", "slice", "target_info"):
        assert getattr(tl, name) is getattr(kl, name)
    assert target_info is kl.target_info
    assert tl.slice(1, None, 2).to_python() == slice(1, None, 2)
    for name in [name for name in sys.modules if name == "triton" or name.startswith("triton.")]:
        del sys.modules[name]


def test_target_info_outside_kernels_follows_the_active_driver(monkeypatch):
    monkeypatch.setenv("KILN_BACKEND", "cpu")
    assert kl.target_info.current_target().backend == "cpu"
    assert not kl.target_info.is_cuda() and not kl.target_info.is_hip()
    assert not kl.target_info.cuda_capability_geq(7, 0)
    assert kl.target_info.target_of("sm_80").arch == 80


@kiln.jit
def condition_outside_while_kernel(x_ptr, n):
    if kl.condition(n > 0):
        kl.store(x_ptr, n)


def test_condition_outside_a_while_is_an_error():
    with pytest.raises(CompilationError, match="can only be the test of a while loop"):
        kiln.compile(condition_outside_while_kernel, {"x_ptr": "*i32", "n": "i32"}, {}, target="cpu")
