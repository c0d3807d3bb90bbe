"""Repository-level pytest configuration for Kiln's Python tests.

Makes `import kiln` resolve to this checkout's python/ directory when kiln is
not importable otherwise: the .venv made by scripts/setup.sh already points
there, but a bare interpreter (or the GPU machine, with PYTHONPATH unset)
would otherwise fail every test module at collection.
"""

import importlib.util
import os
import sys

_PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

if importlib.util.find_spec("kiln") is None:
    sys.path.insert(0, _PYTHON_DIR)


def pytest_report_header(config):
    # Says which kiln the run tested, so a stale extension is easy to spot.
    spec = importlib.util.find_spec("kiln")
    where = os.path.dirname(spec.origin) if spec and spec.origin else "not importable"
    return f"kiln: {where}"


# -- backends ------------------------------------------------------------------
#
# Kernel tests take the `backend` fixture and run once per backend: "cpu"
# always, "cuda" where a CUDA device is usable (elsewhere that case is
# skipped with the reason, so a GPU run that silently lost its GPU shows up).

import pytest  # noqa: E402 - after the sys.path fix above


from kiln_test_support import cuda_skip_reason  # noqa: E402


@pytest.fixture(autouse=True)
def _private_kernel_cache(tmp_path_factory, monkeypatch):
    """Gives every test an empty on-disk kernel cache of its own, so that no
    test reads what another (or an earlier run) compiled, and none writes
    to the user's ~/.cache/kiln."""
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path_factory.mktemp("kiln-cache")))
    monkeypatch.delenv("KILN_DISABLE_CACHE", raising=False)


BACKENDS = ("cpu", "cuda")


@pytest.fixture(params=BACKENDS)
def backend(request):
    """The backend a kernel test runs on: "cpu" or "cuda"."""
    if request.param == "cuda":
        reason = cuda_skip_reason()
        if reason is not None:
            pytest.skip(f"no CUDA backend: {reason}")
    return request.param


class BackendArrays:
    """Makes torch tensors where `backend`'s kernels read them, so one test
    body serves every backend; `cache_device` is the JITFunction.cache key."""

    def __init__(self, backend):
        import torch

        self.backend = backend
        self.device = "cuda" if backend == "cuda" else "cpu"
        self._torch = torch

    @property
    def cache_device(self):
        return self._torch.cuda.current_device() if self.backend == "cuda" else "cpu"

    def generator(self, seed):
        generator = self._torch.Generator(device=self.device)
        generator.manual_seed(seed)
        return generator

    def randn(self, n, dtype=None, seed=0):
        """Normal random values (drawn in fp32, then converted to `dtype`)."""
        values = self._torch.randn(n, dtype=self._torch.float32, device=self.device, generator=self.generator(seed))
        return values if dtype is None else values.to(dtype)

    def randint(self, low, high, n, dtype, seed=0):
        return self._torch.randint(low, high, (n,), dtype=dtype, device=self.device, generator=self.generator(seed))

    def full(self, n, value, dtype):
        return self._torch.full((n,) if isinstance(n, int) else n, value, dtype=dtype, device=self.device)

    def to_backend(self, tensor):
        return tensor.to(self.device)

    def synchronize(self):
        if self.backend == "cuda":
            self._torch.cuda.synchronize()


@pytest.fixture
def arrays(backend):
    """A BackendArrays for the `backend` of this test."""
    return BackendArrays(backend)
