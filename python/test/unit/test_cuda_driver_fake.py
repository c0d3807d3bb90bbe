"""Kiln's CUDA driver code (kiln._C.driver) against a stand-in libcuda
(fake_libcuda.c, built here with the system C compiler): loading on a device
that is not current, launching in the function's own context and restoring
the caller's, the packed parameters, and a failing load reported, all on a
machine without a GPU."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kiln_test_support import kiln_search_path

SOURCE = Path(__file__).with_name("fake_libcuda.c")
COMPILER = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


@pytest.fixture(scope="module")
def fake_libcuda(tmp_path_factory):
    if COMPILER is None:
        pytest.skip("no C compiler to build the stand-in libcuda")
    library = tmp_path_factory.mktemp("fake_cuda") / "libcuda.so"
    subprocess.run([COMPILER, "-shared", "-fPIC", "-O1", "-o", str(library), str(SOURCE)], check=True,
                   capture_output=True, text=True, timeout=120)
    return library


def run_with_fake_driver(library: Path, tmp_path: Path, code: str, params: int = 0) -> tuple[str, list[str]]:
    """Runs `code` in a fresh interpreter whose kiln._C.driver opens the
    stand-in; returns its output and the driver's log lines."""
    log = tmp_path / "cuda.log"
    env = dict(os.environ, KILN_LIBCUDA_PATH=str(library), FAKE_CUDA_LOG=str(log),
               FAKE_CUDA_PARAMS=str(params), PYTHONPATH=kiln_search_path())
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout, log.read_text().splitlines() if log.exists() else []


def write_scalar_kernel(directory: Path) -> None:
    """Writes scalar_kernel.py (a kernel of scalar arguments only, which a
    machine without a CUDA torch can launch) into `directory`."""
    (directory / "scalar_kernel.py").write_text(textwrap.dedent("""
        import kiln
        import kiln.language as kl


        @kiln.jit
        def scalars(a, b, x, N: kl.constexpr):
            kl.device_assert(a + b > -(2**31), "never")
    """))


def test_devices_and_properties(fake_libcuda, tmp_path):
    out, _ = run_with_fake_driver(fake_libcuda, tmp_path, """
        from kiln._C import driver
        assert driver.is_available(), driver.unavailable_reason()
        print(driver.device_count())
        properties = driver.get_device_properties(1)
        print(properties["name"], properties["capability"], properties["max_shared_mem"])
    """)
    assert out.splitlines() == ["2", "Fake GPU 1 (9, 0) 232448"]


def test_launch_runs_in_the_function_context_and_restores_the_callers(fake_libcuda, tmp_path):
    """A kernel loaded on device 1 while device 0 is current loads in device
    1's context and launches there, and device 0's context is current again
    after each call; the parameters arrive as packed (a pointer, an i32, an
    f32, an i64)."""
    _, log = run_with_fake_driver(fake_libcuda, tmp_path, """
        import struct
        from kiln._C import driver
        driver.set_current_device(0)
        module, function, registers, spills = driver.load_binary("kernel_a", b"cubin", 1024, 1)
        assert (registers, spills) == (40, 0), (registers, spills)
        assert driver.current_device() == 0
        driver.launch(3, 2, 1, 4, 1024, 0x77, function, "pifl", (0x1000, -2, 1.5, 2**40))
        assert driver.current_device() == 0
    """, params=4)
    f32 = "3fc00000"  # 1.5
    i32 = "fffffffe"  # -2, in the low half of its slot
    assert log[0] == "set context 0"
    assert log[1:4] == ["set context 1", "load context 1", "set context 0"]
    launch = [line for line in log if line.startswith("launch")]
    assert len(launch) == 1
    words = launch[0].split(" params ")[1].split(",")
    assert launch[0].startswith("launch kernel_a context 1 grid 3,2,1 block 128,1,1 shared 1024 stream 77 ")
    assert words[0] == "1000" and words[1].endswith(i32) and words[2].endswith(f32) and words[3] == "10000000000"
    assert log[-1] == "set context 0"


