"""Device asserts in the combine function of a reduction or scan (debug mode).

The combine function is a jit function called from the kernel, so its
assert's location is a call site. On the GPU the assert's strings become
module globals (one per distinct text) and each thread checks the values it
combines.
On the CPU backend the kernels run and give the sums of a float64 reference.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kiln
import kiln.language as kl


@kiln.jit
def checked_add(a, b):
    wide = a.to(kl.int64) + b.to(kl.int64)
    kl.device_assert((wide >= -2**31) & (wide <= 2**31 - 1), "int32 overflow")
    return a + b


@kiln.jit(debug=True)
def checked_sum_kernel(z_ptr, x_ptr, BLOCK: kl.constexpr):
    kl.store(z_ptr, kl.reduce(kl.load(x_ptr + kl.arange(0, BLOCK)), 0, checked_add))


@kiln.jit(debug=True)
def checked_cumsum_kernel(z_ptr, x_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(z_ptr + offs, kl.associative_scan(kl.load(x_ptr + offs), 0, checked_add))


@kiln.jit(debug=True)
def checked_sum_2d_kernel(z_ptr, x_ptr, ROWS: kl.constexpr, COLS: kl.constexpr, AXIS: kl.constexpr):
    offs = kl.arange(0, ROWS)[:, None] * COLS + kl.arange(0, COLS)[None, :]
    total = kl.reduce(kl.load(x_ptr + offs), AXIS, checked_add)
    kl.store(z_ptr + kl.arange(0, COLS if AXIS == 0 else ROWS), total)


@kiln.jit
def bounded_add(a, b):
    kl.device_assert(a + b < 100, "sum too large")
    return a + b


@kiln.jit(debug=True)
def bounded_sum_kernel(z_ptr, x_ptr, BLOCK: kl.constexpr):
    kl.store(z_ptr, kl.reduce(kl.load(x_ptr + kl.arange(0, BLOCK)), 0, bounded_add))


SIGNATURE = {"z_ptr": "*i32", "x_ptr": "*i32"}


def _assert_calls(ptx: str) -> int:
    return len(re.findall(r"call\.uni\s+__assertfail", ptx))


@pytest.mark.parametrize("kernel, constexprs", [
    (checked_sum_kernel, {"BLOCK": 512}),
    (checked_cumsum_kernel, {"BLOCK": 512}),
    (checked_sum_2d_kernel, {"ROWS": 16, "COLS": 32, "AXIS": 0}),
    (checked_sum_2d_kernel, {"ROWS": 16, "COLS": 32, "AXIS": 1}),
])
def test_combine_assert_compiles_for_sm90a(kernel, constexprs) -> None:
    compiled = kiln.compile(kernel, SIGNATURE, constexprs, target="sm_90a", debug=True)
    ptx = compiled.asm["ptx"]
    assert _assert_calls(ptx) > 0
    # One global per distinct string (message, file, function), however many
    # combining steps check the assert.
    assert len(re.findall(r"^\.global .*kiln_debug_string_\d+", ptx, re.MULTILINE)) == 3


def test_combine_assert_checks_every_thread() -> None:
    """A scalar assert in a kernel is reported by one thread; one in a combine
    function checks values that differ from thread to thread, so none of its
    checks may depend on the thread index."""
    llir = kiln.compile(checked_sum_kernel, SIGNATURE, {"BLOCK": 512}, target="sm_90a", debug=True).asm["llir"]
    tid = re.search(r"(%\d+) = tail call .*@llvm\.nvvm\.read\.ptx\.sreg\.tid\.x\(\)", llir).group(1)
    first_thread = re.findall(rf"(%\w+) = icmp eq i32 {tid}, 0", llir)
    for name in first_thread:  # (the scalar result is stored by thread 0)
        assert not re.search(rf"= and i1 ({name}, |.*, {name}\b)", llir), "an assert is checked by thread 0 only"


@pytest.mark.parametrize("axis", [0, 1])
def test_combine_assert_runs_on_cpu(axis: int) -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(-1000, 1000, size=(16, 32)).astype(np.int32)
    z = np.zeros(32 if axis == 0 else 16, dtype=np.int32)
    checked_sum_2d_kernel[(1, )](z, x, ROWS=16, COLS=32, AXIS=axis, backend="cpu")
    np.testing.assert_array_equal(z, x.astype(np.float64).sum(axis).astype(np.int32))
    flat = x.reshape(-1)
    out = np.zeros_like(flat)
    checked_cumsum_kernel[(1, )](out, flat, BLOCK=512, backend="cpu")
    np.testing.assert_array_equal(out, np.cumsum(flat.astype(np.float64)).astype(np.int32))


def test_combine_assert_that_fails_raises_on_cpu() -> None:
    x = np.full(64, 3, dtype=np.int32)
    z = np.zeros((), dtype=np.int32)
    with pytest.raises(kiln.errors.DeviceAssertionError, match="sum too large"):
        bounded_sum_kernel[(1, )](z, x, BLOCK=64, backend="cpu")
