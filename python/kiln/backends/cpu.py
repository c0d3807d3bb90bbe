"""The CPU backend ("cpu"): kiln -> host LLVM, JIT-compiled in process, run on a thread pool.

Its one target is ``"cpu"``; it adds the ``"llir"`` stage (the optimized host
LLVM IR) and keeps the ``kiln._C.cpu.Kernel`` on ``CompiledKernel.cpu``.
``num_warps`` and ``num_stages`` are recorded, not used. The processor it
compiles for is ``$KILN_CPU_TARGET`` (default: the host); a kernel compiled
for one the host cannot run is refused at launch. Host arrays are
recognized by :mod:`kiln.runtime.arrays`; :class:`kiln.runtime.cpu_launcher.CpuLauncher`
is the launch callable. See docs/design/cpu_backend.md.
"""

from __future__ import annotations

import platform
from typing import Any, Callable, Hashable, Mapping, Optional, Sequence

from kiln import _C
from kiln.backends.base import Backend, LoadedKernel, launch_codes
from kiln.compiler.compiler import CompiledKernel, located_error, pipeline_text, run_pipeline
from kiln.runtime import launch_settings as _settings
from kiln.runtime import arrays as _arrays
from kiln.runtime import cpu_launcher as _launcher

__all__ = ["CpuBackend"]

CPU = "cpu"


def _on_x86_64() -> bool:
    """Whether the host is x86-64, where gathers are an AVX2 feature."""
    return platform.machine() in ("x86_64", "AMD64")


class CpuBackend(Backend):
    """The host processor: always available, one device (``"cpu"``)."""

    name = CPU
    target_help = "'cpu'"

    def accepts_target(self, target: Any) -> bool:
        return target == CPU

    def is_available(self) -> bool:
        return True

    def current_device(self) -> str:
        return CPU

    def target_for(self, device: Hashable) -> str:
        return CPU

    def check_array(self, kernel_name: str, name: str, value: Any, kind: str, where: Optional[str],
                    device: Hashable) -> Optional[int]:
        if where == _settings.META:
            raise _settings.meta_tensor_error(kernel_name, name)
        if where != CPU:
            raise ValueError(f"kernel {kernel_name}: argument '{name}' is on {where}; the CPU backend needs "
                             f"CPU arrays (torch CPU tensors, numpy arrays, __array_interface__ or CPU "
                             f"__dlpack__ objects)")
        return _arrays.address_of(value, kind)

    def compile_options(self, kernel: Any, environment: tuple) -> dict[str, Any]:
        """``checked``: ``kiln.jit(checked=True)`` or ``$KILN_CPU_CHECKED``;
        ``cpu_target``: ``$KILN_CPU_TARGET`` (``"host"`` when unset);
        ``pointer_tensor_maps`` where ``$KILN_POINTER_TENSOR_MAPS`` is set true.

        Raises:
            ValueError: for a target specification that names an unknown
                processor or feature.
        """
        env_checked = environment[1]
        raw_target = environment[4] if len(environment) > 4 else None
        target = _settings.cpu_target(raw_target)
        try:
            _C.cpu.describe_target(target)
        except ValueError as error:
            raise ValueError(f"{_settings.CPU_TARGET_ENV}={target!r}: {error}") from None
        options = {"checked": kernel.checked or _settings.parse_checked(env_checked), "cpu_target": target}
        if _settings.pointer_tensor_maps():
            options["pointer_tensor_maps"] = True
        return options

    def compile(self, fn: Any, module: Any, asm: dict[str, Any], metadata: dict[str, Any],
                options: Mapping[str, Any]) -> CompiledKernel:
        """``kiln-cpu-to-llvm{checked=...}``, then LLVM's O3 and ORC's LLJIT."""
        checked = bool(options.get("checked", False))
        target = str(options.get("cpu_target", "host"))
        # x86 gathers 32/64-bit elements from AVX2 on (LLVM uses the
        # instruction only where the processor's tuning calls it fast) and
        # scatters them from AVX-512 on; otherwise LLVM would expand a wide
        # gather or scatter into a branch per lane, which takes minutes to
        # compile for thousands of lanes, so the lowering loops over them.
        x86 = _on_x86_64()
        gathers = (_C.cpu.target_has(target, "avx2") and _C.cpu.target_has(target, "fast-gather")) if x86 else True
        scatters = _C.cpu.target_has(target, "avx512f") if x86 else True
        settings = {"vector-gathers": str(gathers).lower(), "vector-scatters": str(scatters).lower()}
        if options.get("pointer_tensor_maps"):
            # Tensor maps on loops' pointer loads, read as the TMA unit would.
            settings["pointer-tensor-maps"] = "true"
        pipeline = pipeline_text("kiln-cpu-to-llvm", checked="true" if checked else "false", **settings)
        run_pipeline(fn, module, pipeline, "CPU lowering")
        try:
            host = _C.cpu.compile(module, metadata["name"], target)
        except _C.ir.MLIRError as error:
            raise located_error(fn, error, "CPU lowering") from error
        asm["llir"] = host.llvm_ir
        metadata["pipelines"] = [pipeline]
        metadata["backend"] = CPU
        metadata["checked"] = checked
        metadata["cpu_target"] = target
        return CompiledKernel(name=metadata["name"], asm=asm, metadata=metadata, cpu=host)

    def load(self, kernel: Any, compiled: CompiledKernel, signature: Mapping[str, str],
             kinds: Sequence[Optional[str]], device: Hashable, num_warps: int,
             options: Mapping[str, Any]) -> LoadedKernel:
        host = getattr(compiled, "cpu", None)
        if host is None:
            raise RuntimeError(f"kernel {kernel.__name__}: the compiler returned no CPU kernel for target 'cpu'")
        checked = bool(options.get("checked", False))
        # Only the runtime parameters reach the host kernel: constexprs are compiled in.
        codes = launch_codes(signature, kernel.runtime_names)
        launcher: Any = _launcher.CpuLauncher(host, kernel.__name__, kernel.runtime_positions, kernel.runtime_names,
                                            codes, kinds, checked)
        missing = list(host.missing_features)
        if missing:
            # Compiling is allowed (warmup=True, then kernel.asm), running is not:
            # the first instruction the host lacks would kill the process.
            launcher = _UnrunnableLauncher(kernel.__name__, str(options.get("cpu_target", "host")), missing)
        return LoadedKernel(compiled, launcher, self.name, CPU, arg_codes=codes, num_warps=num_warps,
                            launcher=launcher)

    def keep(self, loaded: LoadedKernel, forget: Callable[[], None]) -> None:
        """At most ``KILN_CPU_CODE_CACHE_SIZE`` kernels stay loaded, the least
        recently launched evicted first."""
        _launcher.CODE_CACHE.add(loaded.launcher, forget)

class _UnrunnableLauncher:
    """The launch of a kernel compiled for a processor the host is not: a
    ``ValueError`` saying which features are missing, before any of the
    kernel's code runs."""

    __slots__ = ("message", "last_launch")

    def __init__(self, kernel_name: str, target: str, missing: Sequence[str]) -> None:
        # Never launched: the code cache evicts it by its compile time.
        self.last_launch = _launcher.launch_stamp()
        self.message = (f"kernel {kernel_name}: {_settings.CPU_TARGET_ENV}={target!r} needs CPU features this host "
                        f"lacks ({', '.join(missing)}); such a kernel can be compiled (warmup=True) and its "
                        f"asm read, but not launched here")

    def __call__(self, grid_x: int, grid_y: int, grid_z: int, bound: tuple, num_threads: int) -> None:
        raise ValueError(self.message)
