"""The on-disk kernel cache shared by processes (kiln.runtime.disk_cache):
one compile per key however many processes miss on it, locks of killed or
failing compilers, the lock timeout, entries of another compiler build, the
size bound and its pruning, clearing while others read, and the ``kiln``
command (kiln.cli). No GPU needed: kernels compile for sm_90a."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

import kiln
import kiln.language as kl
from kiln import cli
from kiln.compiler import frontend
from kiln.errors import CompilationError
from kiln.runtime import disk_cache, disk_cache_sharing
# A program compiling one kernel, run as several processes sharing a cache.
# Each compile the frontend runs is a line in the log file: the count of
# compiles does not rest on what the cache reports.
_PROGRAM = '''
import hashlib
import os
import sys
import time

import kiln
import kiln.language as kl
from kiln.compiler import frontend
from kiln.runtime import disk_cache, disk_cache_sharing


@kiln.jit
def shared_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


def compile_it():
    return kiln.compile(shared_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 128},
                        target="sm_90a")


def digest(compiled):
    return hashlib.sha256(compiled.asm["ptx"].encode()).hexdigest()[:16]


def main(mode, log, go):
    # The test pins the compiler build of its processes: a rebuild of the
    # tree during a test must not give them different keys.
    disk_cache.build_identity = lambda: os.environ["PINNED_BUILD"]
    generate = frontend.generate_kiln_ir

    def counting(*args, **kwargs):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\\n")
        if mode == "hang":  # holds the key's lock until killed
            print("compiling", flush=True)
            time.sleep(600)
        if mode == "slow":  # a compile long enough for every process to miss
            time.sleep(0.5)
        return generate(*args, **kwargs)

    frontend.generate_kiln_ir = counting
    if go:
        print("ready", flush=True)
        while not os.path.exists(go):
            time.sleep(0.001)
    if mode == "loop":  # compiles for a while, checking every result
        first = digest(compile_it())
        hits = misses = 0
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            compiled = compile_it()
            assert digest(compiled) == first
            hits, misses = hits + compiled.from_disk_cache, misses + (not compiled.from_disk_cache)
        print(hits, misses)
        return
    compiled = compile_it()
    print("hit" if compiled.from_disk_cache else "miss", digest(compiled), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
'''


_PINNED_BUILD = "kiln; pinned by test_disk_cache_sharing"


@pytest.fixture
def program(tmp_path, monkeypatch) -> Path:
    """The program's file; this process then compiles with its pinned build too."""
    path = tmp_path / "shared_program.py"
    path.write_text(_PROGRAM)
    monkeypatch.setenv("PINNED_BUILD", _PINNED_BUILD)
    monkeypatch.setattr(disk_cache, "build_identity", lambda: _PINNED_BUILD)
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("KILN_CACHE_DIR", str(directory))
    for variable in ("KILN_CACHE_LOCK_TIMEOUT", "KILN_CACHE_MAX_SIZE"):
        monkeypatch.delenv(variable, raising=False)
    return directory


def _start(program: Path, cache: Path, mode: str, log: Path, go: Path | None = None,
           **env: str) -> subprocess.Popen:
    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__)))
    environment = dict(os.environ, KILN_CACHE_DIR=str(cache), PYTHONPATH=python_dir, **env)
    command = [sys.executable, str(program), mode, str(log)] + ([str(go)] if go else [])
    return subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> tuple[str, str]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return out, err


def _load(program: Path):
    """The program as a module of this process: compiling its kernel here
    uses the key its processes use (same source, file and line)."""
    spec = importlib.util.spec_from_file_location("shared_program", program)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir()) if directory.exists() else []


def _entry_names(directory: Path) -> list[str]:
    return [name for name in _names(directory) if len(name) == 64]


# -- compiling once ---------------------------------------------------------------------


