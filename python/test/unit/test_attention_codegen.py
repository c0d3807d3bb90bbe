"""What the plain FlashAttention forward compiles to on the NVIDIA targets
(no GPU needed): on sm_90a the softmax stays in the first dot's accumulator
layout, the second dot reads its A operand (the probabilities) from
registers, K and V are copied asynchronously into shared memory, and the
second dot runs an iteration late, during the next block's softmax."""

import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kiln
import kiln.language as kl
from kiln.compiler.specialization import Specialization

from attention_kernels import (attention_backward_dkdv, attention_backward_dq, attention_forward,
                               attention_forward_descriptors, attention_forward_whole_descriptors)
from kiln.backends.nvidia import find_ptxas
from kiln_test_support import kiln_search_path
from test_dot_codegen import descriptor_signature
from test_matmul_registers import registers_and_spills

SIGNATURE = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "M": "*fp32",
             "sm_scale": "fp32", "stride_z": "i32", "stride_h": "i32", "stride_tok": "i32",
             "stride_d": "i32", "H": "i32", "N_CTX": "i32"}

#: What a launch on contiguous [Z, H, N_CTX, HEAD_DIM] tensors specializes.
CONTIGUOUS = Specialization(
    divisible_by_16=frozenset({"Q", "K", "V", "Out", "M", "stride_z", "stride_h", "stride_tok",
                               "N_CTX"}),
    equal_to_1=frozenset({"stride_d"}))


def compile_forward(target: str, head_dim: int = 128, block_m: int = 128, block_n: int = 64,
                    num_warps: int = 8, num_stages: int = 3,
                    causal: bool = False) -> kiln.CompiledKernel:
    """The plain forward as a launch on contiguous operands compiles it,
    its loads through pointers only (KILN_POINTER_TENSOR_MAPS=0): the loop
    that programs failing the tensor maps' check run."""
    from kiln.compiler.compiler import compile_jit_function

    return compile_jit_function(attention_forward, SIGNATURE,
                                {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": causal,
                                 "MASK_KEYS": False},
                                CONTIGUOUS, target, num_warps, num_stages, pointer_tensor_maps=False)


def loop_bodies(ir: str) -> list[str]:
    """The text of each scf.for of a kiln_gpu module, through its yield:
    the lines indented deeper than the loop's own (the regions of ops in
    the body included)."""
    lines = ir.splitlines()
    bodies = []
    for start, line in enumerate(lines):
        if "scf.for" not in line:
            continue
        indent = len(line) - len(line.lstrip())
        end = start + 1
        while end < len(lines) and len(lines[end]) - len(lines[end].lstrip()) > indent:
            end += 1
        bodies.append("\n".join(lines[start:end]))
    return bodies


def loop_body(ir: str) -> str:
    """The text of the (last) scf.for of a kiln_gpu module."""
    return loop_bodies(ir)[-1]


@pytest.mark.parametrize("head_dim,block_m,block_n,num_warps",
                         [(64, 128, 64, 8), (128, 128, 64, 8), (128, 128, 128, 8),
                          (64, 64, 64, 4), (128, 64, 64, 4)])
@pytest.mark.parametrize("causal", [False, True])
def test_sm90a_forward(head_dim, block_m, block_n, num_warps, causal):
    compiled = compile_forward("sm_90a", head_dim=head_dim, block_m=block_m, block_n=block_n,
                               num_warps=num_warps, causal=causal)
    ir, ptx = compiled.asm["kiln_gpu"], compiled.asm["ptx"]
    body = loop_body(ir)
    # The softmax runs in the dots' layout: nothing is converted in the loop.
    assert "kiln_gpu.convert_layout" not in body
    # K and V come from pipeline slots; nothing is loaded in the loop.
    assert body.count("kiln_gpu.shared_operand") == 3  # Q, K, V
    assert "kiln.load" not in body
    assert "cp.async.cg.shared.global" in ptx
    # One loop, causal or not (the causal mask under an scf.if). On one
    # warpgroup with one 64-row tile, the second dot runs an iteration
    # late: the loop waits for the first dot with the second's group still
    # in flight. (Two warpgroups keep the dots in order.) Elsewhere at head
    # dimension 64 the second dot's group stays in flight into the next
    # iteration, whose rescale waits for it.
    bodies = loop_bodies(ir)
    assert len(bodies) == 1
    overlapped = re.search(r"kiln_gpu\.async_dot_wait \S+ \{pending = 1 : i32\}", body) is not None
    assert overlapped == (num_warps == 4 and block_m == 64)
    in_flight = not overlapped and "kiln_gpu.wgmma_buffer = 0" in body
    assert in_flight == (head_dim == 64 and not overlapped)
    # The second dot's A operand (the probabilities) is four registers.
    register_a = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n%dk16\.f32\.f16\.f16\s+"
                            r"\{[^}]*\},\s*\{%%r\d+,\s*%%r\d+,\s*%%r\d+,\s*%%r\d+\}" % head_dim)
    assert register_a.search(ptx)


@pytest.mark.parametrize("head_dim,block_m,block_n,num_warps,num_stages",
                         [(128, 128, 64, 8, 3), (128, 128, 128, 8, 2), (128, 64, 64, 4, 3),
                          (128, 128, 64, 4, 3), (64, 128, 64, 8, 3), (64, 128, 128, 8, 2)])
@pytest.mark.parametrize("causal", [False, True])
def test_sm90a_pointer_forward_loop_barrier(head_dim, block_m, block_n, num_warps, num_stages, causal):
    """The plain kernel, through pointers, at head dimension 128: each
    thread's cp.async copies of an iteration arrive on the slot's
    mbarrier, the warps wait for that phase alone and release the slot
    after its last dot, and every thread waits for the release of a slot
    before copying into it again. Nothing in the loop waits for every
    warp. The loops on one warpgroup (4 warps: no other warpgroup to drift
    apart from) keep their copy groups and their CTA barrier, and so do the
    loops at head dimension 64 (an accumulator 64 columns wide)."""
    compiled = compile_forward("sm_90a", head_dim=head_dim, block_m=block_m, block_n=block_n,
                               num_warps=num_warps, num_stages=num_stages, causal=causal)
    ir, ptx = compiled.asm["kiln_gpu"], compiled.asm["ptx"]
    keeps_barrier = num_warps == 4 or head_dim < 128
    bodies = loop_bodies(ir)
    for body in bodies:
        released = re.search(r"kiln_gpu\.wait_tma_barrier \S+, \S+ \{barriers = \d+ : i64, perThread, "
                             r"threadCopies\}", body) is not None
        assert released != keeps_barrier
        assert body.count("kiln_gpu.release_slot") == (0 if keeps_barrier else 1)
        assert body.count("kiln_gpu.async_copy_arrive") == (0 if keeps_barrier else 1)
    loops = wgmma_loop_blocks(ptx)
    assert len(loops) == len(bodies)
    for blocks in loops:
        text = "\n".join(blocks)
        assert ("bar.sync" in text) == keeps_barrier
        assert ("cp.async.mbarrier.arrive.noinc.shared.b64" in text) != keeps_barrier
        # The copies are the threads' own: made visible to wgmma's proxy
        # after the wait for them (of either kind).
        assert "fence.proxy.async.shared::cta" in text


