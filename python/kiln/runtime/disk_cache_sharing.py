"""Sharing the on-disk cache (:mod:`kiln.runtime.disk_cache`) between
processes, and keeping it bounded.

Processes that miss on one key at once compile it once: the first takes a
lock on ``<key>.lock`` beside the entry (:func:`compile_once`), compiles and
writes; the others wait for the entry and read it. A waiter gives up after
``KILN_CACHE_LOCK_TIMEOUT`` seconds and compiles itself. Every so often a
write prunes the least recently used entries until the cache is at most
``KILN_CACHE_MAX_SIZE`` (:func:`prune`); :func:`clear` empties it. Neither
ever leaves a partial entry under an entry's name. ``python -m kiln cache``
lists, prunes and clears.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import socket
import time
import warnings
from typing import Any, Iterator, Mapping, NamedTuple, Optional

try:
    import fcntl
except ImportError:  # not a POSIX system: processes then compile without waiting for each other
    fcntl = None  # type: ignore[assignment]

from kiln.runtime.disk_cache import (_DISCARD_PREFIX, _METADATA_FILE, LOCK_TIMEOUT_ENV, CacheKey, _discard,
                                     lock_timeout, max_size, read, write)

__all__ = ["Claim", "EntryInfo", "clear", "compile_once", "entries", "prune"]


# -- compiling once across processes ----------------------------------------------------
#
# The lock of a key is ``<key>.lock`` beside its entry, held with flock(2)
# on a file opened (created if missing) for the purpose. Chosen over a lock
# file created with O_CREAT|O_EXCL and recording its owner because:
#
# * the kernel drops a flock when its holder dies, kill -9 included, so a
#   dead compiler never blocks anyone; an O_EXCL file outlives its creator,
#   and telling that it is stale needs its pid checked (impossible for a
#   holder on another host sharing the directory) or an age guessed;
# * on NFS, Linux carries a flock to the server as a whole-file lock, which
#   the server drops when the holding client's lease ends, so crashed hosts
#   do not block either; where a file system refuses locks (an NFS mount
#   without a lock manager, say) flock fails and processes compile without
#   waiting for each other, as they did before this lock: duplicated work,
#   never a wrong entry, since entries still arrive by atomic rename;
# * a flock belongs to one open file, not to a process (as fcntl record
#   locks do), so two threads of one process exclude each other as two
#   processes do, and closing an unrelated descriptor of the file does not
#   drop it.
#
# The holder removes the lock file before unlocking it, so the directory
# does not keep one per key ever compiled. A process that opened the file
# before it was removed may lock the removed file afterwards; it then finds
# that the path no longer names that file and tries again (_try_lock), so
# two processes never both believe they hold a key.

_LOCK_SUFFIX = ".lock"
# Polling a busy key starts fast (most compiles take 50-200 ms) and backs off.
_FIRST_POLL = 0.005
_LAST_POLL = 0.1


class _Lock:
    """A held lock of one key: the descriptor its flock is on, and its path."""

    __slots__ = ("path", "fd")

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self.fd: Optional[int] = fd

    def release(self) -> None:
        """Removes the lock file (when it is still this lock's) and unlocks it."""
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        try:
            if _same_file(os.fstat(fd), os.stat(self.path)):
                os.unlink(self.path)
        except OSError:
            pass
        os.close(fd)  # drops the flock


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@functools.lru_cache(maxsize=1)
def _host() -> str:
    return socket.gethostname()


def _try_lock(path: str) -> Optional[_Lock]:
    """The lock at ``path``, or None while another process (or thread) holds it.

    Raises:
        OSError: when the lock file cannot be made or the file system has no locks.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)  # not inherited by child processes (PEP 446)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise
    try:
        current = os.stat(path)
    except FileNotFoundError:
        current = None
    if current is None or not _same_file(os.fstat(fd), current):
        # Locked a lock file its holder removed after this process opened it.
        os.close(fd)
        return None
    try:
        # Who holds it, for the message of a waiter that gives up.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {_host()}\n".encode(), 0)
    except OSError:
        pass
    return _Lock(path, fd)


def _holder(path: str) -> str:
    """Who holds the lock at ``path``, as its holder recorded it."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(200).strip()
    except OSError:
        text = ""
    return text or "a process that recorded nothing"


class Claim:
    """What :func:`compile_once` found for one key: the entry (``hit``, as
    :func:`read` returns it), or None and the duty to compile and
    :meth:`store` the result, holding the key's lock when it could be taken."""

    __slots__ = ("directory", "key", "hit", "_lock")

    def __init__(self, directory: Optional[str], key: Optional[CacheKey], hit: Optional[tuple[dict, dict]],
                 lock: Optional[_Lock] = None) -> None:
        self.directory = directory
        self.key = key
        self.hit = hit
        self._lock = lock

    def store(self, asm: Mapping[str, Any], metadata: Mapping[str, Any], file_names: Mapping[str, str]) -> None:
        """Writes the compiled entry (see :func:`write`), then lets the
        processes waiting for it read it; a write may prune the cache."""
        if self.directory is None or self.key is None:
            return
        written = write(self.directory, self.key, asm, metadata, file_names)
        self.release()
        if written:
            _maybe_prune(self.directory)

    def release(self) -> None:
        """Unlocks the key (nothing when it is not held); waiters then take it over."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None


@contextlib.contextmanager
def compile_once(directory: Optional[str], key: Optional[CacheKey], metadata: Mapping[str, Any]) -> Iterator[Claim]:
    """Looks up the entry of ``key`` in ``directory``; on a miss, makes sure
    one process compiles it while others wait for it.

    The claim yielded holds the entry (``claim.hit``) or None; with None the
    caller compiles and calls ``claim.store(...)``. Until then, or until
    the ``with`` block ends (a compile error included), this process holds
    the key's lock, and other processes missing on the key wait, reading the
    entry as soon as it appears. When the lock is released without an entry
    (the compile failed), one of them takes the lock and compiles, so it
    meets the same error itself. A waiter that has waited
    ``KILN_CACHE_LOCK_TIMEOUT`` seconds compiles without the lock, with a
    warning; a directory whose file system has no locks compiles without
    waiting. With ``directory`` or ``key`` None nothing is looked up or held.

    Raises:
        ValueError: when ``KILN_CACHE_LOCK_TIMEOUT`` or ``KILN_CACHE_MAX_SIZE``
            is malformed.
    """
    if directory is None or key is None:
        yield Claim(None, None, None)
        return
    timeout = lock_timeout()
    max_size()  # reported on every compile, not only when a write prunes
    claim = _claim(directory, key, metadata, timeout)
    try:
        yield claim
    finally:
        claim.release()


def _claim(directory: str, key: CacheKey, metadata: Mapping[str, Any], timeout: float) -> Claim:
    hit = read(directory, key, metadata)
    if hit is not None or fcntl is None:
        return Claim(directory, key, hit)
    path = os.path.join(directory, key.digest + _LOCK_SUFFIX)
    deadline = time.monotonic() + timeout
    poll = _FIRST_POLL
    while True:
        try:
            os.makedirs(directory, exist_ok=True)
            lock = _try_lock(path)
        except OSError:
            # No lock to be had (a read-only directory, a file system
            # without locks): compile, as every process did before locks.
            return Claim(directory, key, None)
        # Read again once locked too: the previous holder may have written
        # the entry between this process's last read and its lock.
        hit = read(directory, key, metadata)
        if hit is not None or lock is not None:
            if hit is not None and lock is not None:
                lock.release()
                lock = None
            return Claim(directory, key, hit, lock)
        left = deadline - time.monotonic()
        if left <= 0:
            if timeout > 0:
                warnings.warn(f"kiln: waited {timeout:g} s for {_holder(path)} to compile kernel "
                              f"{metadata.get('name', '?')} into the cache {directory}; compiling it here instead "
                              f"({LOCK_TIMEOUT_ENV} sets how long to wait)", RuntimeWarning, stacklevel=4)
            return Claim(directory, key, None)
        time.sleep(min(poll, left))
        poll = min(poll * 2, _LAST_POLL)


# -- listing, pruning, clearing ------------------------------------------------------------

# Pattern strings, compiled by `re` on first use (a cache hit lists nothing).
_ENTRY_NAME = r"[0-9a-f]{64}"
# A write's temporary directory: tempfile.mkdtemp(prefix=".<16 digits>-").
_TEMPORARY_NAME = r"\.[0-9a-f]{16}-[^/]+"
# The directory the autotuner keeps its timings in (kiln.runtime.autotuner).
_AUTOTUNE_DIR = "autotune"
# A write's temporary directory this old is a killed writer's.
_STALE_TEMPORARY = 3600.0
# Writes prune at most this often per cache directory (seconds), so that a
# burst of compiles scans the directory once: the bound can be exceeded by
# what a minute of compiles writes, until the next write after it.
_PRUNE_INTERVAL = 60.0
# Its modification time is when the directory was last pruned by a write.
_PRUNE_STAMP = ".last-prune"


class EntryInfo(NamedTuple):
    """One entry of the cache: its key (``digest``), where it is, its size in
    bytes and last use (a time as ``time.time()`` gives it). ``name``,
    ``target`` and ``build`` (the compiler build that wrote it) come from its
    manifest when :func:`entries` was asked for details, None when it has
    none readable."""

    digest: str
    path: str
    size: int
    last_used: float
    name: Optional[str] = None
    target: Optional[str] = None
    build: Optional[str] = None


def _directory_size(path: str) -> int:
    """The bytes of the regular files in ``path`` (an entry holds nothing else)."""
    total = 0
    with os.scandir(path) as items:
        for item in items:
            if item.is_file(follow_symlinks=False):
                total += item.stat(follow_symlinks=False).st_size
    return total


def _details(path: str) -> tuple[Optional[str], Optional[str], Optional[str]]:
    """The kernel name, target and build of the entry at ``path``, as far
    as its manifest tells (shown, never trusted: reads check the checksum)."""
    try:
        with open(os.path.join(path, _METADATA_FILE), "rb") as f:
            manifest = json.loads(f.read().partition(b"\n")[2])
        stored = manifest.get("metadata") if isinstance(manifest, dict) else None
        document = manifest.get("key") if isinstance(manifest, dict) else None
    except (OSError, ValueError, RecursionError):
        return None, None, None
    stored = stored if isinstance(stored, dict) else {}
    document = document if isinstance(document, dict) else {}

    def text(value: Any) -> Optional[str]:
        return value if isinstance(value, str) else None

    return text(stored.get("name")), text(stored.get("target")), text(document.get("build"))


def entries(directory: str, details: bool = False) -> list[EntryInfo]:
    """The entries in ``directory``, least recently used first (none when it
    does not exist). With ``details``, each one's manifest is read for its
    kernel name, target and build. Entries removed while listing are left out."""
    try:
        with os.scandir(directory) as items:
            names = [item.name for item in items if re.fullmatch(_ENTRY_NAME, item.name)]
    except OSError:
        return []
    found: list[EntryInfo] = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            used = os.stat(path).st_mtime
            size = _directory_size(path)
        except OSError:
            continue
        found.append(EntryInfo(name, path, size, used, *(_details(path) if details else ())))
    found.sort(key=lambda info: (info.last_used, info.digest))
    return found


def _sweep(directory: str, min_age: float) -> None:
    """Removes what no entry is: directories set aside for removal, write
    temporaries at least ``min_age`` seconds old (killed writers'; a live
    writer's, with ``min_age`` 0, then fails its rename and stores nothing)
    and lock files no process holds."""
    try:
        with os.scandir(directory) as items:
            names = [item.name for item in items]
    except OSError:
        return
    now = time.time()
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith(_DISCARD_PREFIX):
            shutil.rmtree(path, ignore_errors=True)
        elif re.fullmatch(_TEMPORARY_NAME, name):
            try:
                old = now - os.stat(path).st_mtime >= min_age
            except OSError:
                continue
            if old:
                _discard(path)
        elif name.endswith(_LOCK_SUFFIX) and re.fullmatch(_ENTRY_NAME, name[:-len(_LOCK_SUFFIX)]) and fcntl is not None:
            try:
                lock = _try_lock(path)
            except OSError:
                continue
            if lock is not None:
                lock.release()  # removes the file


def prune(directory: str, max_size: int) -> list[EntryInfo]:
    """Removes the least recently used entries of ``directory`` until the
    rest take at most ``max_size`` bytes, and what killed processes left
    behind; returns the entries removed, in the order removed.

    Safe while other processes use the cache: an entry is renamed aside
    before it is deleted, so a reader finds it whole or not at all (a read
    racing the rename is a miss and recompiles)."""
    listed = entries(directory)
    total = sum(info.size for info in listed)
    removed: list[EntryInfo] = []
    for info in listed:
        if total <= max_size:
            break
        if _discard(info.path):
            removed.append(info)
            total -= info.size
    _sweep(directory, _STALE_TEMPORARY)
    return removed


def clear(directory: str) -> list[EntryInfo]:
    """Removes every entry of ``directory``, the autotuner's stored timings
    and what killed processes left behind; returns the entries removed.
    Files Kiln did not write stay. Safe while other processes use the
    cache, as :func:`prune` is: a compile writing at the same time may store
    its entry after the clear, or not at all."""
    removed = [info for info in entries(directory) if _discard(info.path)]
    _discard(os.path.join(directory, _AUTOTUNE_DIR))
    _sweep(directory, 0.0)
    return removed


def _maybe_prune(directory: str) -> None:
    """Prunes ``directory`` to ``KILN_CACHE_MAX_SIZE`` when no write has for
    :data:`_PRUNE_INTERVAL` seconds, one process at a time."""
    try:
        bound = max_size()
    except ValueError:
        return  # compile_once reported it
    stamp = os.path.join(directory, _PRUNE_STAMP)

    def due() -> bool:
        try:
            return time.time() - os.stat(stamp).st_mtime >= _PRUNE_INTERVAL
        except FileNotFoundError:
            return True

    try:
        if not due():
            return
        fd = os.open(stamp, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # busy: another process is pruning
        if os.fstat(fd).st_size == 0 or due():  # a new stamp, or not pruned while this process waited
            os.utime(fd)
            os.ftruncate(fd, 0)
            os.write(fd, b"pruned\n")
            prune(directory, bound)
    except OSError:
        pass
    finally:
        os.close(fd)
