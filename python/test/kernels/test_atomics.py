"""Atomics on every backend present: many programs hitting the same
addresses, old values returned, masks, scalar forms and a spin lock built
from atomic_cas and atomic_xchg. Inputs are fresh random values; results
are compared with torch."""

import pytest
import torch

import kiln
import kiln.language as kl


@kiln.jit
def histogram_kernel(x_ptr, bins_ptr, old_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask)
    old = kl.atomic_add(bins_ptr + x, 1, mask=mask)
    kl.store(old_ptr + offs, old, mask=mask)


# 32 elements with 4 warps leave every element replicated on the GPU.
@pytest.mark.parametrize("block", [32, 256])
def test_histogram(arrays, block):
    n, nbins = 5000, 13
    x = arrays.randint(0, nbins, n, torch.int32, seed=block)
    bins = arrays.full(nbins, 0, torch.int32)
    old = arrays.full(n, -1, torch.int32)
    histogram_kernel[(kiln.cdiv(n, block),)](x, bins, old, n, BLOCK=block)
    counts = torch.bincount(x.cpu().long(), minlength=nbins)
    assert torch.equal(bins.cpu().long(), counts)
    # The old values each bin handed out are exactly 0 .. count - 1.
    for b in range(nbins):
        handed = torch.sort(old.cpu()[x.cpu() == b].long()).values
        assert torch.equal(handed, torch.arange(int(counts[b])))


@kiln.jit
def reduce_kernel(x_ptr, out_ptr, old_ptr, n, NOUT: kl.constexpr, OP: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask)
    target = out_ptr + offs % NOUT
    if OP == "max":
        old = kl.atomic_max(target, x, mask=mask)
    elif OP == "min":
        old = kl.atomic_min(target, x, mask=mask)
    elif OP == "and":
        old = kl.atomic_and(target, x, mask=mask)
    elif OP == "or":
        old = kl.atomic_or(target, x, mask=mask)
    elif OP == "xor":
        old = kl.atomic_xor(target, x, mask=mask)
    else:
        old = kl.atomic_add(target, x, mask=mask)
    kl.store(old_ptr + offs, old, mask=mask)


def _random(arrays, n, dtype, seed):
    if dtype.is_floating_point:
        return arrays.randn(n, dtype, seed=seed) * 100
    info = torch.iinfo(dtype)
    low, high = (max(info.min, -(2**31)), min(info.max, 2**31 - 1))
    return arrays.randint(low, high, n, dtype, seed=seed)


def _expected(op, x, init, nout):
    out = init.clone().cpu()
    xs = x.cpu()
    for k in range(nout):
        vals = xs[k::nout]
        if op == "max":
            out[k] = torch.maximum(out[k], vals.max())
        elif op == "min":
            out[k] = torch.minimum(out[k], vals.min())
        else:
            acc = out[k].clone()
            for v in vals:
                acc = {"and": acc & v, "or": acc | v, "xor": acc ^ v}[op]
            out[k] = acc
    return out


@pytest.mark.parametrize("op,dtype", [
    ("max", torch.int32), ("min", torch.int32), ("max", torch.int64), ("min", torch.int64),
    ("max", torch.float32), ("min", torch.float32), ("max", torch.float64), ("min", torch.float64),
    ("and", torch.int32), ("or", torch.int32), ("xor", torch.int64),
])
def test_reduce_into_few_addresses(arrays, op, dtype):
    n, nout, block = 777, 8, 64
    x = _random(arrays, n, dtype, seed=sum(map(ord, op + str(dtype))))
    init = _random(arrays, nout, dtype, seed=7)
    out = init.clone()
    old = arrays.full(n, 0, dtype)
    reduce_kernel[(kiln.cdiv(n, block),)](x, out, old, n, NOUT=nout, OP=op, BLOCK=block)
    assert torch.equal(out.cpu(), _expected(op, x, init, nout))
    if op in ("max", "min"):
        # Every old value is the initial value or one of the inputs of its address.
        xs, olds = x.cpu(), old.cpu()
        for i in range(0, n, 37):
            k = i % nout
            seen = torch.cat([init.cpu()[k:k + 1], xs[k::nout]])
            assert bool((seen == olds[i]).any())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                                   torch.int32])
def test_add_float_and_int(arrays, dtype):
    n, nout, block = 1000, 4, 128
    if dtype in (torch.float16, torch.bfloat16):
        # Small integers: every partial sum is exact in 16-bit floats.
        x = arrays.randint(-3, 4, n, torch.int32, seed=3).to(dtype)
    elif dtype.is_floating_point:
        x = arrays.randn(n, dtype, seed=3)
    else:
        x = arrays.randint(-1000, 1000, n, dtype, seed=3)
    out = arrays.full(nout, 0, dtype)
    old = arrays.full(n, 0, dtype)
    reduce_kernel[(kiln.cdiv(n, block),)](x, out, old, n, NOUT=nout, OP="add", BLOCK=block)
    expected = torch.stack([x.cpu()[k::nout].double().sum() for k in range(nout)])
    if dtype in (torch.float16, torch.bfloat16):
        assert bool((expected.abs() <= 256).all())
        assert torch.equal(out.cpu().double(), expected)
    elif dtype.is_floating_point:
        assert torch.allclose(out.cpu().double(), expected, atol=1e-3, rtol=1e-4)
    else:
        assert torch.equal(out.cpu().long(), expected.long())


