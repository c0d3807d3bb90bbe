"""The JIT runtime without a GPU: binding, specialization, caching, errors.

The driver (device, stream, target, loading, launching) and the compiler are
replaced by recording fakes, so these tests check the Python launch path up
to the point where a device is needed, on any machine.
"""

from types import SimpleNamespace

import pytest
import torch

import kiln.language as kl
from kiln.compiler.compiler import CompiledKernel
from kiln.compiler.specialization import Specialization
from kiln.errors import OutOfResources
from kiln.runtime import driver
from kiln.runtime import jit as jit_module
from kiln.runtime.jit import JITFunction, jit


@jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: "kl.constexpr"):
    pass


@jit(do_not_specialize=["n"], noinline=True, debug=True)
def nospec_kernel(x_ptr, n, scale, BLOCK: "tl.constexpr" = 128):
    pass


@jit
def scalar_kernel(a, b, c, d):
    pass


@jit
def tuple_kernel(t, n, BLOCK: "kl.constexpr"):
    pass


@jit(do_not_specialize=["t"])
def nospec_tuple_kernel(t, n):
    pass


@jit
def staged_kernel(x_ptr, n, BLOCK: "kl.constexpr", num_stages: "kl.constexpr"):
    pass


class FakeTensor:
    """A CUDA tensor stand-in: data_ptr, dtype and get_device, no memory."""

    def __init__(self, dtype=torch.float32, address=0x7F0000000000, device=0):
        self.dtype = dtype
        self.address = address
        self.device_index = device

    def data_ptr(self):
        return self.address

    def get_device(self):
        return self.device_index


class FakeRuntime:
    """Records compiles, loads and launches in place of the compiler and driver."""

    def __init__(self, monkeypatch, device=0, target="sm_90a"):
        self.compiles = []
        self.loads = []
        self.launches = []
        self.device = device
        # A GPU machine: kernels with no array arguments go to the GPU too.
        monkeypatch.setattr(driver, "is_available", lambda: True)
        monkeypatch.setattr(driver, "current_device", lambda: self.device)
        monkeypatch.setattr(driver, "current_stream", lambda device: 1234 + device)
        monkeypatch.setattr(driver, "get_target", lambda device: target)
        monkeypatch.setattr(driver, "load_binary", self.load_binary)
        monkeypatch.setattr(driver, "launch", self.launch)
        monkeypatch.setattr(jit_module, "_compile_jit_function", self.compile)

    def compile(self, jit_fn, signature, constexprs, attrs, target, num_warps, num_stages, **options):
        self.compiles.append(SimpleNamespace(fn=jit_fn, signature=dict(signature), constexprs=dict(constexprs),
                                             attrs=attrs, target=target, num_warps=num_warps,
                                             num_stages=num_stages, options=options))
        return CompiledKernel(name=jit_fn.__name__, asm={"cubin": b"\x7fELF fake", "ptx": "// fake"},
                              metadata={"num_warps": num_warps, "shared": 0, "target": target,
                                        "name": jit_fn.__name__, "backend": "nvidia"})

    def load_binary(self, name, cubin, shared, device):
        self.loads.append((name, device))
        return (1, 100 + len(self.loads), 32, 0)

    def launch(self, *args):
        self.launches.append(args)

    @property
    def last(self):
        return self.compiles[-1]


