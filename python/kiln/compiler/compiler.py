"""Compiling a jit function: the named stages from Python source to a GPU binary.

Each stage's output is kept on the returned :class:`CompiledKernel` under
``asm[stage]``: ``"kiln"`` (the block-level dialect the frontend builds),
``"kiln_gpu"`` (with layouts), ``"llir"`` (optimized LLVM IR), ``"ptx"`` and
``"cubin"``. The lowering itself is the C++ pipeline registered for the
target; its exact textual form is recorded in ``metadata["pipelines"]`` so
that ``kiln-opt --pass-pipeline=...`` replays what the JIT ran.

Setting ``KILN_DUMP_DIR`` writes every stage of every compiled kernel there.
"""

from __future__ import annotations

import linecache
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from kiln import _C
from kiln.compiler.specialization import Specialization
from kiln.errors import CompilationError, KilnError

STAGES = ("kiln", "kiln_gpu", "llir", "ptx", "cubin")


@dataclass
class CompiledKernel:
    """A kernel compiled for one specialization and target.

    Attributes:
        name: the kernel's symbol in the binary.
        asm: each stage's output, by stage name (``"cubin"`` is bytes, or
            None when no ptxas was found and the driver must compile the PTX).
        metadata: ``name``, ``target``, ``num_warps``, ``num_stages``,
            ``shared`` (bytes of shared memory), ``signature``, ``constexprs``
            and the ``pipelines`` that were run.
    """

    name: str
    asm: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The host kernel (``kiln._C.cpu.Kernel``) when compiled for the CPU.
    cpu: Any = None

    @property
    def binary(self) -> bytes:
        """What the driver loads: the cubin, or the PTX text if there is none."""
        cubin = self.asm.get("cubin")
        return cubin if cubin is not None else self.asm["ptx"].encode()


def find_ptxas() -> str | None:
    """Locates ptxas: ``$KILN_PTXAS``, then ``$CUDA_HOME/bin``, the standard
    toolkit location, and ``PATH``. Returns None if there is none."""
    candidates = [os.environ.get("KILN_PTXAS")]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "bin", "ptxas"))
    candidates.append(shutil.which("ptxas"))
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


CPU_TARGET = "cpu"


def check_target(target: str) -> str:
    """Validates a target name: ``"cpu"``, or an NVIDIA chip (``sm_80``,
    ``sm_90a``, ...)."""
    if target == CPU_TARGET:
        return target
    if not isinstance(target, str) or not re.fullmatch(r"sm_\d+a?", target) or not _C.compiler.is_valid_chip(target):
        raise ValueError(f"unknown target {target!r}: expected 'cpu' or an NVIDIA chip such as 'sm_80' or 'sm_90a'")
    return target


def _error_at(filename: str, line: int, col: int, message: str) -> CompilationError:
    """A CompilationError at ``filename:line:col``, quoting that source line."""
    source = linecache.getline(filename, line) if filename and line else ""
    return CompilationError(message, filename, line, col, source or None)


def _pipeline(name: str, **options: Any) -> str:
    text = " ".join(f"{key}={value}" for key, value in options.items())
    return f"builtin.module({name}{{{text}}})"


def _located_error(fn: Any, error: Exception, stage: str) -> CompilationError:
    """Turns an MLIRError from a compiler stage into a CompilationError at the
    first diagnostic that points into the kernel's source."""
    diagnostics = getattr(error, "diagnostics", [])
    messages = [d for d in diagnostics if d[0] == "error"] or diagnostics
    for severity, message, filename, line, col in messages:
        if filename and line:
            return _error_at(filename, line, col, f"{stage} failed: {message}")
    filename = getattr(getattr(fn, "fn", None), "__code__", None)
    where = (filename.co_filename, filename.co_firstlineno, 1) if filename else ("<unknown>", 0, 0)
    text = messages[0][1] if messages else str(error)
    return _error_at(*where, f"{stage} failed: {text}")


