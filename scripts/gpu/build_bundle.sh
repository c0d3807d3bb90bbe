#!/usr/bin/env bash
# Builds the self-contained Kiln extension for a GPU machine that has no
# LLVM/MLIR, and packs it into .carry/kiln-gpu-bundle.tar.xz.
#
# The GPU machine runs Python 3.12, so this builds, in its own tree build-gpu/,
# kiln._C for Python 3.12 with LLVM and MLIR linked statically (see "Shipping
# build" in docs/development.md). The result needs only glibc's libraries.
# scripts/gpu/run_on_gpu.sh unpacks it on the GPU machine.
#
# The wheel (scripts/build_wheel.sh with KILN_WHEEL_PYTHON set to the GPU
# machine's Python version; "The wheel" in docs/development.md) is to replace
# this bundle once it is verified on the GPU machine: it carries the same
# static extension and libdevice, installed with pip.
#
# Environment:
#   KILN_PYTHON312   a Python 3.12 interpreter with its C headers (default:
#                    pyenv's 3.12, else python3.12 on PATH)
#   KILN_PYTHON312_INCLUDE  where no such interpreter exists here: a copy of
#                    the GPU machine's Python 3.12 include directory (the one
#                    holding Python.h and pyconfig.h). The extension is then
#                    built against those headers alone and cannot be test-
#                    imported here; run_on_gpu.sh imports it there.
#   KILN_GPU_BUILD_DIR  the build tree (default: build-gpu)
#   KILN_BUILD_JOBS  ninja's -j (default: the number of cores)
#   KILN_BUILD_LOCK  a file to flock around ninja, for shared build machines
# Options:
#   --configure-only  configure the build tree and stop
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

configure_only=0
for arg in "$@"; do
  case "$arg" in
    --configure-only) configure_only=1 ;;
    *) echo "usage: $0 [--configure-only]" >&2; exit 2 ;;
  esac
done

step() { printf '==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

BUILD_DIR="${KILN_GPU_BUILD_DIR:-build-gpu}"
EXT_NAME="_C.cpython-312-x86_64-linux-gnu.so"
EXT="python/kiln/$EXT_NAME"
BUNDLE=".carry/kiln-gpu-bundle.tar.xz"

# --- a Python 3.12 with headers -----------------------------------------------
find_python312() {
  if [[ -n "${KILN_PYTHON312:-}" ]]; then
    echo "$KILN_PYTHON312"; return
  fi
  if command -v pyenv >/dev/null; then
    local v
    for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.12(\.[0-9]+)?$' | sort -rV); do
      local prefix
      prefix="$(pyenv prefix "$v" 2>/dev/null)" || continue
      [[ -x "$prefix/bin/python3.12" ]] && { echo "$prefix/bin/python3.12"; return; }
    done
  fi
  local candidate
  for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
    [[ -x "$candidate" ]] && { echo "$candidate"; return; }
  done
  command -v python3.12 || true
}

PY312=""
PY312_INCLUDE="${KILN_PYTHON312_INCLUDE:-}"
if [[ -n "$PY312_INCLUDE" ]]; then
  grep -qs '#define PY_MINOR_VERSION[[:space:]]*12$' "$PY312_INCLUDE/patchlevel.h" ||
    die "$PY312_INCLUDE holds no Python 3.12 headers (patchlevel.h)"
  [[ -f "$PY312_INCLUDE/pyconfig.h" ]] || die "$PY312_INCLUDE has no pyconfig.h"
  step "Python 3.12 headers: $PY312_INCLUDE (no interpreter: the import check is left to the GPU machine)"
  python_flags=(-DKILN_PYTHON_INCLUDE_DIR="$PY312_INCLUDE" -DKILN_PYTHON_EXT_SUFFIX=".cpython-312-x86_64-linux-gnu.so")
  configured_for="$PY312_INCLUDE"
else
  PY312="$(find_python312)"
  [[ -n "$PY312" && -x "$PY312" ]] || die "no Python 3.12 found; set KILN_PYTHON312 or KILN_PYTHON312_INCLUDE"
  "$PY312" - <<'PYEOF' || die "$PY312 is not a Python 3.12 with C headers"
import os, sys, sysconfig
assert sys.version_info[:2] == (3, 12), sys.version
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
PYEOF
  step "Python 3.12: $PY312"
  python_flags=(-DPython3_EXECUTABLE="$PY312")
  configured_for="$PY312"
fi

# --- configure ----------------------------------------------------------------
if [[ -f "$BUILD_DIR/build.ninja" ]]; then
  configured="$(sed -n 's/^KILN_PYTHON_INCLUDE_DIR:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")"
  [[ -n "$configured" ]] || configured="$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")"
  [[ "$configured" == "$configured_for" ]] ||
    die "$BUILD_DIR is configured for '$configured', not $configured_for; remove $BUILD_DIR"
