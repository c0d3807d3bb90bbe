"""The on-disk kernel cache (kiln.runtime.disk_cache): hits, what makes a
miss, damaged entries, concurrent writers and fresh processes. No GPU
needed: everything compiles for sm_90a."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

import kiln
import kiln.language as kl
from kiln.backends.nvidia import NvidiaBackend
from kiln.compiler import frontend
from kiln.runtime import disk_cache, disk_cache_sharing
SCALE = kl.constexpr(2)


@kiln.jit
def _scaled(x):
    return x * SCALE


@kiln.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, _scaled(kl.load(x_ptr + offs, mask=mask)), mask=mask)


@kiln.jit
def _scaled_plus_one(x):
    return x * SCALE + 1


SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


def compile_scale(**overrides) -> kiln.CompiledKernel:
    settings = {"signature": SIGNATURE, "constexprs": {"BLOCK": 256}, "target": "sm_90a", "num_warps": 4}
    settings.update(overrides)
    return kiln.compile(scale_kernel, **settings)


@dataclass
class Cache:
    """The test's cache directory, and how often the frontend ran."""

    directory: Path
    runs: list = field(default_factory=list)

    def entries(self) -> list[Path]:
        return entries(self.directory)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Cache:
    state = Cache(tmp_path / "cache")
    monkeypatch.setenv("KILN_CACHE_DIR", str(state.directory))
    generate = frontend.generate_kiln_ir

    def counting(*args, **kwargs):
        state.runs.append(args[0].__name__)
        return generate(*args, **kwargs)

    monkeypatch.setattr(frontend, "generate_kiln_ir", counting)
    return state


def entries(directory: Path) -> list[Path]:
    """Everything in the cache directory but the stamp of its last prune:
    entries, and temporaries or lock files a test expects none of."""
    if not directory.exists():
        return []
    return sorted(path for path in directory.iterdir() if path.name != disk_cache_sharing._PRUNE_STAMP)


def test_second_compile_is_a_hit_without_running_the_compiler(cache, monkeypatch):
    first = compile_scale()
    assert not first.from_disk_cache and [p.name[0] != "." for p in cache.entries()] == [True]

    def fail(*args, **kwargs):
        raise AssertionError("the compiler ran on a cache hit")

    monkeypatch.setattr(frontend, "generate_kiln_ir", fail)
    monkeypatch.setattr(NvidiaBackend, "compile", fail)
    second = compile_scale()
    assert second.from_disk_cache
    assert second == first
    assert second.asm.keys() == first.asm.keys() and list(second.metadata) == list(first.metadata)


