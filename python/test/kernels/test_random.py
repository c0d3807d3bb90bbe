"""kl.randint/randint4x/rand/randn (Philox 4x32) and kl.random.philox
(4x32 and 4x64, 10 rounds) on
every backend present, against a numpy implementation of Triton's stream:
integers and uniform floats exactly, normals to a tight tolerance (they go
through log, sqrt, sin and cos), plus distribution sanity checks."""

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1


def philox32_reference(seed, c0, c1=None, rounds=10):
    """Triton's philox(seed, c0, c1, 0, 0) for uint32 counters, in numpy."""
    seed &= MASK64  # an int seed is sign-extended to uint64
    c0 = c0.astype(np.uint32)
    c1 = np.zeros_like(c0) if c1 is None else c1.astype(np.uint32)
    c2 = c3 = np.zeros_like(c0)
    k0, k1 = np.uint32(seed & MASK32), np.uint32(seed >> 32)
    a, b = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(rounds):
        prod_b = b * c2.astype(np.uint64)
        prod_a = a * c0.astype(np.uint64)
        c0, c2 = ((prod_b >> np.uint64(32)).astype(np.uint32) ^ c1 ^ k0,
                  (prod_a >> np.uint64(32)).astype(np.uint32) ^ c3 ^ k1)
        c1, c3 = prod_b.astype(np.uint32), prod_a.astype(np.uint32)
        k0 = np.uint32((int(k0) + 0x9E3779B9) & MASK32)
        k1 = np.uint32((int(k1) + 0xBB67AE85) & MASK32)
    return c0, c1, c2, c3


def philox64_reference(seed, offsets, rounds=10):
    """Triton's philox for uint64 counters, in Python integers."""
    out = []
    for offset in offsets:
        c0, c1, c2, c3 = offset & MASK64, 0, 0, 0
        k0, k1 = seed & MASK64, 0
        for _ in range(rounds):
            prod_b, prod_a = 0xCA5A826395121157 * c2, 0xD2E7470EE14C6C93 * c0
            c0, c2 = (prod_b >> 64) ^ c1 ^ k0, (prod_a >> 64) ^ c3 ^ k1
            c1, c3 = prod_b & MASK64, prod_a & MASK64
            k0, k1 = (k0 + 0x9E3779B97F4A7C15) & MASK64, (k1 + 0xBB67AE8584CAA73B) & MASK64
        out.append(c0)
    return out


def uniform_reference(x):
    x = x.view(np.int32)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def normal_reference(u1, u2):
    u1 = np.maximum(np.float32(1.0e-7), u1)
    th = np.float32(6.283185307179586) * u2
    r = np.sqrt(np.float32(-2.0) * np.log(u1))
    return r * np.cos(th), r * np.sin(th)


@kiln.jit
def random_kernel(ints_ptr, uniform_ptr, normal_ptr, seed, start, n, BLOCK: kl.constexpr):
    offs = start + kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < start + n
    local = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    r0, r1, r2, r3 = kl.random.randint4x(seed, offs)
    kl.store(ints_ptr + local * 4, r0, mask=mask)
    kl.store(ints_ptr + local * 4 + 1, r1, mask=mask)
    kl.store(ints_ptr + local * 4 + 2, r2, mask=mask)
    kl.store(ints_ptr + local * 4 + 3, r3, mask=mask)
    kl.store(uniform_ptr + local, kl.rand(seed, offs), mask=mask)
    kl.store(normal_ptr + local, kl.randn(seed, offs), mask=mask)


@pytest.mark.parametrize("seed,start", [(0, 0), (12345, 77), (-3, 1 << 20), (0x1234567890AB, 5)])
def test_matches_reference(arrays, seed, start) -> None:
    n, block = 1000, 256
    ints = arrays.full(n * 4, 0, torch.int32)
    uniform = arrays.full(n, float("nan"), torch.float32)
    normal = arrays.full(n, float("nan"), torch.float32)
    random_kernel[(kiln.cdiv(n, block),)](ints, uniform, normal, seed, start, n, BLOCK=block)
    offsets = np.arange(start, start + n, dtype=np.int64).astype(np.uint32)
    c = philox32_reference(seed, offsets)
    got = ints.cpu().numpy().view(np.uint32).reshape(n, 4)
    for word in range(4):
        np.testing.assert_array_equal(got[:, word], c[word])
    np.testing.assert_array_equal(uniform.cpu().numpy(), uniform_reference(c[0]))
    expected_normal, _ = normal_reference(uniform_reference(c[0]), uniform_reference(c[1]))
    np.testing.assert_allclose(normal.cpu().numpy(), expected_normal, rtol=2e-5, atol=2e-5)


@kiln.jit
def randint64_kernel(out_ptr, seed, start, BLOCK: kl.constexpr):
    offs = start + kl.arange(0, BLOCK).to(kl.int64)
    kl.store(out_ptr + kl.arange(0, BLOCK), kl.randint(seed, offs))


@pytest.mark.parametrize("start", [5, (1 << 40) + 3, (1 << 32) - 20])
def test_randint_64_bit_offsets(arrays, start) -> None:
    # An int64 offset is the Philox 4x32 counter (low word, high word, 0, 0):
    # uint32 numbers, the int32 offsets' numbers below 2**32.
    seed, block = 987654321, 64
    out = arrays.full(block, -1, torch.int64)
    randint64_kernel[(1,)](out, seed, start, BLOCK=block)
    offsets = np.arange(start, start + block, dtype=np.uint64)
    c0, _, _, _ = philox32_reference(seed, (offsets & np.uint64(MASK32)).astype(np.uint32),
                                     (offsets >> np.uint64(32)).astype(np.uint32))
    np.testing.assert_array_equal(out.cpu().numpy(), c0.astype(np.int64))


@kiln.jit
def philox64_kernel(out_ptr, seed, start, BLOCK: kl.constexpr):
    offs = (start + kl.arange(0, BLOCK).to(kl.int64)).to(kl.uint64)
    zero = offs * 0
    c0, _, _, _ = kl.random.philox(seed, offs, zero, zero, zero)
    kl.store(out_ptr + kl.arange(0, BLOCK), c0)


def test_philox_64_bit_counters(arrays) -> None:
    seed, start, block = 987654321, (1 << 40) + 3, 64
    out = arrays.full(block, 0, torch.int64)
    philox64_kernel[(1,)](out, seed, start, BLOCK=block)
    expected = philox64_reference(seed, range(start, start + block))
    assert [v & MASK64 for v in out.cpu().tolist()] == expected


@kiln.jit
def samples_kernel(uniform_ptr, normal_ptr, seed, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    kl.store(uniform_ptr + offs, kl.rand(seed, offs))
    kl.store(normal_ptr + offs, kl.randn(seed, offs + 1000003))


def test_distributions(arrays) -> None:
    n, block = 1 << 15, 1024
    uniform = arrays.full(n, float("nan"), torch.float32)
    normal = arrays.full(n, float("nan"), torch.float32)
    samples_kernel[(n // block,)](uniform, normal, 2024, BLOCK=block)
    u, z = uniform.double(), normal.double()
    assert 0.0 <= u.min().item() and u.max().item() < 1.0
    # Standard errors at n = 32768: mean 0.0016 (uniform), 0.0055 (normal).
    assert abs(u.mean().item() - 0.5) < 0.01 and abs(u.var().item() - 1 / 12) < 0.005
    assert abs(z.mean().item()) < 0.03 and abs(z.var().item() - 1.0) < 0.05
    assert len(torch.unique(uniform)) > n * 0.99  # no stuck or repeating stream
