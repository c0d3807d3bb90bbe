#!/usr/bin/env python3
"""Runs Triton's own test files on Kiln, through ``kiln.compat``, and tables
the results: per file the number of tests passed, failed, skipped, in error
and killed (past the time limit or crashed), and the failures counted by the
first line of their exception, most frequent first, so that the causes that
block the most tests stand out.

    scripts/compat_suite.py DIR [FILE ...] [--device cpu] [--timeout 120] [-k EXPR] [-- PYTEST_ARGS...]

``DIR`` holds Triton's test files (and their conftest.py); ``FILE`` names
some of them (default: every ``test_*.py`` there). Each file runs in its own
``python -m kiln.compat -m pytest`` process, so that ``import triton`` is
Kiln and a crash in one file leaves the others alone.

Results come from pytest itself: this file is also a pytest plugin (the
child loads it with ``-p compat_suite``) that appends one JSON line per test
phase to a results file as the run goes, so nothing is lost when a process
has to be killed. The plugin bounds every test's run by ``--timeout``
seconds (a ``SIGALRM`` that raises in the test); a test stuck in native code
(where the signal cannot be delivered) is caught by this runner instead,
which kills the process after ``--timeout`` plus ``--grace`` seconds without
progress, records the test as killed and runs the file again without the
tests already done.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

RESULTS_ENV = "KILN_COMPAT_SUITE_RESULTS"
TIMEOUT_ENV = "KILN_COMPAT_SUITE_TIMEOUT"
# A file whose process keeps dying is given up after this many restarts.
MAX_RESTARTS = 50
OUTCOMES = ("passed", "failed", "skipped", "error", "killed")

# -- the pytest plugin (runs in the child) --------------------------------------------------


class TestTimeout(Exception):
    """A test ran past ``--timeout`` seconds."""


def _record(event: dict[str, Any]) -> None:
    path = os.environ.get(RESULTS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(event) + "\n")


def _done_node_ids(path: str) -> set[str]:
    """Tests that already have an outcome in the results file."""
    return {event["nodeid"] for event in _read_events(path) if event["event"] == "outcome"}


def pytest_collection_modifyitems(session: Any, config: Any, items: list) -> None:
    """On a rerun, deselects the tests the results file already has."""
    path = os.environ.get(RESULTS_ENV)
    if not path or not os.path.exists(path):
        return
    done = _done_node_ids(path)
    kept = [item for item in items if item.nodeid not in done]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid in done])
        items[:] = kept


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _record({"event": "outcome", "nodeid": report.nodeid or "<collection>", "outcome": "error",
                 "cause": "collection: " + _first_line(report)})


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _record({"event": "start", "nodeid": nodeid})


def pytest_runtest_logreport(report: Any) -> None:
    """One outcome per test: a skip or failure in any phase decides it; a
    failure outside the call (setup, teardown) is an error, as pytest counts."""
    state = _PHASES.setdefault(report.nodeid, {})
    state[report.when] = report
    if report.when != "teardown":
        return
    del _PHASES[report.nodeid]
    phases = [(when, state[when]) for when in ("setup", "call", "teardown") if when in state]
    failed = [(when, phase) for when, phase in phases if phase.failed]
    if failed:
        when, phase = failed[0]
        outcome, cause = ("failed" if when == "call" else "error"), _first_line(phase)
    elif any(phase.skipped for _, phase in phases):
        outcome, cause = "skipped", ""  # skips and expected failures (xfail)
    else:
        outcome, cause = "passed", ""
    _record({"event": "outcome", "nodeid": report.nodeid, "outcome": outcome, "cause": cause})


_PHASES: dict[str, dict[str, Any]] = {}


def _first_line(report: Any) -> str:
    """The first line of the exception of a failed report."""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    text = crash.message if crash is not None else str(getattr(report, "longrepr", "") or "")
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0].strip() if lines else "(no message)"


def _on_alarm(signum: int, frame: Any) -> None:
    raise TestTimeout(f"the test ran longer than {os.environ.get(TIMEOUT_ENV)} s")


try:
    import pytest as _pytest

    @_pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(item: Any) -> Iterator[None]:
        """Bounds the test's call phase by ``$KILN_COMPAT_SUITE_TIMEOUT`` seconds."""
        seconds = int(os.environ.get(TIMEOUT_ENV, "0") or 0)
        if seconds <= 0:
            yield
            return
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(seconds)
        try:
            yield
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
except ImportError:  # the runner itself does not need pytest
    pass

