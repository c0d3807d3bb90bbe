"""What Triton's own tests import besides the kernel language:
``triton._internal_testing`` (kiln.compat.internal_testing), ``triton.knobs``,
``triton.runtime._allocation``, the error modules and the top-level names,
and the pytest plugin that maps ``--device cpu`` onto Kiln's CPU backend."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl
from kiln import knobs

from kiln_test_support import kiln_search_path
from kiln.compat import internal_testing as it
from kiln.errors import CompilationError, CompileTimeAssertionFailure, KilnError
from kiln.runtime import _allocation

PYTHON_DIR = kiln_search_path()


@pytest.fixture
def cpu_backend(monkeypatch):
    """The active driver is the CPU backend's, whatever the machine has."""
    monkeypatch.setenv("KILN_BACKEND", "cpu")


# -- device queries ------------------------------------------------------------------


def test_device_queries_answer_for_the_cpu_backend(cpu_backend):
    target = it.get_current_target()
    assert (target.backend, target.arch) == ("cpu", "host")
    assert not it.is_interpreter()
    for query in (it.is_cuda, it.is_hip, it.is_xpu, it.is_hopper, it.is_hopper_or_newer, it.is_ampere_or_newer,
                  it.is_blackwell, it.is_sm12x, it.is_hip_cdna, it.is_hip_cdna2, it.is_hip_cdna3, it.is_hip_cdna4,
                  it.is_hip_gfx11, it.is_hip_gfx12, it.is_hip_gfx1250):
        assert query() is False, query.__name__
    assert it.get_arch() == "host"
    assert it.get_hip_lds_size() == 65536
    # Tensor descriptors and warp_specialize= run on the CPU backend.
    assert it.supports_tma() and it.supports_tma(byval_only=True) and it.supports_ws()


@pytest.mark.parametrize("arch, answers", [
    (80, {"is_cuda", "is_ampere_or_newer"}),
    (90, {"is_cuda", "is_ampere_or_newer", "is_hopper_or_newer", "is_hopper", "supports_tma", "supports_ws"}),
    (100, {"is_cuda", "is_ampere_or_newer", "is_hopper_or_newer", "is_blackwell", "supports_tma", "supports_ws"}),
    (120, {"is_cuda", "is_ampere_or_newer", "is_hopper_or_newer", "is_sm12x", "supports_tma", "supports_ws"}),
])
def test_device_queries_follow_a_cuda_target(monkeypatch, arch, answers):
    monkeypatch.setattr(kiln.runtime.driver.active, "get_current_target",
                        lambda: kiln.runtime.driver.GPUTarget("cuda", arch, 32))
    names = ("is_cuda", "is_ampere_or_newer", "is_hopper_or_newer", "is_hopper", "is_blackwell", "is_sm12x",
             "is_hip", "supports_tma", "supports_ws")
    assert {name for name in names if getattr(it, name)()} == answers
    assert it.get_arch() == str(arch)


def test_hip_queries_follow_a_hip_target(monkeypatch):
    monkeypatch.setattr(kiln.runtime.driver.active, "get_current_target",
                        lambda: kiln.runtime.driver.GPUTarget("hip", "gfx950", 64))
    assert it.is_hip() and it.is_hip_cdna() and it.is_hip_cdna4() and not it.is_hip_cdna3()
    assert not it.is_cuda() and not it.supports_tma()
    assert it.get_hip_lds_size() == 160 * 1024


# -- dtypes and data -------------------------------------------------------------------


def test_dtype_lists():
    assert it.integral_dtypes == it.int_dtypes + it.uint_dtypes
    assert it.dtypes_with_bfloat16 == it.dtypes + ["bfloat16"]
    assert "float64" not in it.tma_dtypes and "bfloat16" in it.tma_dtypes
    # Every listed name is a dtype the kernel language has.
    for name in it.dtypes_with_bfloat16 + it.torch_float8_dtypes + ["bool"]:
        assert isinstance(it.str_to_triton_dtype(name), kl.dtype)


@pytest.mark.parametrize("name, expected", [
    ("int32", kl.int32), ("uint16", kl.uint16), ("bool", kl.int1), ("bfloat16", kl.bfloat16),
    ("float16", kl.float16), ("float8_e5m2", kl.float8e5), ("float8e4nv", kl.float8e4nv), ("fp32", kl.float32),
])
def test_str_to_triton_dtype(name, expected):
    assert it.str_to_triton_dtype(name) == expected