@pytest.fixture
def fake(monkeypatch):
    runtime = FakeRuntime(monkeypatch)
    for kernel in (add_kernel, nospec_kernel, scalar_kernel, tuple_kernel, nospec_tuple_kernel, staged_kernel):
        monkeypatch.setattr(kernel, "cache", {})
        monkeypatch.setattr(kernel, "_compiled", {})
        monkeypatch.setattr(kernel, "_routes", {})
    # These tests are about the GPU path: the environment must not force the CPU.
    for name in ("KILN_BACKEND", "KILN_CPU_CHECKED", "KILN_CHECKED", "KILN_CPU_THREADS", "KILN_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    return runtime


def tensors(count=3, **kwargs):
    return [FakeTensor(**kwargs) for _ in range(count)]


# -- the frontend's protocol --------------------------------------------------


def test_jit_function_attributes():
    assert isinstance(add_kernel, JITFunction)
    assert add_kernel.__name__ == "add_kernel"
    assert add_kernel.arg_names == ["x_ptr", "y_ptr", "out_ptr", "n", "BLOCK"]
    assert add_kernel.constexpr_names == {"BLOCK"}
    assert add_kernel.fn.__name__ == "add_kernel"
    assert add_kernel.__globals__ is globals()
    assert add_kernel.src.startswith("@jit\ndef add_kernel(")
    assert add_kernel.starting_line_number == add_kernel.fn.__code__.co_firstlineno
    assert add_kernel.noinline is False and add_kernel.debug is None
    assert nospec_kernel.noinline is True and nospec_kernel.debug is True
    assert nospec_kernel.constexpr_names == {"BLOCK"}
    assert nospec_kernel.do_not_specialize == {"n"}


def test_src_is_dedented_for_nested_kernels():
    @jit
    def inner(x, N: "constexpr"):
        pass

    assert inner.src.startswith("@jit\ndef inner(x, N")
    assert inner.constexpr_names == {"N"}


def test_constexpr_class_annotation():
    kl = pytest.importorskip("kiln.language")

    def kernel(x, BLOCK: kl.constexpr):
        pass

    assert jit(kernel).constexpr_names == {"BLOCK"}


def test_bad_decorations():
    def star(*args):
        pass

    with pytest.raises(TypeError, match="parameter 'args' is variadic positional"):
        jit(star)

    def plain(x, n):
        pass

    with pytest.raises(ValueError, match="do_not_specialize names 'm'"):
        jit(do_not_specialize=["m"])(plain)
    with pytest.raises(ValueError, match="index 5 is out of range"):
        jit(do_not_specialize=[5])(plain)
    assert jit(do_not_specialize=[1])(plain).do_not_specialize == {"n"}
    with pytest.raises(TypeError, match="expects a Python function"):
        jit(42)


def test_direct_call_is_an_error():
    with pytest.raises(RuntimeError, match=r"launch it as add_kernel\[grid\]"):
        add_kernel(1, 2, 3, 4, 5)


# -- binding --------------------------------------------------------------------


def test_binding_errors_name_the_parameter(fake):
    x, y, out = tensors()
    with pytest.raises(TypeError, match=r"add_kernel\(\) missing required argument: 'BLOCK'"):
        add_kernel[(1,)](x, y, out, 16)
    with pytest.raises(TypeError, match=r"missing required arguments: 'n', 'BLOCK'"):
        add_kernel[(1,)](x, y, out)
    with pytest.raises(TypeError, match=r"takes 5 arguments but 6 were given"):
        add_kernel[(1,)](x, y, out, 16, 64, 7)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'BLOK'"):
        add_kernel[(1,)](x, y, out, 16, BLOK=64)
    with pytest.raises(TypeError, match=r"multiple values for argument 'n'"):
        add_kernel[(1,)](x, y, out, 16, 64, n=3)
    assert fake.compiles == []


def test_binding_positional_keyword_and_defaults(fake):
    x, y, out = tensors()
    add_kernel[(1,)](x, y, out, 16, 64)
    add_kernel[(1,)](x_ptr=x, y_ptr=y, out_ptr=out, n=16, BLOCK=64)
    assert len(fake.compiles) == 1  # the same key both ways
    assert fake.launches[0][-1] == fake.launches[1][-1] == (x, y, out, 16, 64)
    assert fake.compiles[0].options == {}
    nospec_kernel[(1,)](x, 3, 2.0)
    assert fake.last.constexprs == {"BLOCK": 128}
    assert fake.last.options == {"debug": True}  # kiln.jit(debug=True) reaches the compiler


# -- specialization and the compiler's inputs --------------------------------


def test_signature_and_specialization(fake):
    x, y, out = tensors()
    add_kernel[(4,)](x, y, out, 1024, BLOCK=256)
    call = fake.last
    assert call.signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    assert call.constexprs == {"BLOCK": 256}
    assert call.attrs == Specialization(divisible_by_16=frozenset({"x_ptr", "y_ptr", "out_ptr", "n"}),
                                        equal_to_1=frozenset())
    assert (call.target, call.num_warps, call.num_stages) == ("sm_90a", 4, 3)
    assert call.fn is add_kernel

    add_kernel[(4,)](x, y, out, 1, BLOCK=256)
    assert fake.last.attrs.equal_to_1 == {"n"}
    assert "n" not in fake.last.attrs.divisible_by_16

    misaligned = FakeTensor(address=0x7F0000000004)
    add_kernel[(4,)](misaligned, y, out, 17, BLOCK=256)
    assert fake.last.attrs == Specialization(divisible_by_16=frozenset({"y_ptr", "out_ptr"}),
                                             equal_to_1=frozenset())
    assert len(fake.compiles) == 3


def test_do_not_specialize(fake):
    (x,) = tensors(1)
    nospec_kernel[(1,)](x, 16, 1.5)
    nospec_kernel[(1,)](x, 17, 2.5)
    nospec_kernel[(1,)](x, 1, 2.5)
    assert len(fake.compiles) == 1
    assert fake.last.attrs == Specialization(divisible_by_16=frozenset({"x_ptr"}), equal_to_1=frozenset())
    assert fake.last.signature == {"x_ptr": "*fp32", "n": "i32", "scale": "fp32"}


@pytest.mark.parametrize("value, code", [
    (0, "i32"), (-(2**31), "i32"), (2**31 - 1, "i32"), (2**31, "i64"), (-(2**31) - 1, "i64"),
    (2**63 - 1, "i64"), (2**63, "u64"), (2**64 - 1, "u64"), (True, "i1"), (False, "i1"), (1.0, "fp32"),
])
def test_scalar_type_codes(fake, value, code):
    scalar_kernel[(1,)](value, 0, 0, 0)
    assert fake.last.signature["a"] == code


def test_integer_overflow_names_the_parameter(fake):
    with pytest.raises(OverflowError, match="argument 'b' = 18446744073709551616 does not fit"):
        scalar_kernel[(1,)](0, 2**64, 0, 0)
    with pytest.raises(OverflowError, match="argument 'c'"):
        scalar_kernel[(1,)](0, 0, -(2**63) - 1, 0)


def test_unsupported_arguments(fake):
    with pytest.raises(TypeError, match="argument 'c' has unsupported type str"):
        scalar_kernel[(1,)](0, 0, "x", 0)
    with pytest.raises(TypeError, match="argument 'a' has unsupported element type"):
        scalar_kernel[(1,)](FakeTensor(dtype=torch.complex64), 0, 0, 0)
    assert fake.compiles == []


def test_none_is_compiled_in(fake):
    """None for any parameter is the constexpr None (as in Triton): it leaves
    the signature, and the key tells it apart from a runtime value."""
    (x,) = tensors(1)
    scalar_kernel[(1,)](x, 0, 0, None)
    assert fake.last.signature == {"a": "*fp32", "b": "i32", "c": "i32"}
    assert fake.last.constexprs == {"d": None}
    scalar_kernel[(1,)](x, 0, 0, None)
    assert len(fake.compiles) == 1
    scalar_kernel[(1,)](x, 0, 0, 5)
    assert len(fake.compiles) == 2
    assert fake.last.signature == {"a": "*fp32", "b": "i32", "c": "i32", "d": "i32"}
    assert fake.last.constexprs == {}
    nospec_kernel[(1,)](x, None, 1.0)  # do_not_specialize does not change it
    assert fake.last.constexprs == {"n": None, "BLOCK": 128}
    # The launcher skips the compiled-in argument.
    scalar_kernel[(1,)](x, 3, 4, None)
    assert fake.launches[-1][7:] == ("pii-", (x, 3, 4, None))  # "-": skipped


@pytest.mark.parametrize("dtype, code", [
    (torch.float16, "*fp16"), (torch.bfloat16, "*bf16"), (torch.float32, "*fp32"), (torch.float64, "*fp64"),
    (torch.int8, "*i8"), (torch.int16, "*i16"), (torch.int32, "*i32"), (torch.int64, "*i64"),
    (torch.uint8, "*u8"), (torch.bool, "*i1"),
])
def test_pointer_type_codes(fake, dtype, code):
    scalar_kernel[(1,)](FakeTensor(dtype=dtype), 0, 0, 0)
    assert fake.last.signature["a"] == code


# -- the cache ------------------------------------------------------------------


def test_cache_hits_and_misses(fake):
    x, y, out = tensors()
    for n in (1024, 2048, 4096):  # all divisible by 16: one specialization
        add_kernel[(1,)](x, y, out, n, BLOCK=256)
    assert len(fake.compiles) == 1
    assert len(add_kernel.cache[0]) == 1
    add_kernel[(1,)](x, y, out, 1024, BLOCK=512)       # another constexpr
    add_kernel[(1,)](x, y, out, 1024, BLOCK=256, num_warps=8)
    add_kernel[(1,)](x, y, out, 1024, BLOCK=256, num_stages=2)
    add_kernel[(1,)](x, y, out, 1000, BLOCK=256)       # not divisible by 16
    add_kernel[(1,)](x, y, out, 2**40, BLOCK=256)      # i64
    assert len(fake.compiles) == 6
    assert len(add_kernel.cache[0]) == 6
    assert len(fake.loads) == 6


def test_constexpr_values_keep_their_type(fake):
    x, y, out = tensors()
    add_kernel[(1,)](x, y, out, 16, BLOCK=1)
    add_kernel[(1,)](x, y, out, 16, BLOCK=True)
    add_kernel[(1,)](x, y, out, 16, BLOCK=1.0)
    assert len(fake.compiles) == 3


def test_unhashable_constexpr(fake):
    x, y, out = tensors()
    with pytest.raises(TypeError, match="constexpr argument 'BLOCK' must be hashable"):
        add_kernel[(1,)](x, y, out, 16, BLOCK=[1, 2])


# -- launching --------------------------------------------------------------------


def test_launch_arguments(fake):
    x, y, out = tensors()
    kernel = add_kernel[(3,)](x, y, out, 100, BLOCK=64, num_warps=2)
    assert kernel.name == "add_kernel" and kernel is add_kernel.cache[0][next(iter(add_kernel.cache[0]))].kernel
    grid_x, grid_y, grid_z, num_warps, shared, stream, function, codes, args = fake.launches[-1]
    assert (grid_x, grid_y, grid_z, num_warps, shared, stream) == (3, 1, 1, 2, 0, 1234)
    assert function == 101
    assert codes == "pppi-"
    assert args == (x, y, out, 100, 64)
    scalar_kernel[(1, 2, 3)](True, 2**40, 2**63, 0.5)
    assert fake.launches[-1][:3] == (1, 2, 3)
    assert fake.launches[-1][7] == "blLf"


def test_grid_forms(fake):
    x, y, out = tensors()
    seen = {}

    def grid(meta):
        seen.update(meta)
        return ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)

    add_kernel[grid](x, y, out, 1000, BLOCK=128)
    assert fake.launches[-1][:3] == (8, 1, 1)
    assert seen == {"x_ptr": x, "y_ptr": y, "out_ptr": out, "n": 1000, "BLOCK": 128}
    add_kernel[lambda meta: (2, 3)](x, y, out, 1000, BLOCK=128)
    assert fake.launches[-1][:3] == (2, 3, 1)
    add_kernel[[5]](x, y, out, 1000, BLOCK=128)
    assert fake.launches[-1][:3] == (5, 1, 1)
    for bad in (7, (), (1, 2, 3, 4), lambda meta: None):
        with pytest.raises(TypeError, match="the grid must be a tuple of 1 to 3 ints"):
            add_kernel[bad](x, y, out, 1000, BLOCK=128)


