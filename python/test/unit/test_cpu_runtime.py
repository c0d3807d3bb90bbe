"""The Python side of the CPU backend, with the compiler and kiln._C.cpu faked.

Backend choice (arrays, launch option, kiln.jit option, KILN_BACKEND),
recognition of host arrays (torch, numpy, __array_interface__, __dlpack__),
what reaches Kernel.launch (codes, addresses, threads, bounds), checked mode
and its error. test_cpu_backend.py runs the same paths for real.
"""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from kiln.errors import KilnError, OutOfBoundsError
from kiln.runtime import arrays, driver, launch_settings
from kiln.runtime import jit as jit_module
from kiln.runtime.jit import jit


@jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: "kl.constexpr"):
    pass


@jit
def scalar_kernel(a, b):
    pass


@jit(backend="cpu", checked=True)
def checked_kernel(x_ptr, n):
    pass


class FakeCpuKernel:
    """kiln._C.cpu.Kernel: records launches, or raises the report it is given."""

    def __init__(self):
        self.launches = []
        self.report = None
        self.missing_features = []  # compiled for the host

    def launch(self, grid_x, grid_y, grid_z, codes, args, num_threads, bounds):
        self.launches.append(SimpleNamespace(grid=(grid_x, grid_y, grid_z), codes=codes, args=args,
                                             num_threads=num_threads, bounds=bounds))
        if self.report is not None:
            raise IndexError(self.report)


class FakeCompiler:
    def __init__(self, monkeypatch, gpu=False):
        self.compiles = []
        monkeypatch.setattr(jit_module, "_compile_jit_function", self.compile)
        monkeypatch.setattr(driver, "is_available", lambda: gpu)
        for kernel in (add_kernel, scalar_kernel, checked_kernel):
            monkeypatch.setattr(kernel, "cache", {})
            monkeypatch.setattr(kernel, "_compiled", {})
            monkeypatch.setattr(kernel, "_routes", {})
        for name in (launch_settings.BACKEND_ENV, launch_settings.CHECKED_ENV, launch_settings.ALL_CHECKED_ENV, launch_settings.THREADS_ENV,
                     launch_settings.CPU_TARGET_ENV):
            monkeypatch.delenv(name, raising=False)

    def compile(self, jit_fn, signature, constexprs, attrs, target, num_warps, num_stages, **options):
        assert target == "cpu", "these tests never reach the GPU"
        kernel = FakeCpuKernel()
        self.compiles.append(SimpleNamespace(signature=dict(signature), constexprs=dict(constexprs), attrs=attrs,
                                             options=options, kernel=kernel))
        return SimpleNamespace(name=jit_fn.__name__, asm={"llir": "; fake"}, cpu=kernel,
                               metadata={"backend": "cpu", "num_warps": num_warps})

    @property
    def last(self):
        return self.compiles[-1]

    @property
    def launch(self):
        return self.compiles[-1].kernel.launches[-1]


@pytest.fixture
def fake(monkeypatch):
    return FakeCompiler(monkeypatch)


class InterfaceArray:
    """Only numpy's __array_interface__ (as many C extensions expose)."""

    def __init__(self, array):
        self.array = array  # keeps the memory alive

    @property
    def __array_interface__(self):
        return self.array.__array_interface__


