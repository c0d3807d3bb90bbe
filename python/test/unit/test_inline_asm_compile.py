"""kl.inline_asm_elementwise and kl.extra.cuda without a GPU: the kernels of
kernels/test_inline_asm.py compile to PTX that ptxas assembles for sm_80 and
sm_90a, with one run of the text per group of packed elements; pure texts
are merged and dropped like arithmetic, impure ones never; and bad calls are
CompilationErrors at the kernel line."""

from __future__ import annotations

import os
import re
import sys
import textwrap

import pytest

import kiln
import kiln.language as kl
from kiln.backends.nvidia import find_ptxas
from kiln.errors import CompilationError

from kiln_test_support import kiln_search_path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))

import test_inline_asm as kernels  # noqa: E402

TARGETS = ["sm_80", "sm_90a"]

CASES = {
    "funnel_shift": (kernels.funnel_shift_kernel, {"x_ptr": "*i32", "y_ptr": "*i32", "z_ptr": "*i32"},
                     {"N": 17, "BLOCK": 128}),
    "shift_bytes": (kernels.shift_bytes_kernel, {"x_ptr": "*u8", "y_ptr": "*u8"}, {"BLOCK": 512}),
    "pointers": (kernels.pointer_kernel, {"x_ptr": "*u8", "y_ptr": "*u8"}, {"BLOCK": 512}),
    "two_outputs": (kernels.two_outputs_kernel, {"a_ptr": "*u32", "b_ptr": "*u32", "c_ptr": "*u32", "d_ptr": "*u32"},
                    {"BLOCK": 512}),
    "packed_outputs": (kernels.packed_outputs_kernel,
                       {"a_ptr": "*u8", "b_ptr": "*fp32", "c_ptr": "*i32", "d_ptr": "*fp32"}, {"BLOCK": 512}),
    "half_pairs": (kernels.half_pairs_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16", "z_ptr": "*fp16"}, {"BLOCK": 256}),
    "broadcast": (kernels.broadcast_kernel, {"x_ptr": "*i32", "out_ptr": "*i32", "s": "i32"},
                  {"BLOCK_M": 16, "BLOCK_N": 32}),
    "globaltimer": (kernels.globaltimer_kernel, {"out1_ptr": "*i64", "out2_ptr": "*i64"}, {}),
    "smid": (kernels.smid_kernel, {"out_ptr": "*i32"}, {}),
}


def compile_case(name: str, target: str, num_warps: int = 4) -> kiln.CompiledKernel:
    fn, signature, constexprs = CASES[name]
    return kiln.compile(fn, signature=signature, constexprs=constexprs, target=target, num_warps=num_warps)


def runs_of(ptx: str, instruction: str) -> int:
    """How many runs of inline assembly holding `instruction` the PTX has
    (LLVM brackets each with "begin/end inline asm" comments)."""
    blocks = [block.split("// end inline asm")[0] for block in ptx.split("// begin inline asm")[1:]]
    return sum(instruction in block for block in blocks)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_assembles(name, target):
    compiled = compile_case(name, target)
    assert "kiln.elementwise_inline_asm" in compiled.asm["kiln"]
    if find_ptxas() is not None:
        assert compiled.asm["cubin"][:4] == b"\x7fELF"


def test_one_run_per_element_without_packing():
    # 128 elements on 128 threads: one element, so one run, per thread.
    ptx = compile_case("funnel_shift", "sm_90a").asm["ptx"]
    assert runs_of(ptx, "shf.l.wrap.b32") == 1


@pytest.mark.parametrize("num_warps,runs", [(4, 1), (1, 4)])
def test_packed_runs(num_warps, runs):
    # 512 bytes: four per run, so one run per four bytes a thread holds.
    ptx = compile_case("shift_bytes", "sm_90a", num_warps=num_warps).asm["ptx"]
    assert runs_of(ptx, "and.b32") == runs
    assert "0x1F1F1F1F" in ptx


def test_packed_outputs_fill_registers():
    ptx = compile_case("packed_outputs", "sm_90a").asm["ptx"]
    assert runs_of(ptx, "cvt.rn.f32.s32") == 1
    # The four bytes arrive as one 32-bit register, unpacked by the text.
    assert re.search(r"mov\.b32 \{t0, t1, t2, t3\}, %r\d+;", ptx)


def test_pointer_runs_keep_their_order():
    ptx = compile_case("pointers", "sm_90a").asm["ptx"]
    assert runs_of(ptx, "ld.global.b8") == 4
    assert runs_of(ptx, "st.global.b8") == 4
    assert ptx.count("// begin inline asm") == 4


@kiln.jit
def twice_kernel(x_ptr, y_ptr, PURE: kl.constexpr, USE: kl.constexpr):
    offs = kl.arange(0, 128)
    x = kl.load(x_ptr + offs)
    a = kl.inline_asm_elementwise("brev.b32 $0, $1;", "=r,r", [x], dtype=kl.int32, is_pure=PURE, pack=1)
    b = kl.inline_asm_elementwise("brev.b32 $0, $1;", "=r,r", [x], dtype=kl.int32, is_pure=PURE, pack=1)
    if USE:
        kl.store(y_ptr + offs, a + b)


@pytest.mark.parametrize("pure,use,runs", [(True, True, 1), (False, True, 2), (True, False, 0), (False, False, 2)])
def test_purity(pure, use, runs):
    compiled = kiln.compile(twice_kernel, signature={"x_ptr": "*i32", "y_ptr": "*i32"},
                            constexprs={"PURE": pure, "USE": use}, target="sm_90a")
    assert runs_of(compiled.asm["ptx"], "brev.b32") == runs


def test_special_registers():
    timer = compile_case("globaltimer", "sm_90a").asm["ptx"]
    assert timer.count("%globaltimer") == 2
    assert compile_case("smid", "sm_80").asm["ptx"].count("%smid") == 1


@kiln.jit
def timer_argument_kernel(out_ptr, FUNC: kl.constexpr):
    start = FUNC()
    end = FUNC()
    kl.store(out_ptr, start)
    kl.store(out_ptr + 1, end)


def test_special_register_function_as_constexpr():
    # Triton's test passes tl.extra.cuda.globaltimer as a constexpr argument.
    compiled = kiln.compile(timer_argument_kernel, signature={"out_ptr": "*i64"},
                            constexprs={"FUNC": kl.extra.cuda.globaltimer}, target="sm_90a")
    assert compiled.asm["ptx"].count("%globaltimer") == 2


@kiln.jit
def launch_shape_kernel(out_ptr):
    NUM_THREADS: kl.constexpr = kl.extra.cuda.num_threads()
    kl.store(out_ptr + kl.arange(0, NUM_THREADS), kl.extra.cuda.num_warps())


@pytest.mark.parametrize("num_warps", [2, 8])
def test_num_threads_is_a_constexpr(num_warps):
    compiled = kiln.compile(launch_shape_kernel, signature={"out_ptr": "*i32"}, target="sm_90a",
                            num_warps=num_warps)
    assert f"tensor<{32 * num_warps}xi32>" in compiled.asm["kiln"]
    assert f"arith.constant {num_warps} : i32" in compiled.asm["kiln"]


@kiln.jit
def grid_dependency_kernel(x_ptr):
    kl.extra.cuda.gdc_wait()
    kl.store(x_ptr, 1)
    kl.extra.cuda.gdc_launch_dependents()


def test_grid_dependency_control():
    sm90 = kiln.compile(grid_dependency_kernel, signature={"x_ptr": "*i32"}, target="sm_90a").asm["ptx"]
    assert "griddepcontrol.wait;" in sm90 and "griddepcontrol.launch_dependents;" in sm90
    assert sm90.index("griddepcontrol.wait;") < sm90.index("st.global")
    # Before sm_90 there is no dependent launch: nothing to emit.
    sm80 = kiln.compile(grid_dependency_kernel, signature={"x_ptr": "*i32"}, target="sm_80").asm["ptx"]
    assert "griddepcontrol" not in sm80


def test_cpu_target_refuses_at_the_call():
    with pytest.raises(CompilationError) as info:
        compile_case("funnel_shift", "cpu")
    message = str(info.value)
    assert "inline assembly is GPU code (PTX) that the CPU backend cannot run" in message
    assert "kl.inline_asm_elementwise(" in message  # the kernel line, quoted


@kiln.jit
def bad_call_kernel(x_ptr, CASE: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, 64))
    if CASE == "no_dtype":
        y = kl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=(), is_pure=True, pack=1)
    elif CASE == "bool_dtype":
        y = kl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=kl.int1, is_pure=True, pack=1)
    elif CASE == "bool_arg":
        y = kl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x > 0], dtype=kl.int32, is_pure=True, pack=1)
    elif CASE == "pack":
        y = kl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=kl.int32, is_pure=True, pack=0)
    elif CASE == "narrow_pack":
        y = kl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x.to(kl.int8)], dtype=kl.int8, is_pure=True,
                                      pack=3)
    else:
        y = kl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x, kl.arange(0, 32)], dtype=kl.int32,
                                      is_pure=True, pack=1)
    kl.store(x_ptr + kl.arange(0, 64), y)