def test_bad_launch_options(fake):
    x, y, out = tensors()
    with pytest.raises(ValueError, match="num_warps must be a power of 2 between 1 and 32, got 3"):
        add_kernel[(1,)](x, y, out, 16, BLOCK=64, num_warps=3)
    with pytest.raises(ValueError, match="num_stages must be a positive int"):
        add_kernel[(1,)](x, y, out, 16, BLOCK=64, num_stages=0)
    with pytest.raises(ValueError, match="kernel add_kernel: maxnreg must be None or an int from 1 to 255, got 0"):
        add_kernel[(1,)](x, y, out, 16, BLOCK=64, maxnreg=0)


def test_num_ctas(fake):
    """Triton's cluster size: 1 launches as the default does (the same
    compiled kernel); anything else is refused naming the kernel, before
    compiling."""
    x, y, out = tensors()
    add_kernel[(1,)](x, y, out, 1024, BLOCK=256, num_ctas=1)
    add_kernel[(1,)](x, y, out, 1024, BLOCK=256)
    add_kernel.warmup(x, y, out, 1024, BLOCK=256, grid=(1,), num_ctas=1)
    assert len(fake.compiles) == 1 and len(fake.launches) == 2
    with pytest.raises(ValueError, match="kernel add_kernel: num_ctas=4: thread-block clusters are not supported yet"):
        add_kernel[(1,)](x, y, out, 1024, BLOCK=256, num_ctas=4)
    for bad in (0, 1.0, True, "2"):
        with pytest.raises(ValueError, match="kernel add_kernel: num_ctas must be a positive int"):
            add_kernel[(1,)](x, y, out, 1024, BLOCK=256, num_ctas=bad)
    assert len(fake.compiles) == 1 and len(fake.launches) == 2


