"""Compiling a jit function: the named stages from Python source to a binary.

The frontend turns the kernel into the ``kiln`` stage (the block-level
dialect); from there the backend that owns the target (see
:mod:`kiln.backends`: ``"cpu"`` is the CPU backend, ``sm_*`` the NVIDIA one)
runs its registered C++ pipelines and produces its binary. Each stage's
output is kept on the returned :class:`CompiledKernel` under ``asm[stage]``:
``"kiln"``, then the backend's (NVIDIA: ``"kiln_gpu"``, ``"llir"``,
``"ptx"``, ``"cubin"``; CPU: ``"llir"``). The exact textual form of each
pipeline run is recorded in ``metadata["pipelines"]`` so that
``kiln-opt --pass-pipeline=...`` replays what the JIT ran.

Setting ``KILN_DUMP_DIR`` writes every stage of every compiled kernel there.
Results of backends that allow it (NVIDIA) are kept in the on-disk cache,
:mod:`kiln.runtime.disk_cache` (``$KILN_CACHE_DIR``), and read back by a
later compile of the same kernel, settings and compiler build.
This module also holds what every backend's compile step shares: running a
pipeline with errors located in the kernel's source.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import linecache
import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from kiln import _C
from kiln import backends as _backends
from kiln.compiler.specialization import KernelSpecialization, Specialization, kernel_parameters, root_name
from kiln.errors import CompilationError, KilnError, LaunchOptionError


class KernelMetadata(dict):
    """A compiled kernel's metadata: a dict whose keys also read as
    attributes (``kernel.metadata.shared``), as Triton's metadata does."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"kernel metadata has no {name!r} (it has: {', '.join(sorted(self))})") from None


class StageOutputs(dict):
    """A compiled kernel's ``asm``: each stage's output by Kiln's stage name,
    with Triton's names for the matching stages readable too (``ttir`` is
    the ``kiln`` stage, ``ttgir`` the ``kiln_gpu`` stage), so code written
    for Triton finds them. The aliases are not keys: iterating, the on-disk
    cache and stage dumps see each stage once, under Kiln's name."""

    __slots__ = ()

    #: Triton's stage name -> Kiln's.
    ALIASES = {"ttir": "kiln", "ttgir": "kiln_gpu"}

    def __missing__(self, name: str) -> Any:
        stage = self.ALIASES.get(name)
        if stage is not None and dict.__contains__(self, stage):
            return dict.__getitem__(self, stage)
        raise KeyError(f"no {name!r} stage in this kernel (it has: {', '.join(self)})")

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or dict.__contains__(self, self.ALIASES.get(name, None))

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default


