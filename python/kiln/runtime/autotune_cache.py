"""The autotuner's timings kept on disk (``cache_results=True`` or
``KILN_CACHE_AUTOTUNING=1``): one JSON file per tuning under
``<kiln cache dir>/autotune/``, named by a hash of the compiler build, the
kernel's name and source hash, the tuning key and the configs. An entry that
cannot be read or does not match is ignored (the key is re-tuned and the
entry rewritten); a write is atomic."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

if TYPE_CHECKING:
    from kiln.runtime.autotuner import Config

__all__ = ["median_ms", "path", "read", "write"]

_FORMAT = 1


def median_ms(timing: Any) -> float:
    """The time that ranks a config: the first of do_bench's quantiles, or the one number."""
    if isinstance(timing, (list, tuple)):
        return float(timing[0])
    return float(timing)


def path(kernel_name: str, source_key: str, key: tuple, configs: Sequence["Config"]) -> Optional[str]:
    """Where the timings of ``configs`` for ``key`` are kept; None when the
    kiln cache is disabled."""
    from kiln.runtime import disk_cache

    directory = disk_cache.cache_dir()
    if directory is None:
        return None
    document = {
        "format": _FORMAT,
        "build": disk_cache.build_identity(),
        "kernel": kernel_name,
        "source": source_key,
        "key": repr(key),
        "configs": [str(config) for config in configs],
    }
    digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()
    return os.path.join(directory, "autotune", f"{kernel_name[:100]}-{digest}.json")


def read(path: str, configs: Sequence[Config]) -> Optional[dict[Config, Any]]:
    """The stored timings of ``configs``, or None when the entry is missing,
    unreadable, or does not hold one usable timing per config, in order."""
    try:
        with open(path) as f:
            entry = json.load(f)
        stored = entry["timings"]
        if entry["format"] != _FORMAT or len(stored) != len(configs):
            return None
        timings: dict[Config, Any] = {}
        for config, (name, timing) in zip(configs, stored):
            if name != str(config):
                return None
            values = timing if isinstance(timing, list) else [timing]
            if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                return None
            timings[config] = timing
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if all(median_ms(timing) == float("inf") for timing in timings.values()):
        return None
    return timings


def write(path: str, configs: Sequence[Config], timings: Mapping[Config, Any]) -> None:
    """Stores the timings (atomically: a reader sees the old file or the new
    one); an OS error leaves the cache as it was."""
    entry = {"format": _FORMAT, "timings": [[str(config), timings[config]] for config in configs]}
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".autotune-", suffix=".json", dir=directory)
    except OSError:
        return
    try:
        with os.fdopen(handle, "w") as f:
            json.dump(entry, f)
        os.replace(temporary, path)
    except (OSError, TypeError, ValueError):
        try:
            os.unlink(temporary)
        except OSError:
            pass