def test_processes_missing_on_one_key_compile_it_once(program, cache, tmp_path):
    log, go = tmp_path / "compiles.log", tmp_path / "go"
    processes = [_start(program, cache, "slow", log, go, KILN_CACHE_LOCK_TIMEOUT="240") for _ in range(4)]
    # Every process has imported kiln before any compiles: they all miss at once.
    for process in processes:
        assert process.stdout.readline().strip() == "ready", process.stderr.read()
    go.write_text("")
    results = [_finish(process)[0].split() for process in processes]
    assert sorted(kind for kind, _ in results) == ["hit", "hit", "hit", "miss"]
    assert len({digest for _, digest in results}) == 1
    assert len(log.read_text().split()) == 1, "the kernel was compiled more than once"
    # One whole entry; no lock file or temporary left behind.
    assert [name for name in _names(cache) if name != disk_cache_sharing._PRUNE_STAMP] == _entry_names(cache)
    assert len(_entry_names(cache)) == 1


def test_threads_missing_on_one_key_compile_it_once(program, cache, monkeypatch):
    module = _load(program)
    runs = []
    generate = frontend.generate_kiln_ir

    def slow(*args, **kwargs):
        runs.append(threading.get_ident())
        time.sleep(0.3)
        return generate(*args, **kwargs)

    monkeypatch.setattr(frontend, "generate_kiln_ir", slow)
    results = []
    threads = [threading.Thread(target=lambda: results.append(module.compile_it())) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(results) == 3 and len(runs) == 1
    assert sorted(compiled.from_disk_cache for compiled in results) == [False, True, True]


def test_a_lock_left_by_a_killed_compiler_is_taken_over_at_once(program, cache, tmp_path, monkeypatch):
    log = tmp_path / "compiles.log"
    holder = _start(program, cache, "hang", log)
    assert holder.stdout.readline().strip() == "compiling", holder.stderr.read()
    (lock,) = [name for name in _names(cache) if name.endswith(".lock")]
    assert f"pid {holder.pid} " in (cache / lock).read_text()
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=60)
    holder.stdout.close()
    holder.stderr.close()
    assert (cache / lock).exists(), "the killed compiler leaves its lock file"
    # Waiting for a dead compiler would take the whole timeout.
    monkeypatch.setenv("KILN_CACHE_LOCK_TIMEOUT", "300")
    start = time.monotonic()
    compiled = _load(program).compile_it()
    assert time.monotonic() - start < 60
    assert not compiled.from_disk_cache
    assert _names(cache) == sorted([*_entry_names(cache), disk_cache_sharing._PRUNE_STAMP])
    assert _load(program).compile_it().from_disk_cache


def test_a_waiter_compiles_itself_after_the_lock_timeout(program, cache, tmp_path, monkeypatch):
    holder = _start(program, cache, "hang", tmp_path / "compiles.log")
    try:
        assert holder.stdout.readline().strip() == "compiling", holder.stderr.read()
        monkeypatch.setenv("KILN_CACHE_LOCK_TIMEOUT", "1.5")
        start = time.monotonic()
        with pytest.warns(RuntimeWarning, match=rf"waited 1.5 s for pid {holder.pid} on .* to compile kernel "
                                                rf"shared_kernel.*KILN_CACHE_LOCK_TIMEOUT"):
            compiled = _load(program).compile_it()
        assert 1.5 <= time.monotonic() - start < 60
        assert not compiled.from_disk_cache and len(_entry_names(cache)) == 1
        # The entry this process wrote is read by the next, though the lock is still held.
        assert _load(program).compile_it().from_disk_cache
        # 0: compile at once, without a warning.
        monkeypatch.setenv("KILN_CACHE_LOCK_TIMEOUT", "0")
        disk_cache_sharing.clear(str(cache))
        assert [name for name in _names(cache) if name.endswith(".lock")], "clear leaves a held lock"
        start = time.monotonic()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert not _load(program).compile_it().from_disk_cache
        assert time.monotonic() - start < 30
    finally:
        holder.kill()
        holder.communicate(timeout=60)


