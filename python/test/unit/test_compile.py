"""Compiling without a GPU: every stage of kiln.compile, PTX for sm_80 and
sm_90a, and ptxas assembly of the result (CI has ptxas but no GPU)."""

from __future__ import annotations

import os
import re
import sys
import warnings

import pytest

import kiln
import kiln.language as kl
from kiln import _C
from kiln.backends.nvidia import find_ptxas
from kiln.compiler.specialization import Specialization


@kiln.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    pid = kl.program_id(0)
    offs = pid * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


SIGNATURES = {
    "fp32": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
    "fp16": {"x_ptr": "*fp16", "y_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32"},
    "bf16": {"x_ptr": "*bf16", "y_ptr": "*bf16", "out_ptr": "*bf16", "n": "i32"},
    "i32": {"x_ptr": "*i32", "y_ptr": "*i32", "out_ptr": "*i32", "n": "i32"},
}
ALL_ALIGNED = Specialization(divisible_by_16=frozenset({"x_ptr", "y_ptr", "out_ptr", "n"}))


def compile_add(dtype: str = "fp32", target: str = "sm_90a", attrs: Specialization | None = ALL_ALIGNED,
                num_warps: int = 4, block: int = 1024) -> kiln.CompiledKernel:
    return kiln.compile(add_kernel, signature=SIGNATURES[dtype], constexprs={"BLOCK": block},
                        target=target, num_warps=num_warps, attrs=attrs)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", sorted(SIGNATURES))
def test_every_stage_is_kept(target: str, dtype: str) -> None:
    kernel = compile_add(dtype, target)
    assert set(kernel.asm) == {"kiln", "kiln_gpu", "llir", "ptx", "cubin"}
    assert "kiln.load" in kernel.asm["kiln"] and "#kiln_gpu.blocked" not in kernel.asm["kiln"]
    assert "#kiln_gpu.blocked" in kernel.asm["kiln_gpu"]
    assert "define ptx_kernel void @add_kernel" in kernel.asm["llir"]
    assert f".target {target}" in kernel.asm["ptx"]
    assert ".entry add_kernel" in kernel.asm["ptx"]
    assert kernel.metadata["num_warps"] == 4 and kernel.metadata["target"] == target


def test_triton_stage_names_read_kiln_stages() -> None:
    kernel = compile_add()
    assert kernel.asm["ttir"] is kernel.asm["kiln"] and kernel.asm["ttgir"] is kernel.asm["kiln_gpu"]
    assert "ttir" in kernel.asm and kernel.asm.get("ttgir") is kernel.asm["kiln_gpu"]
    assert set(kernel.asm) == {"kiln", "kiln_gpu", "llir", "ptx", "cubin"}  # aliases are not stages
    assert kernel.metadata.name == "add_kernel" and kernel.metadata.shared == 0
    assert (kernel.metadata.num_warps, kernel.metadata.num_stages) == (4, 3)
    host = kiln.compile(add_kernel, signature=SIGNATURES["fp32"], constexprs={"BLOCK": 1024}, target="cpu")
    assert host.asm["ttir"] is host.asm["kiln"]
    # The CPU backend has no kiln_gpu stage, so no ttgir either.
    assert "ttgir" not in host.asm and host.asm.get("ttgir") is None
    with pytest.raises(KeyError, match="no 'ttgir' stage in this kernel"):
        host.asm["ttgir"]


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "i32"])
def test_aligned_accesses_are_16_bytes_wide(dtype: str) -> None:
    ptx = compile_add(dtype).asm["ptx"]
    loads = re.findall(r"ld\.global\.\S+", ptx)
    stores = re.findall(r"st\.global\.\S+", ptx)
    assert loads and all(op == "ld.global.v4.b32" for op in loads), loads
    assert stores and all(op == "st.global.v4.b32" for op in stores), stores