@dataclass
class CompiledKernel:
    """A kernel compiled for one specialization and target.

    Attributes:
        name: the kernel's symbol in the binary.
        asm: each stage's output, by stage name (``"cubin"`` is bytes, or
            None when no ptxas was found and the driver must compile the PTX);
            a :class:`StageOutputs`, which also answers to Triton's ``ttir``
            and ``ttgir``.
        metadata: ``name``, ``target``, ``num_warps``, ``num_stages``,
            ``shared`` (bytes of shared memory), ``signature``, ``constexprs``,
            the ``pipelines`` that were run and the ``backend`` that ran them;
            a :class:`KernelMetadata`, so ``metadata.shared`` reads too.
        n_regs, n_spills: registers per thread and spilled bytes per thread,
            as Triton's: known once the kernel is loaded on a GPU (by a
            launch, ``warmup`` or :meth:`_init_handles`); None before, and
            on the CPU backend, which has no register file to share.
    """

    name: str
    asm: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The host kernel (``kiln._C.cpu.Kernel``) when compiled for the CPU.
    cpu: Any = None
    #: Whether this came from the on-disk cache rather than the compiler.
    #: Not compared: a hit equals the compile it saves.
    from_disk_cache: bool = field(default=False, compare=False)
    n_regs: Optional[int] = field(default=None, compare=False)
    n_spills: Optional[int] = field(default=None, compare=False)
    #: The jit function that loaded this kernel and its launch options, for
    #: ``kernel[grid](...)``; None for a kernel only :func:`compile` made.
    launched_by: Optional[tuple[Any, dict[str, Any]]] = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, KernelMetadata):
            self.metadata = KernelMetadata(self.metadata)
        if not isinstance(self.asm, StageOutputs):
            self.asm = StageOutputs(self.asm)

    @property
    def hash(self) -> str:
        """A hex digest of the kernel's name and every stage's output: two
        compiles of one specialization give the same hash (as Triton's
        ``CompiledKernel.hash`` identifies a kernel)."""
        digest = hashlib.sha256(self.name.encode())
        for stage in sorted(self.asm):
            content = self.asm[stage]
            if isinstance(content, str):
                content = content.encode()
            if isinstance(content, bytes):
                digest.update(b"\0" + stage.encode() + b"\0" + content)
        return digest.hexdigest()

    @property
    def binary(self) -> bytes:
        """What the CUDA driver loads: the cubin, or the PTX text if there is none."""
        cubin = self.asm.get("cubin")
        return cubin if cubin is not None else self.asm["ptx"].encode()

    def _init_handles(self) -> None:
        """Loads the kernel on the current device, unless a launch or
        ``warmup`` already did, so that ``n_regs`` and ``n_spills`` are known.

        Triton's name, which its tutorials call before reading ``n_regs``
        (to size a persistent grid by occupancy). Nothing to do on the CPU.
        """
        if self.n_regs is None:
            _backends.get_backend(self.metadata.get("backend", "cpu")).init_handles(self)

    def __getitem__(self, grid: Any) -> Any:
        """``kernel[grid](*args, **kwargs)``: launches this kernel's jit
        function over ``grid`` with the options it was compiled with, as
        Triton's compiled kernels launch.

        The arguments go through the jit function's binding and cache, so
        arguments that specialize differently (another dtype, alignment or
        constexpr) run their own compile rather than this binary on
        arguments it was not compiled for.

        Raises:
            RuntimeError: for a kernel that no jit function loaded (one made
                by :func:`kiln.compile`): launch its jit function instead.
        """
        if self.launched_by is None:
            raise RuntimeError(f"kernel {self.name}: only a kernel that a jit function compiled (by a launch or "
                               f"warmup) can be launched as kernel[grid](...); launch the jit function instead")
        function, options = self.launched_by
        return functools.partial(function.run, grid=grid, **options)


def check_target(target: str) -> str:
    """Validates a target name: ``"cpu"``, an NVIDIA chip (``sm_80``,
    ``sm_90a``, ...), or a target of another registered backend.

    Raises:
        ValueError: for a target no backend accepts.
    """
    _backends.backend_for_target(target)
    return target


def error_at(filename: str, line: int, col: int, message: str) -> CompilationError:
    """A CompilationError at ``filename:line:col``, quoting that source line."""
    source = linecache.getline(filename, line) if filename and line else ""
    return CompilationError(message, filename, line, col, source or None)


def error_at_kernel(fn: Any, message: str) -> CompilationError:
    """A CompilationError at the first line of ``fn`` (a JITFunction), for
    failures no diagnostic locates more precisely."""
    code = getattr(getattr(fn, "fn", None), "__code__", None)
    where = (code.co_filename, code.co_firstlineno, 1) if code else ("<unknown>", 0, 0)
    return error_at(*where, message)


def pipeline_text(name: str, **options: Any) -> str:
    """The textual pass pipeline ``builtin.module(name{key=value ...})``,
    as ``kiln-opt --pass-pipeline`` takes it."""
    text = " ".join(f"{key}={value}" for key, value in options.items())
    return f"builtin.module({name}{{{text}}})"


def located_error(fn: Any, error: Exception, stage: str) -> CompilationError:
    """Turns an MLIRError from a compiler stage into a CompilationError at the
    first diagnostic that points into the kernel's source."""
    diagnostics = getattr(error, "diagnostics", [])
    messages = [d for d in diagnostics if d[0] == "error"] or diagnostics
    for severity, message, filename, line, col in messages:
        if filename and line:
            return error_at(filename, line, col, f"{stage} failed: {message}")
    text = messages[0][1] if messages else str(error)
    return error_at_kernel(fn, f"{stage} failed: {text}")


