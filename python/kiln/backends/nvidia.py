"""The NVIDIA backend ("cuda", also "nvidia"): kiln -> kiln_gpu -> LLVM -> PTX -> cubin.

Targets are chips (``sm_80``, ``sm_90a``, ...) that the C++ side knows. The
stages it adds to ``asm`` are ``"kiln_gpu"`` (with layouts), ``"llir"``,
``"ptx"`` and ``"cubin"`` (None when no ptxas is installed: the driver then
JIT-compiles the PTX). Kernels load once per CUDA device through
:mod:`kiln.runtime.driver` and launch on torch's current stream.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, Hashable, Iterator, Mapping, Optional, Sequence

from kiln import _C
from kiln.backends.base import Backend, LoadedKernel, launch_codes
from kiln.backends.tensor_maps import DerivedTensorMaps, TensorMapEncoder, derived_map_name
from kiln.compiler.compiler import (CompiledKernel, error_at, error_at_kernel, located_error, pipeline_text,
                                    run_pipeline)
from kiln.compiler.specialization import AGGREGATE_TYPES, TENSOR_MAP_TYPE
from kiln.errors import OutOfResources
from kiln.runtime import launch_settings as _settings
from kiln.runtime import arrays as _arrays
from kiln.runtime import driver as _driver

__all__ = ["CheckedLaunch", "NvidiaBackend", "STAGES", "find_ptxas"]

#: The stages of an NVIDIA compile, in order.
STAGES = ("kiln", "kiln_gpu", "llir", "ptx", "cubin")

# Where NVIDIA's pip wheels put ptxas under a site-packages directory: the
# CUDA 13 wheel (nvidia-cuda-nvcc), then CUDA 12's (nvidia-cuda-nvcc-cu12).
_WHEEL_PTXAS = (os.path.join("nvidia", "cu13", "bin", "ptxas"), os.path.join("nvidia", "cuda_nvcc", "bin", "ptxas"))

PTXAS_PLACES = ("$KILN_PTXAS, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, PATH, and the "
                "nvidia-cuda-nvcc pip wheel")


def find_ptxas() -> str | None:
    """Locates ptxas: ``$KILN_PTXAS``, then ``$CUDA_HOME/bin``, the standard
    toolkit location, ``PATH``, and NVIDIA's ``nvidia-cuda-nvcc`` wheel in
    any ``sys.path`` directory. Returns None if there is none."""
    for candidate in _ptxas_candidates():
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _ptxas_candidates() -> Iterator[Optional[str]]:
    """find_ptxas's places in order, each looked at only when the ones
    before have no ptxas (searching PATH costs a first compile about 0.1 ms)."""
    yield os.environ.get("KILN_PTXAS")
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            yield os.path.join(home, "bin", "ptxas")
    yield shutil.which("ptxas")
    for directory in sys.path:
        if directory:
            for relative in _WHEEL_PTXAS:
                yield os.path.join(directory, relative)


def _file_identity(tool: str, path: Optional[str]) -> str:
    """`tool`'s file at `path` for the on-disk cache's key: its path, size
    and modification time, or "none" where there is none."""
    try:
        stat = os.stat(path) if path is not None else None
    except OSError:
        stat = None
    if stat is None:
        return f"{tool} none"
    return f"{tool} {path} {stat.st_size} {stat.st_mtime_ns}"


_said_no_ptxas = False


def _say_no_ptxas_once() -> None:
    """Warns, once per process, that without ptxas the driver compiles PTX."""
    global _said_no_ptxas
    if _said_no_ptxas:
        return
    _said_no_ptxas = True
    warnings.warn(f"kiln: no ptxas found (looked in {PTXAS_PLACES}): kernels are loaded as PTX, which the CUDA "
                  f"driver compiles itself (slower first loads, and the driver's compiler may be older). Install "
                  f"one with `pip install nvidia-cuda-nvcc` or a CUDA toolkit, or set KILN_PTXAS.",
                  RuntimeWarning, stacklevel=_settings.user_stacklevel())


#: An architecture as a launch's ``arch`` option names it: Triton's "sm80",
#: "sm90", or a Kiln target ("sm_80", "sm_90a").
_ARCH = re.compile(r"sm_?(\d+)(a?)")
#: The oldest compute capability Kiln compiles for.
_MIN_CAPABILITY = 80
#: Shared memory a block may use (opt-in maximum), by compute capability:
#: 227 KiB on sm_90, 163 KiB on sm_80 and sm_87, 99 KiB on other sm_8x.
_MAX_SHARED_MEMORY = {90: 232448, 80: 166912, 87: 166912, 86: 101376, 89: 101376}


#: 32-bit registers one block may use on sm_80 and sm_90.
_REGISTERS_PER_BLOCK = 65536


# A `.file` directive as LLVM writes it: index and name, no time or size.
# (A pattern string, compiled by `re` on first use: the first launch of a
# kernel found in the disk cache imports this module and runs no ptxas.)
_FILE_DIRECTIVE = r'^([ \t]*\.file[ \t]+\d+[ \t]+"(?:[^"\\]|\\.)*")[ \t]*$'


def pin_source_times(ptx: str) -> str:
    """``ptx`` with every ``.file`` directive given a fixed modification
    time (1, the smallest ptxas takes as given) and an unknown size (0).

    Without them ptxas stats the source file and writes its modification
    time into the cubin's line table, so the same source text gave different
    cubins after a ``touch`` or a checkout, and the on-disk cache (keyed on
    the text) returned a cubin that a compile would not reproduce. Pinned,
    a compile depends only on the PTX: hits are byte-identical to compiles.
    """
    return re.sub(_FILE_DIRECTIVE, r"\1, 1, 0", ptx, flags=re.MULTILINE)


def max_shared_memory(target: str) -> int:
    """The most shared memory one block may use on ``target`` ("sm_90a", ...);
    48 KiB for chips not listed."""
    return _MAX_SHARED_MEMORY.get(_driver.nvidia_capability(target) or 0, 49152)


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
            message = f"ptxas failed for {target}:\n{result.stderr.strip()}"
            # The PTX's .loc directives lead from the failing PTX line to
            # the kernel source line that produced it.
            from kiln.compiler.ptx_lines import first_error_location

            where = first_error_location(ptx, result.stderr)
            raise error_at(*where, message) if where else error_at_kernel(fn, message)
        return cubin_path.read_bytes()


def tensor_map_boxes(module: Any, signature: Mapping[str, str], derived_maps: int) -> dict[str, list[int]]:
    """The boxes the kernel's TMA copies use, by tensor-map parameter: [rows,
    cols, swizzle bytes] (what kiln-gpu-pipeline-loads recorded on the
    parameter). The kernel's parameters are the signature's runtime leaves,
    in order, then its ``derived_maps`` derived tensor maps."""
    params = [name for name, text in signature.items() if text not in AGGREGATE_TYPES]
    params += [derived_map_name(index) for index in range(derived_maps)]
    return {params[index]: list(box) for index, box in module.kernel_arg_arrays("kiln.tensor_map_box").items()}



def _is_pinned(value: Any) -> bool:
    """Whether a CPU torch tensor is in page-locked (pinned) memory."""
    is_pinned = getattr(value, "is_pinned", None)
    try:
        return bool(is_pinned()) if is_pinned is not None else False
    except RuntimeError:  # torch without CUDA cannot tell
        return False

class CheckedLaunch:
    """A checked kernel's launch: passes each pointer argument's extent and
    the device's error record, then reads the record, which waits for the
    kernel (checked mode is for debugging), and raises the first fault.

    The record is two int64 in device memory: ``(parameter << 32) | (site +
    1)`` of the first faulting access (0: none) and the smallest element
    index that access faulted at (``INT64_MAX`` when none).
    """

    _NO_INDEX = (1 << 63) - 1

    def __init__(self, launch: Any, kernel_name: str, arg_codes: str, names: Sequence[str],
                 sites: Sequence[Mapping[str, Any]], device: Any) -> None:
        """
        Args:
            launch: the unchecked launch, which passes ``bound`` as it is.
            kernel_name: for error messages.
            arg_codes: one packing code per bound argument ('p' pointers, '-' constexprs).
            names: the kernel's runtime parameters, as the kernel numbers them.
            sites: ``metadata["checked_sites"]``, by site number.
            device: the CUDA device index the kernel is loaded on, where the
                record lives (or a torch device, for tests without a GPU).
        """
        import torch

        self.launch = launch
        self.kernel_name = kernel_name
        self.names = tuple(names)
        self.sites = list(sites)
        self.pointers = tuple(i for i, code in enumerate(arg_codes) if code == "p")
        # Runtime parameter number -> its pointer's place among the extents.
        runtime = [i for i, code in enumerate(arg_codes) if code != "-"]
        self.extent_slot = {runtime.index(position): k for k, position in enumerate(self.pointers)}
        where = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
        self.clean = torch.tensor([0, self._NO_INDEX], dtype=torch.int64, device=where)
        self.record = self.clean.clone()

    def __call__(self, grid_x: int, grid_y: int, grid_z: int, bound: tuple, num_threads: int) -> None:
        extents: list[int] = []
        for position in self.pointers:
            value = bound[position]
            extents.extend(_arrays.extent_of(value, _arrays.array_kind(value.__class__) or _arrays.ArrayKind.TORCH))
        self.launch(grid_x, grid_y, grid_z, (*bound, *extents, self.record.data_ptr()), num_threads)
        key, index = self.record.tolist()  # waits for the kernel
        if key:
            self.record.copy_(self.clean)
            raise self.fault(key, index, extents)

    def fault(self, key: int, index: int, extents: Sequence[int]) -> Exception:
        """The OutOfBoundsError for a record holding ``key`` and ``index``."""
        site_number, parameter = (key & 0xFFFFFFFF) - 1, key >> 32
        if not 0 <= site_number < len(self.sites):
            return _arrays.out_of_bounds_error(f"out-of-bounds access to parameter {parameter} at element index "
                                               f"{index}", self.kernel_name, self.names)
        site = self.sites[site_number]
        slot = self.extent_slot.get(parameter)
        size = extents[2 * slot + 1] if slot is not None else 0
        report = (f"{site['loc']}: out-of-bounds {'store to' if site['store'] else 'load from'} parameter "
                  f"{parameter} at element index {index} (the buffer has "
                  f"{size // max(1, site['element_bytes'])} elements)")
        return _arrays.out_of_bounds_error(report, self.kernel_name, self.names)


# The array kinds a GPU launch takes: torch tensors (and objects with
# data_ptr() and dtype), __cuda_array_interface__ producers and DLPack
# producers on a CUDA device.
_GPU_ARRAY_KINDS = (_arrays.ArrayKind.TORCH, _arrays.ArrayKind.CUDA_INTERFACE, _arrays.ArrayKind.DLPACK)


def _wait_for_producer(stream: int, device: int) -> None:
    """Orders the launch stream of ``device`` after work on a producer's
    ``stream`` (without blocking the host), as the CUDA Array Interface asks
    of a consumer: torch records an event on the producer's stream and makes
    its current stream wait for it.

    Raises:
        RuntimeError: without torch, which Kiln's GPU launches take their
            stream from.
    """
    try:
        import torch
    except ImportError:
        raise RuntimeError("an array's __cuda_array_interface__ names the stream its data is written on; "
                           "ordering the launch after it needs torch") from None
    launch_stream = _driver.current_stream(device)
    if stream == launch_stream:
        return
    producer = torch.cuda.ExternalStream(stream, device=torch.device("cuda", device))
    torch.cuda.current_stream(device).wait_stream(producer)


def _foreign_array_launch(launch: Any, foreign: Sequence[tuple[int, str]], device: int) -> Any:
    """``launch`` with the arrays at ``foreign`` positions (CUDA Array
    Interface or DLPack producers) replaced by their addresses, after the
    launch stream waits for each interface producer's stream. DLPack's
    export is given the consumer's stream by ``torch.utils.dlpack``."""

    def converted(grid_x: int, grid_y: int, grid_z: int, bound: tuple, num_threads: int) -> None:
        args = list(bound)
        for position, kind in foreign:
            value = args[position]
            if kind == _arrays.ArrayKind.CUDA_INTERFACE:
                stream = _arrays.cuda_interface_stream(value)
                if stream is not None:
                    _wait_for_producer(stream, device)
            args[position] = _arrays.address_of(value, kind)
        launch(grid_x, grid_y, grid_z, tuple(args), num_threads)

    return converted