def test_maxnreg_is_a_compile_option(fake):
    """As Triton's launch option: it reaches the compiler and keys the cache."""
    x, y, out = tensors()
    add_kernel[(1,)](x, y, out, 1024, BLOCK=256)
    assert "maxnreg" not in fake.last.options
    add_kernel[(1,)](x, y, out, 1024, BLOCK=256, maxnreg=64)
    assert fake.last.options["maxnreg"] == 64
    add_kernel[(1,)](x, y, out, 1024, BLOCK=256, maxnreg=64)
    add_kernel.warmup(x, y, out, 1024, BLOCK=256, grid=(1,), maxnreg=96)
    assert [c.options.get("maxnreg") for c in fake.compiles] == [None, 64, 96]
    assert len(fake.launches) == 3


def test_launch_option_named_parameter_gets_the_value_too(fake):
    """As in Triton, num_stages=2 reaches both the compiler and a parameter
    called num_stages; given by position, only the parameter."""
    (x,) = tensors(1)
    staged_kernel[(1,)](x, 64, BLOCK=64, num_stages=2)
    assert fake.last.num_stages == 2 and fake.last.constexprs == {"BLOCK": 64, "num_stages": 2}
    staged_kernel[(1,)](x, 64, 64, 1)
    assert fake.last.num_stages == 3 and fake.last.constexprs == {"BLOCK": 64, "num_stages": 1}
    staged_kernel.warmup(x, 64, BLOCK=64, num_stages=4, grid=(1,))
    assert fake.last.num_stages == 4 and fake.last.constexprs["num_stages"] == 4
    with pytest.raises(TypeError, match="missing required argument: 'num_stages'"):
        staged_kernel[(1,)](x, 64, BLOCK=64)


def test_warmup_compiles_without_launching(fake):
    x, y, out = tensors()
    kernel = add_kernel.warmup(x, y, out, 4096, BLOCK=1024, grid=(4,))
    assert kernel.name == "add_kernel"
    assert len(fake.compiles) == 1 and fake.launches == []
    add_kernel[(4,)](x, y, out, 4096, BLOCK=1024)
    assert len(fake.compiles) == 1 and len(fake.launches) == 1


def test_compiled_kernel_handles_as_triton(fake):
    """Triton's tutorials read n_regs after warmup and launch kernel[grid]."""
    x, y, out = tensors()
    kernel = add_kernel.warmup(x, y, out, 4096, BLOCK=1024, grid=(1,), num_warps=2, maxnreg=64)
    kernel._init_handles()  # already loaded: no second load
    assert (kernel.n_regs, kernel.n_spills) == (32, 0) and fake.loads == [("add_kernel", 0)]
    kernel[(4, 1, 1)](x, y, out, 4096, 1024)
    assert len(fake.compiles) == 1
    grid_x, grid_y, grid_z, num_warps, _, _, function, _, args = fake.launches[-1]
    assert (grid_x, grid_y, grid_z, num_warps, function) == (4, 1, 1, 2, 101)
    assert args == (x, y, out, 4096, 1024)
    # Arguments that specialize differently compile their own kernel.
    kernel[(1,)](x, y, out, 4096, 512)
    assert len(fake.compiles) == 2 and fake.last.constexprs == {"BLOCK": 512}
    assert fake.last.num_warps == 2 and fake.last.options == {"maxnreg": 64}


def test_init_handles_loads_a_kernel_no_launch_loaded(fake):
    kernel = CompiledKernel(name="k", asm={"cubin": b"\x7fELF", "ptx": ""},
                            metadata={"backend": "nvidia", "shared": 0})
    assert kernel.n_regs is None and kernel.metadata.shared == 0
    kernel._init_handles()
    assert (kernel.n_regs, kernel.n_spills) == (32, 0) and fake.loads == [("k", 0)]
    with pytest.raises(RuntimeError, match=r"kernel k: only a kernel that a jit function compiled .* can be "
                                           r"launched as kernel\[grid\]"):
        kernel[(1,)]()
    with pytest.raises(AttributeError, match="kernel metadata has no 'sharde'"):
        kernel.metadata.sharde