def run_pipeline(fn: Any, module: Any, pipeline: str, stage: str) -> None:
    """Runs ``pipeline`` on ``module`` in place; a failure becomes a
    CompilationError located in ``fn``'s source, prefixed "``stage`` failed"."""
    try:
        _C.compiler.run_pass_pipeline(module, pipeline)
    except _C.ir.MLIRError as error:
        raise located_error(fn, error, stage) from error


# File suffixes of the stages every backend has; backends add their own.
_COMMON_SUFFIXES = {"kiln": "kiln.mlir", "llir": "ll"}


def _stage_file_names(name: str, asm: Mapping[str, Any], backend_suffixes: Mapping[str, str]) -> dict[str, str]:
    """The file each stage is written to, ``<kernel>.<suffix>`` (in
    ``KILN_DUMP_DIR`` and in on-disk cache entries)."""
    return {stage: f"{name}.{backend_suffixes.get(stage) or _COMMON_SUFFIXES.get(stage, stage)}" for stage in asm}


def _dump(name: str, asm: Mapping[str, Any], backend_suffixes: Mapping[str, str]) -> None:
    directory = os.environ.get("KILN_DUMP_DIR")
    if not directory:
        return
    os.makedirs(directory, exist_ok=True)
    for stage, file_name in _stage_file_names(name, asm, backend_suffixes).items():
        content = asm[stage]
        if content is None:
            continue
        path = os.path.join(directory, file_name)
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(path, mode) as f:
            f.write(content)


_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def kernel_symbol(fn: Any, signature: Mapping[str, str], constexprs: Mapping[str, Any],
                  attrs: Specialization) -> str:
    """The compiled kernel's name: ``fn.__name__``, or what the kernel's
    ``jit(repr=...)`` function returns for this specialization (as Triton
    names it), which must be a valid symbol."""
    name_of = getattr(fn, "repr", None)
    if name_of is None:
        return fn.__name__
    constants = {**constexprs, **{name: 1 for name in sorted(attrs.equal_to_1)}}
    name = name_of(KernelSpecialization(fn, dict(signature), constants, attrs))
    if not isinstance(name, str) or _SYMBOL.fullmatch(name) is None:
        raise ValueError(f"kernel {fn.__name__}: its repr function must return a symbol name (letters, digits and "
                         f"underscores, not starting with a digit), got {name!r}")
    return name


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
    **options: Any,
) -> CompiledKernel:
    """Compiles ``fn`` (a :class:`kiln.JITFunction`) for one specialization.

    ``target`` is ``"cpu"`` for the CPU backend (``checked`` then
    bounds-checks every access) or an NVIDIA chip; the backend that owns it
    does everything after the ``kiln`` stage. Further keyword ``options``
    are passed to that backend's compile step, with ``checked``. When the
    backend's results may be kept on disk, a valid entry of the on-disk cache
    is returned instead of compiling, and a compile fills it.

    Raises:
        CompilationError: for any error in the kernel, located in its source.
        ValueError: for an unknown target or an invalid ``num_warps``.
    """
    from kiln.compiler.frontend import generate_kiln_ir
    from kiln.language import target_info
    from kiln.runtime import disk_cache
    backend = _backends.backend_for_target(target)
    if not isinstance(num_warps, int) or num_warps < 1 or num_warps > 32 or num_warps & (num_warps - 1):
        raise LaunchOptionError(f"num_warps must be a power of 2 between 1 and 32, got {num_warps!r}")
    if not isinstance(num_stages, int) or num_stages < 1:
        raise LaunchOptionError(f"num_stages must be a positive integer, got {num_stages!r}")

    name = kernel_symbol(fn, signature, constexprs, attrs)
    metadata = KernelMetadata({
        "name": name,
        "target": target,
        "num_warps": num_warps,
        "num_stages": num_stages,
        "shared": 0,
        "signature": dict(signature),
        "constexprs": dict(constexprs),
    })
    options = {"checked": checked, **options}
    identity = backend.cache_identity(options)
    directory = disk_cache.cache_dir() if identity is not None else None
    key = None
    if directory is not None:
        # The symbol is the repr function's choice, which the sources alone do not fix.
        named = options if name == fn.__name__ else {**options, "kernel_name": name}
        key = disk_cache.kernel_key(fn, signature, constexprs, attrs, target, num_warps, num_stages, named,
                                    backend.name, identity)
    # A hit needs no lock: read first, so that a warm first call does not
    # import the locking module either.
    hit = disk_cache.lookup(directory, key, metadata) if directory is not None and key is not None else None
    if hit is not None:
        return _from_disk_cache(name, hit, backend.stage_suffixes)
    from kiln.runtime import disk_cache_sharing

    # On a miss, other processes compiling this key wait until this one has
    # stored it (or failed) and then read it: a key is compiled once.
    with disk_cache_sharing.compile_once(directory, key, metadata) as claim:
        if claim.hit is not None:
            return _from_disk_cache(name, claim.hit, backend.stage_suffixes)

        context = _C.ir.Context()
        # kl.target_info's queries answer for this target while the kernel is generated.
        with target_info.compiling_for(target):
            module = generate_kiln_ir(fn, dict(signature), dict(constexprs), attrs, context,
                                      debug=bool(options.get("debug", False)), name=name, target=target,
                                      num_warps=num_warps)
        asm: dict[str, Any] = {"kiln": module.str()}
        # Read from the kiln stage, before a backend lowers it: the launch
        # refuses read-only arrays for these parameters.
        params = kernel_parameters(fn.arg_names, signature, constexprs)
        metadata["written_args"] = [params[index] for index in module.written_kernel_arguments()]
        compiled = backend.compile(fn, module, asm, metadata, options)
        claim.store(compiled.asm, compiled.metadata, _stage_file_names(name, compiled.asm, backend.stage_suffixes))
    _dump(name, compiled.asm, backend.stage_suffixes)
    return compiled