def _run_ptxas(ptxas: str, ptx: str, target: str, fn: Any) -> bytes:
    with tempfile.TemporaryDirectory(prefix="kiln-ptxas-") as tmp:
        ptx_path = Path(tmp) / "kernel.ptx"
        cubin_path = Path(tmp) / "kernel.cubin"
        ptx_path.write_text(ptx)
        result = subprocess.run(
            [ptxas, f"-arch={target}", "-o", str(cubin_path), str(ptx_path)],
            capture_output=True, text=True, timeout=300,
        )
        if result.returncode != 0:
            code = getattr(getattr(fn, "fn", None), "__code__", None)
            where = (code.co_filename, code.co_firstlineno, 1) if code else ("<unknown>", 0, 0)
            raise _error_at(*where, f"ptxas failed for {target}:\n{result.stderr.strip()}")
        return cubin_path.read_bytes()


def _dump(name: str, asm: Mapping[str, Any]) -> None:
    directory = os.environ.get("KILN_DUMP_DIR")
    if not directory:
        return
    os.makedirs(directory, exist_ok=True)
    suffixes = {"kiln": "kiln.mlir", "kiln_gpu": "kiln_gpu.mlir", "llir": "ll", "ptx": "ptx", "cubin": "cubin"}
    for stage, content in asm.items():
        if content is None:
            continue
        path = os.path.join(directory, f"{name}.{suffixes[stage]}")
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(path, mode) as f:
            f.write(content)


def compile_jit_function(
    fn: Any,
    signature: Mapping[str, str],
    constexprs: Mapping[str, Any],
    attrs: Specialization,
    target: str,
    num_warps: int,
    num_stages: int,
    *,
    checked: bool = False,
) -> CompiledKernel:
    """Compiles ``fn`` (a :class:`kiln.JITFunction`) for one specialization.

    ``target`` is ``"cpu"`` for the CPU backend (``checked`` then
    bounds-checks every access) or an NVIDIA chip.

    Raises:
        CompilationError: for any error in the kernel, located in its source.
        ValueError: for an unknown target or an invalid ``num_warps``.
    """
    from kiln.compiler.frontend import generate_kiln_ir

    check_target(target)
    if not isinstance(num_warps, int) or num_warps < 1 or num_warps > 32 or num_warps & (num_warps - 1):
        raise ValueError(f"num_warps must be a power of two between 1 and 32, got {num_warps!r}")
    if not isinstance(num_stages, int) or num_stages < 1:
        raise ValueError(f"num_stages must be a positive integer, got {num_stages!r}")

    context = _C.ir.Context()
    module = generate_kiln_ir(fn, dict(signature), dict(constexprs), attrs, context)
    asm: dict[str, Any] = {"kiln": module.str()}
    if target == CPU_TARGET:
        return _compile_for_cpu(fn, module, asm, signature, constexprs, num_warps, num_stages, checked)
    pipelines = [
        ("kiln_gpu", _pipeline("kiln-nvidia-to-kiln-gpu", target=target, **{"num-warps": num_warps, "num-stages": num_stages})),
        (None, _pipeline("kiln-nvidia-to-llvm", target=target, **{"num-warps": num_warps, "num-stages": num_stages})),
    ]
    for stage, pipeline in pipelines:
        try:
            _C.compiler.run_pass_pipeline(module, pipeline)
        except _C.ir.MLIRError as error:
            raise _located_error(fn, error, "lowering") from error
        if stage:
            asm[stage] = module.str()
    try:
        asm["llir"], asm["ptx"] = _C.compiler.translate_to_ptx(module, target)
    except _C.ir.MLIRError as error:
        raise _located_error(fn, error, "PTX generation") from error

    ptxas = find_ptxas()
    asm["cubin"] = _run_ptxas(ptxas, asm["ptx"], target, fn) if ptxas else None
    name = fn.__name__
    _dump(name, asm)
    metadata = {
        "name": name,
        "target": target,
        "num_warps": num_warps,
        "num_stages": num_stages,
        "shared": 0,
        "signature": dict(signature),
        "constexprs": dict(constexprs),
        "pipelines": [pipeline for _, pipeline in pipelines],
        "backend": "nvidia",
    }
    return CompiledKernel(name=name, asm=asm, metadata=metadata)