def test_a_hit_returns_dtype_constexprs_as_compiled(cache):
    @kiln.jit
    def cast_kernel(x_ptr, out_ptr, DTYPE: kl.constexpr):
        kl.store(out_ptr, kl.load(x_ptr).to(DTYPE))

    def compile_cast():
        return kiln.compile(cast_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp16"}, {"DTYPE": kl.float16})

    first, second = compile_cast(), compile_cast()
    assert second.from_disk_cache and second == first
    assert second.metadata["constexprs"]["DTYPE"] == kl.float16


@pytest.mark.parametrize("change", [
    "kernel source", "callee source", "constexpr global", "constexpr value", "signature", "num_warps", "target",
])
def test_each_input_of_the_key_makes_a_miss(change, cache, monkeypatch):
    compile_scale()
    assert len(cache.runs) == 1
    overrides = {}
    if change == "kernel source":
        # src is read-only (as Triton's); the private field restores cleanly.
        monkeypatch.setattr(scale_kernel, "_src", scale_kernel.src.replace("mask=mask)), mask=mask)",
                                                                           "mask=mask)) + 1, mask=mask)"))
    elif change == "callee source":
        monkeypatch.setattr(sys.modules[__name__], "_scaled", _scaled_plus_one)
    elif change == "constexpr global":
        monkeypatch.setattr(sys.modules[__name__], "SCALE", kl.constexpr(3))
    elif change == "constexpr value":
        overrides["constexprs"] = {"BLOCK": 512}
    elif change == "signature":
        overrides["signature"] = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i64"}
    elif change == "num_warps":
        overrides["num_warps"] = 8
    elif change == "target":
        overrides["target"] = "sm_80"
    changed = compile_scale(**overrides)
    assert not changed.from_disk_cache and len(cache.runs) == 2
    assert len(cache.entries()) == 2
    assert compile_scale(**overrides).from_disk_cache and len(cache.runs) == 2


def test_another_libdevice_makes_a_miss(cache, tmp_path, monkeypatch):
    """Kernels that call math functions link libdevice into their code:
    another libdevice (a toolkit upgraded in place, KILN_LIBDEVICE_PATH
    changed) must not find the entries compiled with the old one."""
    libdevice = tmp_path / "libdevice.10.bc"
    libdevice.write_bytes(b"a stand-in: this kernel links none")
    monkeypatch.setenv("KILN_LIBDEVICE_PATH", str(libdevice))
    assert "libdevice " + str(libdevice) in NvidiaBackend().cache_identity({})
    compile_scale()
    assert compile_scale().from_disk_cache and len(cache.runs) == 1
    libdevice.write_bytes(b"another stand-in, of another size")
    assert not compile_scale().from_disk_cache and len(cache.runs) == 2
    monkeypatch.setenv("KILN_LIBDEVICE_PATH", str(tmp_path / "missing.bc"))
    assert "libdevice none" in NvidiaBackend().cache_identity({})
    assert not compile_scale().from_disk_cache and len(cache.runs) == 3


@kiln.jit
def _offset(x):
    return x + SCALE


@kiln.jit
def _offset_twice(x):
    return x + SCALE + SCALE


def test_a_replaced_source_keys_on_the_names_it_reads(cache, monkeypatch):
    """The key reads the names a kernel uses from its compiled code while
    its source is the code's; once ``_unsafe_update_src`` replaces it, from
    the new source: a callee only the new source names is part of the key,
    so changing that callee is a miss."""

    @kiln.jit
    def patched_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
        offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
        mask = offs < n
        kl.store(out_ptr + offs, _scaled(kl.load(x_ptr + offs, mask=mask)), mask=mask)

    patched_kernel._unsafe_update_src(patched_kernel.src.replace("_scaled(", "_offset("))
    settings = {"signature": SIGNATURE, "constexprs": {"BLOCK": 256}, "target": "sm_90a"}
    kiln.compile(patched_kernel, **settings)
    assert kiln.compile(patched_kernel, **settings).from_disk_cache
    monkeypatch.setattr(sys.modules[__name__], "_offset", _offset_twice)
    assert not kiln.compile(patched_kernel, **settings).from_disk_cache
    assert len(cache.entries()) == 2


def test_names_read_from_code_cover_those_read_from_source():
    """For kernels of several shapes (helpers, modules' attributes, closure
    variables, loops, branches), every chain that the body of the parsed
    source reads and that resolves is among those the compiled code gives,
    with the same value. (The decorator and the parameters' annotations are
    not the body: the signature and constexprs they decide are keyed
    themselves.)"""
    import ast

    import attention_kernels

    kernels = [scale_kernel, _scaled, _activation_kernel(kl.exp2), attention_kernels.attention_forward,
               attention_kernels.attention_forward_descriptors, attention_kernels.attention_backward_dkdv]
    for kernel in kernels:
        scope = frontend.global_scope(kernel)
        from_code = dict(disk_cache._chains_from_code(kernel.fn.__code__, scope))
        definition = ast.parse(kernel.src).body[0]
        for chain in disk_cache._names_read(ast.Module(body=definition.body, type_ignores=[])):
            found, value = disk_cache._resolve(scope, chain)
            if found:
                assert chain in from_code and from_code[chain] is value, (kernel.__name__, chain)


def _activation_kernel(activation):
    """One source line, many kernels: the factory pattern of activation
    kernels, where only a closure variable tells them apart."""

    @kiln.jit
    def activation_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
        offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
        mask = offs < n
        kl.store(out_ptr + offs, activation(kl.load(x_ptr + offs, mask=mask)), mask=mask)

    return activation_kernel


def test_kernels_calling_different_builtins_through_one_name_have_their_own_entries(cache):
    settings = {"signature": SIGNATURE, "constexprs": {"BLOCK": 256}, "target": "sm_90a"}
    with_exp2 = kiln.compile(_activation_kernel(kl.exp2), **settings)
    with_sin = kiln.compile(_activation_kernel(kl.sin), **settings)
    assert not with_sin.from_disk_cache and len(cache.entries()) == 2
    assert "ex2.approx" in with_exp2.asm["ptx"] and "ex2.approx" not in with_sin.asm["ptx"]
    assert kiln.compile(_activation_kernel(kl.sin), **settings).from_disk_cache


def _damage_cubin(entry: Path) -> None:
    cubin = next(entry.glob("*.cubin"))
    cubin.write_bytes(cubin.read_bytes()[:100])


def _delete_ptx(entry: Path) -> None:
    next(entry.glob("*.ptx")).unlink()


def _garbage_metadata(entry: Path) -> None:
    (entry / "metadata.json").write_text("{not json")


def _manifest(entry: Path) -> dict:
    """The manifest of ``entry`` (its metadata.json after the checksum line)."""
    return json.loads((entry / "metadata.json").read_bytes().partition(b"\n")[2])


def _sign(entry: Path, manifest: Any) -> None:
    """Writes ``manifest`` into ``entry`` with the checksum a writer would
    give it, so that only its content, not damage, can make it a miss."""
    body = json.dumps(manifest).encode()
    stages = manifest.get("stages") if isinstance(manifest, dict) else None
    files = [(record["file"], (entry / record["file"]).read_bytes())
             for record in (stages.values() if isinstance(stages, dict) else [])
             if isinstance(record, dict) and isinstance(record.get("file"), str) and (entry / record["file"]).is_file()]
    (entry / "metadata.json").write_bytes(disk_cache._entry_checksum(body, files).encode() + b"\n" + body)


def _wrong_key(entry: Path) -> None:
    manifest = _manifest(entry)
    manifest["key"]["num_warps"] = 8
    _sign(entry, manifest)


@pytest.mark.parametrize("damage", [_damage_cubin, _delete_ptx, _garbage_metadata, _wrong_key],
                         ids=["truncated cubin", "deleted ptx", "garbage metadata", "metadata of another key"])
def test_a_damaged_entry_is_recompiled_and_repaired(damage, cache):
    first = compile_scale()
    if damage is _damage_cubin and first.asm["cubin"] is None:
        pytest.skip("no ptxas: entries hold no cubin")
    (entry,) = cache.entries()
    damage(entry)
    again = compile_scale()
    assert not again.from_disk_cache and len(cache.runs) == 2 and again == first
    assert [p.name for p in cache.entries()] == [entry.name]
    assert compile_scale().from_disk_cache and len(cache.runs) == 2


# A small entry written by the cache itself, read back without compiling,
# so that thousands of damaged copies are checked in about a second.
_KEY = disk_cache.CacheKey("0123456789abcdef" * 4, {"format": 2, "kernel": "k", "num_warps": 4})
_CALL = {"name": "k", "target": "sm_90a", "num_warps": 4, "num_stages": 3, "signature": {"x": "*fp32"},
         "constexprs": {}}
_ASM = {"kiln": "module { kiln.func @k() }\n", "llir": None, "ptx": ".version 8.0\n.target sm_90a\n" * 4,
        "cubin": bytes(range(0, 256, 3))}
_FILES = {"kiln": "k.kiln", "ptx": "k.ptx", "cubin": "k.cubin"}


def _written_entry(directory: Path) -> dict[str, bytes]:
    disk_cache.write(str(directory), _KEY, _ASM, {**_CALL, "shared": 16, "pipelines": ["a", "b"]}, _FILES)
    entry = directory / _KEY.digest
    files = {path.name: path.read_bytes() for path in sorted(entry.iterdir())}
    assert set(files) == {"metadata.json", "k.kiln", "k.ptx", "k.cubin"}
    assert disk_cache.read(str(directory), _KEY, _CALL) == (_ASM, {**_CALL, "shared": 16, "pipelines": ["a", "b"]})
    return files


def _restore(entry: Path, files: dict[str, bytes]) -> None:
    entry.mkdir(exist_ok=True)
    for name, data in files.items():
        (entry / name).write_bytes(data)


def test_every_bit_flip_anywhere_in_an_entry_is_a_miss(tmp_path):
    files = _written_entry(tmp_path)
    entry = tmp_path / _KEY.digest
    flips = 0
    for name, data in files.items():
        for index in range(len(data)):
            # Every bit of metadata.json (where a flip used to change a
            # trusted value), one bit (rotating) of each byte of the stages.
            bits = range(8) if name == "metadata.json" else [index % 8]
            for bit in bits:
                damaged = bytearray(data)
                damaged[index] ^= 1 << bit
                _restore(entry, {**files, name: bytes(damaged)})
                assert disk_cache.read(str(tmp_path), _KEY, _CALL) is None, (name, index, bit)
                assert not entry.exists(), "a damaged entry is removed"
                flips += 1
    assert flips > 4000
    _restore(entry, files)
    assert disk_cache.read(str(tmp_path), _KEY, _CALL) is not None


def _set(path: tuple, value: Any) -> Callable[[Any], Any]:
    def change(manifest: Any) -> Any:
        if not path:
            return value
        target = manifest
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        return manifest
    return change


_STRUCTURAL_DAMAGE = {
    "manifest a list": _set((), []), "manifest null": _set((), None), "manifest a number": _set((), 5),
    "manifest a string": _set((), "stages"), "stages a list": _set(("stages",), ["k.ptx"]),
    "stages null": _set(("stages",), None), "stages a string": _set(("stages",), "k.ptx"),
    "a stage a list": _set(("stages", "ptx"), ["k.ptx", False]), "a stage a number": _set(("stages", "ptx"), 1),
    "a file name null": _set(("stages", "ptx", "file"), None),
    "a file name a number": _set(("stages", "ptx", "file"), 7),
    "a file name a list": _set(("stages", "ptx", "file"), ["k.ptx"]),
    "a file name a path": _set(("stages", "ptx", "file"), "../k.ptx"),
    "a file name empty": _set(("stages", "ptx", "file"), ""),
    "a file name the manifest": _set(("stages", "ptx", "file"), "metadata.json"),
    "a missing file": _set(("stages", "ptx", "file"), "k.missing"),
    "a file named twice": _set(("stages", "ptx", "file"), "k.kiln"),
    "binary null": _set(("stages", "ptx", "binary"), None),
    "binary a string": _set(("stages", "ptx", "binary"), "false"),
    "text that is not UTF-8": _set(("stages", "cubin", "binary"), False),
    "metadata a list": _set(("metadata",), []), "metadata null": _set(("metadata",), None),
    "metadata of another target": _set(("metadata", "target"), "sm_80"),
    "key null": _set(("key",), None), "key a list": _set(("key",), [1, 2]),
    "format a string": _set(("format",), "2"), "format null": _set(("format",), None),
    "an older format": _set(("format",), 1), "no format": lambda m: {k: v for k, v in m.items() if k != "format"},
    "no key": lambda m: {k: v for k, v in m.items() if k != "key"},
    "no stages": lambda m: {k: v for k, v in m.items() if k != "stages"},
}


@pytest.mark.parametrize("change", list(_STRUCTURAL_DAMAGE.values()), ids=list(_STRUCTURAL_DAMAGE))
def test_a_checksummed_entry_of_the_wrong_shape_is_a_miss(change, tmp_path):
    _written_entry(tmp_path)
    entry = tmp_path / _KEY.digest
    _sign(entry, change(_manifest(entry)))
    assert disk_cache.read(str(tmp_path), _KEY, _CALL) is None
    assert not entry.exists()


@pytest.mark.parametrize("text", [b"", b"\n", b"\n{}", b"[]", b"null\nnull", b"0" * 64 + b"\n" + b"[" * 100000,
                                  b"\xff\xfe\n{}"], ids=["empty", "newline", "no checksum", "a list", "nulls",
                                                           "deep nesting", "not ASCII"])
def test_garbage_metadata_files_are_misses(text, tmp_path):
    _written_entry(tmp_path)
    (tmp_path / _KEY.digest / "metadata.json").write_bytes(text)
    assert disk_cache.read(str(tmp_path), _KEY, _CALL) is None


def test_an_unwritable_cache_directory_only_costs_the_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    # A directory below a regular file cannot be created, even by root.
    monkeypatch.setenv("KILN_CACHE_DIR", str(blocker / "cache"))
    assert not compile_scale().from_disk_cache
    assert not compile_scale().from_disk_cache


def test_the_cache_can_be_disabled(cache, monkeypatch):
    monkeypatch.setenv("KILN_DISABLE_CACHE", "1")
    compile_scale()
    assert not compile_scale().from_disk_cache and not cache.directory.exists()
    monkeypatch.setenv("KILN_DISABLE_CACHE", "maybe")
    with pytest.raises(ValueError, match="KILN_DISABLE_CACHE='maybe' is not a boolean"):
        compile_scale()


def test_cpu_compiles_are_not_cached(cache):
    assert not compile_scale(target="cpu").from_disk_cache
    assert not compile_scale(target="cpu").from_disk_cache
    assert not cache.directory.exists()


# -- other processes ------------------------------------------------------------------

_PROGRAM = '''
import kiln
import kiln.language as kl


@kiln.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


compiled = kiln.compile(copy_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 128})
print("hit" if compiled.from_disk_cache else "miss", len(compiled.asm["ptx"]))
'''


def _start(program: Path, cache: Path) -> subprocess.Popen:
    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__)))
    env = dict(os.environ, KILN_CACHE_DIR=str(cache), PYTHONPATH=python_dir)
    return subprocess.Popen([sys.executable, str(program)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _finish(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return out.split()[0]


@pytest.fixture
def program(tmp_path) -> Path:
    path = tmp_path / "copy_program.py"
    path.write_text(textwrap.dedent(_PROGRAM))
    return path


def test_a_fresh_process_hits_what_another_compiled(program, tmp_path):
    cache = tmp_path / "cache"
    assert _finish(_start(program, cache)) == "miss"
    assert _finish(_start(program, cache)) == "hit"


def test_two_processes_compiling_one_key_both_succeed(program, tmp_path):
    cache = tmp_path / "cache"
    processes = [_start(program, cache) for _ in range(2)]
    assert {_finish(p) for p in processes} <= {"miss", "hit"}
    # One entry, no temporary directory left behind, and it is whole.
    assert len(entries(cache)) == 1 and not entries(cache)[0].name.startswith(".")
    assert _finish(_start(program, cache)) == "hit"


def test_a_compile_does_not_depend_on_the_source_files_time(tmp_path, monkeypatch):
    """ptxas writes the modification time of each `.file` into the cubin
    unless the PTX gives one: the same source text must give the same
    artifacts, or a hit would not be what a compile makes."""
    import importlib.util

    if NvidiaBackend().cache_identity({}).startswith("ptxas none"):
        pytest.skip("no ptxas: no cubin to compare")
    monkeypatch.setenv("KILN_DISABLE_CACHE", "1")
    path = tmp_path / "timed_kernel.py"
    path.write_text(textwrap.dedent("""
        import kiln
        import kiln.language as kl


        @kiln.jit
        def timed_kernel(x_ptr, n, BLOCK: kl.constexpr):
            offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
            kl.store(x_ptr + offs, kl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
    """))
    spec = importlib.util.spec_from_file_location("timed_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def compile_it() -> kiln.CompiledKernel:
        return kiln.compile(module.timed_kernel, signature={"x_ptr": "*fp32", "n": "i32"}, constexprs={"BLOCK": 128},
                            target="sm_90a")

    os.utime(path, (1_600_000_000, 1_600_000_000))
    first = compile_it()
    os.utime(path, (1_700_000_000, 1_700_000_000))
    second = compile_it()
    path.rename(tmp_path / "moved.py")
    third = compile_it()
    assert first.asm["ptx"] == second.asm["ptx"] == third.asm["ptx"]
    assert first.asm["cubin"] == second.asm["cubin"] == third.asm["cubin"]
    assert f'.file\t1 "{path}", 1, 0' in first.asm["ptx"]
