"""The interface every Kiln backend implements, and what the JIT keeps of a load.

A backend is one Python module holding one :class:`Backend` subclass (with,
on the C++ side, the target's registered pass pipeline and binary loader).
The compiler and the JIT talk to backends only through this interface:

* **target description**: which compiler targets it owns
  (:meth:`Backend.accepts_target`), which target a device needs
  (:meth:`Backend.target_for`), whether it can run here
  (:meth:`Backend.is_available`) and which device a launch uses
  (:meth:`Backend.current_device`);
* **compiling**: :meth:`Backend.compile` runs the backend's pipelines on the
  module the frontend built (the ``kiln`` stage) and produces its binary;
  :meth:`Backend.cache_identity` says whether (and keyed on what else) the
  result may be kept in the on-disk cache;
* **arguments**: :meth:`Backend.check_array` accepts or rejects an array
  argument with the backend's own message, and :meth:`Backend.compile_options`
  turns the kernel's and environment's settings into compile options;
* **loading and launching**: :meth:`Backend.load` returns a
  :class:`LoadedKernel`, whose ``launch`` attribute is the one callable the
  JIT's hot path invokes.

See docs/design/backends.md for how a new backend plugs in.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, Optional, Sequence

if TYPE_CHECKING:
    from kiln.compiler.compiler import CompiledKernel

__all__ = ["Backend", "LoadedKernel", "LaunchFn", "launch_codes"]

#: ``launch(grid_x, grid_y, grid_z, bound_arguments, num_threads)``: runs one
#: grid of a loaded kernel with all of a JITFunction's bound arguments
#: (constexprs included, in parameter order). Backends without a thread pool
#: ignore ``num_threads``.
LaunchFn = Callable[[int, int, int, tuple, int], None]

# Argument packing codes by signature type (python/src/ArgumentPacking.h):
# both the CUDA launcher and the CPU kernels read these 8-byte slots.
_LAUNCH_CODES = {
    "nvTmaDesc": "T",
    "i1": "b",
    "i8": "c",
    "u8": "B",
    "i16": "h",
    "u16": "H",
    "i32": "i",
    "u32": "I",
    "i64": "l",
    "u64": "L",
    "fp16": "e",
    "bf16": "E",
    "fp32": "f",
    "fp64": "d",
}


def launch_codes(signature: Mapping[str, str], names: Sequence[str], skipped: str = "") -> str:
    """The packing code string for the parameters ``names``: ``"p"`` for a
    pointer, the scalar's code otherwise, and ``skipped`` for a name not in
    ``signature`` (a constexpr, compiled into the kernel)."""
    return "".join(skipped if name not in signature else
                   "p" if signature[name].startswith("*") else _LAUNCH_CODES[signature[name]]
                   for name in names)


class LoadedKernel:
    """A compiled kernel loaded on one device, with what a launch needs.

    Attributes:
        kernel: the compiler's CompiledKernel (``.asm``, ``.metadata``, ``.name``).
        launch: the :data:`LaunchFn` the JIT calls on every launch.
        backend: the name of the backend that loaded it ("cuda", "cpu", ...).
        device: where it is loaded: the CUDA device index, or "cpu"; also its
            key in ``JITFunction.cache``.
        function / module: the CUfunction and CUmodule handles (None off the GPU).
        arg_codes: the argument packing codes the launch uses.
        shared: dynamic shared memory bytes; num_warps: warps per program.
        n_regs / n_spills: registers per thread and spilled bytes per thread.
        launcher: the :class:`kiln.runtime.cpu_launcher.CpuLauncher` of a CPU kernel, else None.
        direct: what the native launch path launches without calling ``launch``
            (a ``kiln._C.driver.DirectLaunch``), or None where a launch needs
            Python (tensor maps, foreign arrays, checked mode, the CPU).
    """

    __slots__ = ("kernel", "launch", "backend", "module", "function", "arg_codes", "shared", "num_warps", "n_regs",
                 "n_spills", "device", "launcher", "direct")

    def __init__(self, kernel: Any, launch: LaunchFn, backend: str, device: Hashable, *, arg_codes: str,
                 num_warps: int, module: Optional[int] = None, function: Optional[int] = None, shared: int = 0,
                 n_regs: int = 0, n_spills: int = 0, launcher: Any = None, direct: Any = None):
        self.kernel = kernel
        self.launch = launch
        self.backend = backend
        self.device = device
        self.module = module
        self.function = function
        self.arg_codes = arg_codes
        self.shared = shared
        self.num_warps = num_warps
        self.n_regs = n_regs
        self.n_spills = n_spills
        self.launcher = launcher
        self.direct = direct

    def __repr__(self) -> str:
        return (f"LoadedKernel({getattr(self.kernel, 'name', '?')}, device={self.device}, "
                f"num_warps={self.num_warps}, shared={self.shared}, n_regs={self.n_regs}, n_spills={self.n_spills})")


class Backend(abc.ABC):
    """One target family: its target names, pipelines, binary and launcher.

    Instances are registered in :mod:`kiln.backends`; the compiler finds one
    by target (:func:`kiln.backends.backend_for_target`), the JIT by name
    (:func:`kiln.backends.get_backend`).
    """

    #: The canonical name: ``kiln.jit(backend=...)``, ``backend=`` at launch,
    #: ``$KILN_BACKEND`` and ``LoadedKernel.backend`` use it.
    name: str
    #: Other accepted spellings of :attr:`name` (lower case).
    aliases: tuple[str, ...] = ()
    #: How the targets it accepts are described in "unknown target" errors.
    target_help: str
    #: True when one compiled kernel is loaded once per device and the launch
    #: picks the current device's copy (the JIT then keys its routes by
    #: :meth:`current_device` on every launch); False for a single device.
    multi_device: bool = False
    #: ``KILN_DUMP_DIR`` file suffix of each stage this backend adds to ``asm``
    #: (the ``kiln`` stage and ``llir`` are named by the compiler).
    stage_suffixes: Mapping[str, str] = {}

    # -- target description --------------------------------------------------

    @abc.abstractmethod
    def accepts_target(self, target: Any) -> bool:
        """True when ``target`` (e.g. "cpu", "sm_90a") is one of this backend's."""

    @abc.abstractmethod
    def is_available(self) -> bool:
        """True when kernels can be launched on this machine."""

    @abc.abstractmethod
    def current_device(self) -> Hashable:
        """The device a launch runs on now (and its key in ``JITFunction.cache``).

        Called on every launch when :attr:`multi_device` is True, so it must be cheap.
        """

    def capturing(self) -> bool:
        """Whether launches are being recorded into a graph now (a CUDA
        graph capture on the current stream), when a compile or a module
        load cannot happen. False by default."""
        return False

    def launch_device(self, kernel_name: str, names: Sequence[str], values: Sequence[Any]) -> tuple[Hashable, bool]:
        """The device a launch with these argument leaves runs on, and
        whether the arrays chose it (True) or it is :meth:`current_device`
        (False: the JIT then routes the key by the current device on every
        launch). By default, the current device.

        Raises:
            ValueError: for arrays that cannot share one launch.
        """
        return self.current_device(), False

    @abc.abstractmethod
    def target_for(self, device: Hashable) -> str:
        """The compiler target for ``device`` (e.g. "sm_90a" for a Hopper GPU)."""

    def target_for_arch(self, arch: Any, kernel_name: str) -> str:
        """The compiler target that a launch's ``arch`` option (or
        ``knobs.runtime.override_arch``) names, for a kernel to compile for
        another architecture than its device's.

        Raises:
            ValueError: always here: only the NVIDIA backend takes ``arch``.
        """
        raise ValueError(f"kernel {kernel_name}: arch={arch!r} names an architecture to compile for, which only "
                         f"the NVIDIA backend takes; the {self.name} backend compiles for its own target")

    def has_tensor_maps(self, device: Hashable) -> bool:
        """Whether host tensor descriptors get a TMA tensor map on ``device``
        (a kernel parameter that :meth:`load`'s launcher encodes)."""
        return False

    # -- arguments -------------------------------------------------------------

    @abc.abstractmethod
    def check_array(self, kernel_name: str, name: str, value: Any, kind: str, where: Optional[str],
                    device: Hashable) -> Optional[int]:
        """Raises unless array argument ``name`` can be passed to a launch on ``device``.

        Args:
            kind: the argument's :class:`kiln.runtime.arrays.ArrayKind`.
            where: :func:`kiln.runtime.launch_settings.array_device` of the value
                ("cpu", "cuda:0", ...).

        Returns:
            The array's address, for the alignment specialization (None when
            it cannot be read).

        Raises:
            ValueError / TypeError: naming the kernel and the argument.
        """

    def compile_options(self, kernel: Any, environment: tuple) -> dict[str, Any]:
        """Backend-specific keyword options for ``compile_jit_function``.

        ``kernel`` is the JITFunction, ``environment`` the raw values of
        :func:`kiln.runtime.launch_settings.environment`. The options are part of
        the JIT's compile cache key. None by default.
        """
        return {}

    # -- compiling, loading ----------------------------------------------------

    def cache_identity(self, options: Mapping[str, Any]) -> Optional[str]:
        """What, besides the compiler build and the kernel, this backend's
        results depend on (external tools and their versions), as a string
        for the on-disk cache's key (:mod:`kiln.runtime.disk_cache`); None
        when its results cannot be kept on disk, the default (an in-process
        object, as the CPU backend's JIT-compiled code)."""
        return None

    @abc.abstractmethod
    def compile(self, fn: Any, module: Any, asm: dict[str, Any], metadata: dict[str, Any],
                options: Mapping[str, Any]) -> "CompiledKernel":
        """Lowers ``module`` (the ``kiln`` stage, already in ``asm["kiln"]``)
        to this backend's binary.

        Adds each later stage to ``asm`` and, to ``metadata`` (which holds
        name, target, num_warps, num_stages, shared, signature and
        constexprs), at least ``pipelines`` (the exact pipeline strings run,
        for ``kiln-opt``) and ``backend``.

        Raises:
            CompilationError: located in the kernel's source.
        """

    @abc.abstractmethod
    def load(self, kernel: Any, compiled: "CompiledKernel", signature: Mapping[str, str],
             kinds: Sequence[Optional[str]], device: Hashable, num_warps: int,
             options: Mapping[str, Any]) -> LoadedKernel:
        """Loads ``compiled`` on ``device`` for launches of ``kernel`` (the JITFunction).

        ``signature`` maps each runtime parameter to its type, ``kinds``
        gives each runtime parameter's ArrayKind (None for scalars), in
        ``kernel.runtime_names`` order; ``options`` are the
        :meth:`compile_options` it was compiled with.
        """

    def keep(self, loaded: LoadedKernel, forget: Callable[[], None]) -> None:
        """Called when the JIT caches ``loaded``; a backend that bounds the
        code it keeps calls ``forget`` later to drop the kernel from the JIT's
        caches (the CPU backend: :class:`kiln.runtime.cpu_launcher.CodeCache`). By
        default every loaded kernel is kept."""

    def init_handles(self, compiled: "CompiledKernel") -> None:
        """Loads ``compiled`` on the current device to learn its
        ``n_regs`` and ``n_spills`` (``CompiledKernel._init_handles``).
        Nothing to learn by default: a host kernel has no register budget."""

    def __repr__(self) -> str:
        return f"<kiln backend {self.name!r}>"