def test_sm80_forward_uses_mma_sync_and_cp_async():
    compiled = compile_forward("sm_80", head_dim=64, num_warps=4, num_stages=2)
    ptx = compiled.asm["ptx"]
    assert "mma.sync.aligned.m16n8k16" in ptx
    assert "cp.async" in ptx


def compile_forward_pointer_maps(target: str, head_dim: int, block_m: int, block_n: int, num_warps: int,
                                 causal: bool, mask_keys: bool = False) -> kiln.CompiledKernel:
    """The plain forward as a launch compiles it by default on sm_90a (and,
    for the CPU, with KILN_POINTER_TENSOR_MAPS=1): pointer tensor maps."""
    from kiln.compiler.compiler import compile_jit_function

    options = {"pointer_tensor_maps": True} if target == "cpu" else {}
    return compile_jit_function(attention_forward, SIGNATURE,
                                {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": causal,
                                 "MASK_KEYS": mask_keys},
                                CONTIGUOUS, target, num_warps, 3, **options)


@pytest.mark.parametrize("head_dim,block_m,block_n,num_warps", [(64, 128, 64, 8), (128, 128, 128, 8),
                                                                (64, 128, 64, 4)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mask_keys", [False, True], ids=["unmasked", "masked"])
def test_sm90a_forward_pointer_loads_get_guarded_tensor_maps(head_dim, block_m, block_n, num_warps, causal,
                                                             mask_keys):
    """With pointer tensor maps, the plain forward's K and V loads get maps
    over their parameters, rows of stride_tok elements, that the launcher
    encodes or (guarded) passes empty; the loop is versioned on the
    program's check: the copy that reads through the maps is copied by the
    TMA unit, the loop as it was by cp.async. Masked to N_CTX, they get
    them too, the check requiring the masks true in every trip. On two
    consumer warpgroups at head dimension 128 the TMA side is
    warp-specialized: a producer warpgroup issues its copies where the
    check holds."""
    compiled = compile_forward_pointer_maps("sm_90a", head_dim, block_m, block_n, num_warps, causal, mask_keys)
    stride_tok = ["sext", 64, ["arg", 32, 8]]
    recipes = compiled.metadata["derived_tensor_maps"]
    assert [(recipe["arg"], recipe["base"]) for recipe in recipes] == [(12, 1), (13, 2)]  # K, V
    for recipe in recipes:
        assert recipe["guarded"] is True
        assert recipe["shape"] == [["const", 64, 2 ** 31 - 1], stride_tok] and recipe["strides"] == [stride_tok]
    assert set(compiled.metadata["tensor_maps"]) == {"<tensor map 0>", "<tensor map 1>"}
    ir, ptx = compiled.asm["kiln_gpu"], compiled.asm["ptx"]
    if num_warps == 8 and head_dim == 128:
        assert compiled.metadata["producer_warps"] == 4
        copies, mapped, pointers = loop_bodies(ir)
        assert copies.count("kiln_gpu.async_tma_copy") == 2 and "kiln.dot" not in copies
        assert "async_tma_copy" not in mapped and "kiln_gpu.release_slot" in mapped
        assert "kiln_gpu.await_turn" in mapped and "kiln_gpu.await_turn" not in pointers
        # Every warp meets only at the barriers of the mbarriers'
        # initialization before the producer warps branch off (any other
        # barrier there would count the consumer warps alone), and the
        # producer warps at none after.
        branch, consumers = ptx.index("setmaxnreg.dec"), ptx.index("setmaxnreg.inc")
        assert re.findall(r"bar\.sync \t(.+);", ptx[:branch]) == ["0", "0"]
        assert "bar.sync" not in ptx[branch:consumers]
    else:
        assert "producer_warps" not in compiled.metadata
        mapped, pointers = loop_bodies(ir)
        assert mapped.count("kiln_gpu.async_tma_copy") == 2
    assert "kiln_gpu.async_copy " not in mapped
    assert pointers.count("kiln_gpu.async_copy ") == 2 and "async_tma_copy" not in pointers
    assert "kiln.load" not in mapped and "kiln.load" not in pointers
    assert re.search(r"cp\.async\.bulk\.tensor\.2d", ptx) and "cp.async.cg.shared.global" in ptx
    if find_ptxas():
        assert compiled.asm["cubin"]


@pytest.mark.parametrize("head_dim,block_n", [(64, 64), (64, 128), (128, 64), (128, 128)])
@pytest.mark.parametrize("causal", [False, True])
def test_sm90a_one_warpgroup_forward_stays_rotated_off_pointer_tensor_maps(head_dim, block_n, causal):
    """On one warpgroup computing one 64-row tile the forward's loop is
    rotated (kiln-gpu-overlap-dots: the second dot an iteration late). Its
    version that reads through tensor maps was neither rotated nor, with
    the other version counted as a second loop of dots, was the loop as it
    was: 363 TFLOP/s against 430 for the rotated loop through pointers (H100,
    D 64, 64/64/4/3). The version is now copied by threads and dropped: the
    kernel is the one compiled without the maps, rotated."""
    compiled = compile_forward_pointer_maps("sm_90a", head_dim, 64, block_n, 4, causal)
    without = compile_forward("sm_90a", head_dim=head_dim, block_m=64, block_n=block_n, num_warps=4,
                              num_stages=3, causal=causal)
    assert "derived_tensor_maps" not in compiled.metadata
    ir = compiled.asm["kiln_gpu"]
    assert "kiln.tensor_map_version" not in ir and len(loop_bodies(ir)) == 1
    assert ir.count("kiln_gpu.async_dot_wait") == without.asm["kiln_gpu"].count("kiln_gpu.async_dot_wait") == 2


@kiln.jit
def unmasked_matmul(a_ptr, b_ptr, c_ptr, K, stride_am, stride_bk, stride_cm, BLOCK_M: kl.constexpr,
                    BLOCK_N: kl.constexpr, BLOCK_K: kl.constexpr):
    """C = A B over whole blocks: B's pointers advance by whole rows, A's
    along its rows."""
    offs_m = kl.program_id(0) * BLOCK_M + kl.arange(0, BLOCK_M)
    offs_n = kl.program_id(1) * BLOCK_N + kl.arange(0, BLOCK_N)
    offs_k = kl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = kl.zeros([BLOCK_M, BLOCK_N], dtype=kl.float32)
    for _ in range(0, K, BLOCK_K):
        acc = kl.dot(kl.load(a_ptrs), kl.load(b_ptrs), acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    kl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(kl.float16))


def test_pointer_tensor_maps_leave_a_loop_with_a_block_off_the_maps_alone():
    """B's loads qualify for a map, but A's move along its rows, not by
    whole rows: a version copying B by the TMA unit would load A itself in
    every trip, so the loop is not versioned, and the kernel keeps one
    loop, no map and the native launch, as without the option."""
    from kiln.compiler.compiler import compile_jit_function

    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32", "stride_am": "i32",
                 "stride_bk": "i32", "stride_cm": "i32"}
    attrs = Specialization(divisible_by_16=frozenset(signature))
    compiled = compile_jit_function(unmasked_matmul, signature, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
                                    attrs, "sm_90a", 8, 3, pointer_tensor_maps=True)
    from kiln import _C
    module = _C.ir.Module.parse(_C.ir.Context(), compiled.asm["kiln"])
    _C.compiler.run_pass_pipeline(module, "builtin.module(kiln-target-neutral, kiln-tensor-map-pointer-loads)")
    assert "kiln.tensor_map_version" not in module.str()
    assert "derived_tensor_maps" not in compiled.metadata
    ir = compiled.asm["kiln_gpu"]
    assert len(loop_bodies(ir)) == 1 and "scf.if" not in ir


def test_pointer_tensor_maps_leave_other_targets_and_the_switched_off_alone():
    """With the option off, and on sm_80 (no TMA unit), the plain forward
    keeps one loop and no maps."""
    for compiled in (compile_forward("sm_90a", head_dim=64, block_m=128, block_n=64, num_warps=8),
                     compile_forward_pointer_maps("sm_80", 64, 128, 64, 8, False)):
        assert "derived_tensor_maps" not in compiled.metadata
        assert len(loop_bodies(compiled.asm["kiln_gpu"])) == 1
        assert "cp.async.bulk.tensor" not in compiled.asm["ptx"]


@pytest.mark.parametrize("block_m,block_n,num_warps", [(128, 64, 8), (64, 64, 4), (128, 128, 8)])
def test_sm90a_forward_with_descriptors_made_in_the_kernel(block_m, block_n, num_warps):
    """Tutorial 06's way of reading K and V (`desc_k.load(...).T`, through
    descriptors made in the kernel, which are masked pointer loads): K and V
    are copied by cp.async in 16-byte runs, K as loaded into a K-major slot
    (the transpose goes with the load), so nothing is loaded in the loop."""
    signature = {name: ty for name, ty in SIGNATURE.items() if name != "stride_d"}
    attrs = Specialization(divisible_by_16=CONTIGUOUS.divisible_by_16)
    compiled = kiln.compile(attention_forward_descriptors, signature=signature, target="sm_90a",
                            num_warps=num_warps, num_stages=3, attrs=attrs,
                            constexprs={"HEAD_DIM": 128, "BLOCK_M": block_m, "BLOCK_N": block_n,
                                        "CAUSAL": False, "MASK_KEYS": False, "WARP_SPECIALIZE": False})
    ir, ptx = compiled.asm["kiln_gpu"], compiled.asm["ptx"]
    body = loop_body(ir)
    assert "kiln.load" not in body and "kiln.trans" not in body
    assert body.count("kiln_gpu.shared_operand") == 3  # Q, K, V
    assert re.search(r"kiln_gpu\.async_copy .*kMajor = true>, transposed\}", body)
    sizes = set(re.findall(r"cp\.async\.c[ag]\.shared\.global \[%r\d+\], \[%rd\d+\], (\d+)", ptx))
    assert sizes == {"16"}


#: Tutorial 06's launch on Hopper with warp_specialize=True: pointers to
#: contiguous arrays, over whose whole the kernel makes its descriptors.
WHOLE_SIGNATURE = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "Q": "*fp16", "K": "*fp16",
                   "V": "*fp16", "Out": "*fp16", "N_CTX": "i32"}