@kiln.jit
def broken_kernel(x_ptr):
    kl.store(x_ptr, undefined_name)  # noqa: F821 - the compile error under test


def _compile_broken() -> kiln.CompiledKernel:
    return kiln.compile(broken_kernel, {"x_ptr": "*fp32"}, target="sm_90a")


def test_a_compile_error_releases_the_lock(cache, monkeypatch):
    monkeypatch.setenv("KILN_CACHE_LOCK_TIMEOUT", "30")
    with pytest.raises(CompilationError, match="undefined_name") as first:
        _compile_broken()
    # The failed compile's frames stay alive in `first`; its lock must not.
    start = time.monotonic()
    with pytest.raises(CompilationError, match="undefined_name"):
        _compile_broken()
    assert time.monotonic() - start < 10 and first.value is not None
    assert _names(cache) == []


def test_a_waiter_takes_over_when_the_holder_fails(cache):
    key = disk_cache.CacheKey("ab" * 32, {"format": 2})
    metadata = {"name": "k", "target": "sm_90a", "num_warps": 4, "num_stages": 3}
    holding, claims = threading.Event(), []

    def holder():
        with pytest.raises(RuntimeError):
            with disk_cache_sharing.compile_once(str(cache), key, metadata) as claim:
                assert claim.hit is None
                holding.set()
                time.sleep(0.5)
                raise RuntimeError("the compile failed")

    def waiter():
        holding.wait(timeout=60)
        with disk_cache_sharing.compile_once(str(cache), key, metadata) as claim:
            claims.append((claim.hit, claim._lock is not None, time.monotonic()))

    threads = [threading.Thread(target=holder), threading.Thread(target=waiter)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    (hit, locked, when), = claims
    assert hit is None and locked, "the waiter compiles, holding the lock"
    assert 0.4 < when - start < 10
    assert _names(cache) == []


def test_malformed_lock_timeouts_are_errors(cache, monkeypatch):
    for value in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv("KILN_CACHE_LOCK_TIMEOUT", value)
        with pytest.raises(ValueError, match=rf"KILN_CACHE_LOCK_TIMEOUT='{value}' is not a number of seconds"):
            kiln.compile(broken_kernel, {"x_ptr": "*fp32"}, target="sm_90a")
    monkeypatch.setenv("KILN_CACHE_LOCK_TIMEOUT", "")
    assert disk_cache.lock_timeout() == disk_cache.DEFAULT_LOCK_TIMEOUT == 180


# -- entries of another build -----------------------------------------------------------------


@kiln.jit
def plain_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def _compile_plain(block: int = 128) -> kiln.CompiledKernel:
    return kiln.compile(plain_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": block},
                        target="sm_90a")


def test_entries_of_another_build_are_not_trusted(cache, monkeypatch):
    ours = _compile_plain()
    (own,) = _entry_names(cache)
    with monkeypatch.context() as patch:
        patch.setattr(disk_cache, "build_identity", lambda: "kiln 0.0.1; python 0; _C other")
        theirs = _compile_plain()
    assert not theirs.from_disk_cache, "an entry of this build was read by another"
    (other,) = set(_entry_names(cache)) - {own}
    assert _compile_plain().from_disk_cache
    # The other build's entry under this build's key, whole and checksummed:
    # its key document names the other build, so it is a miss and replaced.
    os.rename(cache / own, cache / "aside")
    os.rename(cache / other, cache / own)
    again = _compile_plain()
    assert not again.from_disk_cache and again == ours
    manifest = json.loads((cache / own / "metadata.json").read_bytes().partition(b"\n")[2])
    assert manifest["key"]["build"] == disk_cache.build_identity()


# -- the size bound -----------------------------------------------------------------------------

_METADATA = {"name": "k", "target": "sm_90a", "num_warps": 4, "num_stages": 3, "signature": {}, "constexprs": {}}


def _write(directory: Path, index: int, size: int, used: float) -> disk_cache.CacheKey:
    """An entry of about ``size`` bytes, last used at ``used``."""
    key = disk_cache.CacheKey(f"{index:064x}", {"format": 2, "index": index})
    assert disk_cache.write(str(directory), key, {"ptx": "x" * size}, _METADATA, {"ptx": "k.ptx"})
    os.utime(directory / key.digest, (used, used))
    return key


def test_prune_removes_the_least_recently_used_first(tmp_path):
    now = time.time()
    keys = [_write(tmp_path, index, 10_000, now - 1000 + index) for index in range(6)]
    sizes = {info.digest: info.size for info in disk_cache_sharing.entries(str(tmp_path))}
    assert all(10_000 < size < 11_000 for size in sizes.values())
    # A hit marks an entry used: the oldest becomes the newest.
    assert disk_cache.read(str(tmp_path), keys[0], _METADATA) is not None
    assert [info.digest for info in disk_cache_sharing.entries(str(tmp_path))][-1] == keys[0].digest
    bound = 3 * 11_000
    removed = disk_cache_sharing.prune(str(tmp_path), bound)
    assert [info.digest for info in removed] == [key.digest for key in keys[1:4]]
    left = disk_cache_sharing.entries(str(tmp_path))
    assert sorted(info.digest for info in left) == sorted([keys[0].digest, keys[4].digest, keys[5].digest])
    assert sum(info.size for info in left) <= bound
    assert _names(tmp_path) == sorted(info.digest for info in left)
    assert disk_cache_sharing.prune(str(tmp_path), 0) == left and _names(tmp_path) == []


def test_prune_renames_an_entry_aside_before_deleting_it(tmp_path, monkeypatch):
    _write(tmp_path, 1, 100, time.time())
    rmtree = disk_cache.shutil.rmtree
    deleted = []

    def checking(path, *args, **kwargs):
        deleted.append(os.path.basename(path))
        assert not os.path.basename(path).startswith("0"), "an entry is deleted under its own name"
        return rmtree(path, *args, **kwargs)

    monkeypatch.setattr(disk_cache.shutil, "rmtree", checking)
    assert len(disk_cache_sharing.prune(str(tmp_path), 0)) == 1
    assert len(deleted) == 1 and deleted[0].startswith(".discard-")


def test_prune_removes_what_killed_processes_left(tmp_path):
    key = _write(tmp_path, 1, 100, time.time())
    old, new = tmp_path / ".0123456789abcdef-old", tmp_path / ".0123456789abcdef-new"
    for temporary in (old, new):
        temporary.mkdir()
        (temporary / "k.ptx").write_text("half")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    (tmp_path / ".discard-0123456789abcdef-1-0").mkdir()
    orphan = tmp_path / (key.digest + ".lock")
    orphan.write_text("pid 1 on a host that died\n")
    held = disk_cache_sharing._try_lock(str(tmp_path / ("e" * 64 + ".lock")))
    (tmp_path / "notes.txt").write_text("not Kiln's")
    try:
        assert disk_cache_sharing.prune(str(tmp_path), 1 << 30) == []
        # A write in progress, a held lock and files Kiln did not write stay.
        assert _names(tmp_path) == sorted([key.digest, new.name, "e" * 64 + ".lock", "notes.txt"])
    finally:
        held.release()
    assert _names(tmp_path) == sorted([key.digest, new.name, "notes.txt"])


def test_writes_keep_the_cache_under_its_bound(cache, monkeypatch):
    monkeypatch.setattr(disk_cache_sharing, "_PRUNE_INTERVAL", 0.0)
    blocks = (64, 128, 256, 512)
    sizes = []
    for block in blocks:
        _compile_plain(block)
        sizes.append(max(disk_cache_sharing.entries(str(cache)), key=lambda info: info.last_used).size)
    disk_cache_sharing.clear(str(cache))
    # Room for any two of these entries, never for three.
    bound = 2 * max(sizes)
    assert 3 * min(sizes) > bound
    monkeypatch.setenv("KILN_CACHE_MAX_SIZE", str(bound))
    for index, block in enumerate(blocks):
        time.sleep(0.02)  # distinct last uses
        assert not _compile_plain(block).from_disk_cache
        listed = disk_cache_sharing.entries(str(cache))
        assert sum(info.size for info in listed) <= bound
        assert len(listed) == min(index + 1, 2)
    # The two most recent stay: they are hits; the others were pruned.
    assert _compile_plain(512).from_disk_cache and _compile_plain(256).from_disk_cache
    assert not _compile_plain(64).from_disk_cache


def test_writes_prune_only_now_and_then(cache, monkeypatch):
    monkeypatch.setenv("KILN_CACHE_MAX_SIZE", "1")
    _compile_plain(64)
    assert _entry_names(cache) == [], "the first write in a cache prunes"
    _compile_plain(128)
    _compile_plain(256)
    assert len(_entry_names(cache)) == 2, "writes within the interval do not"
    os.utime(cache / disk_cache_sharing._PRUNE_STAMP, (0, 0))
    _compile_plain(512)
    assert _entry_names(cache) == []


@pytest.mark.parametrize("text, size", [("1073741824", 1 << 30), ("512M", 512 << 20), ("2G", 2 << 30),
                                        ("2GiB", 2 << 30), ("10kb", 10 << 10), ("1.5K", 1536), (" 7 B ", 7),
                                        ("0", 0), ("1t", 1 << 40)])
def test_sizes(text, size):
    assert disk_cache.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "-1", "12X", "G", "1e3", "5iB", "lots", "1.2.3M"])
