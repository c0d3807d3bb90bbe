"""The fuzzer's seed corpus: a fixed list of generated kernels, valid and
invalid, run on the CPU backend in worker processes. Fails on any internal
exception, crash, hang, wrong result or accepted invalid kernel; outcomes
of issues that are known and being fixed are not counted (see
docs/design/fuzzing.md)."""

from __future__ import annotations

import collections

import fuzz_pool

# A few hundred cases: about three in four valid kernels, the others with
# one mistake each; then seeds of past findings (docs/design/fuzzing.md).
CORPUS = list(range(0, 400)) + [
    1063,  # kl.sum of a block of pointers, reported inside kiln/language/standard.py
]


def test_seed_corpus():
    pool = fuzz_pool.Pool(size=2, timeout=120)
    reports = [fuzz_pool.settle(report) for report in pool.run(CORPUS)]
    outcomes = collections.Counter(report["outcome"] for report in reports)
    failures = [f"seed {r['seed']} ({r.get('what')}): {r['outcome']}: {str(r.get('detail'))[:400]}"
                for r in reports if r["outcome"] in fuzz_pool.FAILURES or r["outcome"] == "fuzzer-error"]
    assert not failures, "\n".join(failures)
    assert len(reports) == len(CORPUS)
    # The corpus keeps exercising both halves: kernels that run and are
    # checked against the reference, and mistakes that must be rejected.
    assert outcomes["ok"] >= len(CORPUS) // 2, outcomes
    assert outcomes["error"] >= len(CORPUS) // 10, outcomes


def test_pool_reports_crashes_and_hangs_and_carries_on():
    pool = fuzz_pool.Pool(size=1, timeout=10)
    reports = {report["seed"]: report for report in pool.run([-1, -2, 1])}
    assert reports[-1]["outcome"] == "crash" and reports[-1]["signal"] == "SIGSEGV", reports[-1]
    assert reports[-2]["outcome"] == "hang", reports[-2]
    assert reports[1]["outcome"] in ("ok", "error", "known"), reports[1]
