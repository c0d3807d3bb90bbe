"""kl.dot code generation for the GPU, checked without a GPU: the
tensor-core path's PTX (assembled by ptxas for sm_80 and sm_90a)."""

import os
import re
import sys

import pytest

import kiln
import kiln.language as kl
from kiln.compiler.specialization import Specialization

from matmul_kernels import matmul_kernel, typed_matmul_kernel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))

from test_dot import batched_kernel  # noqa: E402

SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}
SIGNATURE.update({name: "i32" for name in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk",
                                           "stride_bn", "stride_cm", "stride_cn")})


#: What a launch on contiguous 16-byte aligned row-major operands specializes.
ROW_MAJOR = Specialization(
    divisible_by_16=frozenset({"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk",
                               "stride_cm"}),
    equal_to_1=frozenset({"stride_ak", "stride_bn", "stride_cn"}))


def compile_matmul(target, block_m=128, block_n=128, block_k=32, num_warps=4, acc_in_dot=True,
                   num_stages=3):
    return kiln.compile(matmul_kernel, signature=SIGNATURE, target=target, num_warps=num_warps,
                        num_stages=num_stages, attrs=ROW_MAJOR,
                        constexprs={"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k,
                                    "GROUP_SIZE_M": 8, "ACC_IN_DOT": acc_in_dot})


def count_instruction(ptx: str, text: str) -> int:
    """Occurrences of `text` in `ptx`, any run of blanks matching a space
    (LLVM separates an instruction from its operands by a tab)."""
    return len(re.findall(re.escape(text).replace(r"\ ", r"[ \t]+"), ptx))


def test_sm80_ptx_uses_mma_sync_and_ldmatrix():
    ptx = compile_matmul("sm_80").asm["ptx"]
    # 128x128x32 on 4 warps: each warp 4 x 8 instruction tiles, 2 k-steps.
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 64
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx
    assert "wgmma" not in ptx


@pytest.mark.parametrize("block_k,instructions", [(32, 4), (64, 8)])
def test_sm90a_ptx_uses_wgmma(block_k, instructions):
    """On sm_90a the warpgroup MMA: 128 rows on one warpgroup are two
    m64n128k16 instructions per k-step of 16, behind a proxy fence, with
    one commit and one wait per dot (num_stages=2: no asynchronous dots)."""
    compiled = compile_matmul("sm_90a", block_k=block_k, num_stages=2)
    ptx = compiled.asm["ptx"]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == instructions
    assert ptx.count("wgmma.commit_group.sync.aligned") == 1
    assert ptx.count("wgmma.wait_group.sync.aligned 0") == 1
    assert "fence.proxy.async.shared::cta" in ptx
    assert "mma.sync" not in ptx
    assert compiled.metadata["shared"] >= (128 * block_k + block_k * 128) * 2


TILE_BYTES = (128 * 32 + 32 * 128) * 2  # the A and B tiles of 128x128x32 fp16

#: The epilogue of a 128x128 fp16 result on 4 warps: the accumulator layout
#: holds pairs of columns, so the tile goes through shared memory to leave
#: as 16-byte stores: 128 elements per thread, stored two at a time, into
#: rows padded by 16 bytes.
EPILOGUE_SHARED_STORES = 128 * 128 // 128 // 2
EPILOGUE_BYTES = 128 * (128 + 8) * 2


def only_epilogue_shared_stores(ptx: str) -> bool:
    """Whether the epilogue's are the only shared-memory stores: operands
    never go through registers."""
    return (len(re.findall(r"\bst\.shared", ptx)) == EPILOGUE_SHARED_STORES
            and ptx.count("st.shared.b32") == EPILOGUE_SHARED_STORES)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("num_stages", [2, 3, 4])
