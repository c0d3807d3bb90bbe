#!/usr/bin/env bash
# Builds Kiln (through scripts/setup.sh) and runs every test suite: lit +
# FileCheck, GoogleTest, then pytest. Exits non-zero if any suite fails.
#
# pytest runs last so that the final line printed is its summary line, which
# CI reads. Tests that need a GPU skip themselves when there is none.
# Extra arguments go to pytest (e.g. `scripts/test.sh -k vector_add`).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

scripts/setup.sh || { echo "setup/build failed" >&2; exit 1; }

failed=()

# --- lit --------------------------------------------------------------------
echo "==> lit"
ninja -C build check-kiln || failed+=(lit)

# --- GoogleTest ---------------------------------------------------------------
echo "==> GoogleTest"
build/bin/kiln-unittests --gtest_brief=1 || failed+=(gtest)

# --- pytest (last: its summary is the last line) ------------------------------
if ((${#failed[@]})); then
  echo "==> FAILED before pytest: ${failed[*]}"
fi
echo "==> pytest"
.venv/bin/python -m pytest -q python/test "$@"
pytest_rc=$?

((${#failed[@]} == 0 && pytest_rc == 0))