def compile_forward_whole_descriptors(block_n: int, causal: bool, warp_specialize, **options) -> kiln.CompiledKernel:
    attrs = Specialization(divisible_by_16=frozenset({"M", "Q", "K", "V", "Out", "N_CTX"}))
    return kiln.compile(attention_forward_whole_descriptors, signature=WHOLE_SIGNATURE, target="sm_90a",
                        num_warps=8, num_stages=3, attrs=attrs,
                        constexprs={"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": block_n, "CAUSAL": causal,
                                    "WARP_SPECIALIZE": warp_specialize}, **options)


@pytest.mark.parametrize("causal", [False, True])
def test_sm90a_descriptors_made_from_the_arguments_are_copied_by_the_tma_unit(causal):
    """Tutorial 06 with warp_specialize=True on Hopper makes its descriptors
    in the kernel, over [Z * H * N_CTX, HEAD_DIM]: computed from the
    arguments alone, their tensor maps become parameters after the
    kernel's own, which the launcher encodes from the recipe recorded for
    each, and K and V are copied by the TMA unit in a producer warpgroup,
    as for host descriptors. Q, read once, is copied by the TMA unit too,
    by the producer, before the loop's first copies; Out, only stored
    through, keeps no map."""
    compiled = compile_forward_whole_descriptors(64 if causal else 128, causal, True)
    recipes = compiled.metadata["derived_tensor_maps"]
    rows = ["sext", 64, ["mul", 32, ["mul", 32, ["arg", 32, 2], ["arg", 32, 3]], ["arg", 32, 8]]]
    assert [(recipe["arg"], recipe["base"]) for recipe in recipes] == [(9, 4), (10, 5), (11, 6)]  # Q, K, V
    for recipe in recipes:
        assert recipe["shape"] == [rows, ["const", 64, 128]] and recipe["strides"] == [["const", 64, 128]]
        assert (recipe["element_bits"], recipe["bfloat16"], recipe["nan"]) == (16, False, False)
        assert recipe["loc"].startswith(attention_forward_whole_descriptors.fn.__code__.co_filename)
    assert set(compiled.metadata["tensor_maps"]) == {"<tensor map 0>", "<tensor map 1>", "<tensor map 2>"}
    assert compiled.metadata["producer_warps"] == 4
    ptx = compiled.asm["ptx"]
    assert ptx.count(".param .align 64 .b8") == 3 and "cp.async.bulk.tensor.2d" in ptx
    assert "ld.global" not in ptx and "cp.async.cg" not in ptx


