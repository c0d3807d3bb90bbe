"""Registers and spills of the tiled matmul on sm_90a, from ``ptxas -v``,
for the configurations ``bench/matmul.py`` tunes over: none spills, and
none uses more registers than recorded here. A change to the NVIDIA
lowering that costs registers shows up in this file (update the ceiling
on purpose, with the benchmark's figures) rather than as a slower matmul
found later on a GPU. Needs ptxas, not a GPU."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import kiln
from kiln.backends.nvidia import find_ptxas
from kiln.compiler.specialization import Specialization
from matmul_kernels import matmul_kernel

#: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, num_warps, num_stages): registers
#: per thread at most, as ptxas of CUDA 13 allocates them on 2026-12-05
#: (with masks split per lane, that day: 128/256/64 and 128/128/64 on 8 warps
#: took 9 and 2 fewer, 128/256/32 on 8 warps and 128/128/32 on 4 warps 5 and
#: 4 more, with no change in occupancy; on 2026-12-06, wgmma descriptors
#: built from a low word computed once per dot took 128/128/64 on 8 warps
#: from 110 to 114, no spills; bench/matmul.py on an H100 that day: fp16
#: 4096^3 at 704 TFLOP/s, 1.06x Triton's; later that day, descriptors as
#: 64-bit adds and A's warpgroup shuffled from lane 0, which ptxas keeps in
#: uniform registers, took most configurations down, 128/128/32 on 4 warps
#: from 248 to 168, and 128/128/64 on 8 warps up from 114 to 124, the same
#: two CTAs per SM, which its shared memory allows anyway; bench/matmul.py
#: on an H100 after it: fp16 4096^3 at 685.3 TFLOP/s, Triton 676.8 in the
#: same run).
REGISTER_CEILINGS = {
    (128, 256, 64, 8, 8, 3): 198,
    (128, 256, 32, 8, 8, 3): 180,
    (128, 128, 32, 8, 8, 3): 122,
    (256, 128, 32, 8, 8, 3): 237,
    (128, 128, 64, 8, 8, 3): 124,
    (64, 256, 32, 8, 4, 3): 230,
    (128, 128, 64, 8, 4, 4): 214,
    (128, 128, 32, 8, 4, 4): 168,
    (64, 128, 64, 8, 4, 4): 160,
    (128, 64, 32, 8, 4, 4): 128,
    (64, 64, 64, 8, 4, 3): 80,
    (16, 64, 64, 1, 4, 3): 48,
    (16, 128, 128, 1, 4, 3): 118,
}

ptxas = find_ptxas()
pytestmark = pytest.mark.skipif(ptxas is None, reason="no ptxas")

POINTERS = ("a_ptr", "b_ptr", "c_ptr")
#: As a launch with contiguous fp16 tensors of sizes multiple of 16 sees them.
SPECIALIZATION = Specialization(
    divisible_by_16=frozenset(POINTERS + ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")),
    equal_to_1=frozenset(("stride_ak", "stride_bn", "stride_cn")))
SIGNATURE = {**{name: "*fp16" for name in POINTERS},
             **{name: "i32" for name in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn",
                                         "stride_cm", "stride_cn")}}


def registers_and_spills(ptx: str, tmp_path: Path) -> tuple[int, int]:
    """``ptxas -v``'s registers per thread and bytes of spill stores."""
    source = tmp_path / "kernel.ptx"
    source.write_text(ptx)
    result = subprocess.run([ptxas, "-v", "-arch=sm_90a", str(source), "-o", str(tmp_path / "kernel.cubin")],
                            capture_output=True, text=True, check=True)
    registers = re.search(r"Used (\d+) registers", result.stderr)
    spills = re.search(r"(\d+) bytes spill stores", result.stderr)
    assert registers and spills, result.stderr
    return int(registers.group(1)), int(spills.group(1))


@pytest.mark.parametrize("config", list(REGISTER_CEILINGS), ids=lambda c: "x".join(map(str, c)))
def test_matmul_config_registers(config: tuple[int, ...], tmp_path: Path) -> None:
    block_m, block_n, block_k, group, warps, stages = config
    kernel = kiln.compile(matmul_kernel, signature=SIGNATURE,
                          constexprs={"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k,
                                      "GROUP_SIZE_M": group, "ACC_IN_DOT": True},
                          target="sm_90a", num_warps=warps, num_stages=stages, attrs=SPECIALIZATION)
    registers, spills = registers_and_spills(kernel.asm["ptx"], tmp_path)
    assert spills == 0, f"{config} spills {spills} bytes"
    assert registers <= REGISTER_CEILINGS[config], f"{config} uses {registers} registers"
