"""Vector add on the CPU backend vs numpy, on this machine's cores.

Reports, for fp32 at n = 2**26 (by default): the median time of each
implementation over --reps runs and its bandwidth (3 * n * 4 bytes moved /
time), with the ratio to numpy's ``np.add(x, y, out=o)`` measured in the same
run on the same arrays; and the host time per launch of a tiny kernel
(1024 elements, one program). Every Kiln result is checked against numpy
before it is timed.

    python bench/cpu_vector_add.py [--n 67108864] [--reps 15] [--blocks 1024,4096,16384]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Callable

import numpy as np

import kiln
import kiln.language as kl


@kiln.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    pid = kl.program_id(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


def median_seconds(run: Callable[[], object], reps: int) -> float:
    """Median wall time of ``run`` over ``reps`` calls, after two warm-up calls."""
    run()
    run()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def launch_overhead_us(launches: int) -> float:
    """Host microseconds per launch of a one-program, 1024-element kernel."""
    x, y = np.ones(1024, np.float32), np.ones(1024, np.float32)
    out = np.empty_like(x)
    for _ in range(100):
        add_kernel[(1,)](x, y, out, 1024, BLOCK=1024)
    start = time.perf_counter()
    for _ in range(launches):
        add_kernel[(1,)](x, y, out, 1024, BLOCK=1024)
    return (time.perf_counter() - start) / launches * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2**26, help="elements (fp32)")
    parser.add_argument("--reps", type=int, default=15, help="timed runs per implementation")
    parser.add_argument("--blocks", default="1024,4096,16384", help="comma-separated BLOCK sizes for Kiln")
    parser.add_argument("--threads", type=int, default=0, help="CPU backend threads (0: every core)")
    parser.add_argument("--launches", type=int, default=2000, help="launches for the overhead test")
    args = parser.parse_args()
    blocks = [int(b) for b in args.blocks.split(",")]
    n = args.n

    rng = np.random.default_rng(0)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    expected = x + y
    gigabytes = 3 * n * 4 / 1e9

    rows = []
    numpy_s = median_seconds(lambda: np.add(x, y, out=out), args.reps)
    rows.append(("numpy np.add(out=)", "1", numpy_s))
    for block in blocks:
        grid = (kiln.cdiv(n, block),)

        def run(block: int = block, grid: tuple = grid) -> None:
            add_kernel[grid](x, y, out, n, BLOCK=block, num_threads=args.threads)

        out.fill(np.nan)
        run()
        if not np.array_equal(out, expected):
            raise SystemExit(f"kiln BLOCK={block} computed a wrong vector add")
        threads = str(args.threads or os.cpu_count())
        rows.append((f"kiln cpu BLOCK={block}", threads, median_seconds(run, args.reps)))

    print(f"vector add, fp32, n = {n} ({gigabytes:.2f} GB moved per call), {os.cpu_count()} cores")
    print(f"{'implementation':24}{'threads':>8}{'ms':>10}{'GB/s':>10}{'x numpy':>10}")
    for name, threads, seconds in rows:
        print(f"{name:24}{threads:>8}{seconds * 1e3:>10.2f}{gigabytes / seconds:>10.2f}{numpy_s / seconds:>10.2f}")
    print(f"host time per tiny launch (1024 elements, one program): {launch_overhead_us(args.launches):.1f} us")


if __name__ == "__main__":
    main()
