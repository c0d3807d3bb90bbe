"""Pointer casts on every backend present, as Triton has them: a pointer
reinterpreted as a pointer to another element type (floats stored into an
integer buffer, bytes read through a uint8 pointer, blocks of pointers), a
pointer's address as an integer and back (with arithmetic in between), and
integers loaded from memory used as pointers. Checked against torch on
random inputs."""

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl


@kiln.jit
def store_reinterpreted_kernel(x_ptr, out32_ptr, out8_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask)
    # An int32 buffer written as fp32, a uint8 buffer as fp64.
    kl.store(out32_ptr.to(kl.pointer_type(kl.float32)) + offs, x, mask=mask)
    wide = kl.cast(out8_ptr, kl.pointer_type(kl.float64))
    kl.store(wide + offs, x.to(kl.float64) * 3.0, mask=mask)


def test_store_floats_through_a_reinterpreted_pointer(arrays) -> None:
    n = 1000
    x = arrays.randn(n, seed=11)
    out32 = arrays.full(n, 0, torch.int32)
    out8 = arrays.full(8 * n, 0, torch.uint8)
    store_reinterpreted_kernel[(kiln.cdiv(n, 256),)](x, out32, out8, n, BLOCK=256)
    assert torch.equal(out32.view(torch.float32).cpu(), x.cpu())
    assert torch.equal(out8.view(torch.float64).cpu(), x.cpu().double() * 3.0)


