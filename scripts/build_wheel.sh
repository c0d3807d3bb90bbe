#!/usr/bin/env bash
# Builds Kiln's wheel for one Python into dist/: dist/kiln-<version>-cpXY-
# cpXY-manylinux_2_NN_<arch>.whl, with LLVM/MLIR linked in and NVIDIA's
# libdevice bundled (see "The wheel" in docs/development.md). With --check,
# then installs it into a fresh virtual environment and tests the installed
# package from a directory outside the checkout: scripts/wheel/smoke_test.py
# (a CPU kernel, sm_90a PTX with libdevice, the bundled libdevice found
# first), then the Python test suite.
#
# The build is `python3 -m pip wheel . --no-deps` (pyproject.toml's in-tree
# backend, scripts/wheel/kiln_wheel.py; nothing comes from PyPI), or the
# backend run directly where that Python has no pip.
#
# With --install VENV instead, it only builds the wheel and installs it
# into a fresh virtual environment at VENV (what scripts/test.sh then runs
# the Python suite in).
#
# Usage: scripts/build_wheel.sh [--check | --install VENV] [-w DIR] [-- PYTEST_ARGS...]
#   PYTEST_ARGS: test paths relative to the checkout's root (default:
#   python/test) and pytest options, e.g. -- python/test/unit -k cache
#
# Environment:
#   KILN_WHEEL_PYTHON     the Python to build for (default: /usr/bin/python3)
#   KILN_WHEEL_BUILD_DIR  the static build tree (default: build-wheel-cpXY)
#   KILN_WHEEL_LIBDEVICE  the libdevice.10.bc to bundle, or `none` (default:
#                         $KILN_LIBDEVICE_PATH, else the CUDA toolkit's)
#   KILN_BUILD_JOBS       ninja's -j (default: the number of cores)
#   KILN_BUILD_LOCK       a file to flock around ninja, for shared build machines
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

check=0
install_to=""
out=dist
pytest_args=()
while (($#)); do
  case "$1" in
    --check) check=1 ;;
    --install) install_to="$2"; shift ;;
    -w) out="$2"; shift ;;
    --) shift; pytest_args=("$@"); break ;;
    *) echo "usage: $0 [--check | --install VENV] [-w DIR] [-- PYTEST_ARGS...]" >&2; exit 2 ;;
  esac
  shift
done

step() { printf '==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

python="${KILN_WHEEL_PYTHON:-/usr/bin/python3}"
command -v "$python" >/dev/null || die "no Python '$python' (set KILN_WHEEL_PYTHON)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# --- build -----------------------------------------------------------------------
start=$SECONDS
tag="$("$python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' python/kiln/__init__.py)"
rm -f "$out"/kiln-"$version"-"$tag"-"$tag"-*.whl
if "$python" -m pip --version >/dev/null 2>&1; then
  step "building the wheel: $python -m pip wheel . --no-deps"
  "$python" -m pip wheel . -w "$out" --no-deps --verbose
else
  step "building the wheel: $python has no pip; running scripts/wheel/kiln_wheel.py"
  "$python" scripts/wheel/kiln_wheel.py -w "$out"
fi
wheels=("$out"/kiln-"$version"-"$tag"-"$tag"-*.whl)
[[ -f "${wheels[0]}" ]] || die "no wheel for $tag was written to $out"
wheel="${wheels[0]}"
step "built $wheel ($(($(stat -c %s "$wheel") / 1024 / 1024)) MiB) in $((SECONDS - start)) s"
if [[ -n "$install_to" ]]; then
  rm -rf "$install_to"
  "$python" -m venv --system-site-packages "$install_to"
  "$install_to/bin/python" -m pip install --no-index --no-deps --quiet "$wheel"
  (cd / && unset PYTHONPATH && "$install_to/bin/python" "$ROOT/scripts/wheel/smoke_test.py") ||
    die "the installed wheel fails its smoke test"
  step "installed into $install_to"
  exit 0
fi
((check)) || exit 0

# --- install into a fresh environment and test it ------------------------------------
# The environment shares the system's site-packages (numpy, pytest, torch:
# nothing comes from PyPI); kiln itself is the wheel's. The tests run from
# an empty directory, with no PYTHONPATH, so nothing of the checkout's
# python/ can stand in for the installed package.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --no-index --no-deps --quiet "$wheel"
step "installed into a fresh virtual environment in $((SECONDS - start)) s"
mkdir "$work/empty"
cd "$work/empty"
unset PYTHONPATH
"$work/venv/bin/python" "$ROOT/scripts/wheel/smoke_test.py"
"$work/venv/bin/kiln" --help >/dev/null || die "the kiln command does not run"
# Test paths among the arguments name files of the checkout (relative to its
# root) and replace the whole suite; other arguments go to pytest as given.
tests=()
args=()
for arg in "${pytest_args[@]}"; do
  if [[ "$arg" == /* && -e "${arg%%::*}" ]]; then
    tests+=("$arg")
  elif [[ "$arg" != -* && -e "$ROOT/${arg%%::*}" ]]; then
    tests+=("$ROOT/$arg")
  else
    args+=("$arg")
  fi
done
((${#tests[@]})) || tests=("$ROOT/python/test")
step "pytest against the installed package"
start=$SECONDS
rc=0
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider "${tests[@]}" "${args[@]}" || rc=$?
step "pytest took $((SECONDS - start)) s"
exit "$rc"
