"""kiln._C's launch packer and CUDA driver without a device: argument
packing errors, and a missing or failing driver reported, not fatal."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kiln.runtime import driver


cdriver = driver._cdriver


@pytest.mark.skipif(cdriver is None, reason="kiln._C is not built")
def test_launch_packing_errors():
    with pytest.raises(OverflowError, match="kernel argument 1 does not fit in i32"):
        cdriver.launch(1, 1, 1, 4, 0, 0, 1, "pi", (0, 2**31))
    with pytest.raises(OverflowError, match="kernel argument 0 does not fit in u32"):
        cdriver.launch(1, 1, 1, 4, 0, 0, 1, "I", (-1,))
    with pytest.raises(TypeError, match="kernel argument 0 must be a tensor or an int address, got object"):
        cdriver.launch(1, 1, 1, 4, 0, 0, 1, "p", (object(),))
    with pytest.raises(TypeError, match="kernel argument 1 must be a float, got str"):
        cdriver.launch(1, 1, 1, 4, 0, 0, 1, "if", (1, "x"))
    with pytest.raises(TypeError, match="kernel takes 2 arguments, got 1"):
        cdriver.launch(1, 1, 1, 4, 0, 0, 1, "pi", (0,))
    with pytest.raises(ValueError, match="unknown argument code 'z'"):
        cdriver.launch(1, 1, 1, 4, 0, 0, 1, "z", (0,))
    with pytest.raises(ValueError, match="grid y is 65536"):
        cdriver.launch(1, 65536, 1, 4, 0, 0, 1, "", ())
    with pytest.raises(ValueError, match="num_warps must be an int between 1 and 32"):
        cdriver.launch(1, 1, 1, 64, 0, 0, 1, "", ())
    with pytest.raises(TypeError, match="takes 9 arguments"):
        cdriver.launch(1, 1, 1)


@pytest.mark.skipif(cdriver is None or cdriver.is_available(), reason="needs kiln._C on a machine without a GPU")
def test_cpp_driver_without_a_device():
    with pytest.raises(RuntimeError, match="^no CUDA device found: "):
        cdriver.launch(1, 1, 1, 4, 0, 0, 1, "pi", (0, 1))
    with pytest.raises(RuntimeError, match="^no CUDA device found: "):
        cdriver.load_binary("k", b"\x7fELF", 0, 0)
    with pytest.raises(RuntimeError, match="^no CUDA device found: "):
        cdriver.get_device_properties(0)
    assert cdriver.device_count() == 0
    assert not cdriver.is_available()


def _stub_libcuda():
    """The CUDA toolkit's stub libcuda, which fails every call, if present."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    roots += [str(Path(p).parent.parent) for p in os.environ.get("PATH", "").split(os.pathsep)
              if (Path(p) / "ptxas").exists()]
    for root in filter(None, roots):
        stub = Path(root) / "lib64" / "stubs" / "libcuda.so"
        if stub.exists():
            return stub
    return None


@pytest.mark.skipif(cdriver is None or _stub_libcuda() is None, reason="needs kiln._C and CUDA's stub libcuda")
def test_failing_driver_is_reported_not_fatal():
    # The driver opens once per process, so look at it from a fresh one.
    script = textwrap.dedent("""
        from kiln._C import driver
        assert not driver.is_available()
        print(driver.unavailable_reason())
        try:
            driver.launch(1, 1, 1, 4, 0, 0, 1, "", ())
        except RuntimeError as error:
            print(error)
    """)
    env = dict(os.environ, KILN_LIBCUDA_PATH=str(_stub_libcuda()))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    reason, error = result.stdout.splitlines()
    assert reason.startswith("cuInit failed: CUDA_ERROR_STUB_LIBRARY")
    assert error == "no CUDA device found: " + reason
