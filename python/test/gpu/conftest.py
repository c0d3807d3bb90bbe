"""GPU-only tests: what only a CUDA device has (PTX contents, CUDA streams,
CUDA launch errors, CUDA-event timing). Kernel correctness tests live in
../kernels and run on every backend present.

Every test in this folder is skipped, with the reason, when there is no
usable CUDA device (torch without CUDA, or kiln's driver cannot open libcuda
or sees no device)."""

from pathlib import Path

import pytest

from kiln_test_support import cuda_skip_reason

_HERE = Path(__file__).resolve().parent


SKIP_REASON = cuda_skip_reason()


def pytest_collection_modifyitems(config, items):
    # This hook sees the whole session's items: mark only this folder's.
    if SKIP_REASON is None:
        return
    marker = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(marker)
