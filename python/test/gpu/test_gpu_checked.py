"""Checked mode on a CUDA device: deliberately wrong kernels (loads, stores
and atomics past the end, negative indices, 2-D tiles) raise the same
OutOfBoundsError as on the CPU, naming the kernel line, the parameter and
the element index; masked-off lanes are never reported; no memory outside
the arguments is touched; a correct launch runs as unchecked."""

import inspect
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.errors import KilnError, OutOfBoundsError


def line_of(kernel, marker):
    """The file line of the kernel's source line containing ``marker``."""
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if marker in line)


@kiln.jit(checked=True)
def overrun_load_kernel(x_ptr, out_ptr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs))  # BUG: no mask on the load


@kiln.jit(checked=True)
def overrun_store_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    value = kl.load(x_ptr + offs, mask=offs < n)
    kl.store(out_ptr + offs + 1, value, mask=offs < n)  # BUG: off by one


def test_checked_unmasked_load_past_the_end():
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    out = torch.zeros(1024, device="cuda")
    with pytest.raises(OutOfBoundsError) as info:
        overrun_load_kernel[(4,)](x, out, BLOCK=256)
    error = info.value
    assert isinstance(error, KilnError) and isinstance(error, IndexError)
    assert error.parameter == "x_ptr"
    assert error.index == 1000  # the smallest faulting index of the site
    assert error.filename == __file__
    assert error.lineno == line_of(overrun_load_kernel, "BUG: no mask")
    message = str(error)
    assert message.startswith(f"{__file__}:{error.lineno}:")
    assert "out-of-bounds load from 'x_ptr' at element index 1000 (the buffer has 1000 elements)" in message
    assert "kl.store(out_ptr + offs, kl.load(x_ptr + offs))" in message
    assert torch.equal(out[:768], x[:768])
    # The record was cleared: a correct launch of the same kernel runs.
    good = torch.zeros(1024, device="cuda")
    overrun_load_kernel[(4,)](out, good, BLOCK=256)
    assert torch.equal(good, out)


def test_checked_store_past_the_end():
    n = 500
    x = torch.arange(n, dtype=torch.int32, device="cuda")
    guard = torch.full((n + 8,), -1, dtype=torch.int32, device="cuda")
    out = guard[:n]  # the element after out exists but is not out's
    with pytest.raises(OutOfBoundsError, match=r"out-of-bounds store to 'out_ptr' at element index 500\b") as info:
        overrun_store_kernel[(4,)](x, out, n, BLOCK=128)
    assert info.value.lineno == line_of(overrun_store_kernel, "BUG: off by one")
    assert guard[n:].tolist() == [-1] * 8  # the faulting store was skipped
    assert out[1:].tolist() == list(range(n - 1))


@kiln.jit(checked=True)
def negative_kernel(x_ptr, out_ptr, shift, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs - shift))  # BUG: reads before x


def test_checked_negative_index():
    backing = torch.arange(64, dtype=torch.float32, device="cuda")
    x = backing[8:]  # memory before x exists but is not x's
    out = torch.zeros(32, device="cuda")
    with pytest.raises(OutOfBoundsError, match=r"load from 'x_ptr' at element index -3\b") as info:
        negative_kernel[(1,)](x, out, 3, BLOCK=32)
    assert info.value.index == -3 and info.value.parameter == "x_ptr"
    assert info.value.lineno == line_of(negative_kernel, "BUG: reads before x")


@kiln.jit(checked=True)
def masked_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=offs < n, other=-3), mask=offs < n + 7)


@pytest.mark.parametrize("n", [0, 5, 64, 100])
def test_masked_lanes_are_never_reported(n):
    # out has room for n + 7 elements; the lanes past x and out are masked.
    x = torch.arange(n, dtype=torch.int32, device="cuda")
    out = torch.full((n + 7,), 99, dtype=torch.int32, device="cuda")
    masked_kernel[(2,)](x, out, n, BLOCK=64)
    assert out.tolist() == list(range(n)) + [-3] * 7


