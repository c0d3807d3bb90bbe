"""Mapping PTX lines back to kernel source lines.

The NVIDIA pipeline emits ``.file``/``.loc`` directives (as ``nvcc -lineinfo``
does), so a PTX line that ptxas complains about can be traced to the kernel
source line that produced it: the nearest ``.loc`` above it.
"""

from __future__ import annotations

import re
from typing import Optional

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_PTXAS_LINE = re.compile(r"line (\d+); (?:error|fatal)", re.IGNORECASE)


def source_location(ptx: str, ptx_line: int) -> Optional[tuple[str, int, int]]:
    """The (file, line, column) of the kernel source that PTX line
    ``ptx_line`` (1-based) came from, or None if no ``.loc`` precedes it.
    Column 0 (unknown) is reported as 1."""
    lines = ptx.splitlines()
    files = {}
    for text in lines:
        match = _FILE.match(text)
        if match:
            files[match.group(1)] = match.group(2)
    for text in reversed(lines[: max(0, min(ptx_line, len(lines)))]):
        match = _LOC.match(text)
        if match and match.group(1) in files and int(match.group(2)) > 0:
            return files[match.group(1)], int(match.group(2)), max(1, int(match.group(3)))
    return None


def first_error_location(ptx: str, ptxas_output: str) -> Optional[tuple[str, int, int]]:
    """The source location of the first PTX line ptxas reports an error on."""
    match = _PTXAS_LINE.search(ptxas_output)
    if not match:
        return None
    return source_location(ptx, int(match.group(1)))
