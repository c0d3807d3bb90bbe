#!/usr/bin/env python3
"""Fuzzes Kiln's frontend and CPU backend with random kernels.

Runs the seeds `--start`, `--start + 1`, ... (for `--seconds` or `--count`
cases) on a pool of worker processes, prints a summary, appends every
outcome to `--log` (JSON lines) and writes each failure's kernel, with its
seed and what went wrong, to `--findings`. `--replay SEED` prints the
kernel of one seed and runs it in this process. See docs/design/fuzzing.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "test", "fuzz"))

import fuzz_pool  # noqa: E402


def _save_finding(directory: str, report: dict) -> str:
    import fuzz_generator

    os.makedirs(directory, exist_ok=True)
    case = fuzz_generator.generate(report["seed"])
    path = os.path.join(directory, f"seed_{report['seed']}_{report['outcome']}.py")
    detail = "\n".join("# " + line for line in str(report.get("detail", "")).splitlines())
    with open(path, "w") as file:
        file.write(f"# Found by scripts/fuzz.py: seed {report['seed']}, {report['outcome']}, {case.what}\n")
        file.write(f"# Check it again: scripts/fuzz.py --replay {report['seed']}\n{detail}\n")
        file.write(case.source)
    return path


def _replay(seed: int) -> int:
    import tempfile

    import fuzz_generator
    import fuzz_worker

    print(fuzz_generator.generate(seed).source)
    report = fuzz_worker.run_case(seed, tempfile.mkdtemp(prefix="kiln-fuzz-"))
    print(json.dumps(report, indent=1))
    return 1 if report["outcome"] in fuzz_pool.FAILURES else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--count", type=int, default=None, help="number of cases (default: until --seconds)")
    parser.add_argument("--seconds", type=float, default=60.0, help="stop starting cases after this long")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a case is a hang")
    parser.add_argument("--nice", type=int, default=0, help="niceness of the workers")
    parser.add_argument("--log", default=None, help="append every outcome here, as JSON lines")
    parser.add_argument("--findings", default="fuzz-findings", help="folder for failures' kernels")
    parser.add_argument("--replay", type=int, default=None, help="print and run one seed here")
    options = parser.parse_args()
    if options.replay is not None:
        return _replay(options.replay)

    began = time.monotonic()
    count = options.count if options.count is not None else 10**12
    seeds = range(options.start, options.start + count)
    stop = (lambda: time.monotonic() - began > options.seconds) if options.count is None else None
    pool = fuzz_pool.Pool(size=options.workers, timeout=options.timeout, nice=options.nice)
    totals: collections.Counter = collections.Counter()
    log = open(options.log, "a") if options.log else None
    last_summary = began
    try:
        for report in pool.run(seeds, stop):
            report = fuzz_pool.settle(report)
            totals[report["outcome"]] += 1
            report["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            if log:
                log.write(json.dumps(report) + "\n")
                log.flush()
            if report["outcome"] in fuzz_pool.FAILURES or report["outcome"] == "fuzzer-error":
                path = _save_finding(options.findings, report)
                print(f"seed {report['seed']}: {report['outcome']}: {str(report.get('detail'))[:300]} -> {path}",
                      flush=True)
            if time.monotonic() - last_summary > 60:
                last_summary = time.monotonic()
                print(f"[{time.monotonic() - began:.0f} s] {sum(totals.values())} cases: {dict(totals)}", flush=True)
    finally:
        if log:
            log.close()
    elapsed = time.monotonic() - began
    print(f"{sum(totals.values())} cases in {elapsed:.0f} s (seeds from {options.start}): {dict(totals)}")
    failed = sum(totals[name] for name in fuzz_pool.FAILURES) + totals["fuzzer-error"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