def test_str_to_triton_dtype_rejects_unknown_names():
    with pytest.raises(ValueError, match="no Kiln dtype is called 'complex64'"):
        it.str_to_triton_dtype("complex64")


def test_torch_dtype_name():
    assert it.torch_dtype_name(torch.int64) == "int64"
    assert it.torch_dtype_name(torch.bfloat16) == "bfloat16"
    assert it.torch_dtype_name(kl.uint8) == "uint8"
    assert it.torch_dtype_name(kl.float16) == "fp16"
    with pytest.raises(TypeError, match="not a kernel-language or torch dtype"):
        it.torch_dtype_name("int32")


@pytest.mark.parametrize("dtype", it.integral_dtypes)
def test_numpy_random_integers_cover_the_range_but_never_zero(dtype):
    x = it.numpy_random((64, 64), dtype)
    assert x.dtype == np.dtype(dtype) and x.shape == (64, 64)
    assert not (x == 0).any()
    assert np.array_equal(x, it.numpy_random((64, 64), dtype))  # reproducible
    bounded = it.numpy_random(1000, dtype, low=-5, high=5)
    info = np.iinfo(dtype)
    assert bounded.min() >= max(-5, info.min) and bounded.max() < 5


def test_numpy_random_floats_and_others():
    rs = np.random.RandomState(3)
    a, b = it.numpy_random(256, "float32", rs=rs), it.numpy_random(256, "float32", rs=rs)
    assert a.dtype == np.float32 and not np.array_equal(a, b)  # a shared rs draws new values
    bf16 = it.numpy_random(256, "bfloat16")
    assert bf16.dtype == np.float32 and not (bf16.view(np.uint32) & 0xFFFF).any()
    assert torch.equal(torch.from_numpy(bf16).bfloat16().float(), torch.from_numpy(bf16))
    fp8 = it.numpy_random(256, "float8_e4m3fn")
    assert fp8.dtype == np.int8 and fp8.min() >= 20 and fp8.max() < 40
    assert it.numpy_random(16, "bool").dtype == np.bool_
    with pytest.raises(ValueError, match="unknown dtype 'complex64'"):
        it.numpy_random(4, "complex64")


def test_to_triton_and_back():
    x = it.numpy_random(32, "float32")
    t = it.to_triton(x, device="cpu")
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
    assert np.array_equal(it.to_numpy(t), x)
    bf = it.to_triton(it.numpy_random(32, "bfloat16"), device="cpu", dst_type="bfloat16")
    assert bf.dtype == torch.bfloat16 and it.to_numpy(bf).dtype == np.float32
    assert it.unwrap_tensor(t) is t
    with pytest.raises(ValueError, match="not a tensor a kernel takes: list"):
        it.to_numpy([1, 2])


def test_unsigned_and_float8_arrays_become_reinterpreted_tensors():
    x = np.array([1, 65535, 32768], dtype=np.uint16)
    t = it.to_triton(x, device="cpu")
    assert isinstance(t, kiln.TensorWrapper) and t.dtype == kl.uint16
    assert t.base.dtype == torch.int16 and t.base.tolist() == [1, -1, -32768]  # the same bits, signed
    back = it.to_numpy(t)
    assert back.dtype == np.uint16 and np.array_equal(back, x)
    assert it.unwrap_tensor(t) is t.base
    f8 = it.to_triton(it.numpy_random(8, "float8e5"), device="cpu", dst_type="float8e5")
    assert isinstance(f8, kiln.TensorWrapper) and f8.dtype == kl.float8e5 and f8.base.dtype == torch.int8


def test_default_alloc_fn_allocates_on_the_active_device(cpu_backend):
    buffer = it.default_alloc_fn(100, 16, None)
    assert buffer.dtype == torch.int8 and buffer.numel() == 100 and buffer.device.type == "cpu"


# -- knobs ------------------------------------------------------------------------------


