"""One tuning result for every rank of a ``torch.distributed`` job.

When ``torch.distributed`` is initialized with more than one rank, the
autotuner of rank 0 benchmarks a new key as usual and publishes the config
it chose in the process group's key-value store; the other ranks do not
benchmark that key but wait for rank 0's choice and launch it. Every rank
then runs the same config (kernels whose results depend on the config, such
as split reductions, agree across ranks), and N ranks sharing one node do
not time their configs against each other's benchmarks.

Why the store and not a collective (``broadcast_object_list``): a
collective needs every rank to reach it at the same launch, and a rank that
had tuned a key before (or never launches it) would hang the others. A
store entry is published once and read whenever a rank gets there; a rank
that waits longer than ``KILN_AUTOTUNE_RANK_TIMEOUT`` seconds (600 by
default: rank 0's tuning may legitimately take minutes) warns and tunes the
key itself. ``KILN_AUTOTUNE_SHARE_RANKS=0`` turns the sharing off.

The entry's name hashes what makes a tuning comparable across ranks: the
kernel's source, the tuning key with each device's index dropped (rank 1's
``cuda:1`` is rank 0's ``cuda:0``), and the configs that were benchmarked.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import sys
import warnings
from typing import Any, Optional, Sequence

from kiln.runtime import launch_settings as _settings

SHARE_ENV = "KILN_AUTOTUNE_SHARE_RANKS"
TIMEOUT_ENV = "KILN_AUTOTUNE_RANK_TIMEOUT"
DEFAULT_TIMEOUT = 600.0

# What rank 0 publishes when no config could run: the other ranks then fail
# as it did instead of waiting for a choice that will not come.
NO_CONFIG = "\0no config"

_DEVICE_INDEX = re.compile(r"\b(cuda|xpu|hip):\d+\b")


class RankGroup:
    """This process's rank and the process group's key-value store."""

    def __init__(self, rank: int, store: Any) -> None:
        self.rank = rank
        self.store = store

    def publish(self, name: str, choice: str) -> None:
        """Rank 0: makes ``choice`` (a config's text, or NO_CONFIG) the answer for ``name``."""
        self.store.set(name, choice)

    def receive(self, name: str, kernel_name: str) -> Optional[str]:
        """Another rank: rank 0's answer for ``name``, or None (with a
        warning) when it did not come within the timeout."""
        timeout = rank_timeout()
        try:
            self.store.wait([name], datetime.timedelta(seconds=timeout))
            return self.store.get(name).decode()
        except Exception as error:  # noqa: BLE001 - a store's timeout error type differs across torch versions
            warnings.warn(f"kiln.autotune: kernel {kernel_name}: rank {self.rank} got no tuning result from "
                          f"rank 0 within {timeout:g} s ({type(error).__name__}); tuning this key on this rank",
                          stacklevel=_settings.user_stacklevel())
            return None


def rank_timeout() -> float:
    """``KILN_AUTOTUNE_RANK_TIMEOUT`` in seconds (default 600).

    Raises:
        ValueError: when the variable is not a positive number.
    """
    return _settings.seconds_setting(TIMEOUT_ENV, DEFAULT_TIMEOUT, allow_zero=False,
                                     complaint="is not a positive number of seconds")


def current_group() -> Optional[RankGroup]:
    """The rank group to share tuning results with: None unless sharing is
    on and ``torch.distributed`` is initialized with two or more ranks.

    torch is not imported for this: a program that never imported it has
    no process group."""
    if not _settings.parse_flag(os.environ.get(SHARE_ENV, "1"), SHARE_ENV):
        return None
    torch = sys.modules.get("torch")
    distributed = getattr(torch, "distributed", None) if torch is not None else None
    if distributed is None or not distributed.is_available() or not distributed.is_initialized():
        return None
    if distributed.get_world_size() < 2:
        return None
    try:
        # Not public API, but present since torch 1.x: the default group's
        # store, which every rank of the job reaches.
        store = distributed.distributed_c10d._get_default_store()
    except Exception:  # noqa: BLE001 - a torch without it: tune on every rank, as without a group
        return None
    return RankGroup(distributed.get_rank(), store)


def entry_name(kernel_source_key: str, tuning_key: tuple, configs: Sequence[Any]) -> str:
    """The store entry of one tuning, the same on every rank."""
    neutral = [_DEVICE_INDEX.sub(r"\1", item) if isinstance(item, str) else repr(item) for item in tuning_key]
    document = {"source": kernel_source_key, "key": neutral, "configs": [str(config) for config in configs]}
    digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()
    return f"kiln/autotune/{digest}"
