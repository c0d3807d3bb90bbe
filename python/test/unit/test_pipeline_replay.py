"""``kiln-opt`` replays what the JIT ran: for a few kernels on the CPU backend
and on sm_80 and sm_90a (compiled only, no GPU needed), each recorded
pipeline (``metadata["pipelines"]``) run by ``kiln-opt`` on its input stage
gives the same IR as the compiler.

Where the compiler records the pipeline's output as a stage (``kiln_gpu``)
kiln-opt's output must equal it. The last pipeline of each backend ends in
the LLVM dialect, which the compiler translates to LLVM IR (``llir``) instead
of recording; there the output must equal the same pipeline run in process,
through the bindings, on the parsed input stage, and kiln-opt's output
translated as the backend translates it must give the recorded ``llir``.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
from typing import Any

import pytest

import kiln
import kiln.language as kl
from kiln import _C
from kiln.compiler.specialization import Specialization

KILN_OPT = pathlib.Path(__file__).resolve().parents[3] / "build" / "bin" / "kiln-opt"

pytestmark = pytest.mark.skipif(not KILN_OPT.exists(), reason="kiln-opt is not built (scripts/setup.sh builds it)")


@kiln.jit
def scale(X, Y, N, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < N
    kl.store(Y + offs, kl.load(X + offs, mask=mask) * 2.0, mask=mask)


@kiln.jit
def row_softmax(X, Y, stride, N: kl.constexpr):
    row = kl.program_id(0)
    cols = kl.arange(0, N)
    x = kl.load(X + row * stride + cols)
    e = kl.exp(x - kl.max(x, axis=0))
    kl.store(Y + row * stride + cols, e / kl.sum(e, axis=0))


@kiln.jit
def matmul(A, B, C, K, BM: kl.constexpr, BN: kl.constexpr, BK: kl.constexpr):
    rm = kl.arange(0, BM)
    rn = kl.arange(0, BN)
    rk = kl.arange(0, BK)
    acc = kl.zeros((BM, BN), dtype=kl.float32)
    for k in range(0, K, BK):
        a = kl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = kl.load(B + (k + rk)[:, None] * BN + rn[None, :])
        acc += kl.dot(a, b)
    kl.store(C + rm[:, None] * BN + rn[None, :], acc)


KERNELS = {
    "scale": (scale, {"X": "*fp32", "Y": "*fp32", "N": "i32"}, {"BLOCK": 1024}, ("X", "Y", "N")),
    "row_softmax": (row_softmax, {"X": "*fp32", "Y": "*fp32", "stride": "i32"}, {"N": 256}, ("X", "Y", "stride")),
    "matmul": (matmul, {"A": "*fp16", "B": "*fp16", "C": "*fp32", "K": "i32"}, {"BM": 64, "BN": 64, "BK": 32},
               ("A", "B", "C", "K")),
}

# The memory-access sites name each access by its source location; the
# recorded stages are printed without locations, so a replay from them names
# the replay file instead.
_SITE_LOCATION = re.compile(r'loc = "[^"]*"')


def _normalized(ir: str) -> str:
    """``ir`` parsed and printed again: the JIT names kernel arguments after
    the Python parameters (from their locations), which text parsed without
    locations cannot keep, so both sides are compared with MLIR's own value
    names; everything else must match exactly."""
    reprinted = _C.ir.Module.parse(_C.ir.Context(), ir).str()
    return _SITE_LOCATION.sub('loc = "<site>"', reprinted).strip()


def _kiln_opt(tmp_path: pathlib.Path, source: str, pipeline: str) -> str:
    """Runs ``kiln-opt --pass-pipeline=pipeline`` on ``source``; returns its output."""
    path = tmp_path / "input.mlir"
    path.write_text(source)
    result = subprocess.run([str(KILN_OPT), str(path), f"--pass-pipeline={pipeline}"], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, f"kiln-opt failed on {pipeline}:\n{result.stderr}"
    return result.stdout


# Recorded stages are printed without locations, so a replay has no source
# lines to attach as debug information; the code must be the same.
_DEBUG_ATTACHMENT = re.compile(r",? !dbg ![0-9]+")


def _without_debug_info(llir: str) -> str:
    lines = []
    for line in _DEBUG_ATTACHMENT.sub("", llir).splitlines():
        if line.startswith(("!", "; ModuleID", "source_filename")) or "@llvm.dbg." in line:
            continue
        lines.append(line)
    return "\n".join(lines).strip()


def _translated(compiled: Any, llvm_dialect: str) -> str:
    """The LLVM IR the backend makes of ``llvm_dialect`` (kiln-opt's output of
    the last pipeline), with the options ``compiled`` was compiled with."""
    module = _C.ir.Module.parse(_C.ir.Context(), llvm_dialect)
    if compiled.metadata["backend"] == "nvidia":
        llir, _ = _C.compiler.translate_to_ptx(module, compiled.metadata["target"], enable_fp_fusion=True)
        return llir
    return _C.cpu.compile(module, compiled.metadata["name"], compiled.metadata["cpu_target"]).llvm_ir


def _in_process(source: str, pipeline: str) -> str:
    """Runs ``pipeline`` through the bindings, as the JIT does, on ``source``
    parsed; returns the printed module."""
    module = _C.ir.Module.parse(_C.ir.Context(), source)
    _C.compiler.run_pass_pipeline(module, pipeline)
    return module.str()


def _compile(name: str, target: str, checked: bool = False) -> Any:
    fn, signature, constexprs, divisible = KERNELS[name]
    return kiln.compile(fn, signature=signature, constexprs=constexprs, target=target, num_warps=4,
                        attrs=Specialization(divisible_by_16=frozenset(divisible)), checked=checked)


@pytest.mark.parametrize("checked", [False, True], ids=["plain", "checked"])
@pytest.mark.parametrize("target", ["cpu", "sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kiln_opt_replays_each_pipeline(name: str, target: str, checked: bool, tmp_path: pathlib.Path) -> None:
    compiled = _compile(name, target, checked)
    pipelines = compiled.metadata["pipelines"]
    # The stages each pipeline turns into the next: kiln -> kiln_gpu -> LLVM
    # dialect on NVIDIA, kiln -> LLVM dialect on the CPU.
    outputs = ["kiln_gpu", None] if compiled.metadata["backend"] == "nvidia" else [None]
    assert len(pipelines) == len(outputs), pipelines
    source = compiled.asm["kiln"]
    for pipeline, output in zip(pipelines, outputs):
        replayed = _kiln_opt(tmp_path, source, pipeline)
        expected = compiled.asm[output] if output else _in_process(source, pipeline)
        assert _normalized(replayed) == _normalized(expected), f"kiln-opt differs from the JIT on {pipeline}"
        if output:
            source = compiled.asm[output]
        else:
            assert _without_debug_info(_translated(compiled, replayed)) == \
                _without_debug_info(compiled.asm["llir"]), "kiln-opt's LLVM dialect translates to other LLVM IR"


@pytest.mark.parametrize("target", ["sm_90a", "cpu"])
def test_kiln_opt_replays_pointer_tensor_maps(target: str, tmp_path: pathlib.Path) -> None:
    """Loops' pointer loads with tensor maps (the default on sm_90a, the
    recorded pipeline's option on the CPU): kiln-opt, given the recorded
    pipeline, does what the JIT did: on sm_90a the same kiln_gpu module
    (the versioned loop, the map parameters, their recipes), on the CPU the
    same LLVM dialect (the maps read as the TMA unit reads them)."""
    from test_attention_codegen import compile_forward_pointer_maps

    # (Small blocks on the CPU, whose lowering of a big block is slow.)
    sizes = (64, 128, 64, 8) if target != "cpu" else (16, 32, 16, 4)
    compiled = compile_forward_pointer_maps(target, *sizes, False)
    pipeline = compiled.metadata["pipelines"][0]
    if target == "cpu":
        assert "pointer-tensor-maps=true" in pipeline
    else:
        assert "kiln.tensor_map_version" in compiled.asm["kiln_gpu"]
    replayed = _kiln_opt(tmp_path, compiled.asm["kiln"], pipeline)
    expected = compiled.asm["kiln_gpu"] if target != "cpu" else _in_process(compiled.asm["kiln"], pipeline)
    assert _normalized(replayed) == _normalized(expected)