def test_each_device_is_asked_its_properties_once(fake_libcuda, tmp_path, monkeypatch):
    """A device's properties are asked of the driver once per process, and
    its clock rates (about half a millisecond each for a real driver) only
    when someone asks for them: each load needs the device's shared-memory
    limit, and a first launch from a warm cache paid for all of them
    twice."""
    monkeypatch.setenv("FAKE_CUDA_LOG_QUERIES", "1")
    out, log = run_with_fake_driver(fake_libcuda, tmp_path, """
        from kiln._C import driver
        driver.set_current_device(0)
        driver.load_binary("kernel_a", b"cubin", 1024, 0)
        driver.load_binary("kernel_b", b"cubin", 1024, 0)
        launch = driver.get_device_properties(0, clock_rates=False)
        print(launch["name"], "sm_clock_rate" in launch)
        print("-- asked")
        full = driver.get_device_properties(0)
        print(full["name"], full["sm_clock_rate"], driver.get_device_properties(0)["mem_clock_rate"])
        driver.load_binary("kernel_c", b"cubin", 1024, 1)
        try:
            driver.get_device_properties(7)
        except RuntimeError as error:
            print(error)
    """)
    lines = out.splitlines()
    assert lines[:3] == ["Fake GPU 0 False", "-- asked", "Fake GPU 0 1980000 2619000"]
    assert "invalid device 7" in lines[3]
    queries = [line for line in log if line.startswith(("name of", "clock rate of"))]
    # Device 0 asked once without its clocks and once more for them; device
    # 1 once, without.
    assert queries == ["name of device 0", "name of device 0", "clock rate of device 0", "name of device 1"]


def test_a_failing_load_is_a_clear_error(fake_libcuda, tmp_path):
    out, _ = run_with_fake_driver(fake_libcuda, tmp_path, """
        from kiln._C import driver
        driver.set_current_device(0)
        try:
            driver.load_binary("broken", b"FAIL: not a cubin", 0, 0)
        except RuntimeError as error:
            print(error)
        try:
            driver.load_binary("greedy", b"cubin", 10**6, 0)
        except RuntimeError as error:
            print(error)
    """)
    first, second = out.splitlines()
    assert "CUDA_ERROR_INVALID_IMAGE" in first and "broken" in first, first
    assert "greedy" in second and "232448" in second, second


