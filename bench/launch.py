"""Launch cost: host time per launch of tiny kernels, Kiln vs Triton vs torch.

For each compiler, in a process of its own (so neither's import or caches
touch the other's), with torch's ``torch.neg(x, out=y)`` measured in that
same process as the yardstick:

* µs per launch of a kernel with 0, 2, 8 and 20 arguments (half tensors,
  half integers), launched from a Python loop: best of ``--rounds`` rounds
  of ``--launches`` launches each, host time only. The launches are timed in
  bursts of ``--burst`` (200), the GPU drained between bursts and not timed,
  so that a full launch queue never makes the host wait for the GPU (with
  ``--burst 0``, one timed loop of all launches: host and GPU together);
* µs per launch of the 2-argument kernel through ``autotune`` (two
  configs, tuned by the first launch) with a grid function, as autotuned
  kernels are launched, and through ``heuristics`` (one constexpr computed
  from an argument);
* on CUDA, the driver's floor: the same timing of ``cuLaunchKernel`` of
  empty kernels of 2 and of 20 parameters called from C
  (bench/launch_floor.c, built with ``cc``), and what Kiln's 20-argument
  launch costs above its floor against its 2-argument one;
* with ``--graphs`` (CUDA only), µs per kernel node of replaying a CUDA
  graph of 100 captured launches of the 2-argument kernel;
* with ``--first-call``, ms of the first launch of a small kernel in a fresh
  process, with an empty on-disk cache and again with the cache warm
  (compile or load, then launch, then synchronize; imports not included),
  and of the first launch of a second kernel right after it, what each
  later kernel of a program costs.

Triton's rows are left out when triton cannot be imported (or on the CPU).

    python bench/launch.py [--device cuda|cpu] [--launches 20000] [--rounds 2] [--burst 200] [--graphs] [--first-call [--profile-first-call]]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

ARGUMENT_COUNTS = (0, 2, 8, 20)

# One kernel per argument count; the same text for both compilers (the
# worker imports `kiln.language` or `triton.language` as `lang`). Each kernel
# stores one value, so that no compiler can drop the launch's work.
KERNELS = '''
@jit
def args0():
    pass


@jit
def args2(x_ptr, n):
    lang.store(x_ptr, n)


@jit
def args8(a_ptr, b_ptr, c_ptr, d_ptr, i, j, k, m):
    lang.store(a_ptr, i + j + k + m)


@jit
def args20(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, i0, i1, i2, i3, i4, i5, i6, i7, i8, i9):
    lang.store(a0, i0 + i9)


@autotune(configs=[Config({"BLOCK": 16}), Config({"BLOCK": 32})], key=["n"])
@jit
def args2_autotuned(x_ptr, n, BLOCK: lang.constexpr):
    lang.store(x_ptr + lang.arange(0, BLOCK), lang.full((BLOCK,), n, lang.int32))


@heuristics(values={"EVEN": lambda args: args["n"] % 16 == 0})
@jit
def args2_heuristics(x_ptr, n, EVEN: lang.constexpr):
    lang.store(x_ptr, n + EVEN)


@jit
def first_call(x_ptr, y_ptr, n, BLOCK: lang.constexpr):
    offs = lang.program_id(0) * BLOCK + lang.arange(0, BLOCK)
    mask = offs < n
    lang.store(y_ptr + offs, lang.load(x_ptr + offs, mask=mask) * 2 + 1, mask=mask)


@jit
def later_call(x_ptr, y_ptr, n, BLOCK: lang.constexpr):
    offs = lang.program_id(0) * BLOCK + lang.arange(0, BLOCK)
    mask = offs < n
    lang.store(y_ptr + offs, lang.load(x_ptr + offs, mask=mask) * 4 - 3, mask=mask)
'''


def _load_kernels(provider: str, directory: str = "") -> dict[str, Any]:
    """The kernels, compiled by `provider`, from a file in `directory` (a
    new temporary one when empty). A kernel's file is part of Kiln's cache
    key (the compiled code's line info names it): runs that should share
    the disk cache must share the directory."""
    if provider == "kiln":
        import kiln as compiler
        import kiln.language as lang
    else:
        import triton as compiler
        import triton.language as lang
    directory = directory or tempfile.mkdtemp(prefix=f"launch-{provider}-")
    path = os.path.join(directory, f"launch_kernels_{provider}.py")
    with open(path, "w") as f:  # a file of its own: both compilers read kernel sources from files
        f.write(KERNELS)
    scope: dict[str, Any] = {"jit": compiler.jit, "autotune": compiler.autotune, "Config": compiler.Config,
                             "heuristics": compiler.heuristics, "lang": lang}
    exec(compile(KERNELS, path, "exec"), scope)
    return scope


def _arguments(count: int, torch: Any, device: str) -> tuple:
    tensors = [torch.zeros(16, dtype=torch.int32, device=device) for _ in range(count // 2)]
    return tuple(tensors) + tuple(range(3, 3 + count - count // 2))


def _per_launch_us(launch: Callable[[], Any], launches: int, rounds: int, synchronize: Callable[[], None],
                   burst: int) -> float:
    for _ in range(min(launches, 1000)):
        launch()
    synchronize()
    burst = burst or launches
    bursts = max(1, launches // burst)
    best = float("inf")
    for _ in range(rounds):
        total = 0.0
        for _ in range(bursts):
            start = time.perf_counter()
            for _ in range(burst):
                launch()
            total += time.perf_counter() - start
            synchronize()
        best = min(best, total)
    return best / (bursts * burst) * 1e6


def _worker(provider: str, device: str, launches: int, rounds: int, burst: int, graphs: bool) -> dict[str, Any]:
    import torch

    scope = _load_kernels(provider)
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    result: dict[str, Any] = {}
    for count in ARGUMENT_COUNTS:
        kernel = scope[f"args{count}"]
        arguments = _arguments(count, torch, device)
        launcher = kernel[(1,)]
        result[str(count)] = _per_launch_us(lambda: launcher(*arguments), launches, rounds, synchronize, burst)
    # The same 2-argument launch through an autotuner (tuned on the first
    # call), with a grid function, as autotuned kernels are launched.
    tuned, arguments = scope["args2_autotuned"], (torch.zeros(32, dtype=torch.int32, device=device), 3)
    tuned_launcher = tuned[lambda meta: (1,)]
    result["2 autotuned"] = _per_launch_us(lambda: tuned_launcher(*arguments), launches, rounds, synchronize,
                                           burst)
    # And through a heuristic computing a constexpr from n.
    heuristic_launcher, arguments = scope["args2_heuristics"][(1,)], _arguments(2, torch, device)
    result["2 heuristics"] = _per_launch_us(lambda: heuristic_launcher(*arguments), launches, rounds, synchronize,
                                            burst)
    x = torch.randn(1024, device=device)
    y = torch.empty_like(x)
    result["torch.neg"] = _per_launch_us(lambda: torch.neg(x, out=y), launches, rounds, synchronize, burst)
    if graphs and device == "cuda":
        kernel, arguments = scope["args2"], _arguments(2, torch, device)
        kernel[(1,)](*arguments)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(100):
                kernel[(1,)](*arguments)
        graph.replay()
        torch.cuda.synchronize()
        replays = max(1, launches // 100)
        start = time.perf_counter()
        for _ in range(replays):
            graph.replay()
        host = time.perf_counter() - start
        torch.cuda.synchronize()
        result["graph node"] = host / (replays * 100) * 1e6
    return result


def _first_call_worker(provider: str, device: str, kernels_dir: str, profile: bool = False) -> dict[str, Any]:
    import torch

    scope = _load_kernels(provider, kernels_dir)
    x = torch.randn(4096, device=device)
    y = torch.empty_like(x)
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    synchronize()
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    start = time.perf_counter()
    scope["first_call"][(4,)](x, y, 4096, BLOCK=1024)
    synchronize()
    elapsed = (time.perf_counter() - start) * 1e3
    # A second kernel's first call: what each later kernel of a program costs.
    z = torch.empty_like(x)
    start = time.perf_counter()
    scope["later_call"][(4,)](x, z, 4096, BLOCK=1024)
    synchronize()
    later = (time.perf_counter() - start) * 1e3
    if profiler is not None:
        import io
        import pstats

        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(25)
        print(text.getvalue())
    assert torch.equal(y, x * 2 + 1), "the first-call kernel computed a wrong result"
    assert torch.equal(z, x * 4 - 3), "the later kernel computed a wrong result"
    return {"ms": elapsed, "later_ms": later}


def _run_worker(arguments: list[str], environment: dict[str, str], echo: bool = False) -> dict[str, Any]:
    """Runs this script as a worker and returns its result (its last line);
    `echo` prints what it wrote before that."""
    completed = subprocess.run([sys.executable, __file__, *arguments], capture_output=True, text=True,
                               env=environment, timeout=900)
    if completed.returncode != 0:
        raise RuntimeError(f"worker {' '.join(arguments)} failed:\n{completed.stderr}")
    lines = completed.stdout.strip().splitlines()
    if echo:
        print(f"-- worker {' '.join(arguments)}", *lines[:-1], sep="\n", file=sys.stderr)
    return json.loads(lines[-1])


def _driver_floor_us(launches: int, rounds: int, burst: int) -> tuple[float, float] | None:
    """µs per cuLaunchKernel from C (bench/launch_floor.c) of an empty kernel
    of 2 and of 20 parameters, or None where it cannot be built or run (no C
    compiler, no libcuda)."""
    import shutil

    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch_floor.c")
    binary = os.path.join(tempfile.mkdtemp(prefix="launch-floor-"), "launch_floor")
    built = subprocess.run([compiler, "-O2", "-o", binary, source, "-ldl"], capture_output=True, text=True)
    if built.returncode != 0:
        print(f"(driver floor not measured: {built.stderr.strip()})", file=sys.stderr)
        return None
    ran = subprocess.run([binary, str(launches), str(rounds), str(burst or launches)], capture_output=True,
                         text=True, timeout=600)
    if ran.returncode != 0:
        print(f"(driver floor not measured: {ran.stderr.strip()})", file=sys.stderr)
        return None
    two, twenty = (float(field) for field in ran.stdout.split())
    return two, twenty


def _triton_available(device: str) -> bool:
    if device != "cuda":
        return False
    try:
        import triton
    except ImportError:
        return False
    return triton.__name__ == "triton"  # under kiln.compat, `triton` is Kiln itself


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default=None)
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--burst", type=int, default=200,
                        help="launches per timed burst, the GPU drained between bursts (0: one timed loop)")
    parser.add_argument("--graphs", action="store_true")
    parser.add_argument("--first-call", action="store_true")
    parser.add_argument("--profile-first-call", action="store_true",
                        help="with --first-call, print where each first call spends its time (cProfile)")
    parser.add_argument("--worker", choices=("kiln", "triton"), help=argparse.SUPPRESS)
    parser.add_argument("--first-call-worker", choices=("kiln", "triton"), help=argparse.SUPPRESS)
    parser.add_argument("--kernels-dir", default="", help=argparse.SUPPRESS)
    options = parser.parse_args()
    import torch

    device = options.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if options.worker:
        print(json.dumps(_worker(options.worker, device, options.launches, options.rounds, options.burst,
                                 options.graphs)))
        return
    if options.first_call_worker:
        print(json.dumps(_first_call_worker(options.first_call_worker, device, options.kernels_dir,
                                            options.profile_first_call)))
        return

    providers = ["kiln"] + (["triton"] if _triton_available(device) else [])
    environment = dict(os.environ)
    if device == "cpu":
        environment["KILN_BACKEND"] = "cpu"
    common = ["--device", device, "--launches", str(options.launches), "--rounds", str(options.rounds),
              "--burst", str(options.burst)]
    rows = {provider: _run_worker([*common, "--worker", provider] + (["--graphs"] if options.graphs else []),
                                  environment) for provider in providers}
    columns = [str(count) for count in ARGUMENT_COUNTS] + ["2 autotuned", "2 heuristics", "torch.neg"]
    if options.graphs and device == "cuda":
        columns.append("graph node")
    timing = (f"in bursts of {options.burst}, the GPU drained between them" if options.burst else
              "one loop, host and GPU together")
    print(f"µs per launch on {device} (host time; best of {options.rounds} rounds of {options.launches}, {timing}; "
          f"each compiler in its own process, torch.neg measured in that process)")
    print("| " + " | ".join(["compiler", *[f"{c} args" if c.isdigit() else
                                            f"2 args, {c[2:]}" if c.startswith("2 ") else c
                                            for c in columns]]) + " |")
    print("|" + "---|" + "---:|" * len(columns))
    for provider, row in rows.items():
        print("| " + " | ".join([provider, *[f"{row[c]:.2f}" for c in columns]]) + " |")
    for provider, row in rows.items():
        print(f"{provider}: 2 args = {row['2'] / row['torch.neg']:.2f} x torch.neg; "
              f"20 args = {row['20'] / row['2']:.2f} x 2 args")
    if device == "cuda":
        floors = _driver_floor_us(options.launches, options.rounds, options.burst)
        if floors is not None:
            floor, floor20 = floors
            print(f"driver floor (cuLaunchKernel of an empty kernel from C, same timing): 2 parameters "
                  f"{floor:.2f} µs, 20 parameters {floor20:.2f} µs; kiln 2 args = "
                  f"{rows['kiln']['2'] / floor:.2f} x the floor; above the floor, kiln's 20 args cost "
                  f"{(rows['kiln']['20'] - floor20) / max(rows['kiln']['2'] - floor, 1e-3):.2f} x its 2 args")

    if options.first_call:
        print("\nms of the first launch in a fresh process (4096 elements; compile or load + launch + sync; "
              "CPU-backend compiles are not kept on disk, so on the CPU both columns compile)")
        print("| compiler | empty cache | warm cache | later kernel, empty cache | later kernel, warm cache |")
        print("|---|---:|---:|---:|---:|")
        for provider in providers:
            cache = tempfile.mkdtemp(prefix=f"launch-cache-{provider}-")
            fresh = {**environment, "KILN_CACHE_DIR": cache, "TRITON_CACHE_DIR": cache}
            # Both runs read the kernels from the same file, as a program
            # run twice would.
            kernels = tempfile.mkdtemp(prefix=f"launch-kernels-{provider}-")
            worker = ["--device", device, "--first-call-worker", provider, "--kernels-dir", kernels] + (
                ["--profile-first-call"] if options.profile_first_call else [])
            cold = _run_worker(worker, fresh, echo=options.profile_first_call)
            warm = _run_worker(worker, fresh, echo=options.profile_first_call)
            print(f"| {provider} | {cold['ms']:.1f} | {warm['ms']:.1f} | {cold['later_ms']:.1f} | "
                  f"{warm['later_ms']:.1f} |")


if __name__ == "__main__":
    main()