def test_unaligned_bound_falls_back_to_predicated_scalars() -> None:
    # n not known to be a multiple of 16: the mask may change inside a run.
    attrs = Specialization(divisible_by_16=frozenset({"x_ptr", "y_ptr", "out_ptr"}))
    ptx = compile_add(attrs=attrs).asm["ptx"]
    assert "ld.global.v4" not in ptx
    assert re.search(r"@%p\d+ ld\.global\.b32", ptx)


def test_num_warps_sets_the_cta_size() -> None:
    ptx = compile_add(num_warps=8).asm["ptx"]
    assert re.search(r"\.reqntid 256, 1, 1", ptx)


def test_pipelines_are_recorded_for_kiln_opt() -> None:
    pipelines = compile_add(target="sm_80").metadata["pipelines"]
    assert pipelines[0] == "builtin.module(kiln-nvidia-to-kiln-gpu{target=sm_80 num-warps=4 num-stages=3})"
    assert pipelines[1].startswith("builtin.module(kiln-nvidia-to-llvm{")


@kiln.jit
def block_sum_kernel(x_ptr, out_ptr, BLOCK: kl.constexpr):
    kl.store(out_ptr, kl.sum(kl.load(x_ptr + kl.arange(0, BLOCK)), axis=0))


def with_numbered_arguments(module_text: str) -> str:
    """``module_text`` with each function's named parameters (``%x_ptr``, as
    the frontend names them) renamed ``%arg0``, ``%arg1``..., as a module
    parsed back from text prints them."""
    for signature in re.findall(r"func\.func [^\n]*", module_text):
        for index, name in enumerate(re.findall(r"%([A-Za-z_]\w*):", signature)):
            module_text = re.sub(rf"%{name}\b", f"%arg{index}", module_text)
    return module_text


def ptx_code(ptx: str) -> list[str]:
    """The lines of ``ptx`` without source positions (a module parsed back
    from text has none) and without the debug sections that hold them."""
    code = ptx.split(".section\t.debug")[0]
    return [line for line in code.splitlines() if not line.lstrip().startswith((".loc", ".file"))]


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_recorded_pipelines_reproduce_every_stage(target: str) -> None:
    """The recorded pipeline strings hold every pass the compile ran:
    replayed on the ``kiln`` stage (as ``kiln-opt --pass-pipeline`` would)
    they give the ``kiln_gpu`` stage, then a module with the kernel's shared
    memory and the same PTX."""
    kernel = kiln.compile(block_sum_kernel, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                          constexprs={"BLOCK": 4096}, target=target)
    first, second = kernel.metadata["pipelines"]
    module = _C.ir.Module.parse(_C.ir.Context(), kernel.asm["kiln"])
    _C.compiler.run_pass_pipeline(module, first)
    assert module.str() == with_numbered_arguments(kernel.asm["kiln_gpu"])
    _C.compiler.run_pass_pipeline(module, second)
    # The partial of each of the 4 warps goes through shared memory.
    assert module.int_attr("kiln_gpu.shared") == kernel.metadata["shared"] == 16
    _, ptx = _C.compiler.translate_to_ptx(module, target, enable_fp_fusion=True)
    assert ptx_code(ptx) == ptx_code(kernel.asm["ptx"])


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas (CUDA toolkit) to assemble")
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_ptxas_assembles(target: str) -> None:
    cubin = compile_add(target=target).asm["cubin"]
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF"