def test_pipelined_copies(target, num_stages):
    """num_stages >= 2: the operands go from global to shared memory by
    cp.async into num_stages slots each, never through registers. Before
    the loop the first num_stages - 1 iterations' copies (one commit group
    each), in it one group, for the iteration num_stages - 1 ahead; the
    loop waits until num_stages - 2 groups are left in flight."""
    compiled = compile_matmul(target, block_k=32, num_stages=num_stages)
    ptx = compiled.asm["ptx"]
    groups = num_stages  # num_stages - 1 before the loop, one in it
    # Per group, each of the 128 threads copies 16 bytes at a time:
    # 8 KiB of A and 8 KiB of B, 4 + 4 copies.
    assert ptx.count("cp.async.cg.shared.global") == 8 * groups
    assert ptx.count("cp.async.commit_group") == groups
    assert count_instruction(ptx, f"cp.async.wait_group {num_stages - 2};")
    assert count_instruction(ptx, "cp.async.wait_group 0;")  # after the loop
    assert "ld.global" not in ptx and only_epilogue_shared_stores(ptx)
    # The epilogue's conversion reuses the slots' bytes (shared memory by
    # liveness).
    assert compiled.metadata["shared"] == max(num_stages * TILE_BYTES, EPILOGUE_BYTES)
    # Barriers: at the top of the loop, after it, and the epilogue's two,
    # the first of which follows the one after the loop with no memory
    # access between and is dropped; none before the first copies (the
    # epilogue's scratch overlaps the slots, but only scalar code comes
    # before them: no scratch user to wait for), nor before the copies
    # inside the loop, which are part of the span.
    assert ptx.count("bar.sync") == 3
    if target == "sm_90a":
        assert "fence.proxy.async.shared::cta" in ptx
        assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16") == 4
    else:
        assert "fence.proxy" not in ptx and ptx.count("mma.sync.aligned") == 64


def test_sm90a_async_dots_with_three_stages():
    """num_stages=3 on one warpgroup: the dot only waits for the previous
    wgmma group (its slot is the one the next copies overwrite), and the
    accumulator is read after the loop's wait for all groups."""
    ptx = compile_matmul("sm_90a", block_k=32, num_stages=3).asm["ptx"]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16") == 4
    assert count_instruction(ptx, "wgmma.wait_group.sync.aligned 1") == 1
    assert count_instruction(ptx, "wgmma.wait_group.sync.aligned 0") == 1


def test_two_warpgroups_get_one_more_slot():
    """With asynchronous dots on two warpgroups, the other warpgroup may
    still read the previous iteration's slot when one copies: a fourth
    slot at num_stages=3, copies still two iterations ahead."""
    compiled = compile_matmul("sm_90a", block_k=32, num_stages=3, num_warps=8)
    ptx = compiled.asm["ptx"]
    assert ptx.count("cp.async.commit_group") == 3
    assert count_instruction(ptx, "cp.async.wait_group 1;")
    assert count_instruction(ptx, "wgmma.wait_group.sync.aligned 1") == 1
    assert compiled.metadata["shared"] == 4 * TILE_BYTES


def test_decode_shaped_block_uses_mma_sync_on_sm90a():
    """16 rows are too few for a 64-row wgmma: mma.sync."""
    ptx = compile_matmul("sm_90a", block_m=16, block_n=64, block_k=64).asm["ptx"]
    assert "mma.sync.aligned.m16n8k16" in ptx and "wgmma" not in ptx


@pytest.mark.parametrize("acc_in_dot", [True, False])
def test_accumulator_carried_in_mma_layout(acc_in_dot):
    """The loop carries the accumulator in the dot's layout: the one layout
    conversion is after the loop, of the fp16 result on its way to
    16-byte stores."""
    compiled = compile_matmul("sm_90a", acc_in_dot=acc_in_dot, num_stages=2)
    text = compiled.asm["kiln_gpu"]
    assert text.count("kiln_gpu.convert_layout") == 1
    convert = text[text.index("kiln_gpu.convert_layout"):].splitlines()[0]
    assert text.index("kiln_gpu.convert_layout") > text.index("scf.yield")
    assert "xf16" in convert and "xf32" not in convert
    assert text.count("kiln.dot") == 1


