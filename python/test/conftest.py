"""Repository-level pytest configuration for Kiln's Python tests.

Makes `import kiln` resolve to this checkout's python/ directory when kiln is
not importable otherwise: the .venv made by scripts/setup.sh already points
there, but a bare interpreter (or the GPU machine, with PYTHONPATH unset)
would otherwise fail every test module at collection.
"""

import importlib.util
import os
import sys

_PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

if importlib.util.find_spec("kiln") is None:
    sys.path.insert(0, _PYTHON_DIR)


def pytest_report_header(config):
    # Says which kiln the run tested, so a stale extension is easy to spot.
    spec = importlib.util.find_spec("kiln")
    where = os.path.dirname(spec.origin) if spec and spec.origin else "not importable"
    return f"kiln: {where}"
