"""The ``kiln`` command (``python -m kiln``): what this installation has, and its kernel cache.

* ``kiln info``: the version and compiler build, each backend and whether it
  can run kernels here, the CUDA devices the driver sees, the ptxas that
  makes cubins, and the on-disk cache (where, how large, its bound).
* ``kiln cache list``: the cache's entries, least recently used first.
* ``kiln cache prune [--max-size SIZE]``: removes the least recently used
  entries until the cache is at most SIZE (default ``KILN_CACHE_MAX_SIZE``).
* ``kiln cache clear``: removes every entry.
* ``kiln compile FILE.py:KERNEL --signature TYPES [--constexpr NAME=VALUE]
  --target TARGET -o DIR``: ahead-of-time compilation into files a C program
  builds with (:mod:`kiln.tools.aot`).

The cache is ``$KILN_CACHE_DIR`` (default ``~/.cache/kiln``) even when
``KILN_DISABLE_CACHE`` turns it off for compiles. Pruning and clearing are
safe while other processes compile into the cache: an entry is renamed
aside before it is deleted, so no reader finds part of one.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from typing import Optional, Sequence, TextIO

__all__ = ["main"]


def _size_argument(text: str) -> int:
    """argparse's type for ``--max-size``: a size as KILN_CACHE_MAX_SIZE takes it."""
    from kiln.runtime import disk_cache
    try:
        return disk_cache.parse_size(text, "--max-size")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kiln", description="Kiln, a block-level GPU kernel compiler: its installation and kernel cache.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    commands.add_parser("info", help="version, backends, CUDA devices, ptxas and the kernel cache",
                        description="Prints the version, the backends and whether each can run kernels here, the "
                                    "CUDA devices, the ptxas found and the on-disk kernel cache.")
    cache = commands.add_parser("cache", help="list, prune or clear the on-disk kernel cache",
                                description="The on-disk kernel cache: $KILN_CACHE_DIR (default ~/.cache/kiln).")
    actions = cache.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    actions.add_parser("list", help="the entries: kernel, target, size and last use, least recently used first")
    prune = actions.add_parser("prune", help="remove the least recently used entries beyond a size")
    prune.add_argument("--max-size", type=_size_argument, default=None, metavar="SIZE",
                       help="the size to keep at most: bytes, or a number with K, M, G or T (512M, 2G); "
                            "default: KILN_CACHE_MAX_SIZE, or 1G")
    actions.add_parser("clear", help="remove every entry (safe while other processes use the cache)")
    aot = commands.add_parser(
        "compile", help="compile a kernel ahead of time into files for a C program",
        description="Compiles one specialization of a @kiln.jit kernel and writes, for an NVIDIA target, the "
                    "PTX, the cubin and a C launcher on the CUDA driver API; for the CPU, an object file and a "
                    "C launcher.")
    aot.add_argument("kernel", metavar="FILE.py:KERNEL", help="the Python file and the kernel's name in it")
    aot.add_argument("--signature", "-s", required=True,
                     help="a type per runtime parameter, in order: '*fp32:16, *fp32:16, i32' (':16': the value "
                          "is divisible by 16)")
    aot.add_argument("--constexpr", "-c", action="append", default=[], metavar="NAME=VALUE",
                     help="a constexpr parameter's value (a Python literal); repeat for each")
    aot.add_argument("--target", "-t", required=True, help="an NVIDIA chip (sm_90a, sm_80, ...), 'cpu' or 'cpu:SPEC'")
    aot.add_argument("--out-dir", "-o", required=True, metavar="DIR", help="where to write the files")
    aot.add_argument("--name", "-n", default=None, help="the C prefix of the files and functions (default: the "
                                                        "kernel's name)")
    aot.add_argument("--num-warps", "-w", type=int, default=4)
    aot.add_argument("--num-stages", "-ns", type=int, default=3)
    return parser


def _compile(arguments: argparse.Namespace, out: TextIO) -> int:
    """``kiln compile``: 0 when the files are written, 1 with a message on stderr otherwise."""
    from kiln.errors import KilnError
    from kiln.tools import aot

    path, separator, kernel = arguments.kernel.rpartition(":")
    if not separator or not path or not kernel:
        print(f"kiln compile: error: expected FILE.py:KERNEL, got {arguments.kernel!r}", file=sys.stderr)
        return 1
    constexprs = {}
    for item in arguments.constexpr:
        name, equals, value = item.partition("=")
        if not equals or not name.strip():
            print(f"kiln compile: error: --constexpr expects NAME=VALUE, got {item!r}", file=sys.stderr)
            return 1
        constexprs[name.strip()] = value.strip()
    try:
        result = aot.compile_ahead_of_time(path, kernel, arguments.signature, constexprs, arguments.target,
                                           arguments.out_dir, name=arguments.name, num_warps=arguments.num_warps,
                                           num_stages=arguments.num_stages)
    except KilnError as error:  # AOTError, and CompilationError located in the kernel
        print(f"kiln compile: error: {error}", file=sys.stderr)
        return 1
    for kind, written in result.files.items():
        out.write(f"{kind}: {written}\n")
    return 0


