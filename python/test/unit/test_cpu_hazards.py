"""The CPU backend where a kernel or its caller does something hazardous:
integer division by zero, concurrent first launches, a process exiting,
interrupted or forked while kernels run, and many specializations.

Whatever happens on the host must end in a value or a Python exception,
never in a signal that kills the interpreter, a hang, or a wrong result.
Tests that need a fresh interpreter run one in a subprocess.
"""

import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import kiln
import kiln.language as kl
from kiln.runtime import launch_settings


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """The environment variables under test start unset in every test."""
    for name in (launch_settings.BACKEND_ENV, launch_settings.CHECKED_ENV, launch_settings.THREADS_ENV):
        monkeypatch.delenv(name, raising=False)


def run_python(directory, source: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """Runs ``source`` in a fresh interpreter, from a file in ``directory``
    (kiln.jit reads kernels' source files)."""
    script = directory / "script.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=timeout, **kwargs)


# -- integer division ------------------------------------------------------------


@kiln.jit
def divide_kernel(x_ptr, y_ptr, q_ptr, r_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask)
    y = kl.load(y_ptr + offs, mask=mask, other=1)
    kl.store(q_ptr + offs, x // y, mask=mask)
    kl.store(r_ptr + offs, x % y, mask=mask)


@kiln.jit
def divide_scalars_kernel(out_ptr, x, y):
    kl.store(out_ptr, x // y)
    kl.store(out_ptr + 1, x % y)


def expected_division(x: int, y: int, bits: int, signed: bool) -> tuple[int, int]:
    """What Kiln guarantees: C's truncating division and remainder where
    they are defined; x / 0 is all ones and x % 0 is x; x / -1 wraps."""
    mask = (1 << bits) - 1
    if y == 0:
        quotient, remainder = -1, x
    else:
        quotient = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        remainder = x - quotient * y
    def wrap(value: int) -> int:
        value &= mask
        return value - (1 << bits) if signed and value >> (bits - 1) else value
    return wrap(quotient), wrap(remainder)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                   np.uint64])
def test_integer_division_by_zero_and_overflow_gives_values(dtype):
    info = np.iinfo(dtype)
    signed = info.min < 0
    x = np.array([7, 0, info.max, info.min, info.min, 5, 100, info.max, 9, info.min + 1, 3, 1, 2, 4, 6, 8],
                 dtype=dtype)
    minus_one = -1 if signed else 0
    y = np.array([0, 0, 0, 0, minus_one, 2, 7, minus_one, 3, minus_one, 0, 1, 0, 0, 0, 0], dtype=dtype)
    if signed:
        x[1], y[5] = -7, -2
    q, r = np.full_like(x, 42), np.full_like(x, 42)
    divide_kernel[(1,)](x, y, q, r, x.size, BLOCK=16)
    expected = [expected_division(int(a), int(b), info.bits, signed) for a, b in zip(x, y)]
    assert q.tolist() == [e[0] for e in expected]
    assert r.tolist() == [e[1] for e in expected]


@pytest.mark.parametrize("x, y", [(7, 0), (-7, 0), (-2**31, -1), (2**40, 0), (-2**63, -1), (9, -2)])
def test_scalar_integer_division_by_zero_and_overflow_gives_values(x, y):
    bits = 32 if -2**31 <= x < 2**31 and -2**31 <= y < 2**31 else 64
    out = np.zeros(2, dtype=np.int32 if bits == 32 else np.int64)
    divide_scalars_kernel[(1,)](out, x, y)
    assert out.tolist() == list(expected_division(x, y, bits, True))


def test_division_of_an_out_of_range_conversion_does_not_trap(tmp_path):
    # Negative floats converted to uint8 are poison to LLVM, which then took
    # the zero-extended dividend for a value below 256 and divided with a
    # 32-bit idiv of a stale register: the quotient overflowed and the
    # process died of SIGFPE (found by the fuzzer). The explicit int32 is
    # the conversion the fuzzer's uint8 // int32 made (such mixed-signedness
    # division is refused now, as in Triton). In a fresh interpreter, since
    # a trap would kill this one.
    result = run_python(tmp_path, '''
        import numpy as np
        import kiln
        import kiln.language as kl

        @kiln.jit
        def kernel(out, x, BM: kl.constexpr, BN: kl.constexpr):
            pid = kl.program_id(0)
            rows = pid * BM + kl.arange(0, BM)
            offs = rows[:, None] * BN + kl.arange(0, BN)[None, :]
            v = kl.load(x + offs)
            kl.store(out + offs, (v.to(kl.uint8).to(kl.int32) // (pid | 1)).to(kl.uint8))

        x = (np.arange(64) - 5.5).astype(np.float32)
        out = np.zeros(64, dtype=np.uint8)
        kernel[(2,)](out, x, BM=16, BN=2)
        # The converted values of the negative floats are unspecified.
        assert out[6:].tolist() == list(range(0, 58)), out
        print("ok")
    ''')
    assert result.returncode == 0 and result.stdout.strip() == "ok", (result.returncode, result.stderr[-2000:])


# -- concurrent first launches ---------------------------------------------------


def test_concurrent_first_launches_are_correct_and_compile_once(tmp_path):
    # A fresh interpreter: the backend registry is filled on the first launch.
    result = run_python(tmp_path, """
        import threading
        import numpy as np
        import kiln, kiln.language as kl
        from kiln.runtime import jit as runtime_jit

        compiles = []
        compile_jit_function = runtime_jit._compile_jit_function
        def counting(jit_fn, *args, **kwargs):
            compiles.append(jit_fn.__name__)
            return compile_jit_function(jit_fn, *args, **kwargs)
        runtime_jit._compile_jit_function = counting

        @kiln.jit
        def shift(x_ptr, out_ptr, n, BLOCK: kl.constexpr, C: kl.constexpr):
            offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
            m = offs < n
            kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=m) + C, mask=m)

        @kiln.jit
        def scale(x_ptr, out_ptr, n, BLOCK: kl.constexpr, C: kl.constexpr):
            offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
            m = offs < n
            kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=m) * C, mask=m)

        errors = []
        start = threading.Barrier(8)
        def work(index):
            start.wait()
            for c in range(6):
                for kernel, op in ((shift, np.add), (scale, np.multiply)):
                    x = np.arange(100, dtype=np.float32)
                    out = np.full_like(x, np.nan)
                    try:
                        kernel[(2,)](x, out, x.size, BLOCK=64, C=c)
                        if not (out == op(x, c)).all():
                            errors.append(f"thread {index}: {kernel.__name__} C={c} gave {out[:4]}")
                    except Exception as error:
                        errors.append(f"thread {index}: {error!r}")
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(len(errors), errors[:3])
        print(sorted(compiles))
    """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "0 []"
    assert lines[1] == str(sorted(["scale"] * 6 + ["shift"] * 6))


# -- the process around running launches -----------------------------------------

ADD_KERNEL = textwrap.dedent("""
    import numpy as np
    import kiln, kiln.language as kl

    @kiln.jit
    def add_one(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
        offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
        m = offs < n
        kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=m) + 1, mask=m)

    def check_add_one(programs=4, num_threads=2):
        x = np.arange(programs * 1024, dtype=np.float32)
        out = np.zeros_like(x)
        add_one[(programs,)](x, out, x.size, BLOCK=1024, num_threads=num_threads)
        assert (out == x + 1).all()
""")


def test_exit_while_a_daemon_thread_launches(tmp_path):
    # The daemon thread is inside a launch, or about to take the GIL back
    # after one, when the interpreter shuts down.
    for _ in range(3):
        result = run_python(tmp_path, ADD_KERNEL + textwrap.dedent("""
            import threading, time
            check_add_one()
            def launch_forever():
                x = np.ones(1 << 20, dtype=np.float32)
                out = np.empty_like(x)
                while True:
                    add_one[(1024,)](x, out, x.size, BLOCK=1024)
            threading.Thread(target=launch_forever, daemon=True).start()
            time.sleep(0.2)
            print("exiting")
        """), timeout=60)
        assert (result.returncode, result.stdout) == (0, "exiting\n"), result.stderr


def test_fork_after_a_launch_can_launch_in_the_child(tmp_path):
    result = run_python(tmp_path, ADD_KERNEL + textwrap.dedent("""
        import os
        check_add_one()
        pid = os.fork()
        if pid == 0:
            try:
                check_add_one()
                check_add_one(programs=64, num_threads=3)
            except BaseException:
                os._exit(3)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        check_add_one()
        print("child", os.waitstatus_to_exitcode(status))
    """), timeout=60)
    assert (result.returncode, result.stdout) == (0, "child 0\n"), result.stderr


@pytest.mark.parametrize("programs", [1, 5])
def test_ctrl_c_stops_a_spinning_kernel(tmp_path, programs):
    # The loop never ends: x is never 1. Its programs leave their loop when
    # the launch is interrupted, the launch raises KeyboardInterrupt, and the
    # pool runs the next launch normally.
    script = tmp_path / "spin.py"
    script.write_text(ADD_KERNEL + textwrap.dedent(f"""
        import sys, time

        @kiln.jit
        def spin(x_ptr, out_ptr):
            x = kl.load(x_ptr)
            while x < 1:
                x = kl.load(x_ptr)
            kl.store(out_ptr, x)

        x = np.zeros(1, dtype=np.int32)
        out = np.zeros(1, dtype=np.int32)
        spin.warmup(x, out, grid=(1,))
        print("launching", flush=True)
        start = time.monotonic()
        try:
            spin[({programs},)](x, out, num_threads=2)
        except KeyboardInterrupt:
            print("KeyboardInterrupt after", time.monotonic() - start, flush=True)
        check_add_one()
        print("still works", flush=True)
    """))
    # Python installs its SIGINT handler only where SIGINT is not ignored.
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert child.stdout.readline() == "launching\n"
        time.sleep(0.5)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=20)
        waited = time.monotonic() - sent
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("KeyboardInterrupt after") and lines[1] == "still works", out + err
    assert waited < 10


# -- many specializations --------------------------------------------------------


@kiln.jit
def add_constant_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr, C: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + C, mask=mask)