def test_cache_dir_knob_is_kiln_cache_dir(monkeypatch, tmp_path):
    from kiln.runtime import disk_cache

    monkeypatch.delenv("KILN_CACHE_DIR", raising=False)
    monkeypatch.delenv("KILN_DISABLE_CACHE", raising=False)
    assert knobs.cache.dir == disk_cache.cache_dir()
    with knobs.cache.scope():
        knobs.cache.dir = str(tmp_path)
        assert os.environ["KILN_CACHE_DIR"] == str(tmp_path) and disk_cache.cache_dir() == str(tmp_path)
        knobs.cache.disable = True
        assert disk_cache.cache_dir() is None
    assert "KILN_CACHE_DIR" not in os.environ and "KILN_DISABLE_CACHE" not in os.environ


def test_bool_knobs_parse_the_environment(monkeypatch):
    monkeypatch.setenv("KILN_DEBUG", "yes")
    assert knobs.runtime.debug is True
    monkeypatch.setenv("KILN_DEBUG", "maybe")
    with pytest.raises(ValueError, match="KILN_DEBUG='maybe' is not a boolean"):
        knobs.runtime.debug


def test_unsupported_knobs_refuse_values_kiln_cannot_honour():
    assert knobs.runtime.launch_enter_hook is None and knobs.language.fp32_default is None
    knobs.runtime.launch_enter_hook = None  # the default: accepted
    knobs.language.fp32_default = None
    with pytest.raises(knobs.KnobNotSupported, match=r"knobs.runtime.launch_enter_hook cannot be set .*no hooks"):
        knobs.runtime.launch_enter_hook = lambda *a, **k: None
    with pytest.raises(knobs.KnobNotSupported, match="knobs.runtime.interpret cannot be set to True"):
        knobs.runtime.interpret = True
    assert isinstance(knobs.KnobNotSupported("x"), kiln.TritonError)


def test_fresh_knobs_impl_resets_and_restores(monkeypatch, tmp_path):
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KILN_DEBUG", raising=False)
    original_runtime = knobs.runtime
    fresh, reset = it._fresh_knobs_impl(skipped_attr={"autotuning"})
    fresh_knobs = fresh()
    assert fresh_knobs is knobs and knobs.runtime is not original_runtime
    assert "KILN_CACHE_DIR" not in os.environ and knobs.propagate_env is True
    knobs.runtime.debug = True
    assert os.environ["KILN_DEBUG"] == "1"
    reset()
    assert knobs.runtime is original_runtime and knobs.propagate_env is False
    assert os.environ["KILN_CACHE_DIR"] == str(tmp_path) and "KILN_DEBUG" not in os.environ
    assert {"cache", "runtime", "language", "autotuning"} <= set(vars(knobs))


# -- allocator, errors, top-level names ----------------------------------------------------


def test_set_allocator_is_recorded_and_used():
    assert isinstance(_allocation.get_allocator(), _allocation.NullAllocator)
    with pytest.raises(RuntimeError, match="no allocator was set"):
        _allocation.allocate(64, 16, None)
    with pytest.raises(TypeError, match="set_allocator expects a callable"):
        kiln.set_allocator(42)
    try:
        kiln.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
        assert _allocation.allocate(64, 16, None).numel() == 64
    finally:
        kiln.set_allocator(_allocation.NullAllocator())
    assert isinstance(_allocation.get_allocator(), _allocation.NullAllocator)


def test_allocate_checks_the_buffer():
    try:
        kiln.set_allocator(lambda size, align, stream: object())
        with pytest.raises(TypeError, match="has no data_ptr"):
            _allocation.allocate(64, 16, None)

        class Odd:
            def data_ptr(self):
                return 0x1001

        kiln.set_allocator(lambda size, align, stream: Odd())
        with pytest.raises(ValueError, match="not aligned to 16 bytes"):
            _allocation.allocate(64, 16, None)
    finally:
        kiln.set_allocator(_allocation.NullAllocator())


def test_error_modules_and_top_level_names():
    from kiln.compiler import errors as compiler_errors
    from kiln.runtime import errors as runtime_errors

    assert compiler_errors.CompilationError is kiln.CompilationError
    assert issubclass(compiler_errors.CompileTimeAssertionFailure, kiln.CompilationError)
    assert issubclass(runtime_errors.InterpreterError, kiln.TritonError)
    assert kiln.TritonError is KilnError and issubclass(kiln.OutOfResources, kiln.TritonError)
    assert kiln.tools is sys.modules["kiln.tools"] and kiln.knobs is knobs
    for cls in (kiln.JITFunction, kiln.Autotuner, kiln.Heuristics):
        assert issubclass(cls, kiln.KernelInterface)
    assert kiln.runtime.jit.MockTensor is kiln.MockTensor