def _compile_for_cpu(fn: Any, module: Any, asm: dict[str, Any], signature: Mapping[str, str],
                     constexprs: Mapping[str, Any], num_warps: int, num_stages: int,
                     checked: bool) -> CompiledKernel:
    """The CPU backend's stages: kiln -> host LLVM (``llir``), JIT-compiled
    in process. ``num_warps`` and ``num_stages`` are recorded, not used."""
    pipeline = _pipeline("kiln-cpu-to-llvm", checked="true" if checked else "false")
    try:
        _C.compiler.run_pass_pipeline(module, pipeline)
        host = _C.cpu.compile(module, fn.__name__)
    except _C.ir.MLIRError as error:
        raise _located_error(fn, error, "CPU lowering") from error
    asm["llir"] = host.llvm_ir
    name = fn.__name__
    _dump(name, asm)
    metadata = {
        "name": name,
        "target": CPU_TARGET,
        "num_warps": num_warps,
        "num_stages": num_stages,
        "shared": 0,
        "signature": dict(signature),
        "constexprs": dict(constexprs),
        "pipelines": [pipeline],
        "backend": "cpu",
        "checked": checked,
    }
    return CompiledKernel(name=name, asm=asm, metadata=metadata, cpu=host)


def compile(
    fn: Any,
    signature: Mapping[str, str],
    constexprs: Mapping[str, Any] | None = None,
    target: str = "sm_90a",
    num_warps: int = 4,
    num_stages: int = 3,
    attrs: Specialization | None = None,
    checked: bool = False,
) -> CompiledKernel:
    """Compiles a ``@kiln.jit`` function without launching it (no GPU needed).

    Args:
        fn: the jit function.
        signature: Triton-style type of each non-constexpr parameter, e.g.
            ``{"x_ptr": "*fp32", "n": "i32"}``.
        constexprs: value of each ``kl.constexpr`` parameter.
        target: ``"cpu"``, or the NVIDIA chip, ``"sm_90a"`` or ``"sm_80"``
            for instance.
        num_warps: warps per program.
        num_stages: software-pipelining depth for loops.
        attrs: the specialization to assume; by default every pointer is
            assumed 16-byte aligned, as for tensors from PyTorch's allocator.
        checked: for the CPU target, bounds-check every memory access.

    Returns:
        The :class:`CompiledKernel`, with every stage in ``asm``.
    """
    if not hasattr(fn, "arg_names"):
        raise TypeError(f"kiln.compile expects a @kiln.jit function, got {type(fn).__name__}")
    constexprs = dict(constexprs or {})
    parameters = [name for name in fn.arg_names if name not in fn.constexpr_names]
    missing = [name for name in parameters if name not in signature]
    unknown = [name for name in signature if name not in parameters]
    if missing or unknown:
        problems = []
        if missing:
            problems.append(f"missing types for {', '.join(missing)}")
        if unknown:
            problems.append(f"{', '.join(unknown)} are not non-constexpr parameters of {fn.__name__}")
        raise TypeError(f"kiln.compile: bad signature for {fn.__name__}: {'; '.join(problems)}")
    missing_constexprs = [name for name in fn.constexpr_names if name not in constexprs]
    if missing_constexprs:
        raise TypeError(f"kiln.compile: no value for constexpr parameters {', '.join(missing_constexprs)} of {fn.__name__}")
    if attrs is None:
        attrs = Specialization(
            divisible_by_16=frozenset(name for name, ty in signature.items() if ty.startswith("*")),
            equal_to_1=frozenset(),
        )
    return compile_jit_function(fn, signature, constexprs, attrs, target, num_warps, num_stages, checked=checked)


__all__ = ["CompiledKernel", "compile", "compile_jit_function", "find_ptxas", "check_target", "STAGES", "KilnError"]