def compile_typed_matmul(target, operand, precision, block_n=128, num_warps=4, num_stages=3,
                         b_operand=None, acc=None, block_m=128, block_k=32):
    """typed_matmul_kernel on block_m x block_n x block_k blocks of `operand`
    ("fp32", "i8" or an fp8 type) operands (B of `b_operand` when given),
    row-major with 16-byte aligned rows, accumulated in `acc` (by default
    int32 for "i8", else float32)."""
    integer = operand == "i8"
    if acc is None:
        acc = kl.int32 if integer else kl.float32
    signature = {"a_ptr": f"*{operand}", "b_ptr": f"*{b_operand or operand}",
                 "c_ptr": {kl.int32: "*i32", kl.float16: "*fp16"}.get(acc, "*fp32")}
    signature.update({name: "i32" for name in ("M", "N", "K", "stride_am", "stride_bk", "stride_bn",
                                               "stride_cm")})
    return kiln.compile(typed_matmul_kernel, signature=signature, target=target,
                        num_warps=num_warps, num_stages=num_stages,
                        attrs=Specialization(divisible_by_16=frozenset(signature) - {"stride_bn"},
                                             equal_to_1=frozenset({"stride_bn"})),
                        constexprs={"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k,
                                    "ACC": acc, "PRECISION": precision})


@pytest.mark.parametrize("target,num_stages,instruction,count", [
    # 128x128x32 on 4 warps: 2x2 warps of 4 x 8 instruction tiles, 2 k-steps.
    ("sm_80", 3, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 4 * 8 * 2),
    # Two 64-row tiles per k-step of 16; num_stages=3 would keep f32
    # accumulators in flight, never f16 ones.
    ("sm_90a", 2, "wgmma.mma_async.sync.aligned.m64n128k16.f16.f16.f16", 2 * 2),
    ("sm_90a", 3, "wgmma.mma_async.sync.aligned.m64n128k16.f16.f16.f16", 2 * 2),
])
def test_fp16_accumulator_stays_fp16(target, num_stages, instruction, count):
    """An fp16 accumulator (out_dtype=float16, or an fp16 acc) accumulates in
    fp16 on the tensor cores, as Triton's does: never extended to fp32."""
    compiled = compile_typed_matmul(target, "fp16", "ieee", num_stages=num_stages, acc=kl.float16)
    ptx = compiled.asm["ptx"]
    assert ptx.count(instruction) == count
    assert ".f32.f16.f16" not in ptx and "cvt.f32.f16" not in ptx
    assert not count_instruction(ptx, "wgmma.wait_group.sync.aligned 1")


def test_fp8_with_fp16_accumulator_on_wgmma():
    """fp8 operands into an fp16 accumulator: wgmma's .f16 form, 128 rows
    as two m64n128k32 per k-step of 32."""
    ptx = compile_typed_matmul("sm_90a", "fp8e4nv", "ieee", num_stages=2, acc=kl.float16).asm["ptx"]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k32.f16.e4m3.e4m3") == 2
    assert "cvt.f32.f16" not in ptx


