"""kl.inline_asm_elementwise and kl.extra.cuda on an NVIDIA GPU, against
numpy on random inputs: one and several results, packed narrow elements,
pointers into memory, scalars broadcast, and the special-register reads.
The CPU backend refuses inline assembly with an error at the call; the GPU
cases skip without a GPU (their PTX is checked without one in
unit/test_inline_asm_compile.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl
from kiln.errors import CompilationError
from kiln_test_support import cuda_skip_reason


def _need_gpu() -> None:
    reason = cuda_skip_reason()
    if reason is not None:
        pytest.skip(f"no CUDA backend: {reason}")


def _random_uint(n: int, bits: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**bits, size=n, dtype=np.uint64).astype(f"uint{bits}")


@kiln.jit
def funnel_shift_kernel(x_ptr, y_ptr, z_ptr, N: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    y = kl.load(y_ptr + offs)
    z = kl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r,r,r", [x, y, N], dtype=kl.int32,
                                  is_pure=True, pack=1)
    kl.store(z_ptr + offs, z)


@kiln.jit
def shift_bytes_kernel(x_ptr, y_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    # Four bytes per register: mask each, then shift the whole register.
    y = kl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", "=r,r", [x], dtype=kl.int8,
                                  is_pure=True, pack=4)
    kl.store(y_ptr + offs, y)


@kiln.jit
def pointer_kernel(x_ptr, y_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.inline_asm_elementwise("ld.global.b8 $0, [$1]; shl.b32 $0, $0, 3; st.global.b8 [$2], $0;", "=r,l,l",
                              [x_ptr + offs, y_ptr + offs], dtype=kl.int8, is_pure=False, pack=1)


@kiln.jit
def two_outputs_kernel(a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    a = kl.load(a_ptr + offs)
    b = kl.load(b_ptr + offs)
    c, d = kl.inline_asm_elementwise("sub.u32 $0, $2, $3; sub.u32 $1, $3, $2;", "=r,=r,r,r", [a, b],
                                     dtype=(kl.uint32, kl.uint32), is_pure=True, pack=1)
    kl.store(c_ptr + offs, c)
    kl.store(d_ptr + offs, d)


@kiln.jit
def packed_outputs_kernel(a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    a = kl.load(a_ptr + offs)
    b = kl.load(b_ptr + offs)
    # $8 holds four bytes of `a`; $9..$12 four floats of `b`.
    c, d = kl.inline_asm_elementwise(
        """
        {
            .reg .b8 t<4>;
            mov.b32 {t0, t1, t2, t3}, $8;
            cvt.u32.u8 $0, t0;
            cvt.u32.u8 $1, t1;
            cvt.u32.u8 $2, t2;
            cvt.u32.u8 $3, t3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """, "=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r", [a, b], dtype=(kl.int32, kl.float32), is_pure=True, pack=4)
    kl.store(c_ptr + offs, c)
    kl.store(d_ptr + offs, d)


@kiln.jit
def half_pairs_kernel(x_ptr, y_ptr, z_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs)
    y = kl.load(y_ptr + offs)
    # Two fp16 per register, added by one f16x2 instruction.
    z = kl.inline_asm_elementwise("add.rn.f16x2 $0, $1, $2;", "=r,r,r", [x, y], dtype=kl.float16, is_pure=True,
                                  pack=2)
    kl.store(z_ptr + offs, z)


@kiln.jit
def broadcast_kernel(x_ptr, out_ptr, s, BLOCK_M: kl.constexpr, BLOCK_N: kl.constexpr):
    rows = kl.arange(0, BLOCK_M)[:, None]
    cols = kl.arange(0, BLOCK_N)[None, :]
    # A column, a row and a runtime scalar, broadcast to one block.
    x = kl.load(x_ptr + rows)
    z = kl.inline_asm_elementwise("mad.lo.s32 $0, $1, $2, $3;", "=r,r,r,r", [x, cols, s], dtype=kl.int32,
                                  is_pure=True, pack=1)
    kl.store(out_ptr + rows * BLOCK_N + cols, z)


@kiln.jit
def globaltimer_kernel(out1_ptr, out2_ptr):
    start = kl.extra.cuda.globaltimer()
    offs = kl.arange(0, 128)
    for _ in range(1000):
        kl.store(out1_ptr + offs, kl.load(out1_ptr + offs) + 1)
    end = kl.extra.cuda.globaltimer()
    kl.store(out2_ptr, start)
    kl.store(out2_ptr + 1, end)


@kiln.jit
def smid_kernel(out_ptr):
    kl.store(out_ptr + kl.program_id(0), kl.extra.cuda.smid())


@kiln.jit
def num_threads_kernel(out_ptr):
    NUM_THREADS: kl.constexpr = kl.extra.cuda.num_threads()
    NUM_WARPS: kl.constexpr = kl.extra.cuda.num_warps()
    offs = kl.arange(0, NUM_THREADS)
    kl.store(out_ptr + offs, NUM_WARPS)


def test_funnel_shift():
    _need_gpu()
    x, y = _random_uint(128, 32, 1), _random_uint(128, 32, 2)
    z = torch.zeros(128, dtype=torch.int32, device="cuda")
    n = 17
    funnel_shift_kernel[(1,)](torch.from_numpy(x.view(np.int32)).cuda(), torch.from_numpy(y.view(np.int32)).cuda(),
                              z, N=n, BLOCK=128)
    expected = (y << np.uint32(n)) | (x >> np.uint32(32 - n))
    np.testing.assert_equal(z.cpu().numpy().view(np.uint32), expected)


@pytest.mark.parametrize("block,num_warps", [(512, 4), (64, 4), (1024, 1)])
def test_packed_bytes(block, num_warps):
    # 64 elements on 128 threads leave runs of four with one element each.
    _need_gpu()
    x = _random_uint(block, 8, 3)
    y = torch.zeros(block, dtype=torch.uint8, device="cuda")
    shift_bytes_kernel[(1,)](torch.from_numpy(x).cuda(), y, BLOCK=block, num_warps=num_warps)
    np.testing.assert_equal(y.cpu().numpy(), (x & 0x1F) << 3)


def test_pointers():
    _need_gpu()
    x = _random_uint(512, 8, 4)
    y = torch.zeros(512, dtype=torch.uint8, device="cuda")
    pointer_kernel[(1,)](torch.from_numpy(x).cuda(), y, BLOCK=512)
    np.testing.assert_equal(y.cpu().numpy(), (x << 3).astype(np.uint8))


def test_two_outputs():
    _need_gpu()
    a, b = _random_uint(512, 32, 5), _random_uint(512, 32, 6)
    c = torch.zeros(512, dtype=torch.int32, device="cuda")
    d = torch.zeros_like(c)
    two_outputs_kernel[(1,)](torch.from_numpy(a.view(np.int32)).cuda(), torch.from_numpy(b.view(np.int32)).cuda(),
                             c, d, BLOCK=512)
    np.testing.assert_equal(c.cpu().numpy().view(np.uint32), a - b)
    np.testing.assert_equal(d.cpu().numpy().view(np.uint32), b - a)


def test_packed_outputs():
    _need_gpu()
    a = _random_uint(512, 8, 7)
    b = np.random.default_rng(8).uniform(-300, 300, 512).astype(np.float32)
    c = torch.zeros(512, dtype=torch.int32, device="cuda")
    d = torch.zeros(512, dtype=torch.float32, device="cuda")
    packed_outputs_kernel[(1,)](torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), c, d, BLOCK=512)
    np.testing.assert_equal(c.cpu().numpy(), a.astype(np.int32))
    np.testing.assert_equal(d.cpu().numpy(), np.maximum(a.astype(np.float32), b))


def test_half_pairs():
    _need_gpu()
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal(256).astype(np.float16), rng.standard_normal(256).astype(np.float16)
    z = torch.zeros(256, dtype=torch.float16, device="cuda")
    half_pairs_kernel[(1,)](torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda(), z, BLOCK=256)
    np.testing.assert_equal(z.cpu().numpy(), x + y)  # fp16 sums, rounded once as numpy does


def test_broadcast_and_scalar():
    _need_gpu()
    x = np.random.default_rng(10).integers(-1000, 1000, 16).astype(np.int32)
    out = torch.zeros(16 * 32, dtype=torch.int32, device="cuda")
    broadcast_kernel[(1,)](torch.from_numpy(x).cuda(), out, 7, BLOCK_M=16, BLOCK_N=32)
    expected = x[:, None] * np.arange(32, dtype=np.int32)[None, :] + 7
    np.testing.assert_equal(out.cpu().numpy().reshape(16, 32), expected)


def test_globaltimer():
    _need_gpu()
    out1 = torch.zeros(128, dtype=torch.int64, device="cuda")
    out2 = torch.zeros(2, dtype=torch.int64, device="cuda")
    handle = globaltimer_kernel[(1,)](out1, out2)
    assert int(out2[1]) - int(out2[0]) > 0
    assert handle.asm["ptx"].count("%globaltimer") == 2
    assert (out1.cpu() == 1000).all()


def test_smid():
    _need_gpu()
    out = torch.full((1024,), -1, dtype=torch.int32, device="cuda")
    handle = smid_kernel[(1024,)](out)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    values = out.cpu()
    assert ((values >= 0) & (values < sms)).all()
    assert handle.asm["ptx"].count("%smid") == 1


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_num_threads(backend, arrays, num_warps):
    # Constexprs of the kernel being compiled: meaningful on every backend.
    out = arrays.full(1024, 0, torch.int32)
    num_threads_kernel[(1,)](out, num_warps=num_warps)
    values = out.cpu()
    assert (values[:32 * num_warps] == num_warps).all() and (values[32 * num_warps:] == 0).all()


def test_cpu_refuses_inline_asm():
    x = torch.zeros(128, dtype=torch.int32)
    with pytest.raises(CompilationError, match=r"inline assembly is GPU code") as info:
        funnel_shift_kernel[(1,)](x, x, x, N=3, BLOCK=128)
    assert "kl.inline_asm_elementwise" in str(info.value)


@pytest.mark.parametrize("kernel", [smid_kernel, globaltimer_kernel])
def test_cpu_refuses_special_registers(kernel):
    x = torch.zeros(1024, dtype=torch.int64 if kernel is globaltimer_kernel else torch.int32)
    args = (x, x) if kernel is globaltimer_kernel else (x,)
    with pytest.raises(CompilationError, match=r"reads an NVIDIA GPU register .*CPU backend cannot run it"):
        kernel[(1,)](*args)