# -- the runner ------------------------------------------------------------------------------


def _read_events(path: str) -> list[dict[str, Any]]:
    events = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by a kill
                pass
    return events


# Locations and addresses make every message unique; without them, one
# cause collects every test it blocks.
_LOCATION = re.compile(r"(/[^\s:]+|[\w.-]+\.py):\d+(:\d+)?:?\s*")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def normalize_cause(text: str, limit: int = 160) -> str:
    """A failure's first line without file locations and addresses, cut to ``limit`` characters."""
    text = _ADDRESS.sub("0x…", _LOCATION.sub("", text)).strip()
    return text if len(text) <= limit else text[:limit - 1] + "…"


@dataclass
class FileResult:
    """The outcomes of one test file."""

    name: str
    counts: collections.Counter = field(default_factory=collections.Counter)
    causes: collections.Counter = field(default_factory=collections.Counter)
    restarts: int = 0
    seconds: float = 0.0
    killed: list[str] = field(default_factory=list)

    def add(self, nodeid: str, outcome: str, cause: str) -> None:
        self.counts[outcome] += 1
        if outcome == "killed":
            self.killed.append(nodeid)
        if outcome != "passed" and outcome != "skipped":
            self.causes[normalize_cause(cause) or outcome] += 1


def _last_unfinished(events: list[dict[str, Any]]) -> Optional[str]:
    """The test that started last and has no outcome yet."""
    finished = {event["nodeid"] for event in events if event["event"] == "outcome"}
    for event in reversed(events):
        if event["event"] == "start":
            return None if event["nodeid"] in finished else event["nodeid"]
    return None


def run_file(directory: Path, test_file: str, args: argparse.Namespace) -> FileResult:
    """Runs one test file (restarting past killed tests) and gathers its outcomes."""
    result = FileResult(test_file)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        results_path = os.path.join(scratch, "results.jsonl")
        open(results_path, "w").close()
        env = dict(os.environ)
        env[RESULTS_ENV] = results_path
        env[TIMEOUT_ENV] = str(args.timeout)
        env["PYTHONPATH"] = os.pathsep.join(
            [kiln_search_path(), str(Path(__file__).resolve().parent)]
            + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        command = [args.python, "-m", "kiln.compat", "-m", "pytest", test_file, "--device", args.device, "-q",
                   "-p", "no:cacheprovider", "-p", "compat_suite"]
        if args.k:
            command += ["-k", args.k]
        command += args.pytest_args
        log = open(os.path.join(args.log_dir, f"{Path(test_file).stem}.log"), "a") if args.log_dir else None
        try:
            while True:
                killed, status = _run_watched(command, directory, env, results_path, args.timeout + args.grace,
                                              log)
                events = _read_events(results_path)
                if not events and status != 0:
                    # Nothing ran: pytest, kiln or the file failed to import.
                    why = f"the test process exited with status {status} before any test ran"
                    _record_to(results_path, {"event": "outcome", "nodeid": "<startup>", "outcome": "error",
                                              "cause": why + (f" (see {log.name})" if log else "")})
                    break
                stuck = _last_unfinished(events)
                if stuck is None:
                    break
                # Killed by the watchdog, or the process died (a crash in
                # native code): record the test and go on without it.
                why = "killed: no progress for the time limit" if killed else "killed: the test process died"
                _record_to(results_path, {"event": "outcome", "nodeid": stuck, "outcome": "killed", "cause": why})
                result.restarts += 1
                if result.restarts > MAX_RESTARTS:
                    break
        finally:
            if log is not None:
                log.close()
        for event in _read_events(results_path):
            if event["event"] == "outcome":
                result.add(event["nodeid"], event["outcome"], event.get("cause", ""))
    result.seconds = time.monotonic() - started
    return result


def _record_to(path: str, event: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(event) + "\n")


def kiln_search_path() -> str:
    """The directory holding the ``kiln`` package this interpreter imports
    (an installed wheel's site-packages), else the checkout's python/."""
    import importlib.util

    spec = importlib.util.find_spec("kiln")
    if spec is not None and spec.origin:
        return str(Path(spec.origin).resolve().parents[1])
    return str(Path(__file__).resolve().parents[1] / "python")


def _run_watched(command: list[str], cwd: Path, env: dict[str, str], results_path: str, stall_seconds: float,
                 log: Any) -> tuple[bool, int]:
    """Runs ``command``; kills it when the results file has not grown for
    ``stall_seconds``. Returns whether it was killed, and its exit status."""
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log or subprocess.DEVNULL,
                               stderr=subprocess.STDOUT, start_new_session=True)
    last_size, last_change = -1, time.monotonic()
    while True:
        try:
            return False, process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
        size = os.path.getsize(results_path)
        if size != last_size:
            last_size, last_change = size, time.monotonic()
        elif time.monotonic() - last_change > stall_seconds:
            os.killpg(process.pid, signal.SIGKILL)
            return True, process.wait()


