#!/usr/bin/env bash
# Runs Kiln's tests and benchmarks on a machine with a GPU that has no
# LLVM/MLIR, from a copy of the repository that carries the bundle made by
# scripts/gpu/build_bundle.sh (.carry/kiln-gpu-bundle.tar.xz).
#
# Usage (from the repository root):
#   scripts/gpu/run_on_gpu.sh [bench/some_workload.py ...]
# Runs pytest over python/test (GPU tests included), then each benchmark
# script given. When $OUT is set, every log is also written under it.
# Exits non-zero if pytest or any benchmark fails.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1

BUNDLE=".carry/kiln-gpu-bundle.tar.xz"
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

[[ -f "$BUNDLE" ]] || { echo "error: $BUNDLE not found; run scripts/gpu/build_bundle.sh first" >&2; exit 1; }
step "unpacking $BUNDLE"
tar -xJf "$BUNDLE" -C "$ROOT" || exit 1
[[ -f .carry/kiln-gpu-bundle.info ]] && sed 's/^/    /' .carry/kiln-gpu-bundle.info

export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
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
step "pytest"
run pytest "$PYTHON" -m pytest -q python/test || failed+=(pytest)

for script in "$@"; do
  name="bench-$(basename "$script" .py)"
  step "$script"
  run "$name" "$PYTHON" "$script" || failed+=("$script")
done

if ((${#failed[@]})); then
  step "FAILED: ${failed[*]}"
  exit 1
fi
step "all passed"