def test_active_driver_on_a_gpu_machine(fake, monkeypatch):
    """kiln.runtime.driver.active answers as triton.runtime.driver.active."""
    properties = {"warp_size": 32, "capability": (9, 0), "multiprocessor_count": 132, "max_num_regs": 65536}
    monkeypatch.setattr(driver, "get_device_properties", lambda device: properties)
    monkeypatch.setattr(driver, "_launch_properties", lambda device: properties)
    active = driver.active
    assert active.get_current_target() == driver.GPUTarget("cuda", 90, 32)
    assert active.get_active_torch_device() == torch.device("cuda", 0)
    assert active.get_current_device() == 0 and active.get_current_stream() == 1234
    assert active.get_device_interface() is torch.cuda
    assert active.utils.get_device_properties(0)["warpSize"] == 32
    monkeypatch.setenv("KILN_BACKEND", "cpu")
    assert active.get_current_target() == driver.GPUTarget("cpu", "host", 1)
    assert active.get_active_torch_device() == torch.device("cpu")


# -- device errors ------------------------------------------------------------------


def test_cpu_tensor_among_cuda_tensors_is_rejected(fake):
    x, y = tensors(2)
    cpu = torch.empty(16)
    with pytest.raises(ValueError, match="argument 'out_ptr' is on the CPU but argument 'x_ptr' is on cuda:0; "
                                         "the arrays of one launch must all be on the CPU or all on the GPU"):
        add_kernel[(1,)](x, y, cpu, 16, BLOCK=16)
    # Forced onto the GPU, a CPU tensor is reported as such.
    with pytest.raises(ValueError, match="argument 'out_ptr' is on the CPU; launch needs CUDA tensors"):
        add_kernel[(1,)](x, y, cpu, 16, BLOCK=16, backend="cuda")
    # A previous good launch does not let a CPU tensor through the cache.
    add_kernel[(1,)](x, y, FakeTensor(), 16, BLOCK=16)
    with pytest.raises(ValueError, match="argument 'x_ptr' is on the CPU but argument 'y_ptr' is on cuda:0"):
        add_kernel[(1,)](torch.empty(16), y, FakeTensor(), 16, BLOCK=16)
    assert len(fake.launches) == 1
    assert fake.compiles[0].target == "sm_90a"


def test_cuda_tensor_forced_onto_the_cpu_is_rejected(fake, monkeypatch):
    x, y, out = tensors()
    with pytest.raises(ValueError, match="argument 'x_ptr' is on cuda:0; the CPU backend needs CPU arrays"):
        add_kernel[(1,)](x, y, out, 16, BLOCK=16, backend="cpu")
    monkeypatch.setenv("KILN_BACKEND", "cpu")
    with pytest.raises(ValueError, match="argument 'x_ptr' is on cuda:0; the CPU backend needs CPU arrays"):
        add_kernel[(1,)](x, y, out, 16, BLOCK=16)
    # The launch option beats the environment.
    add_kernel[(1,)](x, y, out, 16, BLOCK=16, backend="nvidia")
    assert [c.target for c in fake.compiles] == ["sm_90a"] and len(fake.launches) == 1


def test_tensors_on_two_devices_are_an_error(fake):
    x, y = tensors(2)
    with pytest.raises(ValueError, match="argument 'out_ptr' is on cuda:1 but argument 'x_ptr' is on cuda:0; a "
                                         "launch needs all its tensors on one device"):
        add_kernel[(1,)](x, y, FakeTensor(device=1), 16, BLOCK=16)
    assert fake.launches == [] and fake.loads == []


def test_tensors_on_another_device_launch_there(fake):
    """As torch runs an op where its tensors are: tensors on cuda:1 launch
    on device 1, on device 1's current stream, whatever device is current;
    the key holds the device, so later launches find that device's kernel
    without asking which device is current."""
    assert fake.device == 0
    add_kernel[(1,)](*tensors(device=1), 16, BLOCK=16)
    assert fake.loads == [("add_kernel", 1)]
    assert fake.launches[-1][5] == 1234 + 1  # device 1's stream
    add_kernel[(2,)](*tensors(device=0), 16, BLOCK=16)
    assert fake.loads == [("add_kernel", 1), ("add_kernel", 0)]
    assert fake.launches[-1][5] == 1234
    assert len(fake.compiles) == 1  # one target: one compile, loaded per device
    fake.device = 1
    add_kernel[(3,)](*tensors(device=1), 16, BLOCK=16)
    add_kernel[(4,)](*tensors(device=0), 16, BLOCK=16)
    assert len(fake.loads) == 2
    assert [launch[5] for launch in fake.launches] == [1235, 1234, 1235, 1234]
    assert set(add_kernel.cache) == {0, 1}


def test_a_launch_without_tensors_runs_on_the_current_device(fake):
    scalar_kernel[(1,)](1, 2.0, 3, 4)
    fake.device = 1
    scalar_kernel[(1,)](1, 2.0, 3, 4)
    assert [load[1] for load in fake.loads] == [0, 1]
    assert [launch[5] for launch in fake.launches] == [1234, 1235]


def test_second_device_of_same_target_reuses_the_compile(fake):
    add_kernel[(1,)](*tensors(device=0), 16, BLOCK=16)
    fake.device = 1
    add_kernel[(1,)](*tensors(device=1), 16, BLOCK=16)
    assert len(fake.compiles) == 1
    assert fake.loads == [("add_kernel", 0), ("add_kernel", 1)]
    assert set(add_kernel.cache) == {0, 1}


class FakeDriverModule:
    """kiln._C.driver as it looks on a machine without a GPU."""

    def is_available(self):
        return False

    def unavailable_reason(self):
        return "fake: no driver here"