def launch_add_constant(c):
    x = np.arange(64, dtype=np.float32)
    out = np.full_like(x, np.nan)
    compiled = add_constant_kernel[(1,)](x, out, x.size, BLOCK=64, C=c)
    assert (out == x + c).all()
    return compiled


def cached_constants():
    """The C of each cached specialization (the key ends with the constexpr's (type, value))."""
    return sorted(key[-1][-1][1] for key in add_constant_kernel.cache.get("cpu", {}))


def test_code_cache_keeps_the_most_recently_launched_kernels(monkeypatch):
    monkeypatch.setenv("KILN_CPU_CODE_CACHE_SIZE", "3")
    for c in range(6):
        launch_add_constant(c)
    assert cached_constants() == [3, 4, 5]
    launch_add_constant(3)  # now more recent than 4 and 5
    launch_add_constant(6)
    assert cached_constants() == [3, 5, 6]
    launch_add_constant(0)  # evicted before: compiled again, still right
    assert cached_constants() == [0, 3, 6]


def test_code_cache_setting_is_checked(monkeypatch):
    monkeypatch.setenv("KILN_CPU_CODE_CACHE_SIZE", "lots")
    with pytest.raises(ValueError, match="KILN_CPU_CODE_CACHE_SIZE: expected a number of kernels"):
        launch_add_constant(100)
    monkeypatch.setenv("KILN_CPU_CODE_CACHE_SIZE", "4")
    launch_add_constant(100)