class DLPackArray:
    """Only the DLPack protocol, on the CPU."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


class CudaDLPackArray(DLPackArray):
    def __dlpack_device__(self):
        return (2, 0)


class FakeCudaTensor:
    def __init__(self, dtype=torch.float32):
        self.dtype = dtype

    def data_ptr(self):
        return 0x7F0000000000

    def get_device(self):
        return 0


# -- choosing the CPU ---------------------------------------------------------------


def test_cpu_tensors_run_on_the_cpu(fake):
    x, y, out = torch.zeros(64), torch.zeros(64), torch.zeros(64)
    kernel = add_kernel[(4, 2)](x, y, out, 64, BLOCK=16)
    assert kernel.metadata["backend"] == "cpu"
    assert fake.last.signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    assert fake.last.constexprs == {"BLOCK": 16}
    assert fake.last.options == {"checked": False, "cpu_target": "host"}
    launch = fake.launch
    # Constexprs are compiled in: only runtime parameters reach the launch.
    assert launch.codes == "pppi"
    assert launch.args == (x.data_ptr(), y.data_ptr(), out.data_ptr(), 64)
    assert launch.grid == (4, 2, 1)
    assert launch.num_threads == 0 and launch.bounds is None
    assert set(add_kernel.cache) == {"cpu"}


def test_same_key_does_not_recompile(fake):
    x, y, out = (torch.zeros(64) for _ in range(3))
    for n in (16, 32, 48):
        add_kernel[(1,)](x, y, out, n, BLOCK=16)
    assert len(fake.compiles) == 1 and len(fake.last.kernel.launches) == 3
    add_kernel[(1,)](x, y, out, 17, BLOCK=16)  # not divisible by 16
    add_kernel[(1,)](x, y, out, 16, BLOCK=16, backend="cpu")  # the option is part of the key ...
    assert len(add_kernel.cache["cpu"]) == 3
    assert len(fake.compiles) == 2  # ... but what is compiled is the same


def test_numpy_arrays(fake):
    x = np.arange(10, dtype=np.float16)
    y = np.ones(10, dtype=np.float16)
    out = np.empty(10, dtype=np.float16)
    add_kernel[(1,)](x, y, out, 10, BLOCK=16)
    assert fake.last.signature["x_ptr"] == "*fp16"
    assert fake.launch.args == (x.ctypes.data, y.ctypes.data, out.ctypes.data, 10)
    # numpy and torch arrays of the same dtype are different keys but one compile.
    add_kernel[(1,)](*(torch.zeros(10, dtype=torch.float16) for _ in range(3)), 10, BLOCK=16)
    assert len(add_kernel.cache["cpu"]) == 2


@pytest.mark.parametrize("dtype, code", [
    (np.float32, "*fp32"), (np.float64, "*fp64"), (np.int8, "*i8"), (np.int16, "*i16"), (np.int32, "*i32"),
    (np.int64, "*i64"), (np.uint8, "*u8"), (np.uint32, "*u32"), (np.bool_, "*i1"),
])
def test_numpy_type_codes(fake, dtype, code):
    scalar_kernel[(1,)](np.zeros(4, dtype=dtype), 0)
    assert fake.last.signature["a"] == code


def test_array_interface_and_dlpack_objects(fake):
    base = np.arange(8, dtype=np.int32)
    add_kernel[(1,)](InterfaceArray(base), DLPackArray(torch.zeros(8, dtype=torch.int32)), base, 8, BLOCK=8)
    assert fake.last.signature["x_ptr"] == fake.last.signature["y_ptr"] == "*i32"
    assert fake.launch.args[0] == base.ctypes.data and fake.launch.args[2] == base.ctypes.data
    bf16 = torch.zeros(8, dtype=torch.bfloat16)
    scalar_kernel[(1,)](DLPackArray(bf16), 1)
    assert fake.last.signature["a"] == "*bf16"
    assert fake.launch.args == (bf16.data_ptr(), 1)


def test_unsupported_arrays_name_the_parameter(fake):
    swapped = np.zeros(4, dtype=">f4") if np.little_endian else np.zeros(4, dtype="<f4")
    with pytest.raises(TypeError, match="argument 'a': byte-swapped array"):
        scalar_kernel[(1,)](InterfaceArray(swapped), 0)
    with pytest.raises(TypeError, match="argument 'b' has unsupported element type complex64"):
        scalar_kernel[(1,)](0, np.zeros(4, dtype=np.complex64))
    with pytest.raises(TypeError, match="argument 'a': unsupported array element type"):
        scalar_kernel[(1,)](InterfaceArray(np.zeros(4, dtype=np.complex64)), 0)
    assert fake.compiles == []


def test_numpy_scalars_are_values_not_arrays(fake):
    scalar_kernel[(1,)](np.float64(2.5), 1)  # a float subclass
    assert fake.last.signature == {"a": "fp32", "b": "i32"} and fake.launch.args == (2.5, 1)
    with pytest.raises(TypeError, match="argument 'b' has unsupported type int32"):
        scalar_kernel[(1,)](1, np.int32(3))


def test_kernel_without_arrays_runs_on_the_cpu_without_a_gpu(fake):
    scalar_kernel[(3,)](1, 2.5)
    assert fake.launch.codes == "if" and fake.launch.args == (1, 2.5)


# -- mixing and overrides ------------------------------------------------------------


def test_mixing_cpu_and_cuda_arrays(fake):
    with pytest.raises(ValueError, match="argument 'y_ptr' is on the CPU but argument 'x_ptr' is on cuda:0"):
        add_kernel[(1,)](FakeCudaTensor(), np.zeros(4, np.float32), FakeCudaTensor(), 4, BLOCK=4)
    with pytest.raises(ValueError, match="argument 'a' is on the CPU but argument 'b' is on cuda:0"):
        scalar_kernel[(1,)](torch.zeros(4), CudaDLPackArray(torch.zeros(4)))
    assert fake.compiles == []


def test_forced_backend_from_jit_option_and_environment(fake, monkeypatch):
    with pytest.raises(ValueError, match="argument 'x_ptr' is on cuda:0; the CPU backend needs CPU arrays"):
        checked_kernel[(1,)](FakeCudaTensor(), 4)
    monkeypatch.setenv("KILN_BACKEND", "cuda")
    # kiln.jit(backend="cpu") beats the environment ...
    checked_kernel[(1,)](torch.zeros(4), 4)
    assert fake.last.options == {"checked": True, "cpu_target": "host"}
    # ... and the environment beats the arrays.
    def no_device():
        raise RuntimeError("no CUDA device found: fake")

    monkeypatch.setattr(driver, "current_device", no_device)
    with pytest.raises(RuntimeError, match="no CUDA device found"):
        scalar_kernel[(1,)](torch.zeros(4), 1)


def test_bad_backend_names(fake, monkeypatch):
    with pytest.raises(ValueError, match="backend: unknown backend 'gpu'; expected 'cpu', 'cuda' or 'nvidia'"):
        scalar_kernel[(1,)](torch.zeros(4), 1, backend="gpu")
    with pytest.raises(TypeError, match="backend must be a str"):
        scalar_kernel[(1,)](torch.zeros(4), 1, backend=1)
    with pytest.raises(ValueError, match=r"kiln.jit\(f\): backend: unknown backend 'tpu'"):
        jit(backend="tpu")(lambda_free_function)
    with pytest.raises(TypeError, match="checked must be a bool"):
        jit(checked="yes")(lambda_free_function)
    monkeypatch.setenv("KILN_BACKEND", "metal")
    with pytest.raises(ValueError, match="KILN_BACKEND: unknown backend 'metal'"):
        scalar_kernel[(1,)](torch.zeros(4), 1)


def f(x):
    pass


lambda_free_function = f


# -- threads ----------------------------------------------------------------------------


def test_thread_count(fake, monkeypatch):
    x = torch.zeros(4)
    scalar_kernel[(1,)](x, 1, num_threads=1)
    assert fake.launch.num_threads == 1
    monkeypatch.setenv("KILN_CPU_THREADS", "2")
    scalar_kernel[(1,)](x, 1)
    assert fake.launch.num_threads == 2
    scalar_kernel[(1,)](x, 1, num_threads=0)  # the option beats the environment
    assert fake.launch.num_threads == 0
    assert len(fake.compiles) == 1  # threads are not part of the key
    for bad in (-1, 1.5, True, "two"):
        with pytest.raises(ValueError, match="num_threads must be a non-negative int"):
            scalar_kernel[(1,)](x, 1, num_threads=bad)
    monkeypatch.setenv("KILN_CPU_THREADS", "many")
    with pytest.raises(ValueError, match="KILN_CPU_THREADS must be a non-negative int .* got 'many'"):
        scalar_kernel[(1,)](x, 1)


# -- checked mode -------------------------------------------------------------------------


def test_checked_mode_from_the_environment(fake, monkeypatch):
    x, y = torch.zeros(100), np.zeros(50, dtype=np.float32)
    out = torch.zeros(20, 10)[:, 1]  # strided: 20 elements, 10 apart
    add_kernel[(1,)](x, y, out, 16, BLOCK=16)
    assert fake.last.options == {"checked": False, "cpu_target": "host"} and fake.launch.bounds is None
    monkeypatch.setenv("KILN_CPU_CHECKED", "1")
    add_kernel[(1,)](x, y, out, 16, BLOCK=16)
    assert fake.last.options == {"checked": True, "cpu_target": "host"}
    assert fake.launch.bounds == [(x.data_ptr(), 400), (y.ctypes.data, 200), (out.data_ptr(), (19 * 10 + 1) * 4),
                                  (0, 0)]
    assert len(fake.compiles) == 2
    monkeypatch.setenv("KILN_CPU_CHECKED", "maybe")
    with pytest.raises(ValueError, match="KILN_CPU_CHECKED='maybe' is not a boolean"):
        add_kernel[(1,)](x, y, out, 16, BLOCK=16)


def test_checked_mode_on_every_backend_from_the_environment(fake, monkeypatch):
    x, y, out = torch.zeros(16), torch.zeros(16), torch.zeros(16)
    monkeypatch.setenv("KILN_CHECKED", "yes")
    add_kernel[(1,)](x, y, out, 16, BLOCK=16)
    assert fake.last.options == {"checked": True, "cpu_target": "host"}
    assert fake.launch.bounds == [(x.data_ptr(), 64), (y.data_ptr(), 64), (out.data_ptr(), 64), (0, 0)]
    # Another value is another cache key: off again, then an error.
    monkeypatch.setenv("KILN_CHECKED", "0")
    add_kernel[(1,)](x, y, out, 16, BLOCK=16)
    assert fake.last.options == {"checked": False, "cpu_target": "host"} and fake.launch.bounds is None
    monkeypatch.setenv("KILN_CHECKED", "maybe")
    with pytest.raises(ValueError, match="KILN_CHECKED='maybe' is not a boolean"):
        add_kernel[(1,)](x, y, out, 16, BLOCK=16)


def test_out_of_bounds_report_names_the_parameter(fake):
    x = torch.zeros(1024)
    checked_kernel[(1,)](x, 4)
    line = checked_kernel.starting_line_number + 1
    fake.last.kernel.report = (f"{__file__}:{line}:5: out-of-bounds load from parameter 0 at element index 1030 "
                               f"(the buffer has 1024 elements)")
    with pytest.raises(OutOfBoundsError) as info:
        checked_kernel[(1,)](x, 4)
    error = info.value
    assert isinstance(error, KilnError) and isinstance(error, IndexError)
    assert (error.filename, error.lineno, error.col) == (__file__, line, 5)
    assert (error.parameter, error.index) == ("x_ptr", 1030)
    assert str(error).startswith(f"{__file__}:{line}:5: out-of-bounds load from 'x_ptr' at element index 1030 "
                                 f"(the buffer has 1024 elements) in kernel checked_kernel\n")
    # The source line is quoted, as in compilation errors.
    assert str(error).endswith("\ndef checked_kernel(x_ptr, n):\n    ^")
    fake.last.kernel.report = "something else went wrong"
    with pytest.raises(OutOfBoundsError, match="^kernel checked_kernel: something else went wrong$"):
        checked_kernel[(1,)](x, 4)


def test_extents_of_strided_arrays():
    a = np.zeros((4, 6), dtype=np.float64)
    assert arrays.extent_of(a, arrays.ArrayKind.NUMPY) == (a.ctypes.data, 192)
    reversed_rows = a[::-1]
    assert arrays.extent_of(reversed_rows, arrays.ArrayKind.NUMPY) == (a.ctypes.data, 192)
    assert arrays.extent_of(a[:, ::2], arrays.ArrayKind.NUMPY) == (a.ctypes.data, (3 * 6 + 4) * 8 + 8)
    assert arrays.extent_of(a[:0], arrays.ArrayKind.NUMPY)[1] == 0
    assert arrays.extent_of(InterfaceArray(a), arrays.ArrayKind.INTERFACE) == (a.ctypes.data, 192)
    t = torch.zeros(3, 5, dtype=torch.float16).t()
    assert arrays.extent_of(t, arrays.ArrayKind.TORCH) == (t.data_ptr(), 30)
    d = torch.zeros(7, dtype=torch.int64)
    assert arrays.extent_of(DLPackArray(d), arrays.ArrayKind.DLPACK) == (d.data_ptr(), 56)