def test_malformed_sizes(text, cache, monkeypatch):
    with pytest.raises(ValueError, match=r"KILN_CACHE_MAX_SIZE=.* is not a size"):
        disk_cache.parse_size(text)
    if text:
        monkeypatch.setenv("KILN_CACHE_MAX_SIZE", text)
        with pytest.raises(ValueError, match=r"KILN_CACHE_MAX_SIZE=.* is not a size"):
            _compile_plain()


# -- clearing ------------------------------------------------------------------------------------


def test_clear_while_another_process_reads(program, cache, tmp_path):
    reader = _start(program, cache, "loop", tmp_path / "compiles.log")
    clears = 0
    while reader.poll() is None:
        disk_cache_sharing.clear(str(cache))
        clears += 1
        time.sleep(0.1)
    out, err = _finish(reader)
    hits, misses = map(int, out.split())
    # Every result was whole (the reader checks each), some were reads and
    # some were compiles after a clear removed the entry.
    assert clears >= 5 and hits >= 1 and misses >= 2, (clears, hits, misses)


def test_clear_removes_entries_and_timings_only(tmp_path):
    keys = [_write(tmp_path, index, 100, time.time()) for index in range(3)]
    (tmp_path / "autotune").mkdir()
    (tmp_path / "autotune" / "k-0.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("not Kiln's")
    removed = disk_cache_sharing.clear(str(tmp_path))
    assert sorted(info.digest for info in removed) == [key.digest for key in keys]
    assert _names(tmp_path) == ["notes.txt"]
    assert disk_cache_sharing.clear(str(tmp_path / "missing")) == []


# -- the kiln command --------------------------------------------------------------------------


def test_info(cache, capsys):
    _compile_plain()
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"kiln {kiln.__version__} at ")
    assert f"build: {disk_cache.build_identity()}\n" in out
    assert "  cuda (also nvidia): " in out and "  cpu: usable: compiles for " in out
    assert "CUDA devices: " in out and "ptxas: " in out
    size = disk_cache.format_size(disk_cache_sharing.entries(str(cache))[0].size)
    assert f"cache: {cache}: 1 entry, {size} of at most 1.0 GiB\n" in out


