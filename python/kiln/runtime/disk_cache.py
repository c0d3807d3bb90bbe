"""The on-disk cache of compiled kernels: one directory per key under ``$KILN_CACHE_DIR``.

A compile for a backend whose results can be kept (the NVIDIA backend: its
result is text and a cubin; the CPU backend's is an in-process JIT object
and is never cached) first computes a key and looks for
``<cache dir>/<key>/``. The key is the SHA-256 of a JSON document holding
everything the compiled result depends on:

* the compiler build (:func:`build_identity`);
* the backend's name and its own identity (which ptxas, for NVIDIA);
* the target, ``num_warps``, ``num_stages``, the backend options;
* the signature, the constexpr values and the specialization;
* for the kernel and every ``@kiln.jit`` function it names, transitively
  (found in its globals and closure as the frontend finds them): its source,
  file, first line (locations end up in the IR and the PTX), name,
  ``debug`` and ``noinline``, and the value of every constant global it names.

An entry holds one file per stage of ``asm`` and ``metadata.json``: a first
line with the entry's checksum, then a manifest of the key document, the
metadata the backend added and each stage's file name. The checksum is one
SHA-256 over the manifest's bytes and every stage file, so a change to any
byte of the entry is caught before any value in it is trusted. An entry is
written into a temporary directory beside it and renamed into place, so
readers see a whole entry or none; when another process won the race, its
entry stays and ours is discarded. A read checks the checksum, then the key
document and the metadata; an entry that fails any check, or is not shaped
as a writer writes it, is removed and the kernel recompiled (silently: a
damaged entry costs one compile, nothing else). Any OS error (an unwritable or
unreadable directory) makes the cache step a no-op; it never fails a compile.

A hit marks the entry used (its directory's modification time). Compiling
a key once across processes, the size bound, listing, pruning and clearing
live in :mod:`kiln.runtime.disk_cache_sharing`.

``KILN_CACHE_DIR`` names the directory (unset or empty: ``~/.cache/kiln``);
``KILN_DISABLE_CACHE=1`` turns the cache off. ``python -m kiln cache``
lists, prunes and clears it.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
import os
import re
import shutil
import tempfile
import types
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from kiln.compiler.frontend import global_scope, is_kernel_source
from kiln.compiler.specialization import Specialization
from kiln.language.compile_time import is_constexpr_function
from kiln.language.core import constexpr, dtype
from kiln.runtime.launch_settings import parse_flag, seconds_setting

__all__ = ["CACHE_DIR_ENV", "DEFAULT_LOCK_TIMEOUT", "DEFAULT_MAX_SIZE", "DISABLE_ENV", "LOCK_TIMEOUT_ENV",
           "MAX_SIZE_ENV", "CacheKey", "build_identity", "cache_dir", "configured_cache_dir", "default_cache_dir",
           "format_size", "kernel_key", "lock_timeout", "max_size", "parse_size", "read", "write"]

CACHE_DIR_ENV = "KILN_CACHE_DIR"
DISABLE_ENV = "KILN_DISABLE_CACHE"
LOCK_TIMEOUT_ENV = "KILN_CACHE_LOCK_TIMEOUT"
MAX_SIZE_ENV = "KILN_CACHE_MAX_SIZE"
#: Seconds a process waits for another one compiling the same kernel before
#: compiling it itself: far above the slowest compiles seen (tens of seconds,
#: ptxas included), so a slow compile is never done twice, yet short enough
#: that a hung or stopped compiler costs minutes, not a hung program.
DEFAULT_LOCK_TIMEOUT = 180.0
#: Bytes the entries may take before the least recently used are pruned.
DEFAULT_MAX_SIZE = 1 << 30

# Raised to 2 (and so on) whenever the layout of an entry changes: old
# entries then simply stop matching.
_FORMAT = 2
_METADATA_FILE = "metadata.json"
# Metadata the compile call determines rather than the backend: rebuilt from
# the call on a hit, so values JSON cannot represent (dtype constexprs,
# tuples) come back exactly as a compile gives them.
_CALL_METADATA = ("signature", "constexprs")
# Metadata an entry must agree on with the compile that reads it.
_KEY_METADATA = ("name", "target", "num_warps", "num_stages")


class Uncacheable(Exception):
    """A value the result depends on has no stable spelling for the key."""


@dataclass(frozen=True)
class CacheKey:
    """The key of one compile: ``digest`` (the entry's directory name) and
    the ``document`` it hashes, kept in the entry and compared on a read."""

    digest: str
    document: dict[str, Any]


def cache_dir() -> Optional[str]:
    """The cache directory, or None when ``KILN_DISABLE_CACHE`` is set.

    Raises:
        ValueError: when ``KILN_DISABLE_CACHE`` is not a boolean.
    """
    if parse_flag(os.environ.get(DISABLE_ENV), DISABLE_ENV):
        return None
    return configured_cache_dir()


def default_cache_dir() -> str:
    """The cache directory when ``KILN_CACHE_DIR`` is unset: ``~/.cache/kiln``."""
    return os.path.join(os.path.expanduser("~"), ".cache", "kiln")


def configured_cache_dir() -> str:
    """The directory ``KILN_CACHE_DIR`` names (or the default), whether or
    not ``KILN_DISABLE_CACHE`` turns the cache off: what ``python -m kiln
    cache`` lists, prunes and clears."""
    return os.environ.get(CACHE_DIR_ENV) or default_cache_dir()


_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b)?", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, origin: str = MAX_SIZE_ENV) -> int:
    """Bytes from a size as ``KILN_CACHE_MAX_SIZE`` spells it: a number of
    bytes (``1073741824``) or a number with a binary unit, K, M, G or T,
    optionally followed by ``B`` or ``iB`` (``512M``, ``1.5G``, ``2GiB``).

    Raises:
        ValueError: naming ``origin`` (the variable or option) for anything else.
    """
    match = _SIZE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None or (match.group(3) and not match.group(2) and match.group(3).lower() != "b"):
        raise ValueError(f"{origin}={text!r} is not a size; use a number of bytes or a number with K, M, G "
                         f"or T (for example 512M or 2G)")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()])


def format_size(size: int) -> str:
    """``size`` bytes for people: ``512 B``, ``3.2 KiB``, ``1.0 GiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def max_size() -> int:
    """The bound on the entries' size: ``KILN_CACHE_MAX_SIZE`` (see
    :func:`parse_size`), 1 GiB when unset or empty.

    Raises:
        ValueError: when the variable is not a size.
    """
    text = os.environ.get(MAX_SIZE_ENV)
    return DEFAULT_MAX_SIZE if not text or not text.strip() else parse_size(text)


def lock_timeout() -> float:
    """Seconds to wait for another process compiling the same kernel:
    ``KILN_CACHE_LOCK_TIMEOUT`` (0: never wait), :data:`DEFAULT_LOCK_TIMEOUT`
    when unset or empty.

    Raises:
        ValueError: when the variable is not a non-negative number.
    """
    return seconds_setting(LOCK_TIMEOUT_ENV, DEFAULT_LOCK_TIMEOUT, allow_zero=True,
                           complaint="is not a number of seconds; use a number such as 60 (0: compile without "
                                     "waiting for other processes)")


@functools.lru_cache(maxsize=1)
def build_identity() -> str:
    """The compiler build, computed once per process: ``kiln.__version__``,
    a hash of the path, size and modification time of each Python source
    of the ``kiln`` package (the frontend and the language decide the IR),
    and the size and modification time of the ``kiln._C`` extension. File
    contents are not read: an installed package's files keep the times its
    wheel gives them, and editing or rebuilding rewrites a file, changing
    its time; reading them all costs a first call in a fresh process
    several milliseconds (the shipped, statically linked extension alone is
    about 90 MB, about 0.45 s to hash)."""
    import kiln
    from kiln import _C

    package = os.path.dirname(os.path.abspath(kiln.__file__))
    sources = hashlib.sha256()

    def add_sources(directory: str, relative: str) -> None:
        with os.scandir(directory) as items:
            found = sorted(items, key=lambda item: item.name)
        for item in found:
            if item.is_dir(follow_symlinks=False):
                if item.name != "__pycache__":
                    add_sources(item.path, f"{relative}{item.name}/")
            elif item.name.endswith(".py"):
                stat = item.stat()
                sources.update(f"{relative}{item.name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())

    add_sources(package, "")
    extension = os.stat(_C.__file__)
    return (f"kiln {kiln.__version__}; python {sources.hexdigest()}; "
            f"_C {os.path.basename(_C.__file__)} {extension.st_size} {extension.st_mtime_ns}")


# -- the key ---------------------------------------------------------------------


def encode_constant(value: Any) -> Any:
    """A JSON spelling of a constant that tells apart every value the
    frontend treats differently (1, 1.0 and True; a dtype and its name).

    Raises:
        Uncacheable: for anything else.
    """
    if isinstance(value, constexpr):
        return encode_constant(value.value)
    if value is None or type(value) in (bool, int, float, str):
        return [type(value).__name__, repr(value)]
    if isinstance(value, dtype):
        return ["dtype", type(value).__name__, str(value)]
    if type(value) is tuple:
        return ["tuple", [encode_constant(item) for item in value]]
    raise Uncacheable(f"{type(value).__name__} value")


def decode_constant(spelling: Any) -> Any:
    """The constant that :func:`encode_constant` spelled ``spelling``.

    Raises:
        ValueError: for a spelling that function does not produce.
    """
    from kiln import language

    kind = spelling[0] if isinstance(spelling, list) and spelling else None
    if kind in ("NoneType", "bool", "int", "float", "str") and len(spelling) == 2:
        value = spelling[1]
        if kind == "float":
            return float(value)  # repr of inf and nan is not a literal
        return ast.literal_eval(value)
    if kind == "tuple" and len(spelling) == 2:
        return tuple(decode_constant(item) for item in spelling[1])
    if kind == "dtype" and len(spelling) == 3:
        value = getattr(language, spelling[2], None)
        if isinstance(value, dtype) and type(value).__name__ == spelling[1]:
            return value
    raise ValueError(f"not a constant's spelling: {spelling!r}")


def _names_read(tree: ast.AST) -> list[tuple[str, ...]]:
    """Every name and dotted attribute chain (``mod.helper`` as ("mod",
    "helper")) the source reads, in order of first appearance. Local
    variables are included: the key may then hold a global they shadow,
    which costs nothing but a spurious miss when that global changes."""
    chains: dict[tuple[str, ...], None] = {}
    for node in ast.walk(tree):
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            chain = [node.id]
            for part in reversed(parts):
                chains.setdefault(tuple(chain))
                chain.append(part)
            chains.setdefault(tuple(chain))
    return list(chains)


def _resolve(scope: Mapping[str, Any], chain: tuple[str, ...]) -> tuple[bool, Any]:
    """Looks ``a.b.c`` up through modules only (attributes of other objects
    are runtime values the frontend computes itself)."""
    value = scope.get(chain[0], _resolve)
    for part in chain[1:]:
        if value is _resolve or not isinstance(value, types.ModuleType):
            return False, None
        value = getattr(value, part, _resolve)
    return value is not _resolve, value


def _code_names(code: types.CodeType) -> set[str]:
    """Every name a function's compiled code and the code nested in it
    (comprehensions, lambdas) mention: globals and attributes read,
    locals, closure variables."""
    names = {*code.co_names, *code.co_varnames, *code.co_freevars, *code.co_cellvars}
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _code_names(constant)
    return names


def _chains_from_code(code: types.CodeType, scope: Mapping[str, Any]) -> list[tuple[tuple[str, ...], Any]]:
    """The chains of :func:`_names_read` that resolve in ``scope``, with
    their values, found from the function's compiled code instead of its
    parsed source (about ten times faster: a warm first call computes this
    for every function of the kernel). The code names the attributes it
    reads but not of what, so every name is tried as an attribute of every
    module reached: the result holds each chain the source reads, and may
    hold more, which costs at most a spurious miss."""
    names = sorted(_code_names(code))
    found: list[tuple[tuple[str, ...], Any]] = []

    def visit(chain: tuple[str, ...], value: Any, modules: tuple[int, ...]) -> None:
        found.append((chain, value))
        if isinstance(value, types.ModuleType) and id(value) not in modules:
            for name in names:
                attribute = getattr(value, name, _resolve)
                if attribute is not _resolve:
                    visit(chain + (name,), attribute, modules + (id(value),))

    for name in names:
        value = scope.get(name, _resolve)
        if value is not _resolve:
            visit((name,), value, ())
    return found


def _chains_read(fn: Any, scope: Mapping[str, Any]) -> list[tuple[tuple[str, ...], Any]]:
    """The name and attribute chains ``fn`` reads that resolve in
    ``scope``, with their values: from its compiled code where its source
    is the code's (a ``@kiln.jit`` function whose source was not replaced),
    else from its parsed source.

    Raises:
        Uncacheable: for a source that does not parse (the frontend reports it).
    """
    if getattr(fn, "_src_is_code", False):
        return _chains_from_code(fn.fn.__code__, scope)
    try:
        tree = ast.parse(fn.src)
    except SyntaxError:
        raise Uncacheable("unparsable source") from None
    resolved = []
    for chain in _names_read(tree):
        is_found, value = _resolve(scope, chain)
        if is_found:
            resolved.append((chain, value))
    return resolved


def _function_source(fn: Any) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        raise Uncacheable("a constexpr_function without source") from None


def _qualified_name(value: Any) -> Optional[str]:
    """``module.qualname`` of a module, class or function (what a kernel
    may name besides constants and jit functions), else None."""
    if inspect.ismodule(value):
        return value.__name__
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}.{qualname}"
    return None


def _functions(kernel: Any) -> list[dict[str, Any]]:
    """The key's entry for ``kernel`` and each jit function it names, transitively."""
    entries: list[dict[str, Any]] = []
    seen: set[int] = set()
    pending = [kernel]
    while pending:
        fn = pending.pop(0)
        if id(fn.fn) in seen:
            continue
        seen.add(id(fn.fn))
        constants: dict[str, Any] = {}
        for chain, value in _chains_read(fn, global_scope(fn)):
            if is_kernel_source(value):
                pending.append(value)
            elif is_constexpr_function(value):
                # Runs while compiling: its source is part of what is compiled.
                constants[".".join(chain)] = {"constexpr_function": _function_source(value.fn)}
            elif isinstance(value, constexpr):
                # The frontend reads any kl.constexpr global: one without a
                # stable spelling makes the whole compile uncacheable.
                constants[".".join(chain)] = encode_constant(value)
            else:
                # Modules, types and callables are the compiler's own (the
                # build covers their code) or rejected by the frontend when
                # used; a constant that cannot be spelled would be rejected
                # too. Which one a name holds is still part of the key: two
                # kernels made by one factory from one source line may call
                # different builtins through the same closure name.
                try:
                    constants[".".join(chain)] = encode_constant(value)
                except Uncacheable:
                    named = _qualified_name(value)
                    if named is not None:
                        constants[".".join(chain)] = {"object": named}
        code = fn.fn.__code__
        entries.append({
            "name": fn.__name__,
            "file": code.co_filename,
            "line": code.co_firstlineno,
            "source": fn.src,
            "debug": getattr(fn, "debug", None),
            "noinline": bool(getattr(fn, "noinline", False)),
            "constants": constants,
        })
    return entries


def kernel_key(fn: Any, signature: Mapping[str, str], constexprs: Mapping[str, Any], attrs: Specialization,
               target: str, num_warps: int, num_stages: int, options: Mapping[str, Any], backend: str,
               backend_identity: str) -> Optional[CacheKey]:
    """The key of compiling ``fn`` with these settings, or None when a value
    it depends on (a constexpr of an unusual type) has no stable spelling,
    or ``fn`` is no jit function (the frontend then says so)."""
    if not is_kernel_source(fn):
        return None
    try:
        document = {
            "format": _FORMAT,
            "build": build_identity(),
            "backend": backend,
            "backend_identity": backend_identity,
            "target": target,
            "num_warps": num_warps,
            "num_stages": num_stages,
            "options": sorted([name, encode_constant(value)] for name, value in options.items()),
            "signature": [[name, ty] for name, ty in signature.items()],
            "constexprs": [[name, encode_constant(value)] for name, value in constexprs.items()],
            "divisible_by_16": sorted(attrs.divisible_by_16),
            "equal_to_1": sorted(attrs.equal_to_1),
            "named_tuples": [[path, cls.__module__, cls.__qualname__, list(cls._fields)]
                             for path, cls in attrs.named_tuples],
            "functions": _functions(fn),
        }
    except Uncacheable:
        return None
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return CacheKey(hashlib.sha256(text.encode()).hexdigest(), json.loads(text))


# -- entries ------------------------------------------------------------------------


_DISCARD_PREFIX = ".discard-"


def _discard(path: str) -> bool:
    """Removes an entry, first renaming it aside (to a name no key has) so
    that no reader ever sees it half deleted. False when it could not be
    renamed (another process removed it first, say)."""
    directory, name = os.path.split(path)
    aside = os.path.join(directory, f"{_DISCARD_PREFIX}{name.lstrip('.')[:16]}-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.rename(path, aside)
    except OSError:
        return False
    shutil.rmtree(aside, ignore_errors=True)
    return True


def _mark_used(entry: str) -> None:
    """Records a use of ``entry`` for pruning, as its directory's
    modification time: access times are not kept on ``noatime`` mounts,
    while setting a time is one system call and never changes the entry's
    content. An entry of a read-only or shared cache that cannot be marked
    keeps the time it was written."""
    try:
        os.utime(entry)
    except OSError:
        pass


def _entry_checksum(body: bytes, files: list[tuple[str, bytes]]) -> str:
    """The one checksum of an entry: SHA-256 over the manifest's bytes and
    every stage file's name and bytes, each prefixed by its length so that
    no two different entries hash the same stream."""
    digest = hashlib.sha256()
    for part in [body] + [item for name, data in files for item in (name.encode(), data)]:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


def _stage_records(manifest: Any) -> dict[str, Optional[tuple[str, bool]]]:
    """Each stage's (file name, binary) from a parsed manifest, None for a
    stage without content.

    Raises:
        ValueError: for a manifest of the wrong shape.
    """
    if not isinstance(manifest, dict) or not isinstance(manifest.get("stages"), dict):
        raise ValueError("no stages")
    records: dict[str, Optional[tuple[str, bool]]] = {}
    names: set[str] = set()
    for stage, record in manifest["stages"].items():
        if record is None:
            records[stage] = None
            continue
        if not isinstance(record, dict):
            raise ValueError("bad stage record")
        name, binary = record.get("file"), record.get("binary")
        if (not isinstance(name, str) or not name or os.path.basename(name) != name or name in (".", "..")
                or name == _METADATA_FILE or name in names or not isinstance(binary, bool)):
            raise ValueError("bad stage file")
        names.add(name)
        records[stage] = (name, binary)
    return records


def lookup(directory: str, key: CacheKey, metadata: Mapping[str, Any]) -> Optional[tuple[dict, dict]]:
    """:func:`read`, after checking the cache's settings, which every
    compile reports when malformed, hit or miss.

    Raises:
        ValueError: when ``KILN_CACHE_LOCK_TIMEOUT`` or ``KILN_CACHE_MAX_SIZE``
            is malformed.
    """
    lock_timeout()
    max_size()
    return read(directory, key, metadata)


def read(directory: str, key: CacheKey, metadata: Mapping[str, Any]) -> Optional[tuple[dict, dict]]:
    """The ``(asm, metadata)`` of the entry for ``key``, or None on a miss.

    ``metadata`` is the common metadata of the compile (name, target,
    options, signature, constexprs); the entry's must agree with it. An
    entry that fails any check is removed. Nothing an entry holds makes this
    raise: a damaged entry is a miss.
    """
    entry = os.path.join(directory, key.digest)
    try:
        with open(os.path.join(entry, _METADATA_FILE), "rb") as f:
            text = f.read()
    except OSError:
        return None
    try:
        checksum, separator, body = text.partition(b"\n")
        if not separator:
            raise ValueError("no checksum line")
        manifest = json.loads(body)
        records = _stage_records(manifest)
        files: list[tuple[str, bytes]] = []
        for record in records.values():
            if record is not None:
                with open(os.path.join(entry, record[0]), "rb") as f:
                    files.append((record[0], f.read()))
        # Compared as text: a hex digit flipped to upper case is damage too.
        if checksum.decode("ascii") != _entry_checksum(body, files):
            raise ValueError("checksum mismatch")
        # The checksum proves the entry is what a writer wrote; the checks
        # below prove it is the entry of this compile.
        stored = manifest.get("metadata")
        if (manifest.get("format") != _FORMAT or manifest.get("key") != key.document or not isinstance(stored, dict)
                or any(stored.get(name) != metadata[name] for name in _KEY_METADATA)):
            raise ValueError("entry does not match its key")
        asm: dict[str, Any] = {}
        contents = iter(files)
        for stage, record in records.items():
            data = None if record is None else next(contents)[1]
            asm[stage] = data if record is None or record[1] else data.decode()
    except Exception:  # noqa: BLE001 - whatever is wrong with an entry (bad JSON, nesting too deep for
        # the parser, a wrong type anywhere, an unreadable file) makes it a miss, never a failed compile.
        _discard(entry)
        return None
    _mark_used(entry)
    return asm, {**metadata, **stored}


def write(directory: str, key: CacheKey, asm: Mapping[str, Any], metadata: Mapping[str, Any],
          file_names: Mapping[str, str]) -> bool:
    """Stores a compile's ``asm`` (each stage in ``file_names[stage]``) and
    ``metadata`` under ``key``; True when this call wrote the entry. Does
    nothing when they cannot be stored exactly (a stage that is neither
    text nor bytes, metadata JSON would change) or the directory cannot be
    written."""
    stored = {name: value for name, value in metadata.items() if name not in _CALL_METADATA}
    try:
        if json.loads(json.dumps(stored)) != stored:
            return False
    except (TypeError, ValueError):
        return False
    if any(content is not None and not isinstance(content, (str, bytes)) for content in asm.values()):
        return False
    try:
        os.makedirs(directory, exist_ok=True)
        temporary = tempfile.mkdtemp(prefix=f".{key.digest[:16]}-", dir=directory)
    except OSError:
        return False
    try:
        stages: dict[str, Any] = {}
        files: list[tuple[str, bytes]] = []
        for stage, content in asm.items():
            if content is None:
                stages[stage] = None
                continue
            data = content if isinstance(content, bytes) else content.encode()
            name = file_names[stage]
            with open(os.path.join(temporary, name), "wb") as f:
                f.write(data)
            stages[stage] = {"file": name, "binary": isinstance(content, bytes)}
            files.append((name, data))
        manifest = {"format": _FORMAT, "key": key.document, "metadata": stored, "stages": stages}
        # In insertion order: a hit returns asm and metadata in the order a compile does.
        body = json.dumps(manifest, indent=1).encode()
        with open(os.path.join(temporary, _METADATA_FILE), "wb") as f:
            f.write(_entry_checksum(body, files).encode() + b"\n" + body)
        # Atomic: a reader sees the whole entry or none. When another process
        # renamed its entry first, the rename fails and that entry stays.
        os.rename(temporary, os.path.join(directory, key.digest))
    except OSError:
        shutil.rmtree(temporary, ignore_errors=True)
        return False
    return True