def test_a_kernel_launch_through_the_jit(fake_libcuda, tmp_path):
    """kernel[grid](...) with scalar arguments only runs on the (stand-in)
    GPU: compiled for its sm_90a, loaded once, launched with the grid, the
    block of num_warps warps and the parameters in order (the constexpr
    left out; an i32 sign-extended in its 8-byte slot), on the default
    stream (no CUDA torch here)."""
    write_scalar_kernel(tmp_path)
    out, log = run_with_fake_driver(fake_libcuda, tmp_path, f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from scalar_kernel import scalars
        compiled = scalars[(5, 2)](7, 11, 2.5, N=4, num_warps=2)
        scalars[(6,)](-3, 5, -1.0, 4, num_warps=2)
        print(compiled.metadata["target"])
    """, params=3)
    assert out.splitlines() == ["sm_90a"]
    assert [line for line in log if line.startswith("load")] == ["load context 0"]
    launches = [line for line in log if line.startswith("launch")]
    assert launches == [
        "launch scalars context 0 grid 5,2,1 block 64,1,1 shared 0 stream 0 params 7,b,40200000",
        "launch scalars context 0 grid 6,1,1 block 64,1,1 shared 0 stream 0 params fffffffffffffffd,5,bf800000",
    ]


def test_repeated_launches_take_the_direct_path(fake_libcuda, tmp_path):
    """From the second positional launch of a key on, kernel[grid](...) is
    launched by the native path from C++ (a DirectLaunch of the loaded
    kernel): the parameters are packed as before, the stream is the stream
    source's at each launch, the compiled kernel is returned, launches in a
    skipping_launches block do nothing, and a grid out of CUDA's range is
    still reported by name."""
    write_scalar_kernel(tmp_path)
    out, log = run_with_fake_driver(fake_libcuda, tmp_path, f"""
        import itertools
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from kiln.runtime import driver, launch_settings
        from scalar_kernel import scalars
        first = scalars[(2,)](3, 2, 0.5, 4)
        streams = itertools.count(0x51)
        driver.current_stream = lambda device: next(streams)
        second = scalars[(3,)](-3, 5, -1.0, 4)
        third = scalars[(4,)](7, 8, 2.0, 4)
        native = [route for routes in scalars._routes.values() if isinstance(routes, dict)
                  for route in routes.values() if isinstance(route, tuple)]
        print(len(native), [type(route[2]).__name__ for route in native])
        print(first is second is third)
        with launch_settings.skipping_launches():
            print(scalars[(5,)](1, 1, 1.0, 4))
        try:
            scalars[(2**31,)](1, 2, 0.5, 4)
        except ValueError as error:
            print(error)
    """, params=3)
    lines = out.splitlines()
    assert lines[0] == "1 ['DirectLaunch']", lines
    assert lines[1] == "True"
    assert lines[2] == "None"
    assert lines[3].startswith("kernel scalars: grid x is 2147483648"), lines
    launches = [line for line in log if line.startswith("launch")]
    assert launches == [
        "launch scalars context 0 grid 2,1,1 block 128,1,1 shared 0 stream 0 params 3,2,3f000000",
        "launch scalars context 0 grid 3,1,1 block 128,1,1 shared 0 stream 51 params fffffffffffffffd,5,bf800000",
        "launch scalars context 0 grid 4,1,1 block 128,1,1 shared 0 stream 52 params 7,8,40000000",
    ]


def test_arch_compiles_for_another_architecture_without_loading(fake_libcuda, tmp_path):
    """`arch=` (Triton's launch option) and `knobs.runtime.override_arch`
    compile for another NVIDIA architecture than the device's (sm_90a
    here): a warm-up returns the compiled kernel, not loaded; a launch says
    why it cannot run; `sm90` is the device's own sm_90a and launches; an
    architecture Kiln does not compile for, or one that is not NVIDIA's, and
    `arch` on the CPU backend, are ValueErrors naming the kernel."""
    write_scalar_kernel(tmp_path)
    out, log = run_with_fake_driver(fake_libcuda, tmp_path, f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from kiln import knobs
        from scalar_kernel import scalars
        compiled = scalars.warmup(3, 2, 0.5, 4, grid=(1,), arch="sm80")
        print(compiled.metadata["target"], ".target sm_80" in compiled.asm["ptx"])
        try:
            scalars[(1,)](3, 2, 0.5, 4, arch="sm80")
        except RuntimeError as error:
            print(error)
        with knobs.runtime.scope():
            knobs.runtime.override_arch = "sm_86"
            print(scalars.warmup(3, 2, 0.5, 4, grid=(1,)).metadata["target"])
        print(scalars[(1,)](3, 2, 0.5, 4, arch="sm90").metadata["target"])
        for arch in ("sm70", "gfx942"):
            try:
                scalars.warmup(3, 2, 0.5, 4, grid=(1,), arch=arch)
            except ValueError as error:
                print(error)
        try:
            scalars[(1,)](3, 2, 0.5, 4, arch="sm80", backend="cpu")
        except ValueError as error:
            print(error)
    """, params=3)
    lines = out.splitlines()
    assert lines[0] == "sm_80 True", lines
    assert lines[1] == ("kernel scalars: compiled for sm_80 (arch=), which device 0 (sm_90a) cannot run; warm it "
                        "up only, or launch without arch"), lines
    assert lines[2] == "sm_86"
    assert lines[3] == "sm_90a"
    assert lines[4].startswith("kernel scalars: arch='sm70': Kiln compiles for sm_80 and later"), lines
    assert lines[5].startswith("kernel scalars: arch='gfx942' is not an NVIDIA architecture"), lines
    assert lines[6] == ("kernel scalars: arch='sm80' names an architecture to compile for, which only the NVIDIA "
                        "backend takes; the cpu backend compiles for its own target"), lines
    # Only the device's own kernel was loaded and launched.
    loads = [line for line in log if line.startswith("load")]
    launches = [line for line in log if line.startswith("launch")]
    assert len(loads) == 1 and len(launches) == 1, log