def test_kernel_interface_launches_through_run():
    class Wrapper(kiln.KernelInterface):
        def run(self, *args, grid, warmup, **kwargs):
            return (args, grid, warmup, kwargs)

    assert Wrapper()[(4, )](1, x=2) == ((1, ), (4, ), False, {"x": 2})


def test_mock_tensor_compiles_a_kernel_without_memory(cpu_backend):
    @kiln.jit
    def double(x_ptr, N: kl.constexpr):
        offs = kl.arange(0, N)
        kl.store(x_ptr + offs, kl.load(x_ptr + offs) * 2)

    mock = kiln.MockTensor(torch.float32, shape=[4, 8])
    assert mock.data_ptr() == 0 and mock.stride() == (8, 1) and mock.device.type == "cpu"
    assert kiln.MockTensor.wrap_dtype(torch.float16).dtype is torch.float16
    assert kiln.MockTensor.wrap_dtype(3) == 3
    compiled = double.warmup(mock, N=16, grid=(1, ))
    assert compiled.metadata["backend"] == "cpu" and "f32" in compiled.asm["kiln"]


# -- language names the tests use ---------------------------------------------------------


def test_static_assert_raises_compile_time_assertion_failure(build_ir):
    @kiln.jit
    def kernel():
        kl.static_assert(1 == 2, "one is not two")

    with pytest.raises(CompileTimeAssertionFailure, match="static_assert failed: one is not two") as info:
        build_ir(kernel, {})
    assert info.value.filename == __file__ and "kl.static_assert" in info.value.source_line


@kiln.must_use_result("Keep it.")
@kiln.jit
def cube(x):
    return x * x * x


@kiln.must_use_result
@kiln.jit
def square(x):
    return x * x


def test_must_use_result(build_ir):
    @kiln.jit
    def uses(out):
        a = cube(kl.full((16, ), 2.0, kl.float32))
        kl.store(out + kl.arange(0, 16), a + square(a))

    @kiln.jit
    def drops_cube():
        cube(kl.full((16, ), 2.0, kl.float32))

    @kiln.jit
    def drops_square():
        square(kl.full((16, ), 2.0, kl.float32))

    build_ir(uses, {"out": "*fp32"})
    with pytest.raises(CompilationError, match=r"The result of cube is not being used\. Keep it\.") as info:
        build_ir(drops_cube, {})
    assert "cube(kl.full" in info.value.source_line
    with pytest.raises(CompilationError, match=r"The result of square is not being used\.$"):
        build_ir(drops_square, {})
    with pytest.raises(TypeError, match="must_use_result marks a @kiln.jit function"):
        kiln.must_use_result(len)


def test_triton_dtype_name_lists_and_other_fp8_formats(build_ir):
    names = kl.dtype.SINT_TYPES + kl.dtype.UINT_TYPES + kl.dtype.STANDARD_FP_TYPES + kl.dtype.FP_TYPES
    assert all(isinstance(kl.dtype(name), kl.dtype) for name in names)
    assert kl.float8e4b15.primitive_bitwidth == 8 and repr(kl.float8e5b16) == "kl.float8e5b16"

    @kiln.jit
    def kernel(out):
        kl.store(out + kl.arange(0, 16), kl.full((16, ), 0.0, kl.float8e4b8).to(kl.float32))

    with pytest.raises(CompilationError, match="type fp8e4b8 is not supported in this architecture"):
        build_ir(kernel, {"out": "*fp32"})


# -- the pytest plugin ---------------------------------------------------------------------


def test_device_cpu_option_selects_the_cpu_backend(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        def pytest_addoption(parser):
            parser.addoption("--device", action="store", default="cuda")
    """))
    (tmp_path / "test_target.py").write_text(textwrap.dedent("""
        import os
        from triton._internal_testing import get_arch, is_cuda

        def test_target():
            print("TARGET", os.environ.get("KILN_BACKEND"), is_cuda(), get_arch())
    """))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    env.pop("KILN_BACKEND", None)
    result = subprocess.run([sys.executable, "-m", "kiln.compat", "-m", "pytest", "-q", "-s", "-p",
                             "no:cacheprovider", "--device", "cpu", "test_target.py"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "TARGET cpu False host" in result.stdout

