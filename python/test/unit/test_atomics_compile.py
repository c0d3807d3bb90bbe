"""Atomics without a GPU: the PTX of each atomic shows the requested ordering
and scope and assembles with ptxas for sm_80 and sm_90a; unsupported element
types, orderings and scopes are CompilationErrors at the call's line."""

from __future__ import annotations

import re

import pytest

import kiln
import kiln.language as kl
from kiln.backends.nvidia import find_ptxas
from kiln.errors import CompilationError


@kiln.jit
def atomics_kernel(x_ptr, u_ptr, f_ptr, d_ptr, h_ptr, lock_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask)
    kl.store(x_ptr + offs, kl.atomic_add(x_ptr + x, 1, mask=mask, sem="relaxed", scope="cta"), mask=mask)
    kl.atomic_max(x_ptr + x, x, mask=mask, sem="acquire", scope="gpu")
    kl.atomic_min(u_ptr + x, x, mask=mask, sem="release", scope="sys")
    kl.atomic_and(x_ptr + x, x, mask=mask)
    kl.atomic_or(x_ptr + x, x, mask=mask)
    kl.atomic_xor(x_ptr + x, x, mask=mask)
    f = kl.load(f_ptr + offs, mask=mask)
    kl.store(f_ptr + offs, kl.atomic_min(f_ptr + x, f, mask=mask), mask=mask)
    kl.atomic_add(d_ptr + x, f.to(kl.float64), mask=mask)
    kl.atomic_xchg(d_ptr + x, f.to(kl.float64), mask=mask)
    kl.atomic_add(h_ptr + x, f.to(kl.float16), mask=mask)
    kl.atomic_cas(h_ptr + x, f.to(kl.float16), f.to(kl.float16))
    while kl.atomic_cas(lock_ptr, 0, 1, sem="acquire") == 1:
        pass
    kl.atomic_xchg(lock_ptr, 0, sem="release")


SIGNATURE = {"x_ptr": "*i32", "u_ptr": "*u32", "f_ptr": "*fp32", "d_ptr": "*fp64", "h_ptr": "*fp16", "lock_ptr": "*i32",
             "n": "i32"}


def atom_lines(ptx: str) -> list[str]:
    return [re.sub(r"\s+", " ", line.strip()) for line in ptx.splitlines() if " atom." in line]


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_atom_instructions_carry_sem_and_scope(target: str) -> None:
    kernel = kiln.compile(atomics_kernel, SIGNATURE, {"BLOCK": 256}, target=target)
    text = "\n".join(atom_lines(kernel.asm["ptx"]))
    for expected in [
        r"atom\.global\.cta\.relaxed\.add\.u32",
        r"atom\.global\.gpu\.acquire\.max\.s32",
        r"atom\.global\.sys\.release\.min\.u32",
        r"atom\.global\.gpu\.acq_rel\.and\.b32",
        r"atom\.global\.gpu\.acq_rel\.or\.b32",
        r"atom\.global\.gpu\.acq_rel\.xor\.b32",
        # Float min: signed min of the bits for non-negative values, unsigned max for negative ones.
        r"atom\.global\.gpu\.acq_rel\.min\.s32",
        r"atom\.global\.gpu\.acq_rel\.max\.u32",
        r"atom\.global\.gpu\.acq_rel\.add\.f64",
        r"atom\.global\.gpu\.acq_rel\.exch\.b64",
        r"atom\.global\.gpu\.acq_rel\.add\.noftz\.f16",
        r"atom\.global\.acq_rel\.gpu\.cas\.b16",
        r"atom\.global\.acquire\.gpu\.cas\.b32",
        r"atom\.global\.gpu\.release\.exch\.b32",
    ]:
        assert re.search(r"@%p\d+ " + expected, text), (expected, text)
    # Every atomic is predicated: masked lanes and replicas do nothing.
    assert all(line.startswith("@%p") for line in atom_lines(kernel.asm["ptx"]))
    if find_ptxas() is not None:
        assert kernel.asm["cubin"][:4] == b"\x7fELF"


@kiln.jit
def locked_accumulate_kernel(partial_ptr, lock_ptr, x_ptr, n, BLOCK: kl.constexpr):
    """The layer-norm backward's critical section: a counter decides
    whether the partial sums are read before they are written back."""
    offs = kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + kl.program_id(0) * n + offs, mask=mask)
    count_ptr = lock_ptr + 1
    while kl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    if kl.load(count_ptr) == 0:
        kl.atomic_xchg(count_ptr, 1)
    else:
        x += kl.load(partial_ptr + offs, mask=mask)
    kl.store(partial_ptr + offs, x, mask=mask)
    kl.debug_barrier()
    kl.atomic_xchg(lock_ptr, 0)