def test_launch_without_a_device(monkeypatch):
    monkeypatch.setattr(driver, "_cdriver", FakeDriverModule())
    driver.reset()
    try:
        with pytest.raises(RuntimeError, match="^no CUDA device found: fake: no driver here"):
            add_kernel[(1,)](*tensors(), 16, BLOCK=16)
        with pytest.raises(RuntimeError, match="^no CUDA device found"):
            driver.get_device_properties(0)
        # Binding errors are still reported first.
        with pytest.raises(TypeError, match="missing required argument"):
            add_kernel[(1,)](*tensors(), 16)
    finally:
        driver.reset()


@pytest.mark.skipif(driver.is_available(), reason="this machine has a CUDA device")
def test_launch_without_a_device_real_driver():
    driver.reset()
    with pytest.raises(RuntimeError, match="^no CUDA device found: "):
        add_kernel[(1,)](*[torch.empty(4) for _ in range(3)], 4, BLOCK=16, backend="cuda")
    assert driver.device_count() == 0
    assert driver.unavailable_reason()


# -- tuple arguments ------------------------------------------------------------------


def test_tuple_arguments_are_flattened(fake):
    x, y = tensors(2)
    tuple_kernel[(2,)]((x, (y, 16)), 1, BLOCK=4)
    call = fake.last
    assert call.signature == {"t": "tuple", "t[0]": "*fp32", "t[1]": "tuple", "t[1][0]": "*fp32",
                              "t[1][1]": "i32", "n": "i32"}
    assert call.constexprs == {"BLOCK": 4}
    assert call.attrs == Specialization(divisible_by_16=frozenset({"t[0]", "t[1][0]", "t[1][1]"}),
                                        equal_to_1=frozenset({"n"}))
    # The launch passes the leaves, depth first; the constexpr is skipped.
    codes, args = fake.launches[-1][7:]
    assert codes == "ppii-"
    assert args == (x, y, 16, 1, 4)


def test_tuple_elements_are_specialized(fake):
    x = FakeTensor()
    misaligned = FakeTensor(address=0x7F0000000004)
    tuple_kernel[(1,)]((misaligned, (x, 1)), 17, BLOCK=4)
    assert fake.last.attrs == Specialization(divisible_by_16=frozenset({"t[1][0]"}),
                                             equal_to_1=frozenset({"t[1][1]"}))
    tuple_kernel[(1,)]((x, (x, 2**40)), 17, BLOCK=4)
    assert fake.last.signature["t[1][1]"] == "i64"
    nospec_tuple_kernel[(1,)]((x, 16, 1), 16)
    assert fake.last.attrs == Specialization(divisible_by_16=frozenset({"n"}), equal_to_1=frozenset())


def test_tuple_structure_is_in_the_key(fake):
    x, y = tensors(2)
    launches = [
        (x, (y, 16)),
        (x, (y, 32)),          # the same key: no compile
        ((x, y), 16),          # the same leaves, another nesting
        (x, y, 16),            # flat
        (x, (y,)),             # shorter
        (x, (y, 16), ()),      # an empty tuple
        (x, (y, 16.0)),        # a float leaf
        (x, (y, True)),        # a bool leaf
    ]
    for t in launches:
        tuple_kernel[(1,)](t, 3, BLOCK=4)
    assert len(fake.compiles) == len(launches) - 1
    assert fake.compiles[3].signature == {"t": "tuple", "t[0]": "*fp32", "t[1]": "tuple", "t[1][0]": "*fp32",
                                          "n": "i32"}
    assert fake.compiles[4].signature["t[2]"] == "tuple" and "t[2][0]" not in fake.compiles[4].signature
    # A tuple and a tensor in the same parameter are different keys too.
    tuple_kernel[(1,)](x, 3, BLOCK=4)
    assert fake.last.signature["t"] == "*fp32"


def test_compile_time_tuple_elements(fake):
    import kiln.language as kl

    (x,) = tensors(1)
    tuple_kernel[(1,)]((x, kl.constexpr(3), None, kl.float16, "zero"), 3, BLOCK=4)
    call = fake.last
    assert call.signature == {"t": "tuple", "t[0]": "*fp32", "n": "i32"}
    assert call.constexprs == {"t[1]": 3, "t[2]": None, "t[3]": kl.float16, "t[4]": "zero", "BLOCK": 4}
    codes, args = fake.launches[-1][7:]
    assert codes == "p----i-" and args[0] is x and args[-2:] == (3, 4)
    tuple_kernel[(1,)]((x, kl.constexpr(3), None, kl.float16, "zero"), 5, BLOCK=4)
    tuple_kernel[(1,)]((x, kl.constexpr(4), None, kl.float16, "zero"), 5, BLOCK=4)
    tuple_kernel[(1,)]((x, kl.constexpr(4), None, kl.float32, "zero"), 5, BLOCK=4)
    assert len(fake.compiles) == 3


def test_bad_tuple_elements_name_their_path(fake):
    (x,) = tensors(1)
    with pytest.raises(TypeError, match=r"argument 't\[1\]\[0\]' has unsupported type list"):
        tuple_kernel[(1,)]((x, ([1],)), 3, BLOCK=4)
    with pytest.raises(OverflowError, match=r"argument 't\[1\]' = 18446744073709551616 does not fit"):
        tuple_kernel[(1,)]((x, 2**64), 3, BLOCK=4)
    with pytest.raises(TypeError, match=r"argument 't\[0\]' has unsupported element type"):
        tuple_kernel[(1,)]((FakeTensor(dtype=torch.complex64),), 3, BLOCK=4)
    assert fake.compiles == []


