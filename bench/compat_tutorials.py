"""Triton's tutorials end to end: real Triton vs Kiln through kiln.compat.

Runs each tutorial script twice in fresh processes, one after the other on
the same machine: with the installed Triton (``python T.py``) and with Kiln
standing in for it (``python -m kiln.compat T.py``), each with an empty
kernel cache of its own (TRITON_CACHE_DIR / KILN_CACHE_DIR set to new
temporary folders), and prints a table of wall-clock seconds and exit
codes. The time covers everything a user waits for: imports, compiles,
autotuning and the tutorial's own benchmarks (matplotlib draws off screen).

Triton's column is left out when triton cannot be imported (its absence is
checked in a child process, so this script never imports it itself).

    python bench/compat_tutorials.py <tutorials folder> 03-matrix-multiplication [01-vector-add ...]
        [--timeout 600] [--log-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from typing import Optional


def triton_is_installed() -> bool:
    """Whether a child Python can import the real Triton."""
    probe = subprocess.run([sys.executable, "-c", "import triton"], capture_output=True)
    return probe.returncode == 0


def run_tutorial(folder: str, name: str, with_kiln: bool, timeout: float, log_dir: Optional[str]) -> tuple[float, str]:
    """Runs ``name``.py in ``folder`` once; returns (seconds, outcome)."""
    command = [sys.executable] + (["-m", "kiln.compat"] if with_kiln else []) + [f"{name}.py"]
    with tempfile.TemporaryDirectory() as cache:
        environment = {**os.environ, "MPLBACKEND": "Agg", "KILN_CACHE_DIR": cache, "TRITON_CACHE_DIR": cache}
        start = time.perf_counter()
        try:
            finished = subprocess.run(command, cwd=folder, env=environment, capture_output=True, text=True,
                                      timeout=timeout)
            outcome = "ok" if finished.returncode == 0 else f"exit {finished.returncode}"
            output = finished.stdout + finished.stderr
        except subprocess.TimeoutExpired as expired:
            outcome = f"killed after {timeout:g} s"
            output = str(expired.stdout or "") + str(expired.stderr or "")
        seconds = time.perf_counter() - start
    if log_dir is not None:
        who = "kiln" if with_kiln else "triton"
        with open(os.path.join(log_dir, f"{name}-{who}.log"), "w") as log:
            log.write(output)
    return seconds, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="the folder holding Triton's tutorial scripts")
    parser.add_argument("tutorials", nargs="+", help="tutorial names without .py, e.g. 03-matrix-multiplication")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a run is killed")
    parser.add_argument("--log-dir", help="write each run's output there")
    args = parser.parse_args()
    with_triton = triton_is_installed()
    rows = []
    for name in args.tutorials:
        kiln_time, kiln_outcome = run_tutorial(args.folder, name, True, args.timeout, args.log_dir)
        if with_triton:
            triton_time, triton_outcome = run_tutorial(args.folder, name, False, args.timeout, args.log_dir)
            rows.append(f"| {name} | {kiln_time:.1f} ({kiln_outcome}) | {triton_time:.1f} ({triton_outcome}) "
                        f"| {kiln_time / triton_time:.2f} |")
        else:
            rows.append(f"| {name} | {kiln_time:.1f} ({kiln_outcome}) | – | – |")
    print("| tutorial | Kiln through kiln.compat, s | Triton, s | Kiln / Triton |")
    print("|---|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