def format_table(result: FileResult, top: int) -> str:
    """The table of one file: its counts, then its most frequent failure causes."""
    total = sum(result.counts.values())
    lines = [f"== {result.name}: {total} tests in {result.seconds:.0f} s"
             + (f" ({result.restarts} restarts)" if result.restarts else ""),
             "  " + "  ".join(f"{outcome:>8}" for outcome in OUTCOMES),
             "  " + "  ".join(f"{result.counts[outcome]:>8}" for outcome in OUTCOMES)]
    if result.causes:
        lines.append("  failures by cause (failed, error, killed):")
        for cause, count in result.causes.most_common(top):
            lines.append(f"  {count:>6}  {cause}")
        rest = len(result.causes) - top
        if rest > 0:
            lines.append(f"  {'':>6}  ... and {rest} other causes")
    if result.killed:
        lines.append("  killed: " + ", ".join(result.killed))
    return "\n".join(lines)


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path, help="the folder holding Triton's test files and conftest.py")
    parser.add_argument("files", nargs="*", help="test files in it (default: every test_*.py)")
    parser.add_argument("--device", default="cpu", help="the suite's --device option (default: cpu)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test (default: 120)")
    parser.add_argument("--grace", type=int, default=30,
                        help="seconds a stuck test process gets beyond --timeout before it is killed (the alarm "
                        "gets the first chance, with a Python traceback; default: 30)")
    parser.add_argument("-k", help="pytest's -k expression, for a subset")
    parser.add_argument("--top", type=int, default=15, help="failure causes listed per file (default: 15)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run pytest with")
    parser.add_argument("--log-dir", help="keep each file's pytest output in LOG_DIR/<file>.log")
    parser.epilog = "Arguments after -- go to pytest as they are."
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.pytest_args = argv[split + 1:]
    if args.timeout < 1:
        parser.error("--timeout must be at least 1 second")
    if not args.directory.is_dir():
        parser.error(f"{args.directory} is not a directory")
    if not args.files:
        args.files = sorted(path.name for path in args.directory.glob("test_*.py"))
    for name in args.files:
        if not (args.directory / name).is_file():
            parser.error(f"no test file {name} in {args.directory}")
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
    return args


def main(argv: list[str]) -> int:
    """Runs the files and prints their tables; exits 1 if any test did not pass or skip."""
    args = parse_arguments(argv)
    totals: collections.Counter = collections.Counter()
    for name in args.files:
        result = run_file(args.directory.resolve(), name, args)
        totals.update(result.counts)
        print(format_table(result, args.top), flush=True)
    print("== all files: " + ", ".join(f"{totals[outcome]} {outcome}" for outcome in OUTCOMES))
    return 0 if all(totals[outcome] == 0 for outcome in ("failed", "error", "killed")) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
