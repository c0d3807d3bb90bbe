#!/usr/bin/env bash
# Runs Kiln's tests and benchmarks on a machine with a GPU that has no
# LLVM/MLIR, from a copy of the repository that carries a wheel for that
# machine's Python (scripts/build_wheel.sh with KILN_WHEEL_PYTHON set to such
# a Python, copied to .carry/). The wheel is installed into a fresh virtual
# environment (sharing the machine's torch, Triton, CuPy, JAX) and tested as
# users install it, from outside the checkout.
#
# Usage (from the repository root):
#   scripts/gpu/run_on_gpu.sh ["bench/some_workload.py [its arguments]" ...]
# Runs the demo (examples/vector_add.py), pytest over python/test (GPU
# tests included), then each benchmark
# given (one argument each: the script and its own arguments, split at
# spaces). When $OUT is set, every log is also written under it.
# Exits non-zero if pytest or any benchmark fails.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1

PYTHON="${PYTHON:-python3}"
LOG_DIR="${OUT:-}"
[[ -n "$LOG_DIR" ]] && mkdir -p "$LOG_DIR"

step() { printf '==> %s\n' "$*"; }

# run NAME CMD...: runs CMD, showing its output and, with $OUT, logging it to
# $OUT/NAME.log; returns CMD's status.
run() {
  local name="$1"; shift
  if [[ -n "$LOG_DIR" ]]; then
    "$@" 2>&1 | tee "$LOG_DIR/$name.log"
    return "${PIPESTATUS[0]}"
  fi
  "$@"
}

tag="$("$PYTHON" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
wheels=(.carry/kiln-*-"$tag"-"$tag"-*.whl)
[[ -f "${wheels[0]}" ]] || { echo "error: no $tag wheel in .carry/; see scripts/build_wheel.sh" >&2
                            exit 1; }
step "installing ${wheels[0]} into a fresh virtual environment"
venv="$(mktemp -d)/venv"
"$PYTHON" -m venv --system-site-packages "$venv" || exit 1
# --system-site-packages sees the base interpreter's packages only: when
# $PYTHON is itself a virtual environment (torch's, say), name its
# site-packages too.
"$PYTHON" -c 'import site; print("".join(f"import site; site.addsitedir({d!r})\n" for d in site.getsitepackages()))' \
  > "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/parent-env.pth" || exit 1
"$venv/bin/python" -m pip install --no-index --no-deps --quiet "${wheels[0]}" || exit 1
PYTHON="$venv/bin/python"
TEST_DIR="$(mktemp -d)"  # outside the checkout: nothing of python/ stands in for the wheel
export PYTHONUNBUFFERED=1
if [[ -x /usr/local/cuda/bin/ptxas ]]; then
  export KILN_PTXAS=/usr/local/cuda/bin/ptxas
fi

machine_info() {
  nvidia-smi -L || echo "nvidia-smi failed"
  "$PYTHON" --version
  "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available:", torch.cuda.is_available())'
  "$PYTHON" -c 'import triton; print("triton", triton.__version__)' 2>/dev/null || echo "triton: not installed"
  "$PYTHON" -c 'import pytest; print("pytest", pytest.__version__)' 2>/dev/null || echo "pytest: not installed"
  echo "KILN_PTXAS=${KILN_PTXAS:-unset}"
  "$PYTHON" -c 'import kiln._C as C; print("kiln._C:", C.__file__); print("CUDA driver available:", C.driver.is_available())'
}
step "machine"
run machine machine_info

failed=()
# The README's demo, as a user who installed the wheel runs it: from an
# empty directory, nothing of the checkout on the path but the script.
step "demo"
run demo bash -c 'cd "$1" && shift && "$@"' _ "$TEST_DIR" "$PYTHON" "$ROOT/examples/vector_add.py" || failed+=(demo)

step "pytest"
# In parallel where pytest-xdist is installed (the suite takes minutes serially).
workers=()
"$PYTHON" -c 'import xdist' 2>/dev/null && workers=(-n "${KILN_TEST_WORKERS:-16}")
run pytest bash -c 'cd "$1" && shift && "$@"' _ "$TEST_DIR" "$PYTHON" -m pytest -q -p no:cacheprovider \
  "${workers[@]}" "$ROOT/python/test" || failed+=(pytest)

for command in "$@"; do
  read -ra words <<< "$command"
  name="bench-$(basename "${words[0]}" .py)"
  step "$command"
  run "$name" "$PYTHON" "${words[@]}" || failed+=("$command")
done

if ((${#failed[@]})); then
  step "FAILED: ${failed[*]}"
  exit 1
fi
step "all passed"