@kiln.jit(checked=True)
def overrun_atomic_kernel(bins_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.atomic_add(bins_ptr + offs, 1, mask=offs < n)  # BUG: n > bins


def test_checked_atomics_stay_inside_their_buffer():
    backing = torch.zeros(256, dtype=torch.int32, device="cuda")
    bins = backing[:8]
    with pytest.raises(OutOfBoundsError) as info:
        overrun_atomic_kernel[(1,)](bins, 12, BLOCK=16)
    assert info.value.parameter == "bins_ptr" and info.value.index == 8
    assert "out-of-bounds store to 'bins_ptr'" in str(info.value)
    assert "kl.atomic_add" in info.value.source_line
    assert backing.tolist() == [1] * 8 + [0] * 248


@kiln.jit(checked=True)
def tile_kernel(x_ptr, out_ptr, stride, ROWS: kl.constexpr, COLS: kl.constexpr):
    rows = kl.arange(0, ROWS)[:, None]
    cols = kl.arange(0, COLS)[None, :]
    tile = kl.load(x_ptr + rows * stride + cols)  # BUG: the last row is short
    kl.store(out_ptr + rows * COLS + cols, tile)


def test_checked_2d_tile():
    x = torch.arange(16 * 32 - 4, dtype=torch.float32, device="cuda")  # 16 rows of 32, the last one short
    out = torch.zeros(16, 32, device="cuda")
    with pytest.raises(OutOfBoundsError, match=r"load from 'x_ptr' at element index 508\b") as info:
        tile_kernel[(1,)](x, out, 32, ROWS=16, COLS=32)
    assert info.value.lineno == line_of(tile_kernel, "BUG: the last row is short")
    assert torch.equal(out.flatten()[:480], x[:480])


def test_strided_view_bounds_are_its_reachable_span():
    # A column of a row-major matrix reaches from its first to its last element only.
    matrix = torch.arange(64 * 4, dtype=torch.float32, device="cuda").reshape(64, 4)
    column = matrix[:, 1]
    out = torch.zeros(64, device="cuda")

    @kiln.jit(checked=True)
    def gather(x_ptr, out_ptr, stride, n, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        kl.store(out_ptr + offs, kl.load(x_ptr + offs * stride, mask=offs < n), mask=offs < n)

    gather[(1,)](column, out, 4, 64, BLOCK=64)
    assert torch.equal(out, column)
    # One row further reaches past the column's span (1 + 64 * 4 - 3 elements).
    with pytest.raises(OutOfBoundsError, match=r"element index 25[3-9]\b"):
        gather[(1,)](column, torch.zeros(65, device="cuda"), 4, 65, BLOCK=128)


def test_checked_mode_from_the_environment(monkeypatch):
    @kiln.jit
    def unchecked_overrun(x_ptr, out_ptr, BLOCK: kl.constexpr):
        offs = kl.arange(0, BLOCK)
        kl.store(out_ptr + offs, kl.load(x_ptr + offs))

    x = torch.arange(10, dtype=torch.float32, device="cuda")
    out = torch.zeros(16, device="cuda")
    unchecked_overrun[(1,)](out, torch.zeros(16, device="cuda"), BLOCK=16)  # unchecked: compiled without checks
    monkeypatch.setenv("KILN_CHECKED", "1")
    with pytest.raises(OutOfBoundsError, match="out-of-bounds load from 'x_ptr' at element index 10\\b"):
        unchecked_overrun[(1,)](x, out, BLOCK=16)
    good = torch.zeros(16, device="cuda")
    unchecked_overrun[(1,)](out, good, BLOCK=16)
    assert torch.equal(good, out)


def test_checked_mode_message_from_a_fresh_process(tmp_path):
    script = tmp_path / "overrun.py"
    script.write_text(textwrap.dedent("""
        import torch
        import kiln
        import kiln.language as kl

        @kiln.jit
        def copy(x_ptr, out_ptr, BLOCK: kl.constexpr):
            offs = kl.arange(0, BLOCK)
            kl.store(out_ptr + offs, kl.load(x_ptr + offs))

        copy[(1,)](torch.zeros(8, device="cuda"), torch.zeros(16, device="cuda"), BLOCK=16)
    """))
    env = dict(os.environ, KILN_CHECKED="1", PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "kiln.errors.OutOfBoundsError: " in result.stderr
    assert f"{script}:9:30: out-of-bounds load from 'x_ptr' at element index 8" in result.stderr