def _from_disk_cache(name: str, entry: tuple[dict, dict], stage_suffixes: Mapping[str, str]) -> CompiledKernel:
    """The compiled kernel of an on-disk cache entry ``(asm, metadata)``
    (its stages dumped where stage dumps are on, as a compile's are)."""
    asm, metadata = entry
    compiled = CompiledKernel(name=name, asm=asm, metadata=metadata, from_disk_cache=True)
    _dump(name, compiled.asm, stage_suffixes)
    return compiled


@dataclasses.dataclass
class ASTSource:
    """A kernel and the specialization to compile it for, as Triton's
    ``triton.compiler.ASTSource``: ``kiln.compile(ASTSource(fn=kernel,
    signature={"x": "*fp32", "N": "constexpr"}, constexprs={"N": 4}))``.

    ``signature`` types every parameter in Triton's spelling; a parameter
    typed ``"constexpr"`` takes its value from ``constexprs``."""

    fn: Any
    signature: Mapping[str, str]
    constexprs: Optional[Mapping[str, Any]] = None
    attrs: Optional[Specialization] = None


def _active_target() -> str:
    """The compile target of the active driver: this GPU's chip, or "cpu"."""
    from kiln.runtime import driver

    if driver.active.get_current_target().backend == "cpu":
        return "cpu"
    return driver.get_target(driver.current_device())