def test_evicted_kernels_free_their_code_unless_held(tmp_path):
    # A fresh interpreter, so that the count of live JIT sessions is this
    # script's alone.
    result = run_python(tmp_path, ADD_KERNEL + textwrap.dedent("""
        import gc, os
        from kiln import _C

        os.environ["KILN_CPU_CODE_CACHE_SIZE"] = "3"

        @kiln.jit
        def add(x_ptr, out_ptr, n, BLOCK: kl.constexpr, C: kl.constexpr):
            offs = kl.arange(0, BLOCK)
            kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=offs < n) + C, mask=offs < n)

        x = np.arange(16, dtype=np.float32)
        out = np.zeros_like(x)
        held = add[(1,)](x, out, x.size, BLOCK=16, C=0)
        for c in range(1, 12):
            add[(1,)](x, out, x.size, BLOCK=16, C=c)
            assert (out == x + c).all()
        gc.collect()
        print(_C.cpu.live_kernels())
        # The evicted kernel the caller kept still runs.
        held[(1,)](x, out, x.size, BLOCK=16, C=0)
        assert (out == x).all() and "llir" in held.asm
        del held
        gc.collect()
        print(_C.cpu.live_kernels())
    """), timeout=120)
    assert result.returncode == 0, result.stderr
    # Three cached, plus the held one; the held one's relaunch compiled C=0
    # again, which evicted one more.
    assert result.stdout.split() == ["4", "3"]
