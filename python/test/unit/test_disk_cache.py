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

import pytest

import kiln
import kiln.language as kl
from kiln.backends.nvidia import NvidiaBackend
from kiln.compiler import frontend

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
    return sorted(directory.iterdir()) if directory.exists() else []


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
        monkeypatch.setattr(scale_kernel, "src", scale_kernel.src.replace("mask=mask)), mask=mask)",
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


def _damage_cubin(entry: Path) -> None:
    cubin = next(entry.glob("*.cubin"))
    cubin.write_bytes(cubin.read_bytes()[:100])


def _delete_ptx(entry: Path) -> None:
    next(entry.glob("*.ptx")).unlink()


def _garbage_metadata(entry: Path) -> None:
    (entry / "metadata.json").write_text("{not json")


def _wrong_key(entry: Path) -> None:
    manifest = json.loads((entry / "metadata.json").read_text())
    manifest["key"]["num_warps"] = 8
    (entry / "metadata.json").write_text(json.dumps(manifest))


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
