"""The CPU backend end to end: kernels compiled for the host and run on its
thread pool, with numpy arrays, torch CPU tensors and the other array
protocols; backend overrides; checked mode with deliberately wrong kernels.

Every comparison is exact, on fresh random inputs, with outputs poisoned
beforehand so that an element the kernel skipped cannot pass.
"""

import inspect
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl
from kiln.errors import KilnError, OutOfBoundsError
from kiln.runtime import launch_settings


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """The environment variables under test start unset in every test."""
    for name in (launch_settings.BACKEND_ENV, launch_settings.CHECKED_ENV, launch_settings.THREADS_ENV):
        monkeypatch.delenv(name, raising=False)


@kiln.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    pid = kl.program_id(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


BLOCK = 1024
SIZES = [1, 17, 98432, 2**20 + 3]
TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "int32": torch.int32}
NUMPY_DTYPES = {"fp32": np.float32, "fp16": np.float16, "int32": np.int32}  # numpy has no bfloat16
INT_SENTINEL = 2**30 + 7


def torch_inputs(n, dtype, seed):
    generator = torch.Generator().manual_seed(seed)
    if dtype is torch.int32:
        x, y = (torch.randint(-(2**20), 2**20, (n,), dtype=dtype, generator=generator) for _ in range(2))
        return x, y, torch.full((n,), INT_SENTINEL, dtype=dtype)
    x, y = (torch.randn(n, generator=generator).to(dtype) for _ in range(2))
    return x, y, torch.full((n,), float("nan"), dtype=dtype)