else
  step "configuring $BUILD_DIR (static LLVM/MLIR)"
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DKILN_STATIC_LLVM=ON -DKILN_BUILD_TESTS=OFF \
    "${python_flags[@]}"
fi
if ((configure_only)); then
  step "configured $BUILD_DIR"
  exit 0
fi

# --- build --------------------------------------------------------------------
jobs="${KILN_BUILD_JOBS:-$(nproc)}"
ninja_cmd=(ninja -C "$BUILD_DIR" -j "$jobs" kiln_python_extension)
[[ -n "${KILN_BUILD_LOCK:-}" ]] && ninja_cmd=(flock "$KILN_BUILD_LOCK" "${ninja_cmd[@]}")
step "building kiln_python_extension (ninja -j $jobs; a cold static build takes long)"
"${ninja_cmd[@]}"
[[ -f "$EXT" ]] || die "the build did not produce $EXT"

# --- strip, check, pack -------------------------------------------------------
# Strip a copy so that ninja's output stays untouched (stripping it in place
# would make it newer than its inputs and hide a needed relink).
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/python/kiln"
llvm-strip-22 --strip-unneeded -o "$stage/$EXT" "$EXT"

# The GPU machine has no LLVM, MLIR or matching libstdc++: anything beyond the
# C runtime, zlib and zstd would fail there at import time, so fail here.
needed="$(readelf -d "$stage/$EXT" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
allowed='^(libc|libm|libz|libzstd|libpthread|libdl|librt|ld-linux-x86-64)\.so'
unexpected="$(grep -Ev "$allowed" <<<"$needed" || true)"
[[ -z "$unexpected" ]] || die "$EXT needs libraries the GPU machine lacks: $(tr '\n' ' ' <<<"$unexpected")"
step "needs: $(tr '\n' ' ' <<<"$needed")"

# Importing it under the same Python minor version catches unresolved symbols
# before the bundle travels (where that Python is here).
[[ -z "$PY312" ]] || "$PY312" -c "
import importlib.util, sys
spec = importlib.util.spec_from_file_location('_C', sys.argv[1])
spec.loader.exec_module(importlib.util.module_from_spec(spec))
" "$stage/$EXT" || die "the stripped extension does not import under $PY312"

mkdir -p .carry
step "packing $BUNDLE"
tar -C "$stage" -cf - "$EXT" | xz -9 -T2 > "$BUNDLE.tmp"
mv "$BUNDLE.tmp" "$BUNDLE"
{
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  if [[ -n "$PY312" ]]; then
    echo "python: $("$PY312" -c 'import sys; print(sys.version.split()[0])')"
  else
    echo "python: 3.12 headers only ($(sed -n 's/^#define PY_VERSION[[:space:]]\+//p' "$PY312_INCLUDE/patchlevel.h"))"
  fi
  echo "size: $(stat -c %s "$stage/$EXT") bytes stripped, $(stat -c %s "$BUNDLE") bytes packed"
} > .carry/kiln-gpu-bundle.info
cat .carry/kiln-gpu-bundle.info
size="$(stat -c %s "$BUNDLE")"
((size < 64 * 1024 * 1024)) || die "$BUNDLE is $size bytes; only 64 MiB travel"