@kiln.jit
def masked_xchg_kernel(out_ptr, val_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    mask = (offs < n) & (offs % 2 == 0)
    old = kl.atomic_xchg(out_ptr + offs, kl.load(val_ptr + offs), mask=mask)
    kl.store(val_ptr + offs, old, mask=mask)


def test_masked_lanes_do_nothing(arrays):
    block, n = 64, 50
    out = arrays.randn(block, torch.float32, seed=11)
    vals = arrays.randn(block, torch.float32, seed=12)
    out0, vals0 = out.clone(), vals.clone()
    masked_xchg_kernel[(1,)](out, vals, n, BLOCK=block)
    idx = torch.arange(block, device=out.device)
    active = (idx < n) & (idx % 2 == 0)
    assert torch.equal(out[active], vals0[active])
    assert torch.equal(vals[active], out0[active])
    assert torch.equal(out[~active], out0[~active])
    assert torch.equal(vals[~active], vals0[~active])


@kiln.jit
def ticket_kernel(counter_ptr, out_ptr):
    pid = kl.program_id(0)
    kl.store(out_ptr + pid, kl.atomic_add(counter_ptr, 1))


def test_scalar_atomic_returns_old_value(arrays):
    programs = 300
    counter = arrays.full(1, 5, torch.int32)
    out = arrays.full(programs, -1, torch.int32)
    ticket_kernel[(programs,)](counter, out)
    assert int(counter.cpu()[0]) == 5 + programs
    assert torch.equal(torch.sort(out.cpu()).values, torch.arange(5, 5 + programs, dtype=torch.int32))


@kiln.jit
def locked_increment_kernel(lock_ptr, count_ptr, ROUNDS: kl.constexpr):
    for _ in range(ROUNDS):
        while kl.atomic_cas(lock_ptr, 0, 1) == 1:
            pass
        # Plain (non-atomic) read-modify-write, protected by the lock.
        kl.store(count_ptr, kl.load(count_ptr, volatile=True) + 1)
        kl.atomic_xchg(lock_ptr, 0)


def test_spin_lock(arrays):
    programs, rounds = 64, 20
    lock = arrays.full(1, 0, torch.int32)
    count = arrays.full(1, 0, torch.int32)
    locked_increment_kernel[(programs,)](lock, count, ROUNDS=rounds, num_threads=2)
    assert int(count.cpu()[0]) == programs * rounds
    assert int(lock.cpu()[0]) == 0


@kiln.jit
def grouped_sum_kernel(x_ptr, partial_ptr, lock_ptr, n, GROUPS: kl.constexpr, BLOCK: kl.constexpr):
    """The layer-norm backward's accumulation: each row adds itself to its
    group's partial sums under the group's lock; a counter says whether
    the sums are read first (the read that kiln-hoist-branch-loads starts
    before the branch)."""
    row = kl.program_id(0)
    cols = kl.arange(0, BLOCK)
    mask = cols < n
    group = row % GROUPS
    lock = lock_ptr + group
    count = lock + GROUPS
    partial = partial_ptr + group * n + cols
    x = kl.load(x_ptr + row * n + cols, mask=mask, other=0.0)
    while kl.atomic_cas(lock, 0, 1) == 1:
        pass
    if kl.load(count) == 0:
        kl.atomic_xchg(count, 1)
    else:
        x += kl.load(partial, mask=mask)
    kl.store(partial, x, mask=mask)
    kl.debug_barrier()
    kl.atomic_xchg(lock, 0)


def test_grouped_sums_under_locks(arrays):
    rows, n, groups = 96, 300, 4
    x = arrays.randn(rows * n, seed=11).reshape(rows, n)
    # NaN where nothing may be read: the first row of a group must not add it.
    partial = arrays.full((groups, n), float("nan"), torch.float32)
    locks = arrays.full(2 * groups, 0, torch.int32)
    grouped_sum_kernel[(rows,)](x, partial, locks, n, GROUPS=groups, BLOCK=512, num_threads=2)
    expected = x.cpu().double().reshape(rows // groups, groups, n).sum(0)
    torch.testing.assert_close(partial.cpu().double(), expected, rtol=1e-5, atol=1e-4)
    assert locks.cpu()[:groups].eq(0).all() and locks.cpu()[groups:].eq(1).all()


@kiln.jit
def claim_kernel(owner_ptr, old_ptr, BLOCK: kl.constexpr):
    pid = kl.program_id(0)
    offs = kl.arange(0, BLOCK)
    old = kl.atomic_cas(owner_ptr + offs, kl.zeros([BLOCK], kl.int64), kl.full([BLOCK], 0, kl.int64) + pid + 1,
                        sem="acq_rel", scope="gpu")
    kl.store(old_ptr + pid * BLOCK + offs, old)


def test_block_cas_claims_each_slot_once(arrays):
    block, programs = 128, 16
    owner = arrays.full(block, 0, torch.int64)
    old = arrays.full(programs * block, -1, torch.int64)
    claim_kernel[(programs,)](owner, old, BLOCK=block)
    owner, old = owner.cpu(), old.cpu().view(programs, block)
    assert bool((owner >= 1).all()) and bool((owner <= programs).all())
    for slot in range(block):
        winners = (old[:, slot] == 0).nonzero().flatten()
        # Exactly one program saw the slot free, and it is the recorded owner;
        # everyone else saw that owner.
        assert winners.tolist() == [int(owner[slot]) - 1]
        assert bool(((old[:, slot] == 0) | (old[:, slot] == owner[slot])).all())