def test_info_of_a_disabled_cache_and_a_bad_environment(cache, capsys, monkeypatch):
    monkeypatch.setenv("KILN_DISABLE_CACHE", "1")
    monkeypatch.setenv("KILN_CACHE_MAX_SIZE", "2G")
    assert cli.main(["info"]) == 0
    assert f"cache: {cache}: 0 entries, 0 B of at most 2.0 GiB (disabled by KILN_DISABLE_CACHE)\n" in \
        capsys.readouterr().out
    monkeypatch.setenv("KILN_DISABLE_CACHE", "maybe")
    assert cli.main(["info"]) == 1
    assert "kiln: error: KILN_DISABLE_CACHE='maybe' is not a boolean" in capsys.readouterr().err


def test_cache_list(cache, capsys, monkeypatch):
    assert cli.main(["cache", "list"]) == 0
    assert capsys.readouterr().out == f"no entries in {cache}\n"
    _compile_plain()
    time.sleep(0.02)
    with monkeypatch.context() as patch:
        patch.setattr(disk_cache, "build_identity", lambda: "kiln 0.0.1; python 0; _C other")
        _compile_plain(256)
    (cache / "ff.lock").write_text("")
    assert cli.main(["cache", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["KEY", "KERNEL", "TARGET", "SIZE", "LAST", "USE"]
    listed = disk_cache_sharing.entries(str(cache))
    assert [line.split()[0] for line in lines[1:3]] == [info.digest[:16] for info in listed]
    assert lines[1].split()[1:3] == ["plain_kernel", "sm_90a"]
    assert lines[2].split()[1:5] == ["plain_kernel", "(another", "build)", "sm_90a"]
    assert lines[3] == f"2 entries, {disk_cache.format_size(sum(i.size for i in listed))} in {cache}"


def test_cache_prune_and_clear(cache, capsys):
    for block in (64, 128, 256):
        _compile_plain(block)
        time.sleep(0.02)
    listed = disk_cache_sharing.entries(str(cache))
    bound = listed[1].size + listed[2].size
    assert cli.main(["cache", "prune", "--max-size", str(bound)]) == 0
    assert capsys.readouterr().out.startswith("removed 1 entry (")
    assert [info.digest for info in disk_cache_sharing.entries(str(cache))] == [info.digest for info in listed[1:]]
    assert cli.main(["cache", "prune"]) == 0  # to KILN_CACHE_MAX_SIZE, 1 GiB
    assert capsys.readouterr().out.startswith("removed 0 entries (0 B); 2 left, ")
    assert cli.main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.startswith("removed 2 entries (")
    assert _entry_names(cache) == []
    assert not _compile_plain(256).from_disk_cache


@pytest.mark.parametrize("argv, message", [
    ([], "the following arguments are required: COMMAND"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["cache"], "the following arguments are required: ACTION"),
    (["cache", "empty"], "invalid choice: 'empty'"),
    (["cache", "prune", "--max-size", "lots"], "--max-size='lots' is not a size"),
    (["cache", "prune", "--max-size"], "expected one argument"),
    (["info", "--verbose"], "unrecognized arguments: --verbose"),
])
def test_bad_command_lines(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: kiln") and message in err


def test_a_bad_size_in_the_environment(cache, capsys, monkeypatch):
    monkeypatch.setenv("KILN_CACHE_MAX_SIZE", "lots")
    assert cli.main(["cache", "prune"]) == 1
    assert capsys.readouterr().err == ("kiln: error: KILN_CACHE_MAX_SIZE='lots' is not a size; use a number of bytes "
                                       "or a number with K, M, G or T (for example 512M or 2G)\n")


def test_python_dash_m_kiln(cache):
    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__)))
    environment = dict(os.environ, KILN_CACHE_DIR=str(cache), PYTHONPATH=python_dir)
    done = subprocess.run([sys.executable, "-m", "kiln", "cache", "list"], env=environment, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == f"no entries in {cache}\n", done.stderr
    done = subprocess.run([sys.executable, "-m", "kiln", "info"], env=environment, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "backends:" in done.stdout, done.stderr
    done = subprocess.run([sys.executable, "-m", "kiln", "cache", "wipe"], env=environment, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2 and "invalid choice: 'wipe'" in done.stderr