def compile(
    fn: Any,
    signature: Optional[Mapping[str, str]] = None,
    constexprs: Mapping[str, Any] | None = None,
    target: Any = None,
    num_warps: int = 4,
    num_stages: int = 3,
    attrs: Specialization | None = None,
    checked: bool = False,
    debug: bool = False,
    maxnreg: Optional[int] = None,
    num_ctas: int = 1,
    options: Optional[Mapping[str, Any]] = None,
    enable_fp_fusion: bool = True,
    enable_reflect_ftz: bool = True,
) -> CompiledKernel:
    """Compiles a ``@kiln.jit`` function without launching it (no GPU needed).

    Args:
        fn: the jit function.
        signature: Triton-style type of each non-constexpr parameter, e.g.
            ``{"x_ptr": "*fp32", "n": "i32"}``; a tuple parameter ``t`` is
            ``"tuple"``, its elements ``t[0]``, ``t[1]``, ... typed (or given
            in ``constexprs``) by their paths.
        constexprs: value of each ``kl.constexpr`` parameter.
        target: ``"cpu"``, or the NVIDIA chip, ``"sm_90a"`` or ``"sm_80"``
            for instance.
        num_warps: warps per program.
        num_stages: software-pipelining depth for loops.
        attrs: the specialization to assume; by default every pointer is
            assumed 16-byte aligned, as for tensors from PyTorch's allocator.
        checked: for the CPU target, bounds-check every memory access.
        debug: compile ``kl.device_assert`` checks (dropped otherwise).
        maxnreg: for an NVIDIA target, the most registers per thread that
            ptxas may use (PTX ``.maxnreg``), as Triton's option; None
            leaves the choice to ptxas. The CPU target ignores it.
        num_ctas: Triton's thread-block cluster size; only 1 is supported
            (any other value is a ValueError).
        enable_fp_fusion: whether a multiply and an add may become one fma
            (as Triton's option); the CPU target never fuses them.
        enable_reflect_ftz: whether single-precision math functions flush
            denormal inputs and results to zero (as Triton's option, which
            sets libdevice's ``__CUDA_FTZ``); the CPU target keeps denormals.

    Triton's form, ``compile(ASTSource(...), target=None, options=None)``,
    is accepted too: ``options`` is a dict of the keyword options above
    (``num_warps``, ``num_stages``, ``debug``, ``maxnreg``, ``num_ctas``,
    ``enable_fp_fusion``, ``enable_reflect_ftz``),
    and the target defaults to the active driver's, as in Triton (a
    ``GPUTarget`` is accepted as well as a target string). Kiln's own form
    keeps ``"sm_90a"`` as its default target.

    Returns:
        The :class:`CompiledKernel`, with every stage in ``asm``.
    """
    if isinstance(fn, ASTSource):
        # Triton's order: compile(src, target=None, options=None).
        if target is None and signature is not None and not isinstance(signature, Mapping):
            target = signature
        chosen = dict(options if options is not None else (constexprs or {}))
        unknown = set(chosen) - {"num_warps", "num_stages", "debug", "maxnreg", "num_ctas", "enable_fp_fusion",
                                 "enable_reflect_ftz"}
        if unknown:
            raise TypeError(f"kiln.compile: unknown options {', '.join(sorted(unknown))}")
        typed = {name: ty for name, ty in fn.signature.items() if ty != "constexpr"}
        return compile(fn.fn, typed, fn.constexprs, target=_active_target() if target is None else target,
                       attrs=fn.attrs, **chosen)
    if signature is None:
        raise TypeError("kiln.compile: a signature is needed (or pass a kiln.compiler.ASTSource)")
    if target is None:
        target = "sm_90a"
    elif not isinstance(target, str):  # a GPUTarget, as Triton's compile takes
        target = "cpu" if target.backend == "cpu" else (
            "sm_90a" if str(target.arch) == "90" else f"sm_{target.arch}")
    if not hasattr(fn, "arg_names"):
        raise TypeError(f"kiln.compile expects a @kiln.jit function, got {type(fn).__name__}")
    constexprs = dict(constexprs or {})
    parameters = [name for name in fn.arg_names if name not in fn.constexpr_names]
    # A tuple parameter is typed "tuple" with its elements under their paths
    # (see kiln.compiler.specialization); a compiled-in one is in constexprs.
    missing = [name for name in parameters if name not in signature and name not in constexprs]
    unknown = [name for name in signature if root_name(name) not in parameters]
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
    from kiln.runtime.launch_settings import check_maxnreg, check_num_ctas

    check_maxnreg(maxnreg, "kiln.compile")
    check_num_ctas(num_ctas, f"kiln.compile({fn.__name__})")
    options: dict[str, Any] = {"debug": True} if debug else {}
    if maxnreg is not None:
        options["maxnreg"] = maxnreg
    for name, value in (("enable_fp_fusion", enable_fp_fusion), ("enable_reflect_ftz", enable_reflect_ftz)):
        if not isinstance(value, bool):
            raise TypeError(f"kiln.compile: {name} must be True or False, got {value!r}")
        if not value:  # only when off, so that the default's cache entries keep their keys
            options[name] = False
    return compile_jit_function(fn, signature, constexprs, attrs, target, num_warps, num_stages, checked=checked,
                                **options)


__all__ = ["ASTSource", "CompiledKernel", "compile", "compile_jit_function", "check_target", "KilnError"]
