"""scripts/compat_suite.py: runs test files through kiln.compat and tables
their outcomes (passed, failed, skipped, error, killed) and failure causes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[3]
SCRIPT = REPOSITORY / "scripts" / "compat_suite.py"

sys.path.insert(0, str(SCRIPT.parent))
import compat_suite  # noqa: E402
from kiln_test_support import kiln_search_path  # noqa: E402


def test_normalize_cause_drops_locations_and_addresses():
    text = "kiln.errors.CompilationError: /a/b/test_core.py:12:5: error: bad thing at 0x7f00ab"
    assert compat_suite.normalize_cause(text) == "kiln.errors.CompilationError: error: bad thing at 0x…"
    assert len(compat_suite.normalize_cause("x" * 500, limit=40)) == 40


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A folder laid out like Triton's tests: a conftest with --device, and tests of every outcome."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import pytest

        def pytest_addoption(parser):
            parser.addoption("--device", action="store", default="cuda")

        @pytest.fixture
        def device(request):
            return request.config.getoption("--device")

        @pytest.fixture
        def broken():
            raise RuntimeError("fixture broke")
    """))
    (tmp_path / "test_outcomes.py").write_text(textwrap.dedent("""
        import os, signal, time
        import pytest
        import triton
        from triton._internal_testing import is_cuda

        def test_passes(device):
            assert device == "cpu" and triton.__name__ == "kiln" and not is_cuda()

        @pytest.mark.parametrize("n", [1, 2, 3])
        def test_fails(n):
            raise ValueError(f"bad value at 0x{n:x}")

        def test_fails_otherwise():
            assert 1 == 2

        def test_skips():
            pytest.skip("not here")

        @pytest.mark.xfail(reason="known")
        def test_xfails():
            assert False

        def test_errors(broken):
            pass

        def test_sleeps_too_long():
            time.sleep(30)

        def test_crashes():
            os.abort()

        def test_stuck_where_the_alarm_cannot_reach():
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])  # as native code that never returns
            time.sleep(60)

        def test_after_the_crash():
            pass
    """))
    return tmp_path


def test_runner_tables_every_outcome(suite: Path):
    env = dict(os.environ, PYTHONPATH=kiln_search_path())
    result = subprocess.run([sys.executable, str(SCRIPT), str(suite), "--timeout", "2", "--grace", "5"],
                            capture_output=True, text=True, timeout=300, env=env)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    lines = out.splitlines()
    assert lines[0].startswith("== test_outcomes.py: 12 tests in "), out
    assert lines[1].split() == ["passed", "failed", "skipped", "error", "killed"]
    # passes: test_passes, test_after_the_crash; fails: 3 + 1 + the timeout;
    # skips: the skip and the xfail; error: the fixture; killed: the crash
    # and the stuck test, each followed by a restart.
    assert lines[2].split() == ["2", "5", "2", "1", "2"], out
    assert "(2 restarts)" in lines[0]
    causes = "\n".join(lines[3:])
    assert "     3  ValueError: bad value at 0x…" in causes
    assert "TestTimeout: the test ran longer than 2 s" in causes
    assert "RuntimeError: fixture broke" in causes
    assert "killed: the test process died" in causes
    assert "killed: no progress for the time limit" in causes
    assert ("  killed: test_outcomes.py::test_crashes, test_outcomes.py::test_stuck_where_the_alarm_cannot_reach"
            in lines)
    assert out.splitlines()[-1] == "== all files: 2 passed, 5 failed, 2 skipped, 1 error, 2 killed"


def test_runner_rejects_bad_arguments(tmp_path: Path):
    result = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "test_missing.py"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "no test file test_missing.py" in result.stderr


def test_a_file_that_runs_no_test_is_an_error(tmp_path: Path):
    """A test process that dies before its first test (here its conftest
    fails to import) is one error, not a file of no tests."""
    (tmp_path / "conftest.py").write_text("raise ImportError('no such helper')\n")
    (tmp_path / "test_nothing.py").write_text("def test_it():\n    pass\n")
    env = dict(os.environ, PYTHONPATH=kiln_search_path())
    result = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "--timeout", "30"],
                            capture_output=True, text=True, timeout=300, env=env)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert out.splitlines()[2].split() == ["0", "0", "0", "1", "0"], out
    assert "exited with status" in out and "before any test ran" in out