def numpy_inputs(n, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype is np.int32:
        x, y = (rng.integers(-(2**20), 2**20, n, dtype=np.int32) for _ in range(2))
        return x, y, np.full(n, INT_SENTINEL, dtype=np.int32)
    x, y = (rng.standard_normal(n, dtype=np.float32).astype(dtype) for _ in range(2))
    return x, y, np.full(n, np.nan, dtype=dtype)


@pytest.mark.parametrize("dtype_name", list(TORCH_DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_vector_add_torch(n, dtype_name):
    x, y, out = torch_inputs(n, TORCH_DTYPES[dtype_name], seed=n)
    kernel = add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    assert kernel.metadata["backend"] == "cpu"
    assert torch.equal(out, x + y)


@pytest.mark.parametrize("dtype_name", list(NUMPY_DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_vector_add_numpy(n, dtype_name):
    x, y, out = numpy_inputs(n, NUMPY_DTYPES[dtype_name], seed=n + 1)
    add_kernel[(kiln.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, x + y, strict=True)


@pytest.mark.parametrize("num_threads", [1, 2])
def test_thread_counts(num_threads, monkeypatch):
    n = 2**16 + 5
    x, y, out = torch_inputs(n, torch.float32, seed=num_threads)
    add_kernel[(kiln.cdiv(n, 256),)](x, y, out, n, BLOCK=256, num_threads=num_threads)
    assert torch.equal(out, x + y)
    monkeypatch.setenv("KILN_CPU_THREADS", str(num_threads))
    out.fill_(float("nan"))
    add_kernel[(kiln.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    assert torch.equal(out, x + y)


def test_more_programs_than_elements_and_empty_grids():
    x, y, out = torch_inputs(100, torch.float32, seed=3)
    add_kernel[(50,)](x, y, out, 100, BLOCK=16)  # most programs are fully masked
    assert torch.equal(out, x + y)
    out.fill_(float("nan"))
    add_kernel[(0,)](x, y, out, 100, BLOCK=16)  # no program runs
    assert torch.isnan(out).all()


@kiln.jit
def masked_other_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=offs < n, other=-3))


@pytest.mark.parametrize("n", [0, 5, 64, 100])
def test_masked_loads_fill_other_and_stay_inside_the_mask(n, monkeypatch):
    # Checked mode would report any access outside x, masked lanes included.
    monkeypatch.setenv("KILN_CPU_CHECKED", "1")
    x = np.random.default_rng(n).integers(0, 1000, n, dtype=np.int32)
    out = np.full(128, INT_SENTINEL, dtype=np.int32)
    masked_other_kernel[(2,)](x, out, n, BLOCK=64)
    np.testing.assert_array_equal(out, np.concatenate([x, np.full(128 - n, -3, dtype=np.int32)]))


@kiln.jit
def grid_kernel(out_ptr, BLOCK: kl.constexpr):
    x, y, z = kl.program_id(0), kl.program_id(1), kl.program_id(2)
    nx, ny, nz = kl.num_programs(0), kl.num_programs(1), kl.num_programs(2)
    offs = ((z * ny + y) * nx + x) * BLOCK + kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.zeros((BLOCK,), dtype=kl.int32) + (x + 10 * y + 100 * z + 1000 * nx + 10000 * ny))


def test_back_to_back_launches_of_changing_sizes():
    """The pool's workers catch the next launch while they still spin: each
    launch sees its own programs and arguments, with every thread count."""
    for i in range(2000):
        n = 1 + (i * 7919) % 3000
        x = torch.full((n,), float(i))
        out = torch.full((n,), float("nan"))
        add_kernel[(kiln.cdiv(n, 64),)](x, torch.ones(n), out, n, BLOCK=64, num_threads=[1, 2, 0, 3][i % 4])
        assert torch.all(out == i + 1), (i, n)


@pytest.mark.parametrize("grid", [(5, 3), (2, 3, 4), (1, 6)])
@pytest.mark.parametrize("num_threads", [1, 2])
def test_two_and_three_dimensional_grids(grid, num_threads):
    nx, ny, nz = grid + (1,) * (3 - len(grid))
    out = np.full(nx * ny * nz * 4, -1, dtype=np.int32)
    grid_kernel[grid](out, BLOCK=4, num_threads=num_threads)
    expected = [x + 10 * y + 100 * z + 1000 * nx + 10000 * ny
                for z in range(nz) for y in range(ny) for x in range(nx) for _ in range(4)]
    assert out.tolist() == expected


# -- other array protocols ------------------------------------------------------


class InterfaceOnly:
    """Exposes host memory only through numpy's __array_interface__."""

    def __init__(self, array):
        self._array = array

    @property
    def __array_interface__(self):
        return self._array.__array_interface__


class DLPackOnly:
    """Exposes host memory only through the DLPack protocol."""

    def __init__(self, tensor):
        self._tensor = tensor

    def __dlpack__(self, stream=None):
        return self._tensor.__dlpack__()

    def __dlpack_device__(self):
        return self._tensor.__dlpack_device__()


def test_array_interface_and_dlpack_arguments():
    n = 3000
    x, y, out = torch_inputs(n, torch.bfloat16, seed=7)
    add_kernel[(kiln.cdiv(n, 512),)](DLPackOnly(x), DLPackOnly(y), DLPackOnly(out), n, BLOCK=512)
    assert torch.equal(out, x + y)
    a, b, c = numpy_inputs(n, np.float32, seed=8)
    add_kernel[(kiln.cdiv(n, 512),)](InterfaceOnly(a), b, InterfaceOnly(c), n, BLOCK=512)
    np.testing.assert_array_equal(c, a + b)


def test_numpy_and_torch_mix_on_the_cpu():
    n = 999
    x = np.arange(n, dtype=np.float32)
    y = torch.ones(n)
    out = np.zeros(n, dtype=np.float32)
    add_kernel[(1,)](x, y, out, n, BLOCK=1024)
    np.testing.assert_array_equal(out, x + 1)


# -- backend selection -------------------------------------------------------------


@kiln.jit
def fill_kernel(out_ptr, value, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.zeros((BLOCK,), dtype=kl.float32) + value)


def test_explicit_cpu_backend(monkeypatch):
    out = torch.zeros(32)
    fill_kernel[(2,)](out, 2.5, BLOCK=16, backend="cpu")
    assert out.tolist() == [2.5] * 32
    monkeypatch.setenv("KILN_BACKEND", "cpu")
    fill_kernel[(2,)](out, 4.0, BLOCK=16)
    assert out.tolist() == [4.0] * 32
    forced = kiln.jit(backend="cpu")(fill_kernel.fn)
    monkeypatch.setenv("KILN_BACKEND", "cuda")
    forced[(2,)](out, 5.0, BLOCK=16)  # the kernel's option beats the environment
    assert out.tolist() == [5.0] * 32


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error of a machine without a GPU")
def test_forcing_cuda_without_a_gpu():
    with pytest.raises(RuntimeError, match="^no CUDA device found"):
        fill_kernel[(1,)](torch.zeros(16), 1.0, BLOCK=16, backend="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA tensors")
def test_mixing_cpu_and_cuda_tensors():
    x = torch.zeros(16, device="cuda")
    with pytest.raises(ValueError, match="argument 'y_ptr' is on the CPU but argument 'x_ptr' is on cuda:0"):
        add_kernel[(1,)](x, torch.zeros(16), x, 16, BLOCK=16)


def test_cpu_error_messages():
    with pytest.raises(TypeError, match="argument 'x_ptr' has unsupported element type complex64"):
        add_kernel[(1,)](np.zeros(4, np.complex64), np.zeros(4, np.complex64), np.zeros(4, np.complex64), 4,
                         BLOCK=4)
    with pytest.raises(ValueError, match="num_threads must be a non-negative int"):
        add_kernel[(1,)](*torch_inputs(4, torch.float32, 0), 4, BLOCK=4, num_threads=-2)
    with pytest.raises(TypeError, match="argument 'n' has unsupported type str"):
        add_kernel[(1,)](*torch_inputs(4, torch.float32, 0), "4", BLOCK=4)


# -- checked mode -----------------------------------------------------------------


@kiln.jit(checked=True)
def overrun_load_kernel(x_ptr, out_ptr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs))  # BUG: no mask on the load


@kiln.jit(checked=True)
def overrun_store_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    value = kl.load(x_ptr + offs, mask=offs < n)
    kl.store(out_ptr + offs + 1, value, mask=offs < n)  # BUG: off by one


def line_of(kernel, marker):
    """The file line of the kernel's source line containing ``marker``."""
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if marker in line)


def test_checked_unmasked_load_past_the_end():
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros(1024, dtype=np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        overrun_load_kernel[(4,)](x, out, BLOCK=256)
    error = info.value
    assert isinstance(error, KilnError) and isinstance(error, IndexError)
    assert error.parameter == "x_ptr"
    assert 1000 <= error.index < 1024
    assert error.filename == __file__
    assert error.lineno == line_of(overrun_load_kernel, "BUG: no mask")
    message = str(error)
    assert message.startswith(f"{__file__}:{error.lineno}:")
    assert f"out-of-bounds load from 'x_ptr' at element index {error.index}" in message
    assert "kl.store(out_ptr + offs, kl.load(x_ptr + offs))" in message  # the source line is quoted
    # Nothing outside x was read into out: the in-bounds part is intact.
    np.testing.assert_array_equal(out[:768], x[:768])


def test_checked_store_past_the_end():
    n = 500
    x = torch.arange(n, dtype=torch.int32)
    guard = torch.full((n + 8,), -1, dtype=torch.int32)
    out = guard[:n]  # the element after out exists but is not out's
    with pytest.raises(OutOfBoundsError, match=r"out-of-bounds store to 'out_ptr' at element index 500\b") as info:
        overrun_store_kernel[(4,)](x, out, n, BLOCK=128)
    assert info.value.lineno == line_of(overrun_store_kernel, "BUG: off by one")
    assert guard[n:].tolist() == [-1] * 8  # the faulting store was skipped
    assert out[1:].tolist() == list(range(n - 1))


def test_checked_mode_from_the_environment(monkeypatch):
    @kiln.jit
    def unchecked_overrun(x_ptr, out_ptr, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        kl.store(out_ptr + offs, kl.load(x_ptr + offs))

    x = torch.arange(10, dtype=torch.float32)
    out = torch.zeros(16)
    monkeypatch.setenv("KILN_CPU_CHECKED", "1")
    with pytest.raises(OutOfBoundsError, match="out-of-bounds load from 'x_ptr' at element index 1[0-5]"):
        unchecked_overrun[(1,)](x, out, BLOCK=16)
    # A correct launch in checked mode runs normally.
    good = torch.zeros(16)
    unchecked_overrun[(1,)](out, good, BLOCK=16)
    assert torch.equal(good, out)


def test_checked_mode_message_from_a_fresh_process(tmp_path):
    # What a user sees: the kernel's file:line in the exception, from the
    # environment variable alone.
    script = tmp_path / "overrun.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import kiln
        import kiln.language as kl

        @kiln.jit
        def copy(x_ptr, out_ptr, BLOCK: kl.constexpr):
            offs = kl.arange(0, BLOCK)
            kl.store(out_ptr + offs, kl.load(x_ptr + offs))

        copy[(1,)](np.zeros(8, np.float32), np.zeros(16, np.float32), BLOCK=16)
    """))
    env = dict(os.environ, KILN_CPU_CHECKED="1", PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "kiln.errors.OutOfBoundsError: " in result.stderr
    assert f"{script}:9:30: out-of-bounds load from 'x_ptr' at element index 8" in result.stderr
    assert "out-of-bounds load from 'x_ptr' at element index" in result.stderr
