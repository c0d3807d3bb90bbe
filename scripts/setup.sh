#!/usr/bin/env bash
# Prepares a Debian 12 machine to build and test Kiln, then builds it.
#
# Idempotent: packages already installed, an existing .venv and an already
# configured build/ are left alone, so a second run only re-runs ninja (a few
# seconds when nothing changed). Runs as root, or as a user with sudo.
#
# Environment:
#   KILN_BUILD_JOBS  ninja's -j (default: the number of cores; MLIR's heaviest
#                    files need ~1 GB each, so more jobs than cores only
#                    costs memory)
#   KILN_BUILD_LOCK  a file to flock around ninja, for machines where several
#                    people build in one tree
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

step() { printf '==> %s\n' "$*"; }

# --- system packages --------------------------------------------------------
# LLVM/MLIR 22 come from Debian bookworm-security; python3-torch is the CPU
# build (1.13), enough for the tests that need no GPU; python3-scipy is for
# Triton's test_random.py run through kiln.compat (docs/compat.md). The
# static archives of zlib and zstd and python3-pip are for the wheel
# (scripts/build_wheel.sh).
PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools clang-22 lld-22 zlib1g-dev libzstd-dev
  pybind11-dev libgtest-dev ccache ninja-build cmake
  python3 python3-dev python3-venv python3-pip python3-numpy python3-pytest python3-torch python3-scipy
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]})); then
  SUDO=()
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || { echo "error: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    SUDO=(sudo)
  fi
  step "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -q
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  step "system packages: all installed"
fi

# --- Python environment -----------------------------------------------------
# The venv shares Debian's site-packages (numpy, pytest, torch): there is no
# PyPI to install from. It is the same interpreter the build uses, so the
# extension built for /usr/bin/python3 imports in it.
if [[ ! -x .venv/bin/python ]]; then
  step "creating .venv"
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
site_packages="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# A .pth entry (not an editable install, which needs pip's build backends)
# makes `import kiln` resolve to this checkout from any directory.
pth="$site_packages/kiln-checkout.pth"
if [[ "$(cat "$pth" 2>/dev/null || true)" != "$ROOT/python" ]]; then
  step "linking $ROOT/python into .venv"
  printf '%s\n' "$ROOT/python" > "$pth"
fi

# --- build ------------------------------------------------------------------
if [[ ! -f build/build.ninja ]]; then
  step "configuring build/"
  cmake -G Ninja -S . -B build \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
fi

jobs="${KILN_BUILD_JOBS:-$(nproc)}"
ninja_cmd=(ninja -C build -j "$jobs")
if [[ -n "${KILN_BUILD_LOCK:-}" ]]; then
  ninja_cmd=(flock "$KILN_BUILD_LOCK" "${ninja_cmd[@]}")
fi
step "building (ninja -j $jobs)"
"${ninja_cmd[@]}"
step "setup done"
