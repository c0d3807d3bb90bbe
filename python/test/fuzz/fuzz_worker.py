"""Runs fuzzer cases in this process and classifies each outcome.

Run as a script it is one worker of `fuzz_pool`: it reads a seed per line
on stdin and answers with one JSON line per seed on stdout. A crash or a
hang of a case takes the whole worker down (or past its deadline); the pool
notices and restarts it, which is why cases never run in the pool's own
process.

Outcomes:
  ok        the kernel ran and wrote what the reference says (or, for a
            case the reference cannot predict, ran without error);
  error     a clean user error: a `kiln.CompilationError` naming a line of
            the kernel's file, or a `TypeError`/`ValueError`/`KilnError`
            that Kiln raised on purpose while binding or launching;
  wrong     a valid kernel wrote a wrong result;
  accepted  an invalid kernel compiled and ran without a complaint;
  internal  anything else: an unexpected exception type, an error Kiln did
            not raise on purpose, a compile error without a kernel line.
Crashes and hangs are told by the pool.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import sys
import tempfile
import time
import traceback
from typing import Any, Optional

import numpy as np

import fuzz_generator
import fuzz_pool
import fuzz_reference as ref

# Messages of issues being fixed elsewhere; an outcome whose text contains
# one of them is "known" and not counted as a failure.
KNOWN_MESSAGES: dict[str, str] = {}


def _raised_on_purpose(error: BaseException) -> bool:
    """True when the innermost frame of `error` is a `raise` statement in
    Kiln's own code (so the error is a check, not a crash of Python code)."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    kiln_dir = os.path.dirname(os.path.abspath(__import__("kiln").__file__))
    return os.path.abspath(last.filename).startswith(kiln_dir) and (last.line or "").lstrip().startswith("raise")


# Messages of Python's own errors, which Kiln's checks never raise.
PYTHON_INTERNAL = re.compile(r"object has no attribute|not subscriptable|unsupported operand|invalid literal|"
                             r"is not iterable|object is not callable|unhashable|cannot unpack|"
                             r"positional argument|NoneType")


def _user_error(error: BaseException, path: str) -> bool:
    """A TypeError/ValueError/OverflowError is a clean user error when Kiln
    raised it on purpose, when it names the kernel's file and line, or when
    it comes from binding or launching (not compiling) and is none of
    Python's own messages."""
    if _raised_on_purpose(error) or f"{path}:" in str(error):
        return True
    kiln_dir = os.path.dirname(os.path.abspath(__import__("kiln").__file__))
    compiling = any(os.path.abspath(frame.filename).startswith(os.path.join(kiln_dir, part))
                    for frame in traceback.extract_tb(error.__traceback__) for part in ("compiler", "language"))
    return not compiling and not PYTHON_INTERNAL.search(str(error))


def classify_error(error: BaseException, case: fuzz_generator.Case, path: str) -> tuple[str, str]:
    """("error" | "internal" | "known", detail) for an exception of a case."""
    import kiln

    text = f"{type(error).__name__}: {error}"
    for needle, reason in KNOWN_MESSAGES.items():
        if needle in str(error):
            return "known", f"{reason}: {text}"
    if isinstance(error, kiln.CompilationError):
        if error.filename is None or error.lineno is None:
            return "internal", f"compile error without a location: {text}"
        if os.path.abspath(error.filename) != os.path.abspath(path):
            return "internal", f"compile error located outside the kernel's file: {text}"
        if not error.source_line:
            return "internal", f"compile error without its source line: {text}"
        # An error in a helper is reported at the kernel's call of it, caused
        # by the error in the helper: either may be the expected line.
        lines = {error.lineno}
        if isinstance(error.__cause__, kiln.CompilationError):
            lines.add(error.__cause__.lineno)
        if case.error_lines is not None and not lines & set(case.error_lines):
            return "internal", f"compile error at line {error.lineno}, expected one of {case.error_lines}: {text}"
        return "error", text
    if isinstance(error, kiln.KilnError):
        return "error", text
    if isinstance(error, (TypeError, ValueError, OverflowError)) and _user_error(error, path):
        return "error", text
    return "internal", text + "\n" + "".join(traceback.format_exception(error)[-6:])


def _load_module(path: str) -> Any:
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compare(case: fuzz_generator.Case, results: dict[str, np.ndarray]) -> Optional[str]:
    """None when every output matches the reference, else a description."""
    for name, (ty, expected) in case.outputs.items():
        got = np.asarray(results[name])
        wrong = ref.mismatches(ty, got.ravel(), expected)
        if np.any(wrong):
            index = int(np.argmax(wrong))
            return (f"{name}: {int(wrong.sum())} of {wrong.size} elements wrong, first at {index}: "
                    f"got {got.ravel()[index]!r}, expected {expected.v[index]!r} (bound {expected.err[index]:.3g})")
    return None


def run_case(seed: int, directory: str) -> dict[str, Any]:
    """Generates, compiles, launches and checks the case of `seed`."""
    case = fuzz_generator.generate(seed)
    path = os.path.join(directory, f"fuzz_case_{seed}.py")
    with open(path, "w") as file:
        file.write(case.source)
    report: dict[str, Any] = {"seed": seed, "what": case.what, "expect": case.expect, "known": case.known,
                              "unchecked": case.unchecked}
    try:
        module = _load_module(path)
        results = module.launch()
    except Exception as error:  # noqa: BLE001 - every exception is classified
        outcome, detail = classify_error(error, case, path)
        if outcome == "error" and case.expect == "ok":
            outcome = "internal" if case.what == "valid" else outcome
            detail = "a valid kernel was rejected: " + detail
            if case.known in fuzz_pool.KNOWN_ISSUES:
                outcome = "known"
        report.update(outcome=outcome, detail=detail)
        return report
    if case.expect == "error":
        report.update(outcome="accepted", detail="the invalid kernel ran without an error")
        return report
    problem = _compare(case, results) if case.outputs else None
    report.update(outcome="wrong" if problem else "ok", detail=problem or "")
    return report


def _self_test(seed: int) -> None:
    """Negative seeds check the pool itself: -1 crashes this worker, -2
    hangs it."""
    if seed == -1:
        os.kill(os.getpid(), signal.SIGSEGV)
    while seed == -2:
        time.sleep(1)


def main() -> None:
    os.environ.setdefault("KILN_DISABLE_CACHE", "1")
    directory = tempfile.mkdtemp(prefix="kiln-fuzz-")
    # Imported before the first case, so that its time does not count
    # against that case's timeout.
    import kiln  # noqa: F401
    import torch  # noqa: F401
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        seed = int(line)
        if seed < 0:
            _self_test(seed)
        try:
            report = run_case(seed, directory)
        except Exception as error:  # noqa: BLE001 - a failure of the fuzzer itself
            report = {"seed": seed, "outcome": "fuzzer-error",
                      "detail": "".join(traceback.format_exception(error)[-8:])}
        try:
            os.unlink(os.path.join(directory, f"fuzz_case_{seed}.py"))
        except OSError:
            pass
        sys.stdout.write(json.dumps(report) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
