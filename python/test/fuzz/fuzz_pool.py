"""A pool of `fuzz_worker` subprocesses, restarted when one dies or hangs.

Each worker runs one case at a time; a case that kills its worker (a
signal) is a crash, one that runs past the timeout is a hang (its worker is
killed). Either way a fresh worker takes the next seed.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_worker.py")

# Outcomes that are failures of Kiln (see fuzz_worker's docstring).
FAILURES = ("internal", "wrong", "accepted", "crash", "hang")

# Issues being fixed elsewhere: a case whose `known` names one of them and
# fails is reported as "known", not counted (docs/design/fuzzing.md). Empty
# while none is open.
KNOWN_ISSUES: frozenset[str] = frozenset()


@dataclass
class _Worker:
    process: subprocess.Popen
    seed: Optional[int] = None
    started: float = 0.0
    buffer: bytes = b""


@dataclass
class Pool:
    """Runs seeds on `size` workers, `timeout` seconds at most per case."""

    size: int = 1
    timeout: float = 60.0
    environment: dict[str, str] = field(default_factory=dict)
    nice: int = 0

    def _start(self) -> _Worker:
        env = {**os.environ, **self.environment}
        env.setdefault("KILN_DISABLE_CACHE", "1")
        command = [sys.executable, WORKER]
        if self.nice:
            command = ["nice", "-n", str(self.nice)] + command
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, env=env)
        # The worker says when it has imported Kiln; cases are timed from then.
        if process.stdout.readline() != b"ready\n":
            process.kill()
            process.wait()
            raise RuntimeError(f"a fuzz worker failed to start (status {process.returncode})")
        return _Worker(process)

    def run(self, seeds: Iterable[int], stop: Optional[Callable[[], bool]] = None) -> Iterator[dict]:
        """Yields one report per seed (in completion order)."""
        pending = iter(seeds)
        selector = selectors.DefaultSelector()
        workers: list[_Worker] = []
        exhausted = False

        def feed(worker: _Worker) -> bool:
            nonlocal exhausted
            if exhausted or (stop is not None and stop()):
                exhausted = True
                return False
            seed = next(pending, None)
            if seed is None:
                exhausted = True
                return False
            worker.seed, worker.started, worker.buffer = seed, time.monotonic(), b""
            worker.process.stdin.write(f"{seed}\n".encode())
            worker.process.stdin.flush()
            return True

        def replace(worker: _Worker) -> None:
            selector.unregister(worker.process.stdout)
            workers.remove(worker)
            if worker.process.poll() is None:
                worker.process.kill()
            worker.process.wait()
            fresh = self._start()
            workers.append(fresh)
            selector.register(fresh.process.stdout, selectors.EVENT_READ, fresh)
            if not feed(fresh):
                self._close(fresh)
                selector.unregister(fresh.process.stdout)
                workers.remove(fresh)

        try:
            for _ in range(self.size):
                worker = self._start()
                if not feed(worker):
                    self._close(worker)
                    break
                workers.append(worker)
                selector.register(worker.process.stdout, selectors.EVENT_READ, worker)
            while workers:
                now = time.monotonic()
                deadline = min(w.started + self.timeout for w in workers)
                events = selector.select(timeout=max(deadline - now, 0.05))
                for key, _ in events:
                    worker = key.data
                    chunk = os.read(worker.process.stdout.fileno(), 65536)
                    if not chunk:
                        code = worker.process.wait()
                        yield self._crash(worker.seed, code, time.monotonic() - worker.started)
                        replace(worker)
                        continue
                    worker.buffer += chunk
                    while b"\n" in worker.buffer and worker.seed is not None:
                        line, worker.buffer = worker.buffer.split(b"\n", 1)
                        report = json.loads(line)
                        report["seconds"] = round(time.monotonic() - worker.started, 3)
                        yield report
                        worker.seed = None
                        if not feed(worker):
                            selector.unregister(worker.process.stdout)
                            workers.remove(worker)
                            self._close(worker)
                            break
                now = time.monotonic()
                for worker in list(workers):
                    if worker.seed is not None and now - worker.started > self.timeout:
                        seed = worker.seed
                        worker.process.kill()
                        yield {"seed": seed, "outcome": "hang", "detail": f"no answer within {self.timeout:g} s",
                               "seconds": round(now - worker.started, 3)}
                        replace(worker)
        finally:
            for worker in workers:
                if worker.process.poll() is None:
                    worker.process.kill()
                worker.process.wait()
            selector.close()

    @staticmethod
    def _close(worker: _Worker) -> None:
        worker.process.stdin.close()
        worker.process.wait()

    @staticmethod
    def _crash(seed: Optional[int], code: int, seconds: float) -> dict:
        if code < 0:
            name = signal.Signals(-code).name
            detail = f"worker killed by {name}"
        else:
            name = ""
            detail = f"worker exited with status {code}"
        return {"seed": seed, "outcome": "crash", "signal": name, "detail": detail, "seconds": round(seconds, 3)}


def settle(report: dict) -> dict:
    """Marks a failure "known" when the case may run into an issue that is
    being fixed elsewhere (the case's `known`), and records the case's kind."""
    import fuzz_generator

    if report.get("outcome") in ("crash", "hang") and report.get("seed") is not None:
        case = fuzz_generator.generate(report["seed"])
        report.setdefault("what", case.what)
        report.setdefault("known", case.known)
    known = report.get("known")
    if report.get("outcome") in FAILURES and known in KNOWN_ISSUES:
        report["outcome"], report["detail"] = "known", f"{known}: {report.get('detail', '')}"
    return report
