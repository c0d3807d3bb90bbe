"""The backend registry, and the seam it is: a third backend registered from
outside is used by ``kiln.compile(target=...)`` and by launches that name it,
with no change to the compiler or the JIT."""

from types import SimpleNamespace

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln import backends
from kiln.backends.base import Backend, LoadedKernel, launch_codes
from kiln.compiler.compiler import CompiledKernel, pipeline_text, run_pipeline
from kiln.runtime import launch_settings as settings


@kiln.jit
def add_one(x_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(x_ptr + offs, kl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


class FakeBackend(Backend):
    """A made-up accelerator with two devices, whose 'binary' is the kiln IR
    after the target-neutral clean-up, and whose launches are recorded."""

    name = "fake"
    aliases = ("fakeaccel",)
    target_help = "a fake chip such as 'fake_1'"
    multi_device = True
    stage_suffixes = {"fake_ir": "fake.mlir"}

    def __init__(self):
        self.device = 0
        self.checked_arrays = []
        self.compiles = []
        self.loads = []
        self.launches = []

    def accepts_target(self, target):
        return isinstance(target, str) and target.startswith("fake_")

    def is_available(self):
        return True

    def current_device(self):
        return self.device

    def target_for(self, device):
        return f"fake_{device + 1}"

    def check_array(self, kernel_name, name, value, kind, where, device):
        if where != "cpu":
            raise ValueError(f"kernel {kernel_name}: argument '{name}' is not host memory")
        self.checked_arrays.append(name)
        return value.ctypes.data

    def compile_options(self, kernel, environment):
        return {"fast_math": True}

    def compile(self, fn, module, asm, metadata, options):
        pipeline = pipeline_text("canonicalize")
        run_pipeline(fn, module, pipeline, "fake lowering")
        asm["fake_ir"] = module.str()
        metadata["pipelines"] = [pipeline]
        metadata["backend"] = self.name
        self.compiles.append((metadata["target"], dict(options)))
        return CompiledKernel(name=metadata["name"], asm=asm, metadata=metadata)

    def load(self, kernel, compiled, signature, kinds, device, num_warps, options):
        self.loads.append(device)
        codes = launch_codes(signature, kernel.runtime_names)

        def launch(grid_x, grid_y, grid_z, bound, num_threads):
            self.launches.append(SimpleNamespace(device=device, grid=(grid_x, grid_y, grid_z), args=bound))

        return LoadedKernel(compiled, launch, self.name, device, arg_codes=codes, num_warps=num_warps)


@pytest.fixture
def fake(monkeypatch):
    backend = FakeBackend()
    backends.register_backend(backend)
    monkeypatch.setattr(add_one, "cache", {})
    monkeypatch.setattr(add_one, "_compiled", {})
    monkeypatch.setattr(add_one, "_routes", {})
    for name in (settings.BACKEND_ENV, settings.CHECKED_ENV, settings.THREADS_ENV):
        monkeypatch.delenv(name, raising=False)
    yield backend
    backends.unregister_backend(backend.name)


def test_builtin_backends_by_name_and_target():
    assert backends.get_backend("nvidia") is backends.get_backend("cuda")
    assert backends.get_backend(" CPU ").name == "cpu"
    assert backends.backend_for_target("cpu") is backends.get_backend("cpu")
    assert backends.backend_for_target("sm_90a") is backends.get_backend("cuda")
    assert "cpu" in backends.available_backends()
    with pytest.raises(ValueError, match="unknown backend 'tpu'; expected 'cpu', 'cuda' or 'nvidia'"):
        backends.get_backend("tpu")
    with pytest.raises(ValueError, match="unknown target 'gfx90a': expected 'cpu' or an NVIDIA chip"):
        backends.backend_for_target("gfx90a")


def test_names_cannot_be_taken_twice(fake):
    class Impostor(FakeBackend):
        name = "cuda"
        aliases = ()

    with pytest.raises(ValueError, match="backend name 'cuda' is already registered"):
        backends.register_backend(Impostor())


def test_kiln_compile_hands_a_third_target_to_its_backend(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_DUMP_DIR", str(tmp_path))
    kernel = kiln.compile(add_one, signature={"x_ptr": "*fp32", "n": "i32"}, constexprs={"BLOCK": 16},
                          target="fake_7")
    assert fake.compiles == [("fake_7", {"checked": False})]
    assert kernel.metadata["backend"] == "fake" and kernel.metadata["target"] == "fake_7"
    assert kernel.metadata["pipelines"] == ["builtin.module(canonicalize{})"]
    assert "kiln.load" in kernel.asm["kiln"] and "kiln.load" in kernel.asm["fake_ir"]
    assert {path.name for path in tmp_path.iterdir()} == {"add_one.kiln.mlir", "add_one.fake.mlir"}


def test_unknown_targets_list_every_backend(fake):
    with pytest.raises(ValueError, match="expected 'cpu', an NVIDIA chip such as 'sm_80' or 'sm_90a' or a fake "
                                         "chip such as 'fake_1'"):
        kiln.compile(add_one, signature={"x_ptr": "*fp32", "n": "i32"}, constexprs={"BLOCK": 16}, target="tpu")


def test_launches_naming_a_third_backend_run_on_it(fake):
    x = np.zeros(32, dtype=np.float32)
    compiled = add_one[(2,)](x, 32, BLOCK=16, backend="fakeaccel")
    assert compiled.metadata["backend"] == "fake"
    assert fake.compiles == [("fake_1", {"checked": False, "fast_math": True})]  # its own compile options
    assert fake.checked_arrays == ["x_ptr"]
    assert fake.launches[-1].grid == (2, 1, 1) and fake.launches[-1].args[0] is x
    loaded = add_one.cache[0][next(iter(add_one.cache[0]))]
    assert loaded.backend == "fake" and loaded.arg_codes == "pi"

    add_one[(3,)](x, 32, BLOCK=16, backend="fakeaccel")  # a cache hit: no compile, no load
    assert len(fake.compiles) == 1 and fake.loads == [0] and fake.launches[-1].grid == (3, 1, 1)

    fake.device = 1  # a multi-device backend: the same key loads again on another device
    add_one[(1,)](x, 32, BLOCK=16, backend="fakeaccel")
    assert fake.loads == [0, 1] and fake.launches[-1].device == 1
    assert [target for target, _ in fake.compiles] == ["fake_1", "fake_2"]
    assert set(add_one.cache) == {0, 1}


def test_the_environment_can_name_a_third_backend(fake, monkeypatch):
    monkeypatch.setenv(settings.BACKEND_ENV, "fake")
    add_one[(1,)](np.zeros(16, dtype=np.float32), 16, BLOCK=16)
    assert len(fake.launches) == 1


def test_a_third_backends_argument_checks_are_its_own(fake):
    class Elsewhere:
        dtype = "float32"

        def data_ptr(self):
            return 0

        def get_device(self):
            return 0

    with pytest.raises(ValueError, match="argument 'x_ptr' is not host memory"):
        add_one[(1,)](Elsewhere(), 16, BLOCK=16, backend="fake")