def test_partial_sums_load_before_the_branch_on_the_counter() -> None:
    """The NVIDIA pipeline starts the partial sums' load before the branch
    (kiln-hoist-branch-loads), so its latency overlaps the counter's."""
    kernel = kiln.compile(locked_accumulate_kernel, {"partial_ptr": "*fp32", "lock_ptr": "*i32", "x_ptr": "*fp32",
                                                     "n": "i32"}, {"BLOCK": 1024}, target="sm_90a", num_warps=4)
    lines = kernel.asm["ptx"].splitlines()
    cas = next(i for i, line in enumerate(lines) if ".cas." in line)
    counter = next(i for i in range(cas, len(lines)) if "ld.global" in lines[i])
    branch = next(i for i in range(counter, len(lines)) if "bra" in lines[i])
    # 1024 partial sums over 128 threads: 8 loads each, all before the branch.
    assert sum("ld.global" in line for line in lines[counter + 1:branch]) == 8, lines[counter:branch + 1]


@kiln.jit
def bf16_add_kernel(h_ptr, v):
    kl.atomic_add(h_ptr, v.to(kl.bfloat16))


def test_bf16_add_before_sm_90_is_a_cas_loop() -> None:
    signature = {"h_ptr": "*bf16", "v": "fp32"}
    native = kiln.compile(bf16_add_kernel, signature, target="sm_90a").asm["ptx"]
    assert "atom.global.gpu.acq_rel.add.noftz.bf16" in native
    kernel = kiln.compile(bf16_add_kernel, signature, target="sm_80")
    ptx = kernel.asm["ptx"]
    assert "add.noftz.bf16" not in ptx
    assert re.search(r"kiln_bf16_add_retry_\d+:", ptx)
    assert "atom.global.gpu.acq_rel.cas.b16" in ptx and "cvt.rn.bf16.f32" in ptx
    if find_ptxas() is not None:
        assert kernel.asm["cubin"][:4] == b"\x7fELF"


@kiln.jit
def bad_dtype_kernel(p):
    kl.atomic_add(p, 1)


@kiln.jit
def bad_xor_kernel(p):
    kl.atomic_xor(p, 1.0)


@kiln.jit
def bad_cas_kernel(p):
    kl.atomic_cas(p, 0, 1)


@kiln.jit
def bad_sem_kernel(p):
    kl.atomic_add(p, 1, sem="seq_cst")


@kiln.jit
def bad_scope_kernel(p):
    kl.atomic_max(p, 1, scope="cluster")


@kiln.jit
def not_a_pointer_kernel(p, n):
    kl.atomic_add(n, 1)


@pytest.mark.parametrize("kernel,signature,message", [
    (bad_dtype_kernel, {"p": "*i8"},
     "atomic_add does not support kl.int8 elements; expected one of kl.int32, kl.uint32, kl.int64, kl.uint64, "
     "kl.float16, kl.bfloat16, kl.float32, kl.float64"),
    (bad_dtype_kernel, {"p": "*i16"}, "atomic_add does not support kl.int16 elements"),
    (bad_xor_kernel, {"p": "*fp32"}, "atomic_xor does not support kl.float32 elements"),
    (bad_cas_kernel, {"p": "*i8"}, "atomic_cas does not support kl.int8 elements"),
    (bad_sem_kernel, {"p": "*i32"},
     "atomic_add: unsupported sem 'seq_cst'; expected one of 'acq_rel', 'acquire', 'release', 'relaxed'"),
    (bad_scope_kernel, {"p": "*i32"},
     "atomic_max: unsupported scope 'cluster'; expected one of 'gpu', 'cta', 'sys'"),
    (not_a_pointer_kernel, {"p": "*i32", "n": "i32"}, "atomic_add needs a pointer argument, got int32"),
])
@pytest.mark.parametrize("target", ["cpu", "sm_90a"])
def test_errors_point_at_the_call(kernel, signature, message, target) -> None:
    with pytest.raises(CompilationError) as info:
        kiln.compile(kernel, signature, target=target)
    error = info.value
    assert message in str(error)
    assert error.filename == __file__
    assert error.source_line is not None and "kl.atomic_" in error.source_line


@kiln.jit(checked=True)
def overrun_atomic_kernel(bins_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.atomic_add(bins_ptr + offs, 1, mask=offs < n)


def test_checked_cpu_atomics_stay_inside_their_buffer() -> None:
    import torch

    from kiln.errors import OutOfBoundsError

    backing = torch.zeros(16, dtype=torch.int32)
    bins = backing[:8]
    with pytest.raises(OutOfBoundsError) as info:
        overrun_atomic_kernel[(1,)](bins, 12, BLOCK=16)
    assert info.value.parameter == "bins_ptr" and info.value.index == 8
    assert "kl.atomic_add" in info.value.source_line
    # The lanes inside the buffer were applied, the others skipped.
    assert backing.tolist() == [1] * 8 + [0] * 8