TRITON_TUTORIAL06 = Path(os.environ.get("KILN_TRITON_TESTS") or Path(__file__).resolve().parents[4] / "shared" /
                        "triton-3.6") / "tutorials" / "06-fused-attention.py"

def tutorial06_probe(kernel: str, body: str) -> str:
    """A script that loads Triton's tutorial 06 (its path the script's
    argument; run under kiln.compat), binds `fn` to the Kiln JIT function
    of its kernel `kernel`, then runs `body`, which prints JSON lines."""
    return textwrap.dedent(f"""
        import importlib.util, json, sys
        spec = importlib.util.spec_from_file_location("tutorial06", sys.argv[1])
        tutorial = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = tutorial
        spec.loader.exec_module(tutorial)
        import kiln
        from kiln.compiler.specialization import Specialization
        fn = tutorial.{kernel}
        while not isinstance(fn, kiln.JITFunction):
            fn = fn.fn
    """) + textwrap.dedent(body)


def run_tutorial06_probe(script: str, tmp_path: Path) -> list:
    """The JSON lines that `script` (a tutorial06_probe) prints."""
    probe = tmp_path / "tutorial06_probe.py"
    probe.write_text(script)
    result = subprocess.run([sys.executable, "-m", "kiln.compat", str(probe), str(TRITON_TUTORIAL06)],
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": kiln_search_path()})
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


# Compiles `_attn_fwd` as its Hopper launch with warp_specialize=True calls
# it, and prints the maps, producer warps and TMA copies of each compile.
TUTORIAL06_FORWARD_PROBE = tutorial06_probe("_attn_fwd", """
    for element in ("fp16", "fp8e5"):
        operands = {name: "*" + element for name in ("desc_q", "desc_k", "desc_v", "desc_o")}
        signature = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", **operands, "N_CTX": "i32"}
        attrs = Specialization(divisible_by_16=frozenset({"M", *operands, "N_CTX"}))
        for stage, block_n in ((1, 128), (3, 64)):
            compiled = kiln.compile(fn, signature=signature, target="sm_90a", num_warps=8, num_stages=3,
                                    attrs=attrs, constexprs={"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": block_n,
                                                             "FP8_OUTPUT": element != "fp16", "STAGE": stage,
                                                             "warp_specialize": True, "IS_HOPPER": True})
            ptx = compiled.asm["ptx"]
            print(json.dumps([len(compiled.metadata.get("derived_tensor_maps", [])),
                              compiled.metadata.get("producer_warps"), "cp.async.bulk.tensor" in ptx,
                              "cp.async.cg" in ptx]))
""")


@pytest.mark.skipif(not TRITON_TUTORIAL06.exists(), reason="no copy of Triton 3.6's tutorials (KILN_TRITON_TESTS)")
def test_triton_tutorial06_warp_specialized_on_hopper_copies_with_tma(tmp_path):
    """Triton's own tutorial 06, unmodified, with warp_specialize=True on
    Hopper (descriptors made in the kernel over the whole arrays), fp16 and
    fp8, causal and not: K and V copied by the TMA unit (their maps encoded
    by the launcher) in a producer warpgroup, and Q by the TMA unit too,
    once: no cp.async copy is left."""
    assert run_tutorial06_probe(TUTORIAL06_FORWARD_PROBE, tmp_path) == [[3, 4, True, False]] * 4


# Compiles `_attn_bwd` as its launch on contiguous fp16 tensors calls it on
# Hopper (pointer tensor maps on, as by default), and prints how many maps
# it got and whether a loop was versioned for them.
TUTORIAL06_BACKWARD_PROBE = tutorial06_probe("_attn_bwd", """
    pointers = ("Q", "K", "V", "DO", "DQ", "DK", "DV")
    signature = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "DO": "*fp16", "DQ": "*fp16",
                 "DK": "*fp16", "DV": "*fp16", "M": "*fp32", "D": "*fp32", "stride_z": "i32", "stride_h": "i32",
                 "stride_tok": "i32", "stride_d": "i32", "H": "i32", "N_CTX": "i32"}
    attrs = Specialization(divisible_by_16=frozenset({*pointers, "M", "D", "stride_z", "stride_h", "stride_tok",
                                                      "N_CTX"}), equal_to_1=frozenset({"stride_d"}))
    compiled = kiln.compile(fn, signature=signature, target="sm_90a", num_warps=4, num_stages=5, attrs=attrs,
                            constexprs={"BLOCK_M1": 32, "BLOCK_N1": 128, "BLOCK_M2": 128, "BLOCK_N2": 32,
                                        "BLK_SLICE_FACTOR": 2, "HEAD_DIM": 128})
    print(json.dumps([len(compiled.metadata.get("derived_tensor_maps", [])),
                      "kiln.tensor_map_version" in compiled.asm["kiln_gpu"]]))
""")


@pytest.mark.skipif(not TRITON_TUTORIAL06.exists(), reason="no copy of Triton 3.6's tutorials (KILN_TRITON_TESTS)")
def test_triton_tutorial06_backward_keeps_its_loops_off_pointer_tensor_maps(tmp_path):
    """Triton's tutorial 06 backward, unmodified, as its launch compiles it
    on Hopper: its loops read blocks that no map can take (the rows of M
    and D, and blocks read both as loaded and transposed), so no loop is
    versioned for tensor maps and none is made. With a version copying
    the others by TMA, its forward+backward ran at 33 TFLOP/s against
    Triton's 148 on an H100 (2026-12-08)."""
    assert run_tutorial06_probe(TUTORIAL06_BACKWARD_PROBE, tmp_path) == [[0, False]]


def test_descriptors_made_in_the_kernel_keep_pointers_in_checked_mode():
    """Checked mode checks each thread's loads: no tensor map parameters."""
    compiled = compile_forward_whole_descriptors(128, False, True, checked=True)
    assert "derived_tensor_maps" not in compiled.metadata
    assert ".param .align 64 .b8" not in compiled.asm["ptx"]


def compile_forward_with_host_descriptors(block_m: int, block_n: int, num_warps: int, causal: bool,
                                          warp_specialize: bool = False, **options) -> kiln.CompiledKernel:
    """Tutorial 06's forward as a launch with host descriptors of contiguous
    [Z * H * N_CTX, 128] arrays compiles it for sm_90a."""
    signature = {name: ty for name, ty in SIGNATURE.items() if name not in ("stride_d", "Q", "K", "V")}
    constexprs = {"HEAD_DIM": 128, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": causal,
                  "MASK_KEYS": False, "WARP_SPECIALIZE": warp_specialize}
    divisible = set(CONTIGUOUS.divisible_by_16) - {"Q", "K", "V"}
    for path, rows in (("Q", block_m), ("K", block_n), ("V", block_n)):
        signature.update(descriptor_signature(path, "fp16"))
        constexprs.update({f"{path}[3][0]": rows, f"{path}[3][1]": 128, f"{path}[4]": "zero"})
        divisible |= {f"{path}[0]", f"{path}[1][0]", f"{path}[1][1]", f"{path}[2][0]"}
    attrs = Specialization(divisible_by_16=frozenset(divisible),
                           equal_to_1=frozenset({"Q[2][1]", "K[2][1]", "V[2][1]"}))
    return kiln.compile(attention_forward_descriptors, signature=signature, target="sm_90a",
                        num_warps=num_warps, num_stages=3, attrs=attrs, constexprs=constexprs, **options)


@pytest.mark.parametrize("block_m,block_n,num_warps", [(128, 64, 8), (64, 64, 4)])
@pytest.mark.parametrize("causal", [False, True])
def test_sm90a_forward_with_host_descriptors(block_m, block_n, num_warps, causal):
    """Tutorial 06's forward on Hopper when causal: host descriptors, the
    loop carrying the rows it reads, and (causal) a second loop over the
    diagonal blocks. The TMA unit copies K and V in every loop (the
    descriptors' masked pointers, computed from the same carried offset,
    run ahead with the coordinates), and Q, loaded once and read by both
    loops, is copied into a slot once, by the TMA unit, before the first
    loop, instead of being stored from registers every iteration: the
    second loop reads the slot as the first left it."""
    compiled = compile_forward_with_host_descriptors(block_m, block_n, num_warps, causal)
    ir, ptx = compiled.asm["kiln_gpu"], compiled.asm["ptx"]
    loops = 2 if causal else 1
    bodies = loop_bodies(ir)
    assert len(bodies) == loops
    for body in bodies:
        assert "kiln.load" not in body and "kiln_gpu.convert_layout" not in body
        assert body.count("kiln_gpu.shared_operand") == 3  # Q, K, V
        assert body.count("kiln_gpu.async_tma_copy") == 2  # K, V
    # Q: one TMA copy for both loops, into a slot of its own, waited for
    # on an mbarrier of its own; none from registers in a loop.
    once = re.findall(r"kiln_gpu\.async_tma_copy .*operand = 0, .*slots = 1>.*", ir)
    assert len(once) == 1 and "warp =" not in once[0]
    barrier = re.search(r"barriers = (\d+) : i64", once[0]).group(1)
    assert len(re.findall(rf"kiln_gpu\.wait_tma_barrier .*barriers = {barrier} : i64, perThread\}}", ir)) == 1
    assert "kiln_gpu.async_copy " not in ir
    assert "cp.async.bulk.tensor.2d" in ptx and "ld.global" not in ptx and "cp.async.cg" not in ptx


@pytest.mark.parametrize("block_m,block_n,num_warps", [(128, 128, 8), (128, 64, 8)])
@pytest.mark.parametrize("causal", [False, True])
def test_sm90a_unspecialized_tma_loop_has_no_cta_barrier(block_m, block_n, num_warps, causal):
    """Tutorial 06's forward with warp_specialize=False (as its Hopper
    benchmark runs the causal forward): no producer, so the kernel's first
    warp issues the TMA copies. The warps wait for a slot's copies alone and
    release the slot after its last dot; the first warp alone waits for that
    release before refilling the slot, and nothing in the loop waits for
    every warp (no bar.sync between the loop's first and last wgmma)."""
    compiled = compile_forward_with_host_descriptors(block_m, block_n, num_warps, causal)
    ir, ptx = compiled.asm["kiln_gpu"], compiled.asm["ptx"]
    assert "producer_warps" not in compiled.metadata
    bodies = loop_bodies(ir)
    assert len(bodies) == (2 if causal else 1)
    for body in bodies:
        assert re.search(r"kiln_gpu\.wait_tma_barrier \S+, \S+ \{barriers = \d+ : i64, perThread\}", body)
        assert body.count("kiln_gpu.release_slot") == 1
        assert re.search(r"kiln_gpu\.wait_tma_barrier .*perThread, warp = 0 : i32\}", body)
    # The blocks of the loops that issue the wgmmas: no CTA barrier. (LLVM
    # leaves the causal diagonal's loop as straight code where it has one
    # iteration, BLOCK_M being BLOCK_N.)
    loops = wgmma_loop_blocks(ptx)
    assert len(loops) == len(bodies) - (causal and block_m == block_n)
    for blocks in loops:
        assert not any("bar.sync" in block or "barrier.sync" in block for block in blocks)


def wgmma_loop_blocks(ptx: str) -> list[list[str]]:
    """The basic blocks of each loop of `ptx` that issues wgmma: each
    block with a wgmma and every block on a cycle through it."""
    parts = re.split(r"^(\$L__BB\d+_\d+):", ptx, flags=re.MULTILINE)
    names = ["entry"] + parts[1::2]
    texts = [parts[0]] + parts[2::2]
    successors = []
    for index, text in enumerate(texts):
        targets = set(re.findall(r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);", text))
        ends = text.rstrip().splitlines()[-1].strip() if text.strip() else ""
        if not ends.startswith(("bra.uni", "ret")) and index + 1 < len(names):
            targets.add(names[index + 1])
        successors.append({names.index(target) for target in targets})

    def reachable(start: int) -> set[int]:
        seen, stack = set(), [start]
        while stack:
            for successor in successors[stack.pop()]:
                if successor not in seen:
                    seen.add(successor)
                    stack.append(successor)
        return seen

    loops: list[set[int]] = []
    for index, text in enumerate(texts):
        if "wgmma.mma_async" not in text or any(index in loop for loop in loops):
            continue
        cycle = {other for other in reachable(index) if index in reachable(other)}
        if cycle:
            loops.append(cycle)
    return [[texts[index] for index in sorted(loop)] for loop in loops]


def compile_backward(kernel, head_dim: int, block_m: int, block_n: int, num_warps: int, num_stages: int,
                     causal: bool = False, pointer_tensor_maps: bool = False) -> kiln.CompiledKernel:
    """One of the backward's kernels (`attention_backward_dkdv`,
    `attention_backward_dq`) as a launch on contiguous operands compiles it
    for sm_90a, its loads through pointers only (as compile_forward) unless
    `pointer_tensor_maps` (a launch's default)."""
    from kiln.compiler.compiler import compile_jit_function

    signature = dict(SIGNATURE)
    signature.update({"DO": "*fp16", "DK": "*fp16", "DV": "*fp16", "DQ": "*fp16", "Delta": "*fp32"})
    parameters = [name for name in inspect.signature(kernel.fn).parameters if name in signature]
    signature = {name: signature[name] for name in parameters}
    attrs = Specialization(divisible_by_16=CONTIGUOUS.divisible_by_16 | {"DO", "DK", "DV", "DQ", "Delta"},
                           equal_to_1=frozenset({"stride_d"}))
    return compile_jit_function(kernel, signature,
                                {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": causal},
                                attrs, "sm_90a", num_warps, num_stages, pointer_tensor_maps=pointer_tensor_maps)


def compile_backward_dkdv(head_dim: int, block_m: int, block_n: int, num_warps: int,
                          num_stages: int) -> kiln.CompiledKernel:
    """The backward's non-causal dK/dV kernel, compiled for sm_90a."""
    return compile_backward(attention_backward_dkdv, head_dim, block_m, block_n, num_warps, num_stages)


@pytest.mark.parametrize("head_dim,block_m,block_n,num_warps",
                         [(128, 64, 128, 8), (128, 64, 64, 4), (64, 64, 64, 4), (64, 32, 128, 4)])
def test_sm90a_backward_dkdv_loop_barrier(head_dim, block_m, block_n, num_warps):
    """At head dimension 128 on two warpgroups, the dK/dV loop's copies (of
    Q, dO and the rows of M and Delta) arrive on the slots' mbarriers, and
    the slot is released after its last reader, the rows' block read
    included: no CTA barrier in the loop. On one warpgroup (tutorial 06's
    backward: 4 warps), or at head dimension 64 (accumulators 64 columns
    wide), the loop keeps its copy groups and its barrier."""
    compiled = compile_backward_dkdv(head_dim, block_m, block_n, num_warps, num_stages=3)
    ir, ptx = compiled.asm["kiln_gpu"], compiled.asm["ptx"]
    released = head_dim >= 128 and num_warps >= 8
    (body,) = loop_bodies(ir)
    assert "kiln_gpu.load_block" in body
    assert ("threadCopies" in body) == released
    assert body.count("kiln_gpu.release_slot") == (1 if released else 0)
    (blocks,) = wgmma_loop_blocks(ptx)
    assert any("bar.sync" in block or "barrier.sync" in block for block in blocks) != released


@pytest.mark.parametrize("block_m,block_n", [(32, 128), (16, 64), (64, 128)])
def test_sm90a_backward_dkdv_on_wgmma_from_slots(block_m, block_n):
    """The dK/dV loop of the backward (tutorial 06's shape): every dot on
    wgmma, also those BLOCK_M (16 or 32) columns wide; qT and dO, each read
    by two dots (once transposed), each copied once into a slot that both
    read in their own views; K and V, loaded before the loop, in slots of
    their own; the rows of M and delta copied into block slots with qT and
    dO and read back from them in the iteration that uses them."""
    compiled = compile_backward_dkdv(128, block_m, block_n, num_warps=4, num_stages=3)
    ir, ptx = compiled.asm["kiln_gpu"], compiled.asm["ptx"]
    assert "mma.sync" not in ptx
    assert f"wgmma.mma_async.sync.aligned.m64n{block_m}k16" in ptx
    body = loop_body(ir)
    assert not re.search(r"kiln\.load .*tensor<\d+x\d+x!kiln\.ptr", body)
    views = re.findall(r"kiln_gpu\.shared_operand .*operand = 1, .*offset = (\d+), .*slots = 3(, kMajor = true)?>",
                       body)
    # qT and dO: one slot each, read N-major by one dot and K-major by another.
    assert len(views) == 4 and len({offset for offset, _ in views}) == 2
    assert sorted(bool(k_major) for _, k_major in views) == [False, False, True, True]
    # M and delta come through block slots, copied asynchronously with qT
    # and dO (loaded in the loop, their latency stalled its softmax), not
    # carried in registers (moved an iteration ahead so, they cost the
    # backward 12 % on an H100).
    loop_header = ir[ir.rindex("scf.for"):]
    loop_header = loop_header[:loop_header.index("{")]
    assert loop_header.count(f"tensor<{block_m}xf32") == 0
    assert not re.search(rf"kiln\.load .*tensor<{block_m}x!kiln\.ptr<f32>", body)
    assert len(re.findall(rf"kiln_gpu\.load_block .*block_buffer.* : tensor<{block_m}xf32", body)) == 2
    assert len(re.findall(rf"kiln_gpu\.async_copy_block .*tensor<{block_m}x!kiln\.ptr<f32>", body)) == 2
    # The rows are copied under a layout of their own, 16 bytes a thread:
    # one cp.async per row and thread, in each of the two copies before the
    # loop and in the loop (not one per pair of elements a thread reads).
    assert len(re.findall(r"@p cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16,", ptx)) == 2 * 3


@pytest.mark.parametrize("kernel,head_dim,block_m,block_n,num_warps",
                         [(attention_backward_dkdv, 128, 64, 128, 8), (attention_backward_dkdv, 64, 64, 64, 4),
                          (attention_backward_dq, 128, 128, 64, 8), (attention_backward_dq, 64, 64, 64, 4)])
@pytest.mark.parametrize("causal", [False, True])
def test_sm90a_backward_loops_keep_their_copies_off_pointer_tensor_maps(kernel, head_dim, block_m, block_n,
                                                                        num_warps, causal):
    """Compiled as a launch compiles them by default on sm_90a (pointer
    tensor maps on), the backward's loops keep no version: the dK/dV
    loop also loads the rows of M and Delta, which no dot reads and no map
    takes, and the dQ loop reads K both as loaded and transposed, which its
    version loads through the map as its transpose, a block the pipeline
    does not copy for two readers. A version copying the other
    blocks by TMA loaded those itself in every trip, and made the backward
    ten times slower on an H100 (2026-12-08). Every block the loop reads
    is copied ahead, no load left in it, and no map made."""
    compiled = compile_backward(kernel, head_dim, block_m, block_n, num_warps, 2, causal=causal,
                                pointer_tensor_maps=True)
    assert "derived_tensor_maps" not in compiled.metadata
    ir = compiled.asm["kiln_gpu"]
    assert "kiln.tensor_map_version" not in ir and "async_tma_copy" not in ir
    for body in loop_bodies(ir):
        assert not re.search(r"kiln\.load .*tensor<\d+(x\d+)?x!kiln\.ptr", body)
        assert "kiln_gpu.async_copy " in body


def test_sm90a_backward_dkdv_square_blocks_from_slots(tmp_path):
    """Head dimension 64 with BLOCK_M 64: dO is a square block, read as the
    B of dV's dot and, transposed, of dP's, and the layout passes convert
    it once for both. A slot holds it as loaded whatever layout its readers
    had it converted to, so it is copied into one like qT (on 2026-12-05
    it was loaded an iteration ahead into registers and stored to shared
    memory every iteration instead: 255 registers with spills, 0.45x
    Triton's backward on the H200)."""
    compiled = compile_backward_dkdv(64, 64, 128, num_warps=8, num_stages=2)
    body = loop_body(compiled.asm["kiln_gpu"])
    assert not re.search(r"kiln\.load .*tensor<64x64x!kiln\.ptr", body)
    assert "kiln_gpu.convert_layout" not in body
    assert body.count("kiln_gpu.async_copy ") == 2  # qT and dO
    assert body.count("kiln_gpu.async_copy_block ") == 2  # M and delta
    if find_ptxas() is not None:
        assert registers_and_spills(compiled.asm["ptx"], tmp_path)[1] == 0


@pytest.mark.parametrize("block_m,block_n,num_warps", [(128, 64, 8), (64, 64, 4)])
def test_sm90a_causal_mask_only_on_the_diagonal(block_m, block_n, num_warps, tmp_path):
    """The plain causal forward writes one loop with the mask in every
    iteration: kiln-guard-loop-masks computes and applies the mask under an
    scf.if, only in the iterations that reach the diagonal, so the blocks
    below it compute no mask, and the loop stays one pipelined loop (no
    second pipeline starting at the diagonal), without spills."""
    compiled = compile_forward("sm_90a", head_dim=128, block_m=block_m, block_n=block_n, num_warps=num_warps,
                               causal=True)
    ir = compiled.asm["kiln_gpu"]
    bodies = loop_bodies(ir)
    assert len(bodies) == 1
    body = bodies[0]
    assert body.count("kiln_gpu.shared_operand") == 3 and "kiln.load" not in body
    branch = body.index("scf.if")
    select = re.compile(r"arith\.select .*tensor<\d+x\d+xf32")
    compare = re.compile(r"arith\.cmpi sge, .*tensor<\d+x\d+xi32")
    assert select.search(body[branch:]) and compare.search(body[branch:])
    assert not select.search(body[:branch]) and not compare.search(body[:branch])
    if find_ptxas() is not None:
        assert registers_and_spills(compiled.asm["ptx"], tmp_path)[1] == 0


@pytest.mark.parametrize("kernel,block_m,block_n,num_warps",
                         [(attention_backward_dkdv, 64, 128, 8), (attention_backward_dq, 128, 64, 8),
                          (attention_backward_dq, 64, 64, 4)])
def test_sm90a_backward_causal_mask_under_a_branch(kernel, block_m, block_n, num_warps):
    """The backward's causal loops stay one loop each, their masks (dQ's
    the causal mask and the bound on the keys, joined by `&`) under an
    scf.if: the blocks that need no mask compute no causal compare."""
    compiled = compile_backward(kernel, 128 if num_warps == 8 else 64, block_m, block_n, num_warps, num_stages=3,
                                causal=True)
    bodies = loop_bodies(compiled.asm["kiln_gpu"])
    assert len(bodies) == 1
    body = bodies[0]
    branch = body.index("scf.if")
    # (The bound on the keys is also the loads' mask, computed before.)
    causal = re.compile(r"arith\.cmpi sge, .*tensor<\d+x\d+xi32")
    select = re.compile(r"arith\.select .*tensor<\d+x\d+xf32")
    for pattern in (causal, select):
        assert pattern.search(body[branch:]) and not pattern.search(body[:branch])


@pytest.mark.parametrize("block_n", [64, 128])
def test_sm90a_forward_warp_specialized(block_n, tmp_path):
    """`kl.range(..., warp_specialize=True)` on the TMA loop of two consumer
    warpgroups: 12 warps in all, the producer warpgroup giving registers to
    the consumers, which wait for each slot by themselves (no barrier in
    the loop), release it after the second dot, and meet only on named
    barrier 1 of their 256 threads."""
    compiled = compile_forward_with_host_descriptors(128, block_n, 8, causal=False, warp_specialize=True)
    ir, ptx = compiled.asm["kiln_gpu"], compiled.asm["ptx"]
    assert compiled.metadata["producer_warps"] == 4
    assert ".reqntid 384, 1, 1" in ptx
    assert "setmaxnreg.dec.sync.aligned.u32 \t40;" in ptx and "setmaxnreg.inc.sync.aligned.u32 \t232;" in ptx
    # Every warp passes the three barriers after the mbarriers'
    # initialization (Q's, the ring's "full" and "empty" ones), then the
    # consumers only named barrier 1 and their turn barriers (numbered by
    # warpgroup: a register).
    assert re.findall(r"bar\.sync \t(\S+);", ptx)[:3] == ["0", "0", "0"]
    consumer_barriers = {re.sub(r"%r\d+", "%r", barrier) for barrier in re.findall(r"bar\.sync \t(.+);", ptx)[3:]}
    assert consumer_barriers == {"1, 256", "%r, 256"}
    producer = ir[ir.index("kiln_gpu.producer"):ir.index("kiln_gpu.producer") + ir[ir.index("kiln_gpu.producer"):].index("\n    }\n")]
    # Q once, then K and V two iterations ahead and in the loop.
    assert producer.count("kiln_gpu.async_tma_copy") == 7 and "warp = 8 : i32" in producer
    assert "operand = 0" in producer[:producer.index("scf.for")]
    body = loop_body(ir)
    assert "kiln_gpu.async_tma_copy" not in body and "perThread" in body
    assert body.count("kiln_gpu.release_slot") == 1
    # The loop's own PTX: from the consumers' wait to their release, no CTA
    # barrier, only the warpgroup's turn (kiln-gpu-ping-pong).
    loop = ptx[ptx.index("setmaxnreg.inc"):]
    loop = loop[loop.index("mbarrier.try_wait.parity"):loop.index("mbarrier.arrive.shared")]
    assert re.findall(r"bar\.sync \t(\S+),", loop) and all(
        barrier.startswith("%r") for barrier in re.findall(r"bar\.sync \t(\S+),", loop))
    assert "cp.async.bulk.tensor" not in loop
    # 384 threads start with 168 registers each; the consumers' code may use
    # up to 232 after setmaxnreg (BLOCK_N 128 needs 175 without a producer),
    # and ptxas allocates it so, without spilling.
    if find_ptxas() is not None:
        assert registers_and_spills(ptx, tmp_path) == (168, 0)


def test_sm90a_warp_specialized_warpgroups_take_turns():
    """FlashAttention-3's schedule on the specialized loop of two consumer
    warpgroups with three slots: kiln-gpu-overlap-dots rotates it (each
    iteration issues block i's scores and block i - 1's second dot, then
    computes block i's softmax while that runs) and kiln-gpu-ping-pong makes
    the warpgroups take turns issuing both: warpgroup 0 arrives on its turn
    barrier (2) once, as the consumers start; in the loop a warpgroup waits
    for its turn (bar.sync on its turn barrier, 256 threads), issues both
    dots' wgmmas, passes the turn (bar.arrive) with both groups in flight,
    then waits for the first group only; after the softmax, for the second,
    and releases the previous block's slot."""
    ptx = compile_forward_with_host_descriptors(128, 128, 8, causal=False, warp_specialize=True).asm["ptx"]
    consumer = ptx[ptx.index("setmaxnreg.inc"):]
    assert consumer.index("bar.arrive 2, 256;") < consumer.index("mbarrier.try_wait.parity")
    await_turn = re.search(r"bar\.sync \t%r\d+, 256;", consumer)
    loop = consumer[await_turn.end():]
    pass_turn = re.search(r"bar\.arrive %r\d+, 256;", loop)
    issued = loop[:pass_turn.start()]
    assert issued.count("wgmma.commit_group") == 2
    assert not re.search(r"wgmma\.wait_group\.sync\.aligned\s+0", issued)
    assert "wgmma.wait_group.sync.aligned 1;" in loop[pass_turn.end():][:200]
    iteration = loop[:loop.index("mbarrier.arrive.shared")]
    assert len(re.findall(r"bar\.(?:sync|arrive)", iteration)) == 1  # the pass (the await is before `loop`)
    assert re.search(r"wgmma\.wait_group\.sync\.aligned\s+0", iteration[pass_turn.end():])


def test_sm90a_attention_warp_specialized_unasked():
    """Left to the compiler (`warp_specialize` None), attention's loop on 8
    warps gets a producer; on 4 warps nothing changes."""
    compiled = compile_forward_with_host_descriptors(128, 64, 8, causal=False, warp_specialize=None)
    ir, ptx = compiled.asm["kiln_gpu"], compiled.asm["ptx"]
    assert compiled.metadata["producer_warps"] == 4 and ir.count("kiln_gpu.producer") == 1
    bodies = loop_bodies(ir)  # the producer's loop first
    assert len(bodies) == 2
    assert "kiln_gpu.release_slot" in bodies[1] and "perThread" in bodies[1]
    assert "kiln_gpu.await_turn" in bodies[1]
    four = compile_forward_with_host_descriptors(64, 64, 4, causal=False, warp_specialize=None)
    assert "producer_warps" not in four.metadata


@pytest.mark.parametrize("warp_specialize", [None, True])
def test_sm90a_causal_attention_warp_specialized(warp_specialize):
    """The causal forward's two TMA loops (the blocks below the diagonal,
    then the diagonal's) share one producer and one ring of slots: the
    producer runs a copy loop for each, in order; the second loop has
    "full" mbarriers of its own, initialized with the first loop's and the
    shared "empty" ones before the producer branches off, and the
    producer waits for the first loop's releases before the second loop's
    first copies too. The consumers take turns at the first dot in both
    loops, after one begin_turns."""
    compiled = compile_forward_with_host_descriptors(128, 64, 8, causal=True, warp_specialize=warp_specialize)
    ir = compiled.asm["kiln_gpu"]
    assert compiled.metadata["producer_warps"] == 4
    producer_start = ir.index("kiln_gpu.producer")
    inits = re.findall(r"kiln_gpu\.init_tma_barriers \{allWarps, arrivals = (\d+) : i32, count = 3 : i32, "
                       r"offset = (\d+) : i64\}", ir[:producer_start])
    full = [int(offset) for arrivals, offset in inits if arrivals == "2"]
    empty = [int(offset) for arrivals, offset in inits if arrivals == "8"]
    assert len(full) == 2 and len(empty) == 1 and len(set(full + empty)) == 3
    producer = ir[producer_start:ir.index("kiln_gpu.begin_turns")]
    assert producer.count("scf.for") == 2
    # Between the first copy loop and the second loop's first copy: a wait
    # for a release of the first loop's.
    first_loop_end = producer.index("scf.yield", producer.index("scf.for"))
    between = producer[first_loop_end:producer.index(f"barriers = {full[1]}")]
    assert re.search(rf"kiln_gpu\.wait_tma_barrier .*barriers = {empty[0]} : i64, perThread", between)
    consumer = ir[ir.index("kiln_gpu.begin_turns"):]
    assert ir.count("kiln_gpu.begin_turns") == 1 and consumer.count("kiln_gpu.await_turn") == 2
    # Each loop rotated (kiln-gpu-overlap-dots): a release in it and one
    # after it, for the last block.
    assert len(re.findall(rf"kiln_gpu\.release_slot %\S+ {{barriers = {empty[0]} : i64}}", consumer)) == 4
    # Q: copied once, by the producer, first; the consumers copy nothing.
    assert "kiln_gpu.async_tma_copy" not in consumer
    first_copy = re.search(r"kiln_gpu\.async_tma_copy .*", producer).group(0)
    assert "operand = 0" in first_copy and "slots = 1>" in first_copy
    # Each loop's "full" mbarriers invalidated after it, the "empty" ones last.
    invals = [int(offset) for offset in re.findall(r"kiln_gpu\.inval_tma_barriers \{count = 3 : i32, offset = (\d+)",
                                                   consumer)]
    assert invals == full + empty


def test_sm90a_warp_specialized_under_a_register_cap():
    """Under `maxnreg` a thread starts with fewer registers than the
    producers give back and the consumers take (which assumes the 168 a
    384-thread kernel starts with): the consumers would wait for registers
    forever, so none move."""
    compiled = compile_forward_with_host_descriptors(128, 64, 8, causal=False, warp_specialize=True, maxnreg=128)
    ptx = compiled.asm["ptx"]
    assert compiled.metadata["producer_warps"] == 4 and ".maxnreg 128" in ptx
    assert "setmaxnreg" not in ptx


def test_sm90a_warp_specialize_left_for_one_warpgroup():
    """With one warpgroup the second dot runs an iteration late
    (kiln-gpu-overlap-dots), reading a slot after the iteration that would
    release it: the request is left, and the kernel keeps its own copies."""
    compiled = compile_forward_with_host_descriptors(64, 64, 4, causal=False, warp_specialize=True)
    assert "producer_warps" not in compiled.metadata
    assert "kiln_gpu.producer" not in compiled.asm["kiln_gpu"]
    assert ".reqntid 128, 1, 1" in compiled.asm["ptx"]