@pytest.mark.parametrize("target,operand,precision,instruction,count", [
    # 16x16x16 on 4 warps: two 16x8 tiles, each computed by two warps.
    ("sm_80", "fp16", "ieee", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 1),
    ("sm_90a", "fp16", "ieee", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 1),
    ("sm_90a", "fp32", "tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 2),
])
def test_tiles_smaller_than_the_warps_use_tensor_cores(target, operand, precision, instruction, count):
    """A block with fewer instruction tiles than warps still runs on the
    tensor cores: the extra warps repeat tiles."""
    ptx = compile_typed_matmul(target, operand, precision, block_m=16, block_n=16,
                               block_k=16).asm["ptx"]
    assert ptx.count(instruction) == count
    assert "fma.rn.f32" not in ptx


def test_fp32_ieee_uses_fmas():
    """fp32 operands multiplied exactly ("ieee") go through FMAs."""
    ptx = compile_typed_matmul("sm_90a", "fp32", "ieee", block_n=32).asm["ptx"]
    assert "mma" not in ptx
    assert "fma.rn.f32" in ptx


@pytest.mark.parametrize("target,instruction,count", [
    # 128x128x32 on 4 warps: 2x2 warps of 4 x 8 instruction tiles, 4 k-steps.
    ("sm_80", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 4 * 8 * 4),
    # Two 64-row tiles per k-step; the loop is unrolled by two for
    # asynchronous dots, plus a remainder loop.
    ("sm_90a", "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32", 2 * 4 * 3),
])
def test_tf32_on_tensor_cores(target, instruction, count):
    """tf32 dots run on the tensor cores (k = 8); each operand element is
    rounded to tf32 to nearest (cvt.rna) on its way to shared memory, as the
    CPU backend rounds, so f32 operands are never copied asynchronously."""
    ptx = compile_typed_matmul(target, "fp32", "tf32").asm["ptx"]
    assert ptx.count(instruction) == count
    assert ptx.count("mma.sync") + ptx.count("wgmma.mma_async") == count
    # 128x32 A and 32x128 B elements over 128 threads, per dot.
    assert ptx.count("cvt.rna.tf32.f32") % (2 * 32) == 0 and "cvt.rna.tf32.f32" in ptx
    assert "cp.async" not in ptx


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_tf32x3_splits_operands_on_mma_sync(target):
    """tf32x3: three mma.sync per instruction tile (the low parts of A and B
    each times the other's high part, then the high parts), operands split
    after ldmatrix; never wgmma, which reads operands from shared memory."""
    ptx = compile_typed_matmul(target, "fp32", "tf32x3").asm["ptx"]
    assert ptx.count("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") == 3 * 4 * 8 * 4
    assert "wgmma" not in ptx
    assert "sub.f32" in ptx and "cvt.rna.tf32.f32" in ptx


@pytest.mark.parametrize("target,block_n,instruction,count", [
    ("sm_80", 128, "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32", 4 * 8),
    ("sm_90a", 128, "wgmma.mma_async.sync.aligned.m64n128k32.satfinite.s32.s8.s8", 2),
    # wgmma's s8 shapes stop at N = 224: 256 columns take mma.sync.
    ("sm_90a", 256, "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32", 4 * 16),
])
def test_int8_on_tensor_cores(target, block_n, instruction, count):
    """int8 dots accumulate in s32 on the tensor cores (k = 32). A is copied
    asynchronously; B goes through registers and is stored K-major, since
    neither wgmma nor ldmatrix transposes 8-bit elements."""
    ptx = compile_typed_matmul(target, "i8", "ieee", block_n=block_n, num_stages=2).asm["ptx"]
    assert ptx.count(instruction) == count
    # 128x32 bytes of A over 128 threads: two 16-byte copies per group,
    # two groups (one before the loop, one in it).
    assert ptx.count("cp.async.cg.shared.global") == 4
    assert "st.shared.u8" in ptx or "st.shared.b8" in ptx


FP8_PTX_TYPES = {"fp8e4nv": "e4m3", "fp8e5": "e5m2"}


@pytest.mark.parametrize("a,b", [("fp8e4nv", "fp8e4nv"), ("fp8e4nv", "fp8e5"), ("fp8e5", "fp8e4nv"),
                                 ("fp8e5", "fp8e5")])
def test_fp8_on_warpgroup_mma(a, b):
    """fp8 dots run natively on sm_90a's wgmma (k = 32, the two formats may
    differ), their bytes never decoded: A copied asynchronously, B stored
    K-major from registers as int8's."""
    ptx = compile_typed_matmul("sm_90a", a, "ieee", b_operand=b, num_stages=2).asm["ptx"]
    instruction = f"wgmma.mma_async.sync.aligned.m64n128k32.f32.{FP8_PTX_TYPES[a]}.{FP8_PTX_TYPES[b]}"
    assert ptx.count(instruction) == 2
    assert ptx.count("wgmma.mma_async") == 2
    assert ptx.count("cp.async.cg.shared.global") == 4
    assert "st.shared.u8" in ptx or "st.shared.b8" in ptx
    assert "cvt.f16.f32" not in ptx and "cvt.rn.f16.f32" not in ptx


@pytest.mark.parametrize("a,b", [("fp8e4nv", "fp8e5"), ("fp8e5", "fp8e5")])
def test_fp8_decoded_to_f16_on_sm80(a, b):
    """mma.sync takes fp8 from sm_89 (PTX 8.4) only: on sm_80 the operands are
    decoded to f16 and multiplied as f16 (2 k-steps of 4 x 8 tiles)."""
    ptx = compile_typed_matmul("sm_80", a, "ieee", b_operand=b).asm["ptx"]
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 2 * 4 * 8
    assert "e4m3" not in ptx and "e5m2" not in ptx


@pytest.mark.parametrize("imprecise,waits", [(None, 1), (128, 1), (64, 2), (32, 4), (0, 4)])
def test_fp8_promotion_on_wgmma(imprecise, waits):
    """max_num_imprecise_acc at most K (128 here, four k32 instructions):
    each run of that many products accumulates from zero (scale-d 0) and is
    waited for and added into the fp32 accumulator (32 elements per thread,
    one add.f32 each per run, as Triton counts them); at least one
    instruction per run. Left out, nothing is added. Each run starts with a
    wgmma.fence: its instructions write the partial sums that the previous
    run's additions read (without it an H200 lost or doubled partial sums)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
    from test_dot import mixed_fp8_kernel

    compiled = kiln.compile(mixed_fp8_kernel, target="sm_90a",
                            signature={"a_ptr": "*u8", "b_ptr": "*u8", "c_ptr": "*fp32"},
                            constexprs={"M": 64, "N": 64, "K": 128, "IMPRECISE": imprecise})
    ptx = compiled.asm["ptx"]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2") == 4
    assert ptx.count("wgmma.wait_group.sync.aligned 0;") == waits
    assert ptx.count("wgmma.commit_group.sync.aligned;") == waits
    assert ptx.count("add.f32") == (0 if imprecise is None else 32 * waits)
    assert ptx.count("wgmma.fence.sync.aligned;") == waits


#: Row-major A and a column-major B (contiguous along K: `x @ w.T` for a
#: row-major [N, K] weight `w`), 16-byte aligned.
K_MAJOR_B = Specialization(
    divisible_by_16=frozenset({"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bn",
                               "stride_cm"}),
    equal_to_1=frozenset({"stride_ak", "stride_bk", "stride_cn"}))


@pytest.mark.parametrize("target,operand", [("sm_90a", "fp16"), ("sm_90a", "fp8e4nv"),
                                            ("sm_80", "fp16")])
def test_column_major_b_is_copied_into_a_k_major_slot(target, operand):
    """A B contiguous along K is copied asynchronously, rows of K into a
    slot that holds its [N][K] transpose, which the tensor cores read
    K-major (wgmma without transposing 16-bit B, ldmatrix without .trans):
    no operand goes through registers."""
    signature = dict(SIGNATURE, a_ptr=f"*{operand}", b_ptr=f"*{operand}")
    compiled = kiln.compile(matmul_kernel, signature=signature, target=target, num_warps=4,
                            num_stages=3, attrs=K_MAJOR_B,
                            constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64,
                                        "GROUP_SIZE_M": 8, "ACC_IN_DOT": True})
    ptx = compiled.asm["ptx"]
    assert "kMajor = true" in compiled.asm["kiln_gpu"]
    assert only_epilogue_shared_stores(ptx)
    # 128x64 elements of A and 64x128 of B per stage, 16 bytes per copy over
    # 128 threads, for 2 stages ahead plus the loop's own.
    copies_per_stage = 2 * 128 * 64 * (1 if operand.startswith("fp8") else 2) // 16 // 128
    assert ptx.count("cp.async.cg.shared.global") == 3 * copies_per_stage
    if target == "sm_80":
        assert "ldmatrix.sync.aligned.m8n8.x4.trans" not in ptx
        assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 4 * 8 * 4
    elif operand == "fp16":
        # scale-d, scales of A and B, neither transposed.
        assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ptx
        assert ", p, 1, 1, 0, 0;" in ptx and ", p, 1, 1, 0, 1;" not in ptx
    else:
        assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in ptx


def test_vectorized_operand_loads_and_shared_stores():
    """Without pipelining, row-major operands load 16 bytes per instruction
    and go to shared memory 16 bytes at a time (the swizzle keeps 16-byte
    chunks whole)."""
    ptx = compile_matmul("sm_90a", num_stages=1).asm["ptx"]
    assert "ld.global.v4" in ptx and "st.shared.v4" in ptx


@pytest.mark.parametrize("num_stages,loads", [(1, 1), (2, 2)])
def test_prefetch_loads_with_num_stages(num_stages, loads):
    """Where operands cannot be copied asynchronously (a target before
    sm_80), num_stages >= 2 loads them an iteration ahead: each load
    appears twice (before the loop and in it)."""
    compiled = compile_matmul("sm_75", num_stages=num_stages)
    stage = compiled.asm["kiln_gpu"]
    assert stage.count("kiln.load") == 2 * loads
    assert "async_copy" not in stage


def test_shared_memory_beyond_the_target_is_out_of_resources(monkeypatch):
    """A config whose shared memory exceeds the target's limit fails at
    compile time, naming the resource and both amounts (the limit lowered
    here so that a small kernel exceeds it)."""
    from kiln.backends import nvidia

    assert nvidia.max_shared_memory("sm_90a") == 232448
    assert nvidia.max_shared_memory("sm_80") == 166912
    monkeypatch.setitem(nvidia._MAX_SHARED_MEMORY, 90, 1024)
    with pytest.raises(kiln.OutOfResources) as raised:
        compile_matmul("sm_90a", num_stages=1)
    assert raised.value.name.startswith("shared memory")
    # The epilogue's conversion needs more than the operand tiles.
    assert raised.value.required == EPILOGUE_BYTES
    assert raised.value.limit == 1024


@pytest.mark.parametrize("operand,out,precision,instruction,count", [
    # 4 batches of 32x16x64 on 4 warps (2 x 2): one instruction tile per
    # warp and k-step.
    ("fp16", kl.float32, "ieee", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 4 * 4),
    ("fp32", kl.float32, "tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 4 * 8),
    ("i8", kl.int32, "ieee", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32", 4 * 2),
])
def test_batched_dot_on_mma_sync(operand, out, precision, instruction, count):
    """A 3-D dot runs on mma.sync batch by batch, also on sm_90a (wgmma
    takes 2-D blocks only)."""
    signature = {"a_ptr": f"*{operand}", "b_ptr": f"*{operand}",
                 "c_ptr": "*i32" if out is kl.int32 else "*fp32"}
    compiled = kiln.compile(batched_kernel, signature=signature, target="sm_90a", num_warps=4,
                            constexprs={"BATCH": 4, "M": 32, "N": 16, "K": 64,
                                        "PRECISION": precision, "OUT_DTYPE": out})
    ptx = compiled.asm["ptx"]
    assert ptx.count(instruction) == count
    assert "wgmma" not in ptx and "fma.rn.f32" not in ptx


# -- operands through host tensor descriptors: the TMA unit on sm_90a ---------------


def descriptor_signature(path, element, tensor_map=True):
    """A 2-D host TensorDescriptor parameter's signature (as the launcher
    describes a contiguous one), with its tensor map on sm_90a."""
    signature = {path: "tensordesc", f"{path}[0]": "*" + element, f"{path}[1]": "tuple",
                 f"{path}[1][0]": "i32", f"{path}[1][1]": "i32", f"{path}[2]": "tuple",
                 f"{path}[2][0]": "i32", f"{path}[2][1]": "i32", f"{path}[3]": "tuple"}
    if tensor_map:
        signature[f"{path}[5]"] = "nvTmaDesc"
    return signature


def compile_descriptor_matmul(target, b_transposed=False, bm=128, bn=128, bk=64, num_warps=4, num_stages=3,
                              element="fp16", out="fp16"):
    from matmul_kernels import descriptor_matmul_kernel
    maps = target == "sm_90a"
    signature = {**descriptor_signature("a_desc", element, maps), **descriptor_signature("b_desc", element, maps),
                 **descriptor_signature("c_desc", out, maps), "K": "i32"}
    b_block = (bn, bk) if b_transposed else (bk, bn)
    constexprs = {"BLOCK_K": bk, "B_TRANSPOSED": b_transposed}
    for path, block in (("a_desc", (bm, bk)), ("b_desc", b_block), ("c_desc", (bm, bn))):
        constexprs.update({f"{path}[3][0]": block[0], f"{path}[3][1]": block[1], f"{path}[4]": "zero"})
        if not maps:
            constexprs[f"{path}[5]"] = None
    attrs = Specialization(divisible_by_16=frozenset({"a_desc[0]", "b_desc[0]", "c_desc[0]"}),
                           equal_to_1=frozenset({"a_desc[2][1]", "b_desc[2][1]", "c_desc[2][1]"}))
    return kiln.compile(descriptor_matmul_kernel, signature=signature, constexprs=constexprs, attrs=attrs,
                        target=target, num_warps=num_warps, num_stages=num_stages)


@pytest.mark.parametrize("b_transposed", [False, True])
def test_sm90a_descriptor_operands_are_copied_by_the_tma_unit(b_transposed):
    """Each operand of each stage is one mbarrier arrival and one
    cp.async.bulk.tensor per lane of the first warp that has a box: A in
    16 boxes of 8 rows (its rows are permuted in groups of 8 for wgmma), B
    in two boxes of 64 columns (as it lies, [64][128], or K-major, [128][64]).
    Two copies in the prologue, one in the loop, per operand; one wait per
    iteration; no cp.async."""
    compiled = compile_descriptor_matmul("sm_90a", b_transposed=b_transposed)
    ptx = compiled.asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == 6
    assert ptx.count("mbarrier.arrive.expect_tx.shared::cta.b64") == 6
    assert ptx.count("mbarrier.try_wait.parity.shared::cta.b64") == 1
    # (.shared is .shared::cta.)
    assert len(re.findall(r"mbarrier\.init\.shared(::cta)?\.b64", ptx)) == 3
    assert len(re.findall(r"mbarrier\.inval\.shared(::cta)?\.b64", ptx)) == 3
    assert "cp.async.cg" not in ptx and "cp.async.commit_group" not in ptx
    # The tensor maps are parameters read where they lie.
    assert len(re.findall(r"\.param \.align 64 \.b8 \w+\[128\]", ptx)) == 3
    assert ptx.count("cvta.param.u64") == 2
    b_box = [128, 64, 128] if b_transposed else [64, 64, 128]
    assert compiled.metadata["tensor_maps"] == {"a_desc[5]": [8, 64, 128], "b_desc[5]": b_box}
    # Three 32 KiB stages of slots, then three mbarriers.
    assert compiled.metadata["shared"] == 3 * 32768 + 24
    from kiln.backends.nvidia import find_ptxas
    assert compiled.asm.get("cubin") is not None or find_ptxas() is None


def test_sm90a_descriptor_boxes_follow_the_slot_layout():
    """BLOCK_K = 128 fp16 is two 128-byte column blocks: A boxes stay 8 x 64,
    two per row group; 8 warps permute 256 rows in 32 groups."""
    compiled = compile_descriptor_matmul("sm_90a", bm=256, bn=128, bk=128, num_warps=8, num_stages=2)
    assert compiled.metadata["tensor_maps"] == {"a_desc[5]": [8, 64, 128], "b_desc[5]": [128, 64, 128]}
    # 64 A boxes: two per lane of the first warp.
    assert compiled.asm["ptx"].count("cp.async.bulk.tensor.2d") == 2 * (2 + 1)


def test_sm80_descriptor_operands_load_through_pointers():
    """Without the TMA unit the same kernel has no tensor-map parameters and
    loads its operands through pointers."""
    compiled = compile_descriptor_matmul("sm_80")
    ptx = compiled.asm["ptx"]
    assert "cp.async.bulk" not in ptx and "mbarrier" not in ptx
    assert compiled.metadata["tensor_maps"] == {}
