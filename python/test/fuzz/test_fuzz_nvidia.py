"""The valid kernels of the fuzzer's seed corpus compiled for NVIDIA GPUs,
on a machine without one: each is first launched on the CPU backend (which
gives its signature and constexprs as a launch specializes them), then
compiled for sm_90a and sm_80 and, where ptxas is installed, assembled. A
random kernel that the CPU backend runs must lower to PTX that ptxas
accepts: this is what exercises the NVIDIA lowering's rarer corners (masks
of every dtype, int1 blocks, 64-bit integers, nested helpers, checked
mode) in CI."""

from __future__ import annotations

import importlib.util

import pytest

import fuzz_generator
import kiln
from kiln.backends.nvidia import find_ptxas

# The valid kernels among the first seeds of test_fuzz_corpus.py's corpus,
# generated once, when the tests are collected.
CASES = {seed: case for seed, case in ((seed, fuzz_generator.generate(seed)) for seed in range(0, 120))
         if case.expect == "ok"}
TARGETS = ("sm_90a", "sm_80")


def _launched_kernel(seed: int, tmp_path) -> tuple:
    """The case's kernel after its launch on the CPU, and the compiled
    kernel's metadata."""
    case = CASES[seed]
    path = tmp_path / f"fuzz_case_{seed}.py"
    path.write_text(case.source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.launch()
    (loaded,) = [loaded for per_device in module.fuzz_kernel.cache.values() for loaded in per_device.values()]
    return module.fuzz_kernel, loaded.kernel.metadata


@pytest.mark.parametrize("seed", list(CASES))
def test_valid_cases_compile_for_nvidia(seed, tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_BACKEND", "cpu")
    kernel, metadata = _launched_kernel(seed, tmp_path)
    signature = {name: kind for name, kind in metadata["signature"].items() if kind != "constexpr"}
    for target in TARGETS:
        compiled = kiln.compile(kernel, signature=signature, constexprs=metadata["constexprs"], target=target,
                                num_warps=4, checked=bool(kernel.checked))
        assert f".entry {metadata['name']}(" in compiled.asm["ptx"], target
        if find_ptxas() is not None:
            assert compiled.asm["cubin"], target