def test_tuple_grid_callable_sees_the_tuple(fake):
    x, y = tensors(2)
    tuple_kernel[lambda meta: (meta["t"][1][1],)]((x, (y, 5)), 3, BLOCK=4)
    assert fake.launches[-1][:3] == (5, 1, 1)


# -- host tensor descriptors ------------------------------------------------------------


def test_tensor_descriptor_arguments_are_flattened(fake):
    from kiln.tools.tensor_descriptor import TensorDescriptor

    x = FakeTensor()
    desc = TensorDescriptor(x, [100, 64], [64, 1], [16, 32])
    tuple_kernel[(1,)](desc, 7, BLOCK=4)
    call = fake.last
    assert call.signature == {"t": "tensordesc", "t[0]": "*fp32", "t[1]": "tuple", "t[1][0]": "i32",
                              "t[1][1]": "i32", "t[2]": "tuple", "t[2][0]": "i32", "t[2][1]": "i32",
                              "t[3]": "tuple", "t[5]": "nvTmaDesc", "n": "i32"}
    assert call.constexprs == {"t[3][0]": 16, "t[3][1]": 32, "t[4]": "zero", "BLOCK": 4}
    assert call.attrs == Specialization(divisible_by_16=frozenset({"t[0]", "t[1][1]", "t[2][0]"}),
                                        equal_to_1=frozenset({"t[2][1]"}))
    codes, args = fake.launches[-1][7:]
    # On sm_90a the descriptor also passes its TMA tensor map (code T): zero
    # bytes here, since no copy uses it.
    assert codes == "piiii---Ti-"
    assert args == (x, 100, 64, 64, 1, 16, 32, "zero", bytes(128), 7, 4)


def test_tensor_descriptor_has_no_tensor_map_before_sm_90a(fake, monkeypatch):
    from kiln.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.setattr(driver, "get_target", lambda device: "sm_80")
    x = FakeTensor()
    tuple_kernel[(1,)](TensorDescriptor(x, [100, 64], [64, 1], [16, 32]), 7, BLOCK=4)
    call = fake.last
    assert "t[5]" not in call.signature and call.constexprs["t[5]"] is None
    assert fake.launches[-1][7] == "piiii----i-"


def test_tensor_descriptor_key(fake):
    from kiln.tools.tensor_descriptor import TensorDescriptor

    x = FakeTensor()
    tuple_kernel[(1,)](TensorDescriptor(x, [100, 64], [64, 1], [16, 32]), 7, BLOCK=4)
    tuple_kernel[(1,)](TensorDescriptor(x, [200, 64], [64, 1], [16, 32]), 7, BLOCK=4)  # hit
    tuple_kernel[(1,)](TensorDescriptor(x, [200, 64], [64, 1], [32, 32]), 7, BLOCK=4)  # block shape
    tuple_kernel[(1,)](TensorDescriptor(x, [200, 64], [64, 1], [32, 32], "nan"), 7, BLOCK=4)  # padding
    assert len(fake.compiles) == 3
    # Strides of 4 and 6 floats have the same integer keys; only the first is
    # 16-byte aligned, and the key tells them apart.
    tuple_kernel[(1,)](TensorDescriptor(x, [8, 4], [4, 1], [8, 4]), 7, BLOCK=4)
    with pytest.raises(ValueError, match=r"TensorDescriptor argument 't': its strides must be multiples of 16"):
        tuple_kernel[(1,)](TensorDescriptor(x, [8, 4], [6, 1], [8, 4]), 7, BLOCK=4)
    with pytest.raises(ValueError, match=r"argument 't\[1\]': its base address must be a multiple of 16"):
        tuple_kernel[(1,)]((x, TensorDescriptor(FakeTensor(address=0x7F0000000008), [8, 4], [4, 1], [8, 4])), 7,
                           BLOCK=4)
    assert len(fake.compiles) == 4


def test_too_many_registers_for_the_block_is_out_of_resources(fake, monkeypatch):
    """255 registers per thread for 512 threads do not fit in a block's
    65536: OutOfResources naming the resource, before any launch."""
    monkeypatch.setattr(driver, "load_binary", lambda name, cubin, shared, device: (1, 2, 255, 0))
    x, y, out = tensors()
    with pytest.raises(OutOfResources) as raised:
        add_kernel[(1,)](x, y, out, 1024, BLOCK=1024, num_warps=16)
    assert raised.value.required == 255 * 512 and raised.value.limit == 65536
    assert "registers" in raised.value.name
    assert fake.launches == []