@pytest.mark.parametrize("case,message", [
    ("no_dtype", "needs at least one result dtype"),
    ("bool_dtype", "results must have number types other than int1"),
    ("bool_arg", "cannot pass int1 values"),
    ("pack", "needs pack as a positive constant int, got 0"),
    ("narrow_pack", "expected a power-of-two packed_element for 8-bit elements, got 3"),
    ("shapes", "incompatible shapes for broadcasting: [64] and [32]"),
])
def test_bad_calls(case, message):
    with pytest.raises(CompilationError, match=re.escape(message)) as info:
        kiln.compile(bad_call_kernel, signature={"x_ptr": "*i32"}, constexprs={"CASE": case}, target="sm_90a")
    assert "kl.inline_asm_elementwise(" in str(info.value)


def test_triton_import_paths(tmp_path):
    import subprocess
    code = textwrap.dedent("""
        import triton.language as tl
        import triton.language.extra.cuda as cuda
        from triton.language.extra.cuda import libdevice
        import triton.language.extra.cuda.libdevice as dotted
        import kiln.language.extra.libdevice as own
        assert libdevice is own and dotted is own and tl.extra.cuda is cuda
        import kiln.language
        assert tl.inline_asm_elementwise is kiln.language.inline_asm_elementwise
        for name in ("globaltimer", "smid", "num_threads", "num_warps", "gdc_wait", "gdc_launch_dependents"):
            assert callable(getattr(tl.extra.cuda, name)), name
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=kiln_search_path())
    script = tmp_path / "imports.py"
    script.write_text(code)
    result = subprocess.run([sys.executable, "-m", "kiln.compat", str(script)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr
