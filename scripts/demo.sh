#!/usr/bin/env bash
# Builds Kiln (through scripts/setup.sh) and runs the vector-add demo.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/setup.sh
exec .venv/bin/python examples/vector_add.py "$@"
