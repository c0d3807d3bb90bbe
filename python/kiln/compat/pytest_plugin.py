"""A pytest plugin that ``python -m kiln.compat`` loads (through
``PYTEST_PLUGINS``, so in pytest-xdist's workers too): it installs the alias
in every pytest process, and makes Triton's ``--device`` option choose
Kiln's backend.

Installing here, when pytest starts, matters for the workers: the
``PYTHONPATH`` shim is found by Python's path search, which comes after
every meta-path finder, and an editable install of the real Triton adds one
of those; the alias's own finder goes first. If the real Triton was imported
before pytest loads plugins, the worker fails with kiln.compat's error
rather than testing Triton.

Triton's test suites take ``--device cuda`` or ``--device cpu`` (their
conftest.py defines the option) and make their tensors there. With
``--device cpu`` this plugin sets ``KILN_BACKEND=cpu`` for the session, so
that the active driver, and with it every device query of
``triton._internal_testing`` (``is_cuda()``, ``get_arch()``, ...), reports
Kiln's CPU backend even on a machine with a GPU, and kernels launched
without arrays run there too. ``--device cuda`` sets ``KILN_BACKEND=cuda``:
every kernel then runs on the GPU, as Triton's run on its active driver's
device, so a CPU tensor passed to one is a ValueError (pinned host memory is
accepted), where Kiln alone would run that launch on the CPU. Other devices,
or a suite without the option, leave the environment alone.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import kiln.compat
from kiln.runtime.launch_settings import BACKEND_ENV

kiln.compat.install()

_saved_backend: list[Optional[str]] = []


def pytest_configure(config: Any) -> None:
    device = config.getoption("--device", default=None)
    if device not in ("cpu", "cuda"):
        return
    _saved_backend.append(os.environ.get(BACKEND_ENV))
    os.environ[BACKEND_ENV] = device


def pytest_unconfigure(config: Any) -> None:
    if not _saved_backend:
        return
    previous = _saved_backend.pop()
    if previous is None:
        os.environ.pop(BACKEND_ENV, None)
    else:
        os.environ[BACKEND_ENV] = previous
