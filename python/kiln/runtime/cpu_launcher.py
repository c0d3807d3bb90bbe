"""The CPU backend's launcher and the bound on the CPU kernels kept loaded.

:class:`CpuLauncher` is what the JIT calls for every CPU launch: it turns the
bound arguments into the tuple ``kiln._C.cpu.Kernel.launch`` takes, adds the
buffers' bounds in checked mode, and turns an out-of-bounds report into
:class:`kiln.errors.OutOfBoundsError` naming the parameter.

:class:`CodeCache` bounds how many compiled CPU kernels the runtime keeps
(``KILN_CPU_CODE_CACHE_SIZE``): each holds its JIT'd code and JIT session,
close to a megabyte, so a kernel launched with thousands of specializations
would otherwise grow the process without end.
"""

from __future__ import annotations

import itertools
import os
import threading
from typing import Any, Callable, Optional, Sequence

from kiln.errors import OutOfBoundsError
from kiln.runtime.arrays import _GETTERS, extent_of, out_of_bounds_error

__all__ = ["CpuLauncher", "CodeCache", "CODE_CACHE", "CODE_CACHE_ENV", "DEFAULT_CODE_CACHE_SIZE", "launch_stamp"]

CODE_CACHE_ENV = "KILN_CPU_CODE_CACHE_SIZE"
DEFAULT_CODE_CACHE_SIZE = 128

# Launch stamps: a launcher's latest says how recently it ran.
_launch_clock = itertools.count()


def launch_stamp() -> int:
    """A new stamp, later than every earlier one: what a launcher records as
    its ``last_launch`` (CodeCache evicts the smallest first)."""
    return next(_launch_clock)


class CpuLauncher:
    """Launches one compiled CPU kernel with a JITFunction's bound arguments.

    Only the runtime (non-constexpr) parameters are passed to
    ``kiln._C.cpu.Kernel.launch``, each array as its address; ``codes``,
    the argument tuple and, in checked mode, the bounds list are all indexed
    by that runtime parameter list, and so is the "parameter N" of the
    backend's out-of-bounds reports.
    """

    __slots__ = ("kernel", "kernel_name", "names", "codes", "checked", "_plan", "_kinds", "last_launch")

    def __init__(self, kernel: Any, kernel_name: str, positions: Sequence[int], names: Sequence[str],
                 codes: str, kinds: Sequence[Optional[str]], checked: bool) -> None:
        """
        Args:
            kernel: the ``kiln._C.cpu.Kernel``.
            kernel_name: for error messages.
            positions: where each runtime parameter is in the bound arguments.
            names: the runtime parameters' names.
            codes: one launch code per runtime parameter ('p' for arrays).
            kinds: each runtime parameter's :class:`ArrayKind`, None for scalars.
            checked: pass bounds and translate out-of-bounds reports.
        """
        self.kernel = kernel
        self.kernel_name = kernel_name
        self.names = tuple(names)
        self.codes = codes
        self.checked = checked
        self._kinds = tuple(kinds)
        # (position, address getter or None) per runtime parameter: the only
        # per-argument work of a launch.
        self._plan = tuple((position, _GETTERS[kind] if kind else None) for position, kind in zip(positions, kinds))
        # For CodeCache: a stamp per launch is cheaper than reordering a list.
        self.last_launch = launch_stamp()

    def __call__(self, grid_x: int, grid_y: int, grid_z: int, bound: tuple, num_threads: int) -> None:
        """Runs the grid and returns when every program has finished.

        Raises:
            OutOfBoundsError: in checked mode, for an access outside a buffer.
        """
        args = tuple([bound[position] if getter is None else getter(bound[position])
                      for position, getter in self._plan])
        self.last_launch = launch_stamp()
        if not self.checked:
            self.kernel.launch(grid_x, grid_y, grid_z, self.codes, args, num_threads, None)
            return
        bounds = [(0, 0) if kind is None else extent_of(bound[position], kind)
                  for (position, _), kind in zip(self._plan, self._kinds)]
        try:
            self.kernel.launch(grid_x, grid_y, grid_z, self.codes, args, num_threads, bounds)
        except IndexError as error:
            raise self.out_of_bounds(str(error)) from None

    def out_of_bounds(self, report: str) -> OutOfBoundsError:
        """The OutOfBoundsError for a backend report, the parameter named."""
        return out_of_bounds_error(report, self.kernel_name, self.names)



def code_cache_size(value: Optional[str]) -> int:
    """The number of CPU kernels to keep, from ``KILN_CPU_CODE_CACHE_SIZE``
    (unset or empty: the default; 0: no bound).

    Raises:
        ValueError: for anything but a non-negative integer.
    """
    if value is None or value.strip() == "":
        return DEFAULT_CODE_CACHE_SIZE
    text = value.strip()
    if not text.isdigit():
        raise ValueError(f"{CODE_CACHE_ENV}: expected a number of kernels (0 for no bound), got {value!r}")
    return int(text)


class CodeCache:
    """The CPU kernels the runtime keeps loaded, evicting the least recently
    launched beyond ``KILN_CPU_CODE_CACHE_SIZE`` (read at each addition).

    Evicting a kernel calls the ``forget`` given with it, which drops it from
    its JITFunction's caches; its JIT'd code is freed once nothing else holds
    it, so a kernel the caller kept (``kernel[grid](...)`` returns it) stays
    valid, and a later launch of the same key compiles it again. Recency is
    each launcher's ``last_launch`` stamp: the launch path only stores an
    int, and the scan for the oldest happens on a compile, which costs far
    more.
    """

    def __init__(self) -> None:
        self._entries: dict[CpuLauncher, Callable[[], None]] = {}
        self._lock = threading.Lock()

    def add(self, launcher: CpuLauncher, forget: Callable[[], None]) -> None:
        """Keeps ``launcher``, evicting the least recently launched others
        while there are more than the setting allows.

        Raises:
            ValueError: for a bad ``KILN_CPU_CODE_CACHE_SIZE``.
        """
        limit = code_cache_size(os.environ.get(CODE_CACHE_ENV))
        with self._lock:
            self._entries[launcher] = forget
            if limit == 0:
                return
            while len(self._entries) > limit:
                oldest = min(self._entries, key=lambda entry: entry.last_launch)
                self._entries.pop(oldest)()


CODE_CACHE = CodeCache()