def _print_info(out: TextIO) -> None:
    import kiln
    from kiln import _C, backends
    from kiln.backends.nvidia import find_ptxas
    from kiln.runtime import disk_cache, disk_cache_sharing, driver
    from kiln.runtime import launch_settings

    out.write(f"kiln {kiln.__version__} at {os.path.dirname(os.path.abspath(kiln.__file__))}\n")
    out.write(f"python {sys.version.split()[0]} at {sys.executable}\n")
    out.write(f"build: {disk_cache.build_identity()}\n")

    out.write("backends:\n")
    # find_backend registers the built-in backends; the registry keeps them in registration order.
    backends.find_backend("cpu")
    for backend in list(backends._BACKENDS):
        names = backend.name + (f" (also {', '.join(backend.aliases)})" if backend.aliases else "")
        try:
            usable = backend.is_available()
        except Exception as error:  # noqa: BLE001 - a broken backend is reported, not fatal
            usable, detail = False, f"{type(error).__name__}: {error}"
        else:
            detail = ""
        if backend.name == "cuda" and not usable and not detail:
            detail = driver.unavailable_reason() or "no CUDA device"
        if backend.name == "cpu":
            spec = launch_settings.cpu_target(os.environ.get(launch_settings.CPU_TARGET_ENV))
            try:
                processor = _C.cpu.describe_target(spec)[0]
                detail = f"compiles for {processor}" + (f" ({launch_settings.CPU_TARGET_ENV}={spec})"
                                                        if spec != "host" else " (the host)")
            except ValueError as error:
                detail = f"{launch_settings.CPU_TARGET_ENV}: {error}"
        out.write(f"  {names}: {'usable' if usable else 'not usable'}{': ' + detail if detail else ''}\n")

    if driver.is_available():
        count = driver.device_count()
        out.write(f"CUDA devices: {count}\n")
        for index in range(count):
            try:
                properties = driver.get_device_properties(index)
                memory = properties.get("total_memory")
                out.write(f"  {index}: {properties.get('name', '?')}, {driver.get_target(index)}, "
                          f"{properties.get('multiprocessor_count', '?')} multiprocessors"
                          + (f", {disk_cache.format_size(memory)}" if isinstance(memory, int) else "") + "\n")
            except Exception as error:  # noqa: BLE001 - one unreadable device does not hide the others
                out.write(f"  {index}: unreadable: {error}\n")
    else:
        out.write("CUDA devices: none\n")  # why is on the cuda backend's line

    ptxas = find_ptxas()
    out.write(f"ptxas: {ptxas}\n" if ptxas else
              "ptxas: not found (KILN_PTXAS, $CUDA_HOME/bin, /usr/local/cuda/bin and PATH were searched); "
              "GPU kernels are then loaded as PTX\n")

    directory = disk_cache.configured_cache_dir()
    listed = disk_cache_sharing.entries(directory)
    total = sum(info.size for info in listed)
    out.write(f"cache: {directory}: {len(listed)} entr{'y' if len(listed) == 1 else 'ies'}, "
              f"{disk_cache.format_size(total)} of at most {disk_cache.format_size(disk_cache.max_size())}"
              + (f" (disabled by {disk_cache.DISABLE_ENV})" if disk_cache.cache_dir() is None else "") + "\n")


def _print_entries(directory: str, out: TextIO) -> None:
    from kiln.runtime import disk_cache, disk_cache_sharing

    listed = disk_cache_sharing.entries(directory, details=True)
    if not listed:
        out.write(f"no entries in {directory}\n")
        return
    build = disk_cache.build_identity()
    rows = [("KEY", "KERNEL", "TARGET", "SIZE", "LAST USE")]
    for info in listed:
        used = datetime.datetime.fromtimestamp(info.last_used).strftime("%Y-%m-%d %H:%M:%S")
        kernel = info.name or "?"
        if info.build != build:
            kernel += " (another build)"
        rows.append((info.digest[:16], kernel, info.target or "?", disk_cache.format_size(info.size), used))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1] + "\n")
    total = sum(info.size for info in listed)
    out.write(f"{len(listed)} entr{'y' if len(listed) == 1 else 'ies'}, {disk_cache.format_size(total)} "
              f"in {directory}\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the ``kiln`` command with ``argv`` (the arguments after the
    command's name; ``sys.argv[1:]`` when None) and returns its exit
    status: 0, 1 when it failed (a malformed environment variable, say),
    2 for a usage error (argparse prints the usage)."""
    parser = _parser()
    try:
        arguments = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit:
        return exit.code if isinstance(exit.code, int) else 2
    from kiln.runtime import disk_cache, disk_cache_sharing

    out = sys.stdout
    try:
        if arguments.command == "info":
            _print_info(out)
            return 0
        if arguments.command == "compile":
            return _compile(arguments, out)
        directory = disk_cache.configured_cache_dir()
        if arguments.action == "list":
            _print_entries(directory, out)
        elif arguments.action == "prune":
            bound = disk_cache.max_size() if arguments.max_size is None else arguments.max_size
            removed = disk_cache_sharing.prune(directory, bound)
            left = disk_cache_sharing.entries(directory)
            out.write(f"removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} "
                      f"({disk_cache.format_size(sum(info.size for info in removed))}); {len(left)} left, "
                      f"{disk_cache.format_size(sum(info.size for info in left))} of at most "
                      f"{disk_cache.format_size(bound)} in {directory}\n")
        elif arguments.action == "clear":
            removed = disk_cache_sharing.clear(directory)
            out.write(f"removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} "
                      f"({disk_cache.format_size(sum(info.size for info in removed))}) from {directory}\n")
    except ValueError as error:  # a malformed KILN_* variable
        print(f"kiln: error: {error}", file=sys.stderr)
        return 1
    return 0