class NvidiaBackend(Backend):
    """CUDA GPUs through the driver API (libcuda opened at run time)."""

    name = "cuda"
    aliases = ("nvidia",)
    target_help = "an NVIDIA chip such as 'sm_80' or 'sm_90a'"
    multi_device = True
    stage_suffixes = {"kiln_gpu": "kiln_gpu.mlir", "ptx": "ptx", "cubin": "cubin"}

    def accepts_target(self, target: Any) -> bool:
        return _driver.nvidia_capability(target) is not None and _C.compiler.is_valid_chip(target)

    def is_available(self) -> bool:
        # Looked up on the driver module each time, so tests can replace it.
        return _driver.is_available()

    def current_device(self) -> int:
        return _driver.current_device()

    def capturing(self) -> bool:
        # torch owns the streams Kiln launches on, and so their captures.
        torch = sys.modules.get("torch")
        cuda = getattr(torch, "cuda", None)
        return bool(cuda is not None and cuda.is_available() and cuda.is_current_stream_capturing())

    def launch_device(self, kernel_name: str, names: Sequence[str], values: Sequence[Any]) -> tuple[Hashable, bool]:
        """The device of the CUDA arrays among the arguments, as torch runs
        an operation where its tensors are: a kernel whose tensors are on
        cuda:1 launches on device 1 (on its current stream) whatever device
        is current. Without such arrays (only scalars, or arrays whose device
        index cannot be told), the current device."""
        chosen: Optional[int] = None
        chosen_name = ""
        for name, value in zip(names, values):
            where = _settings.array_device(value)
            if where is None or not where.startswith("cuda:"):
                continue  # scalars, host arrays (check_array explains), unknown indices
            index = int(where[5:])
            if chosen is None:
                chosen, chosen_name = index, name
            elif index != chosen:
                raise ValueError(f"kernel {kernel_name}: argument '{name}' is on cuda:{index} but argument "
                                 f"'{chosen_name}' is on cuda:{chosen}; a launch needs all its tensors on one "
                                 f"device")
        if chosen is None:
            return self.current_device(), False
        return chosen, True

    def target_for(self, device: Hashable) -> str:
        return _driver.get_target(device)

    def target_for_arch(self, arch: Any, kernel_name: str) -> str:
        """Triton's spellings ("sm80", "sm90") and Kiln's ("sm_80", "sm_90a"):
        sm90 is sm_90a, whose wgmma and TMA Kiln's Hopper code uses."""
        spelled = _ARCH.fullmatch(arch) if isinstance(arch, str) else None
        if spelled is None:
            raise ValueError(f"kernel {kernel_name}: arch={arch!r} is not an NVIDIA architecture; expected one such "
                             f"as 'sm80' or 'sm90' (or 'sm_80', 'sm_90a')")
        capability = int(spelled.group(1))
        if capability < _MIN_CAPABILITY:
            raise ValueError(f"kernel {kernel_name}: arch={arch!r}: Kiln compiles for sm_{_MIN_CAPABILITY} and later "
                             f"(cp.async, bf16 tensor cores)")
        target = _driver.target_for_capability(*divmod(capability, 10))
        if spelled.group(2) and not target.endswith("a"):
            target += "a"
        if not _C.compiler.is_valid_chip(target):
            raise ValueError(f"kernel {kernel_name}: arch={arch!r}: {target} is not a chip this build of Kiln "
                             f"knows")
        return target

    def has_tensor_maps(self, device: Hashable) -> bool:
        # The TMA unit's copies into wgmma slots: sm_90a.
        return self.target_for(device) == "sm_90a"

    def check_array(self, kernel_name: str, name: str, value: Any, kind: str, where: Optional[str],
                    device: Hashable) -> Optional[int]:
        if where == "cpu":
            if kind == _arrays.ArrayKind.TORCH and _is_pinned(value):
                # Page-locked host memory is in the GPU's address space
                # (unified addressing): kernels read and write it in place,
                # as Triton's do.
                return value.data_ptr()
            raise ValueError(f"kernel {kernel_name}: argument '{name}' is on the CPU; launch needs CUDA tensors "
                             f"(or pinned host memory)")
        if where == _settings.META:
            raise _settings.meta_tensor_error(kernel_name, name)
        if kind not in _GPU_ARRAY_KINDS:
            raise TypeError(f"kernel {kernel_name}: argument '{name}' is a {type(value).__name__} on {where}; "
                            f"GPU launches take torch tensors, objects with data_ptr() and dtype, "
                            f"__cuda_array_interface__ or __dlpack__ arrays")
        # array_device says "cuda:N" for a known index, "cuda" for an unknown one.
        index = int(where[5:]) if where is not None and where.startswith("cuda:") else None
        if index is not None and index != device:
            raise ValueError(f"kernel {kernel_name}: argument '{name}' is on cuda:{index} but the launch "
                             f"is on cuda:{device}; a launch needs all its tensors on one device")
        return _arrays.address_of(value, kind)

    def compile_options(self, kernel: Any, environment: tuple) -> dict[str, Any]:
        """``pointer_tensor_maps`` False where ``KILN_POINTER_TENSOR_MAPS`` is
        set false (they are on by default: the default adds no option, so
        that cache keys stay as they were)."""
        return {"pointer_tensor_maps": False} if _settings.pointer_tensor_maps() is False else {}

    def cache_identity(self, options: Mapping[str, Any]) -> Optional[str]:
        """The ptxas that would make the cubin and the libdevice that
        kernels calling math functions link, each by path, size and
        modification time (running ``ptxas --version`` would cost a process
        per compile), or "none" where there is none: without ptxas the entry
        holds no cubin."""
        return f"{_file_identity('ptxas', find_ptxas())}; " \
               f"{_file_identity('libdevice', _C.compiler.find_libdevice())}"

    def compile(self, fn: Any, module: Any, asm: dict[str, Any], metadata: dict[str, Any],
                options: Mapping[str, Any]) -> CompiledKernel:
        """kiln -> kiln_gpu -> LLVM (two registered pipelines), then PTX and,
        with ptxas, a cubin. ``options["maxnreg"]``, when set, caps the
        kernel's registers per thread; ``options["enable_fp_fusion"]``
        False keeps multiplies and adds apart (mul.rn, add.rn: no fma); ``options["enable_reflect_ftz"]``
        False keeps denormals in single-precision math functions. ``options["pointer_tensor_maps"]``
        False keeps loops' pointer loads of rows from getting TMA maps on
        sm_90a (kiln-tensor-map-pointer-loads). ``options["checked"]`` bounds-checks
        every access (see docs/design/checked_mode.md): loads then stay
        plain loads (no cp.async or TMA copies, whatever num_stages says),
        and ``metadata["checked_sites"]`` lists the checked accesses."""
        target = metadata["target"]
        checked = bool(options.get("checked", False))
        settings = {"target": target, "num-warps": metadata["num_warps"], "num-stages": metadata["num_stages"]}
        if checked:
            settings["checked"] = "true"
        if options.get("maxnreg") is not None:
            settings["maxnreg"] = options["maxnreg"]
        if options.get("tensor_map_parameters") is False:
            settings["tensor-map-parameters"] = "false"
        if options.get("pointer_tensor_maps") is False:
            settings["pointer-tensor-maps"] = "false"
        pipelines = [
            ("kiln_gpu", pipeline_text("kiln-nvidia-to-kiln-gpu", **settings)),
            (None, pipeline_text("kiln-nvidia-to-llvm", **settings)),
        ]
        for stage, pipeline in pipelines:
            run_pipeline(fn, module, pipeline, "lowering")
            if stage:
                asm[stage] = module.str()
            if stage == "kiln_gpu":
                derived = module.dict_array_attr("kiln.derived_tensor_maps") or []
                if derived:
                    metadata["derived_tensor_maps"] = derived
                metadata["tensor_maps"] = tensor_map_boxes(module, metadata["signature"], len(derived))
        # Scratch shared memory for reductions, scans, layout changes and dots.
        metadata["shared"] = module.int_attr("kiln_gpu.shared") or 0
        # A warp-specialized kernel launches its producer warps too.
        producer_warps = module.int_attr("kiln_gpu.producer_warps") or 0
        if producer_warps:
            metadata["producer_warps"] = producer_warps
        if checked:
            metadata["checked"] = True
            metadata["checked_sites"] = module.dict_array_attr("kiln_gpu.checked_sites") or []
        limit = max_shared_memory(target)
        if metadata["shared"] > limit:
            raise OutOfResources(metadata["shared"], limit, f"shared memory (bytes per block on {target})")
        try:
            asm["llir"], ptx = _C.compiler.translate_to_ptx(
                module, target, enable_fp_fusion=bool(options.get("enable_fp_fusion", True)),
                enable_reflect_ftz=bool(options.get("enable_reflect_ftz", True)))
        except _C.ir.MLIRError as error:
            raise located_error(fn, error, "PTX generation") from error
        asm["ptx"] = pin_source_times(ptx)
        ptxas = find_ptxas()
        if ptxas is None:
            _say_no_ptxas_once()
        asm["cubin"] = _run_ptxas(ptxas, asm["ptx"], target, fn) if ptxas else None
        metadata["pipelines"] = [pipeline for _, pipeline in pipelines]
        metadata["backend"] = "nvidia"
        return CompiledKernel(name=metadata["name"], asm=asm, metadata=metadata)

    @staticmethod
    def _load_binary(compiled: CompiledKernel, shared: int, device: int) -> tuple[int, int, int, int]:
        """Loads the cubin (without ptxas the compiler keeps none, and the
        driver JIT-compiles the PTX) and records its registers and spills
        on ``compiled``. Returns the driver's (module, function, n_regs,
        n_spills)."""
        binary = compiled.asm.get("cubin")
        if binary is None:
            binary = compiled.asm["ptx"]
        handles = _driver.load_binary(compiled.name, binary, shared, device)
        compiled.n_regs, compiled.n_spills = handles[2], handles[3]
        return handles

    def init_handles(self, compiled: CompiledKernel) -> None:
        self._load_binary(compiled, int(compiled.metadata.get("shared", 0)), _driver.current_device())

    def load(self, kernel: Any, compiled: CompiledKernel, signature: Mapping[str, str],
             kinds: Sequence[Optional[str]], device: Hashable, num_warps: int,
             options: Mapping[str, Any]) -> LoadedKernel:
        shared = int(compiled.metadata.get("shared", 0))
        module, function, n_regs, n_spills = self._load_binary(compiled, shared, device)
        # The CTA: the kernel's warps, and a warp-specialized kernel's producer warps.
        num_warps += int(compiled.metadata.get("producer_warps", 0))
        # ptxas spills rather than fail, but a block's threads must fit in the
        # register file together: past it the launch itself would fail.
        registers = n_regs * num_warps * 32
        if registers > _REGISTERS_PER_BLOCK:
            raise OutOfResources(registers, _REGISTERS_PER_BLOCK,
                                 f"registers per block ({n_regs} per thread x {num_warps * 32} threads)")
        # kiln._C.driver.launch takes every bound argument and skips the constexprs ("-").
        arg_codes = launch_codes(signature, kernel.arg_names, skipped="-")
        checked = bool(compiled.metadata.get("checked"))
        # A checked kernel takes (base, bytes) per pointer parameter and the error record after its own.
        codes = arg_codes + ("Ll" * arg_codes.count("p") + "p" if checked else "")

        def launch(grid_x: int, grid_y: int, grid_z: int, bound: tuple, num_threads: int) -> None:
            # _driver's attributes are read per launch: current_stream rebinds
            # itself to torch's raw entry point on first use (and tests replace both).
            _driver.launch(grid_x, grid_y, grid_z, num_warps, shared, _driver.current_stream(device), function,
                           codes, bound)

        map_positions = [i for i, name in enumerate(kernel.arg_names) if signature.get(name) == TENSOR_MAP_TYPE]
        runtime_positions = [i for i, code in enumerate(arg_codes) if code != "-"]
        recipes = compiled.metadata.get("derived_tensor_maps", [])
        if map_positions or recipes:
            encoder = TensorMapEncoder(compiled.metadata.get("tensor_maps", {}))
            names = [kernel.arg_names[i] for i in map_positions]
            # The maps of descriptors made in the kernel follow its parameters.
            derived = DerivedTensorMaps(recipes, encoder, runtime_positions, kernel.__name__)
            codes += "T" * len(recipes)
            plain_launch = launch

            def launch(grid_x: int, grid_y: int, grid_z: int, bound: tuple, num_threads: int) -> None:
                # The tensor-map leaves hold their descriptors: encode them.
                args = list(bound)
                for position, name in zip(map_positions, names):
                    args[position] = encoder.encode(name, args[position])
                if recipes:
                    args += derived.encode(bound)
                plain_launch(grid_x, grid_y, grid_z, tuple(args), num_threads)

        foreign = [(position, kind) for position, kind in zip(runtime_positions, kinds)
                   if kind in (_arrays.ArrayKind.CUDA_INTERFACE, _arrays.ArrayKind.DLPACK)]
        if foreign:
            launch = _foreign_array_launch(launch, foreign, device)

        if checked:
            launch = CheckedLaunch(launch, kernel.__name__, arg_codes,
                                   [name for name, code in zip(kernel.arg_names, arg_codes) if code != "-"],
                                   compiled.metadata.get("checked_sites", []), device)

        # The native launch path launches a plain kernel itself; one whose
        # launch needs Python above (tensor maps to encode, foreign arrays,
        # checked mode), or a replaced driver.launch (a recorder, a
        # profiler's hook), keeps every launch in Python.
        direct = None
        if not map_positions and not recipes and not foreign and not checked and _driver.launch is _C.driver.launch:
            direct = _C.driver.direct_launch(function, codes, num_warps, shared, device, _driver)
        return LoadedKernel(compiled, launch, self.name, device, arg_codes=arg_codes, num_warps=num_warps,
                            module=module, function=function, shared=shared, n_regs=n_regs, n_spills=n_spills,
                            direct=direct)