def ptxas_registers(ptx: str, target: str) -> int:
    """Registers per thread that ptxas allocates for the one kernel in ``ptx``."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        source = os.path.join(directory, "kernel.ptx")
        with open(source, "w") as f:
            f.write(ptx)
        result = subprocess.run([find_ptxas(), "-v", f"-arch={target}", source, "-o", os.devnull],
                                capture_output=True, text=True, check=True)
    return int(re.search(r"Used (\d+) registers", result.stdout + result.stderr).group(1))


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas (CUDA toolkit) to count registers")
def test_maxnreg_caps_the_registers_ptxas_allocates() -> None:
    """A 4096-element add on one warp holds 128 elements of each operand per
    thread; with maxnreg=32, ptxas must make do with 32 registers."""
    def compile_wide(**options):
        return kiln.compile(add_kernel, signature=SIGNATURES["fp32"], constexprs={"BLOCK": 4096},
                            num_warps=1, attrs=ALL_ALIGNED, **options)
    free = compile_wide()
    capped = compile_wide(maxnreg=32)
    assert ".maxnreg" not in free.asm["ptx"]
    assert re.search(r"\.maxnreg 32\b", capped.asm["ptx"])
    assert "maxnreg=32" in capped.metadata["pipelines"][1]
    assert ptxas_registers(free.asm["ptx"], "sm_90a") > 32
    assert ptxas_registers(capped.asm["ptx"], "sm_90a") <= 32


@pytest.mark.parametrize("maxnreg", [0, 256, 32.0, True])
def test_bad_maxnreg_is_rejected(maxnreg) -> None:
    with pytest.raises(ValueError, match="maxnreg must be None or an int from 1 to 255"):
        kiln.compile(add_kernel, signature=SIGNATURES["fp32"], constexprs={"BLOCK": 1024}, maxnreg=maxnreg)


def test_num_ctas_other_than_1_is_rejected() -> None:
    kernel = kiln.compile(add_kernel, signature=SIGNATURES["fp32"], constexprs={"BLOCK": 1024}, target="cpu",
                          num_ctas=1)
    assert kernel.asm
    with pytest.raises(ValueError, match=r"kiln.compile\(add_kernel\): num_ctas=2: thread-block clusters are not"):
        kiln.compile(add_kernel, signature=SIGNATURES["fp32"], constexprs={"BLOCK": 1024}, num_ctas=2)


def test_unknown_target_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown target 'sm_999'"):
        compile_add(target="sm_999")
    with pytest.raises(ValueError, match="unknown target 'gfx90a'"):
        compile_add(target="gfx90a")


def test_bad_num_warps_is_rejected() -> None:
    with pytest.raises(ValueError, match="num_warps must be a power of 2"):
        compile_add(num_warps=3)


def test_signature_must_match_parameters() -> None:
    with pytest.raises(TypeError, match="missing types for n"):
        kiln.compile(add_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"},
                     constexprs={"BLOCK": 1024})
    with pytest.raises(TypeError, match="no value for constexpr parameters BLOCK"):
        kiln.compile(add_kernel, signature=SIGNATURES["fp32"])


def test_dump_dir_receives_every_stage(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KILN_DUMP_DIR", str(tmp_path))
    compile_add()
    names = {p.name for p in tmp_path.iterdir()}
    expected = {"add_kernel.kiln.mlir", "add_kernel.kiln_gpu.mlir", "add_kernel.ll", "add_kernel.ptx"}
    if find_ptxas() is not None:
        expected.add("add_kernel.cubin")
    assert names == expected


@kiln.jit
def _double_plus(x, y):
    return x * 2 + y


@kiln.jit
def control_flow_kernel(x_ptr, out_ptr, n, steps, flag, scale, BLOCK: kl.constexpr, UNROLL: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    acc = kl.zeros((BLOCK,), dtype=kl.float32)
    for i in range(steps):
        acc = acc + kl.load(x_ptr + offs, mask=mask, other=0.0)
    for j in kl.static_range(UNROLL):
        acc = acc * 1.5
    if flag > 0:
        acc = acc + scale
    else:
        acc = acc - scale
    if UNROLL > 1:
        acc = _double_plus(acc, acc)
    kl.store(out_ptr + offs, acc, mask=mask)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_control_flow_and_calls_lower_to_a_binary(target: str) -> None:
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "steps": "i32", "flag": "i32", "scale": "fp32"}
    kernel = kiln.compile(control_flow_kernel, signature=signature, constexprs={"BLOCK": 256, "UNROLL": 2},
                          target=target)
    assert "scf.for" in kernel.asm["kiln"] and "scf.if" in kernel.asm["kiln"]
    calls = re.compile(r"\bcall @")
    assert calls.search(kernel.asm["kiln"]) and not calls.search(kernel.asm["kiln_gpu"])  # inlined
    assert ".entry control_flow_kernel" in kernel.asm["ptx"]


@kiln.jit
def convert_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    value = kl.load(x_ptr + offs, mask=mask)
    kl.store(out_ptr + offs, (value + value).to(out_ptr.dtype.element_ty), mask=mask)


ELEMENT_TYPES = ["fp16", "bf16", "fp32", "fp64", "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]


@pytest.mark.parametrize("source", ELEMENT_TYPES)
@pytest.mark.parametrize("destination", ["fp32", "fp16", "i64", "u8"])
def test_every_element_type_loads_converts_and_stores(source: str, destination: str) -> None:
    kernel = kiln.compile(convert_kernel, signature={"x_ptr": "*" + source, "out_ptr": "*" + destination, "n": "i32"},
                          constexprs={"BLOCK": 512}, attrs=ALL_ALIGNED)
    assert ".entry convert_kernel" in kernel.asm["ptx"]


@kiln.jit
def scalar_arguments_kernel(out_ptr, a, b, c, d, e):
    kl.store(out_ptr, (a + b + c + e).to(kl.float64) + d)


def test_scalar_argument_types() -> None:
    signature = {"out_ptr": "*fp64", "a": "i1", "b": "u32", "c": "i64", "d": "fp64", "e": "fp32"}
    kernel = kiln.compile(scalar_arguments_kernel, signature=signature)
    assert ".entry scalar_arguments_kernel" in kernel.asm["ptx"]


@pytest.mark.skipif(os.name != "posix", reason="the stand-in ptxas is a shell script")
def test_ptxas_error_points_at_the_kernel_line(tmp_path, monkeypatch) -> None:
    # A stand-in ptxas that rejects the PTX line of the first global load,
    # as ptxas reports errors: "<file>, line N; error : ...".
    fake = tmp_path / "ptxas"
    fake.write_text(
        "#!/bin/sh\n"
        'for last; do :; done\n'
        'line=$(grep -n "ld.global" "$last" | head -n 1 | cut -d: -f1)\n'
        'echo "ptxas $last, line $line; error   : Unknown modifier" >&2\n'
        "exit 255\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("KILN_PTXAS", str(fake))
    with pytest.raises(kiln.CompilationError) as info:
        compile_add()
    error = info.value
    load_line = next(i for i, text in enumerate(open(__file__), 1) if "kl.load(x_ptr + offs, mask=mask)" in text)
    assert (error.filename, error.lineno) == (__file__, load_line)
    assert "ptxas failed for sm_90a" in str(error) and "Unknown modifier" in str(error)
    assert "kl.load(x_ptr + offs, mask=mask)" in str(error)


@kiln.jit
def _row_major_copy(x_ptr, out_ptr, stride_x, stride_out, BM: kl.constexpr, BN: kl.constexpr):
    rows = kl.arange(0, BM)
    cols = kl.arange(0, BN)
    x = kl.load(x_ptr + rows[:, None] * stride_x + cols[None, :])
    kl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], x)


def test_2d_access_width_follows_the_row_stride() -> None:
    # Rows of x start at multiples of an unaligned stride: element accesses.
    # Rows of out start at multiples of 16 elements: 16-byte accesses.
    attrs = Specialization(divisible_by_16=frozenset({"x_ptr", "out_ptr", "stride_out"}))
    kernel = kiln.compile(_row_major_copy, signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "stride_x": "i32",
                                                      "stride_out": "i32"},
                          constexprs={"BM": 16, "BN": 32}, attrs=attrs)
    ptx = kernel.asm["ptx"]
    loads = set(re.findall(r"ld\.global\.\S+", ptx))
    stores = set(re.findall(r"st\.global\.\S+", ptx))
    assert loads == {"ld.global.b32"}, loads
    assert stores == {"st.global.v4.b32"}, stores


def test_triton_form_with_an_ast_source(monkeypatch) -> None:
    """kiln.compile(ASTSource(...), target=None, options=None), as
    triton.compile: "constexpr" entries of the signature take their values
    from constexprs, the target defaults to the active driver's (the CPU
    backend where it is forced), and options carry the launch options."""
    from kiln.compiler import ASTSource

    monkeypatch.setenv("KILN_BACKEND", "cpu")
    signature = dict(SIGNATURES["fp32"], BLOCK="constexpr")
    source = ASTSource(fn=add_kernel, signature=signature, constexprs={"BLOCK": 256})
    compiled = kiln.compile(source)
    assert compiled.metadata["backend"] == "cpu" and "llir" in compiled.asm
    ptx = kiln.compile(source, target="sm_80", options={"num_warps": 2}).asm["ptx"]
    assert ".target sm_80" in ptx and ".reqntid 64" in ptx
    with pytest.raises(TypeError, match="unknown options num_threadz"):
        kiln.compile(source, options={"num_threadz": 2})
    with pytest.raises(TypeError, match="no value for constexpr parameters BLOCK"):
        kiln.compile(ASTSource(fn=add_kernel, signature=signature))


@kiln.jit
def mul_add_kernel(data_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(data_ptr + offs, kl.load(data_ptr + offs) * 1.5 + 1.0)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_enable_fp_fusion_decides_whether_a_multiply_add_is_one_fma(target) -> None:
    def compile_mul_add(**options):
        return kiln.compile(mul_add_kernel, signature={"data_ptr": "*fp32"}, constexprs={"BLOCK": 128},
                            target=target, **options).asm["ptx"]
    fma = re.compile(r"\b(fma|mad)\.rn(\.ftz)?\.f32\b")
    fused = compile_mul_add()
    apart = compile_mul_add(enable_fp_fusion=False)
    assert fma.search(fused)
    assert not fma.search(apart)
    # Explicitly rounded, so that ptxas does not fuse them either.
    assert re.search(r"\bmul\.rn\.f32\b", apart) and re.search(r"\badd\.rn\.f32\b", apart)
    assert compile_mul_add(enable_fp_fusion=True) == fused


def test_enable_fp_fusion_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="enable_fp_fusion must be True or False"):
        kiln.compile(mul_add_kernel, signature={"data_ptr": "*fp32"}, constexprs={"BLOCK": 128},
                     enable_fp_fusion="no")


def test_without_ptxas_the_ptx_is_kept_and_kiln_says_so_once(monkeypatch):
    """No ptxas anywhere: the compile keeps the PTX alone (the driver
    compiles it when loading) and one RuntimeWarning says where Kiln looked
    and how to get one; later compiles say nothing more."""
    from kiln.backends import nvidia

    monkeypatch.setattr(nvidia, "find_ptxas", lambda: None)
    monkeypatch.setattr(nvidia, "_said_no_ptxas", False)
    monkeypatch.setenv("KILN_DISABLE_CACHE", "1")
    with pytest.warns(RuntimeWarning, match=r"no ptxas found \(looked in \$KILN_PTXAS, .*nvidia-cuda-nvcc pip wheel\).*"
                                            r"pip install nvidia-cuda-nvcc") as record:
        first = kiln.compile(add_kernel, signature=SIGNATURES["fp32"], constexprs={"BLOCK": 128}, target="sm_90a")
    assert record[0].filename == __file__
    assert first.asm["cubin"] is None and ".entry add_kernel" in first.asm["ptx"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kiln.compile(add_kernel, signature=SIGNATURES["fp32"], constexprs={"BLOCK": 256}, target="sm_90a")


def test_ptxas_from_nvidias_pip_wheel_is_found(monkeypatch, tmp_path):
    from kiln.backends import nvidia

    ptxas = tmp_path / "nvidia" / "cu13" / "bin" / "ptxas"
    ptxas.parent.mkdir(parents=True)
    ptxas.write_text("#!/bin/sh\n")
    ptxas.chmod(0o755)
    for name in ("KILN_PTXAS", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(nvidia.shutil, "which", lambda name: None)
    monkeypatch.setattr(nvidia.os.path, "isfile",
                        lambda path, real=os.path.isfile: real(path) and not path.startswith("/usr/local/cuda"))
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert nvidia.find_ptxas() == str(ptxas)
