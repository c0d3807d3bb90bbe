"""kl.device_print and kl.device_assert: the lines printed on the CPU, debug
mode from kiln.jit(debug=True) or KILN_DEBUG, the error a failed assertion
raises after a CPU launch, and the PTX (vprintf, __assertfail) the GPU gets."""

from __future__ import annotations

import inspect

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.backends.nvidia import find_ptxas
from kiln.errors import CompilationError, DeviceAssertionError


@pytest.fixture(autouse=True)
def no_debug_environment(monkeypatch):
    monkeypatch.delenv("KILN_DEBUG", raising=False)


@kiln.jit
def print_kernel(x_ptr, f_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    kl.device_print("x: ", x)
    kl.device_print("h ", x, offs, hex=True)
    kl.device_print("f: ", kl.load(f_ptr + offs))
    kl.device_print("fh ", kl.load(f_ptr + offs), kl.load(f_ptr + offs).to(kl.float32), hex=True)
    kl.device_print("pid ", kl.program_id(0))
    grid = kl.arange(0, 2)[:, None] * 10 + kl.arange(0, 2)[None, :]
    kl.device_print("g: ", grid.to(kl.uint8))


def test_device_print_lines(capfd):
    x = torch.tensor([7, -2], dtype=torch.int32)
    f = torch.tensor([0.5, -1.25], dtype=torch.float16)
    print_kernel[(2,)](x, f, BLOCK=2, num_threads=2)
    lines = capfd.readouterr().out.splitlines()
    for pid in (0, 1):
        expected = [
            "idx (0) x: 7", "idx (1) x: -2",
            "idx (0) h (operand 0) 0x00000007", "idx (1) h (operand 0) 0xfffffffe",
            "idx (0) h (operand 1) 0x00000000", "idx (1) h (operand 1) 0x00000001",
            "idx (0) f: 0.500000", "idx (1) f: -1.250000",
            # A float's own bits: fp16 0.5 is 0x3800, fp32 -1.25 is 0xbfa00000.
            "idx (0) fh (operand 0) 0x3800", "idx (1) fh (operand 0) 0xbd00",
            "idx (0) fh (operand 1) 0x3f000000", "idx (1) fh (operand 1) 0xbfa00000",
            f"idx () pid {pid}",
            "idx (0, 0) g: 0", "idx (0, 1) g: 1", "idx (1, 0) g: 10", "idx (1, 1) g: 11",
        ]
        mine = [line for line in lines if line.startswith(f"pid ({pid}, 0, 0) ")]
        # Lines of one program come in program order.
        assert [line[len(f"pid ({pid}, 0, 0) "):] for line in mine] == expected
    assert len(lines) == 34


@kiln.jit
def assert_kernel(x_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    kl.device_assert(x < n, "x must be below n")
    kl.store(x_ptr + offs, x + 1)


@kiln.jit(debug=True)
def debug_assert_kernel(x_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    kl.device_assert(x < n, "x must be below n")
    # Atomic: the programs of a grid run on several threads at once.
    kl.atomic_add(x_ptr + offs, 1)


def _assert_line(kernel) -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if "kl.device_assert" in line)


def test_device_assert_off_by_default():
    x = torch.tensor([1, 50, 3, 4], dtype=torch.int32)
    assert_kernel[(1,)](x, 10, BLOCK=4)
    assert x.tolist() == [2, 51, 4, 5]


def test_device_assert_in_debug_mode_raises():
    x = torch.tensor([1, 50, 3, 4], dtype=torch.int32)
    with pytest.raises(DeviceAssertionError) as info:
        debug_assert_kernel[(3,)](x, 10, BLOCK=4)
    assert isinstance(info.value, AssertionError)
    message = str(info.value)
    assert message.startswith(f"{__file__}:{_assert_line(debug_assert_kernel)}: debug_assert_kernel: ")
    assert "device-side assertion failed: x must be below n" in message
    assert "idx (1)" in message
    # Every program ran to completion.
    assert x.tolist() == [4, 53, 6, 7]


def test_device_assert_passing_condition_is_silent():
    x = torch.tensor([1, 2, 3, 4], dtype=torch.int32)
    debug_assert_kernel[(1,)](x, 10, BLOCK=4)
    assert x.tolist() == [2, 3, 4, 5]


def test_kiln_debug_environment_enables_asserts(monkeypatch):
    x = torch.tensor([1, 50, 3, 4], dtype=torch.int32)
    assert_kernel[(1,)](x, 100, BLOCK=4)  # compiled without asserts
    monkeypatch.setenv("KILN_DEBUG", "1")
    with pytest.raises(AssertionError, match="x must be below n"):
        assert_kernel[(1,)](x, 10, BLOCK=4)
    monkeypatch.setenv("KILN_DEBUG", "0")
    assert_kernel[(1,)](x, 10, BLOCK=4)


@kiln.jit(debug=True)
def python_assert_kernel(x_ptr, n, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    assert x < n, "x below n"


def test_python_assert_on_a_runtime_value_is_a_device_assert():
    x = torch.tensor([1, 2, 30, 4], dtype=torch.int32)
    with pytest.raises(DeviceAssertionError, match=r"python_assert_kernel: device-side assertion failed: x below n "
                                                   r"\(pid \(0, 0, 0\) idx \(2\)\)"):
        python_assert_kernel[(1,)](x, 10, BLOCK=4)
    python_assert_kernel[(1,)](x, 100, BLOCK=4)


SIGNATURE = {"x_ptr": "*i32", "n": "i32"}


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_gpu_debug_ops_compile(target):
    printed = kiln.compile(print_kernel, {"x_ptr": "*i32", "f_ptr": "*fp16"}, {"BLOCK": 64}, target=target)
    assert "call.uni" in printed.asm["ptx"] and "vprintf" in printed.asm["ptx"]
    asserted = kiln.compile(assert_kernel, SIGNATURE, {"BLOCK": 64}, target=target, debug=True)
    assert "__assertfail" in asserted.asm["ptx"]
    assert "__assertfail" not in kiln.compile(assert_kernel, SIGNATURE, {"BLOCK": 64}, target=target).asm["ptx"]
    if find_ptxas() is not None:
        assert printed.asm["cubin"][:4] == b"\x7fELF" and asserted.asm["cubin"][:4] == b"\x7fELF"


@kiln.jit
def bad_print_kernel(x_ptr, WHICH: kl.constexpr):
    if WHICH == 0:
        kl.device_print(x_ptr)
    else:
        kl.device_print("nothing")


@pytest.mark.parametrize("which,message", [(0, "device_print needs a string prefix"),
                                           (1, "device_print needs at least one value to print")])
def test_device_print_errors(which, message):
    with pytest.raises(CompilationError, match=message) as info:
        kiln.compile(bad_print_kernel, {"x_ptr": "*i32"}, {"WHICH": which}, target="cpu")
    assert "kl.device_print" in info.value.source_line