@kiln.jit
def read_bytes_kernel(x_ptr, out_ptr, halves_ptr, nbytes, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < nbytes
    # The bytes of an fp32 buffer, one by one, and its 16-bit halves.
    b = kl.load(x_ptr.to(kl.pointer_type(kl.uint8)) + offs, mask=mask)
    kl.store(out_ptr + offs, b, mask=mask)
    halves = kl.cast(x_ptr, kl.pointer_type(kl.int16), bitcast=True)
    kl.store(halves_ptr + offs, kl.load(halves + offs, mask=offs < nbytes // 2), mask=offs < nbytes // 2)


def test_read_bytes_through_a_uint8_pointer(arrays) -> None:
    n = 777
    x = arrays.randn(n, seed=12)
    out = arrays.full(4 * n, 0, torch.uint8)
    halves = arrays.full(2 * n, 0, torch.int16)
    read_bytes_kernel[(kiln.cdiv(4 * n, 512),)](x, out, halves, 4 * n, BLOCK=512)
    assert torch.equal(out.cpu(), x.cpu().view(torch.uint8))
    assert torch.equal(halves.cpu(), x.cpu().view(torch.int16))


@kiln.jit
def round_trip_kernel(x_ptr, out_ptr, addr_ptr, low_ptr, n, shift, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    mask = offs < n
    # The address of each element, as Triton's ptr_to_int gives it.
    addresses = (x_ptr + offs).to(kl.int64)
    kl.store(addr_ptr + offs, addresses, mask=mask)
    # Arithmetic on addresses, then pointers again: element (n - 1 - i),
    # from a scalar address moved by `shift` elements and back.
    base = x_ptr.to(kl.int64) + shift * 4
    reversed_ptrs = (base - shift * 4 + (n - 1 - offs).to(kl.int64) * 4).to(kl.pointer_type(kl.float32))
    kl.store(out_ptr + offs, kl.load(reversed_ptrs, mask=mask), mask=mask)
    # The low 32 bits of the address: what an alignment test reads.
    kl.store(low_ptr + offs, (x_ptr + offs).to(kl.int32), mask=mask)


def test_pointer_to_integer_and_back(arrays) -> None:
    n = 200
    x = arrays.randn(n, seed=13)
    out = arrays.full(n, 0.0, torch.float32)
    addresses = arrays.full(n, 0, torch.int64)
    low = arrays.full(n, 0, torch.int32)
    shift = int(np.random.default_rng(14).integers(1, 1000))
    round_trip_kernel[(1,)](x, out, addresses, low, n, shift, BLOCK=256)
    expected = x.data_ptr() + 4 * np.arange(n, dtype=np.int64)
    np.testing.assert_array_equal(addresses.cpu().numpy(), expected)
    np.testing.assert_array_equal(low.cpu().numpy(), expected.astype(np.uint32).view(np.int32))
    assert torch.equal(out.cpu(), x.cpu().flip(0))


@kiln.jit
def pointer_table_kernel(table_ptr, out_ptr, flags_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    mask = offs < n
    # A table of addresses in memory (int64), each used as a pointer.
    ptrs = kl.load(table_ptr + offs, mask=mask, other=0).to(kl.pointer_type(kl.float32))
    kl.store(out_ptr + offs, kl.load(ptrs, mask=mask), mask=mask)
    # A pointer tested against null, as Triton's cast to int1 does.
    kl.store(flags_ptr + offs, ptrs.to(kl.int1), mask=offs < BLOCK)


def test_integers_loaded_as_pointers(arrays) -> None:
    n = 100
    x = arrays.randn(n, seed=15)
    picks = torch.randperm(n, generator=torch.Generator().manual_seed(16))
    table = arrays.to_backend(x.data_ptr() + 4 * picks.to(torch.int64))
    out = arrays.full(n, 0.0, torch.float32)
    flags = arrays.full(128, 2, torch.int8)
    pointer_table_kernel[(1,)](table, out, flags.view(torch.bool), n, BLOCK=128)
    assert torch.equal(out.cpu(), x.cpu()[picks])
    # Past n the masked load gave the null address.
    assert flags.cpu()[:n].eq(1).all() and flags.cpu()[n:].eq(0).all()


@kiln.jit
def block_of_pointers_kernel(x_ptr, bits_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    mask = offs < n
    ptrs = x_ptr + offs
    as_int = kl.cast(ptrs, kl.pointer_type(kl.int32))
    kl.store(bits_ptr + offs, kl.load(as_int, mask=mask), mask=mask)
    # A where between two blocks of pointers made from integers, stored back
    # as integers (Triton's test_where on pointers).
    a = (x_ptr + offs).to(kl.uint64).to(kl.pi32_t)
    b = (x_ptr + (n - 1 - offs)).to(kl.int64).to(kl.pi32_t)
    chosen = kl.where(offs % 2 == 0, a, b)
    kl.store(out_ptr + offs, kl.load(chosen.to(kl.pointer_type(kl.float32)), mask=mask) * 2.0, mask=mask)


def test_block_of_pointers_cast(arrays) -> None:
    n = 60
    x = arrays.randn(n, seed=17)
    bits = arrays.full(n, 0, torch.int32)
    out = arrays.full(n, 0.0, torch.float32)
    block_of_pointers_kernel[(1,)](x, bits, out, n, BLOCK=64)
    assert torch.equal(bits.cpu(), x.cpu().view(torch.int32))
    xs = x.cpu()
    expected = torch.where(torch.arange(n) % 2 == 0, xs, xs.flip(0)) * 2.0
    assert torch.equal(out.cpu(), expected)


@kiln.jit
def element_bytes_kernel(x_ptr, low_ptr, second_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    mask = offs < n
    # A block of consecutive fp32 pointers seen as byte pointers is every
    # fourth byte, not consecutive bytes: the lowest byte of each element.
    bytes_ptrs = (x_ptr + offs).to(kl.pointer_type(kl.uint8))
    kl.store(low_ptr + offs, kl.load(bytes_ptrs, mask=mask), mask=mask)
    # The same through the addresses: one byte further into each element,
    # which is then overwritten with its complement.
    second = ((x_ptr + offs).to(kl.int64) + 1).to(kl.pointer_type(kl.uint8))
    b = kl.load(second, mask=mask)
    kl.store(second_ptr + offs, b, mask=mask)
    kl.store(second, ~b, mask=mask)


def test_block_of_element_pointers_as_bytes(arrays) -> None:
    n = 100
    x = arrays.randn(n, seed=19)
    before = x.cpu().view(torch.uint8).clone()
    low = arrays.full(n, 0, torch.uint8)
    second = arrays.full(n, 0, torch.uint8)
    element_bytes_kernel[(1,)](x, low, second, n, BLOCK=128)
    assert torch.equal(low.cpu(), before[0::4])
    assert torch.equal(second.cpu(), before[1::4])
    after = before.clone()
    after[1::4] = ~before[1::4]
    assert torch.equal(x.cpu().view(torch.uint8), after)


@kiln.jit
def store_literal_kernel(out_ptr, VALUE: kl.constexpr):
    val = VALUE
    kl.store(out_ptr.to(kl.pointer_type(val.dtype)), val)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64])
def test_store_through_a_pointer_of_the_value_type(arrays, dtype) -> None:
    """`out_ptr.to(kl.pointer_type(val.dtype))` (Triton's test_constexpr):
    a literal of another type stored into a float32 buffer's bytes."""
    rng = np.random.default_rng(18)
    value = int(rng.integers(2**40, 2**50)) if dtype == torch.int64 else float(rng.uniform(1, 2)) * 1e50
    out = arrays.full(2, 0.0, torch.float32)
    store_literal_kernel[(1,)](out, VALUE=value)
    assert out.cpu().view(dtype)[0].item() == value