@jit
def _fusion_mul_add(data_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(data_ptr + offs, kl.load(data_ptr + offs) * 3.3 + 1.7)


def test_enable_fp_fusion_launch_option_and_knob(monkeypatch) -> None:
    # The CPU backend never fuses: every setting gives the separately
    # rounded multiply and add (numpy's float32 arithmetic), and each
    # setting is its own compiled kernel.
    import numpy as np
    from kiln import knobs

    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")  # restored (unset or as it was) afterwards
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION")
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    expected = x * np.float32(3.3) + np.float32(1.7)
    compiled = set()
    for option in (None, True, False):
        data = x.copy()
        kernel = _fusion_mul_add[(1,)](data, BLOCK=64, enable_fp_fusion=option, backend="cpu")
        np.testing.assert_array_equal(data, expected)
        compiled.add(id(kernel))
    assert knobs.language.default_fp_fusion is True
    knobs.language.default_fp_fusion = False
    assert knobs.language.default_fp_fusion is False
    data = x.copy()
    compiled.add(id(_fusion_mul_add[(1,)](data, BLOCK=64, backend="cpu")))
    np.testing.assert_array_equal(data, expected)
    assert len(compiled) == 2  # fused (None, True) and apart (False, the knob's False)
    with pytest.raises(TypeError, match="enable_fp_fusion must be True, False or None"):
        _fusion_mul_add[(1,)](x.copy(), BLOCK=64, enable_fp_fusion=1, backend="cpu")


def test_the_cpu_device_has_properties():
    from kiln.runtime import driver

    properties = driver.DriverUtils.get_device_properties("cpu")
    assert properties["warp_size"] == properties["warpSize"] == 1
    assert properties["multiprocessor_count"] >= 1 and properties["max_shared_mem"] >= 1 << 20


@pytest.mark.parametrize("name,capability", [("sm_80", 80), ("sm_90a", 90), ("sm_86", 86), ("sm_9", 9),
                                             ("cpu", None), ("sm_90b", None), ("sm90", None), ("", None),
                                             (90, None)])
def test_nvidia_capability_reads_chip_names(name, capability):
    """The one place chip names are read: the shared-memory limit, target_info
    and the backend's target check all go through it."""
    assert driver.nvidia_capability(name) == capability


# -- arrays from other frameworks: __cuda_array_interface__ ----------------------


class FakeCudaArray:
    """A CuPy/Numba stand-in: __cuda_array_interface__ and a device id, no memory."""

    def __init__(self, typestr="<f4", address=0x7F0000001000, device=0, stream=None, shape=(16,)):
        self.interface = {"version": 3, "typestr": typestr, "data": (address, False), "shape": shape,
                          "strides": None, "stream": stream}
        self.device = SimpleNamespace(id=device)

    @property
    def __cuda_array_interface__(self):
        return self.interface


def test_cuda_array_interface_arrays_launch_by_address(fake):
    x, y, out = FakeCudaArray(), FakeCudaArray(address=0x7F0000002000), FakeCudaArray(address=0x7F0000003000)
    add_kernel[(1,)](x, y, out, 16, BLOCK=16)
    assert fake.last.signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    assert fake.last.attrs.divisible_by_16 >= {"x_ptr", "y_ptr", "out_ptr"}
    bound = fake.launches[-1][8]
    assert bound[:3] == (0x7F0000001000, 0x7F0000002000, 0x7F0000003000)
    # Another element type is another specialization.
    add_kernel[(1,)](FakeCudaArray("<f2"), FakeCudaArray("<f2"), FakeCudaArray("<f2"), 16, BLOCK=16)
    assert len(fake.compiles) == 2 and fake.last.signature["x_ptr"] == "*fp16"


def test_cuda_array_interface_arrays_launch_on_their_device_after_their_stream(fake, monkeypatch):
    from kiln.backends import nvidia

    waits = []
    monkeypatch.setattr(nvidia, "_wait_for_producer", lambda stream, device: waits.append((stream, device)))
    arrays = [FakeCudaArray(device=1, stream=77), FakeCudaArray(device=1), FakeCudaArray(device=1, stream=2)]
    add_kernel[(1,)](*arrays, 16, BLOCK=16)
    assert fake.loads == [("add_kernel", 1)] and fake.launches[-1][5] == 1235
    assert waits == [(77, 1), (2, 1)]  # each producer's stream, before the launch


def test_cuda_array_interface_errors(fake):
    with pytest.raises(ValueError, match="argument 'out_ptr' is on cuda:1 but argument 'x_ptr' is on cuda:0"):
        add_kernel[(1,)](FakeCudaArray(), FakeCudaArray(), FakeCudaArray(device=1), 16, BLOCK=16)
    with pytest.raises(TypeError, match="has stream 0; the protocol allows None or a positive integer"):
        add_kernel[(1,)](FakeCudaArray(stream=0), FakeCudaArray(), FakeCudaArray(), 16, BLOCK=16)
    with pytest.raises(TypeError, match="unsupported array element type"):
        add_kernel[(1,)](FakeCudaArray("<c8"), FakeCudaArray(), FakeCudaArray(), 16, BLOCK=16)
    with pytest.raises(ValueError, match="argument 'x_ptr' is on cuda:0; the CPU backend needs CPU arrays"):
        add_kernel[(1,)](FakeCudaArray(), FakeCudaArray(), FakeCudaArray(), 16, BLOCK=16, backend="cpu")


# -- CUDA graphs ----------------------------------------------------------------------


def test_a_compile_during_graph_capture_is_a_clear_error(fake, monkeypatch):
    """Inside a capture a launch may only replay what is loaded: a miss is
    a RuntimeError saying to warm up first, and nothing is compiled."""
    from kiln.backends import nvidia

    capturing = [False]
    monkeypatch.setattr(nvidia.NvidiaBackend, "capturing", lambda self: capturing[0])
    add_kernel[(1,)](*tensors(), 16, BLOCK=16)  # warm-up, before the capture
    capturing[0] = True
    add_kernel[(1,)](*tensors(), 16, BLOCK=16)  # loaded: launches (is recorded)
    assert len(fake.launches) == 2
    with pytest.raises(RuntimeError, match="kernel add_kernel: these arguments need a compile .* cannot happen "
                                           "while a CUDA graph is being captured; launch the kernel once"):
        add_kernel[(1,)](*tensors(), 16, BLOCK=32)
    assert len(fake.compiles) == 1 and len(fake.launches) == 2
