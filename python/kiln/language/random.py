"""Counter-based random numbers (``kl.rand``, ``kl.randn``, ``kl.randint``,
...), as Triton's ``triton.language.random``, bit for bit.

Everything is Philox with 10 rounds: ``philox(seed, c0, c1, c2, c3)``
encrypts the counter ``(c0, c1, c2, c3)`` under the key ``(seed &
0xffffffff, seed >> 32)`` (Philox 4x32), or, for 64-bit counters, under
``(seed, 0)`` (Philox 4x64). ``randint4x(seed, offset)`` uses Philox 4x32
on the counter ``(offset's low 32 bits, its high 32 bits, 0, 0)`` whatever
the offset's width; ``rand`` maps its first
word to [0, 1) by reading it as a signed integer, folding negatives with
``-x - 1`` and scaling by ``4.6566127342e-10``; ``randn`` takes the first
two words through the Box-Muller transform. The same seed and offsets give
the same numbers on every backend: the functions are ordinary
``@kiln.jit`` code over integer ops that wrap, ``kl.umulhi`` and the float
math functions.
"""

from __future__ import annotations

from kiln.language import core
from kiln.runtime.jit import jit

__all__ = ["N_ROUNDS_DEFAULT", "pair_uniform_to_normal", "philox", "philox_impl", "rand", "rand4x", "randint",
           "randint4x", "randn", "randn4x", "uint_to_uniform_float"]

N_ROUNDS_DEFAULT = core.constexpr(10)


@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """``n_rounds`` rounds of Philox on the counter (c0, c1, c2, c3) with
    the key (k0, k1); all uint32 or all uint64."""
    if c0.dtype == core.uint32:
        PHILOX_KEY_A: core.constexpr = 0x9E3779B9
        PHILOX_KEY_B: core.constexpr = 0xBB67AE85
        PHILOX_ROUND_A: core.constexpr = 0xD2511F53
        PHILOX_ROUND_B: core.constexpr = 0xCD9E8D57
    else:
        core.static_assert(c0.dtype == core.uint64, "philox_impl needs uint32 or uint64 counters")
        PHILOX_KEY_A: core.constexpr = 0x9E3779B97F4A7C15
        PHILOX_KEY_B: core.constexpr = 0xBB67AE8584CAA73B
        PHILOX_ROUND_A: core.constexpr = 0xD2E7470EE14C6C93
        PHILOX_ROUND_B: core.constexpr = 0xCA5A826395121157
    for _ in core.static_range(n_rounds):
        _c0, _c2 = c0, c2
        c0 = core.umulhi(PHILOX_ROUND_B, _c2) ^ c1 ^ k0
        c2 = core.umulhi(PHILOX_ROUND_A, _c0) ^ c3 ^ k1
        c1 = PHILOX_ROUND_B * _c2
        c3 = PHILOX_ROUND_A * _c0
        k0 = k0 + PHILOX_KEY_A
        k1 = k1 + PHILOX_KEY_B
    return c0, c1, c2, c3


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """Philox of the counter (c0, c1, c2, c3), 32- or 64-bit integers, keyed
    by the integer ``seed``; returns four blocks of unsigned integers."""
    core.static_assert(seed.dtype.is_int(), "philox: the seed must be an integer")
    seed = seed.to(core.uint64)
    if core.constexpr(c0.dtype.primitive_bitwidth) == 32:
        int_dtype: core.constexpr = core.uint32
        seed_hi = ((seed >> 32) & 0xFFFFFFFF).to(core.uint32)
        seed_lo = (seed & 0xFFFFFFFF).to(core.uint32)
    else:
        core.static_assert(core.constexpr(c0.dtype.primitive_bitwidth) == 64, "philox: 32- or 64-bit counters")
        int_dtype: core.constexpr = core.uint64
        seed_hi = core.full((1,), 0, dtype=int_dtype)
        seed_lo = seed
    c0 = c0.to(int_dtype, bitcast=True)
    c1 = c1.to(int_dtype, bitcast=True)
    c2 = c2.to(int_dtype, bitcast=True)
    c3 = c3.to(int_dtype, bitcast=True)
    return philox_impl(c0, c1, c2, c3, seed_lo, seed_hi, n_rounds)


@jit
def randint4x(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for ``offset`` (a block of 32- or 64-bit
    integers) and ``seed``: Philox 4x32 of the counter (low 32 bits of the
    offset, high 32 bits, 0, 0), so an int64 offset below 2**32 gives the
    numbers an int32 one does."""
    offset_lo = offset.to(core.uint32)
    _0 = offset_lo * 0
    if core.constexpr(offset.dtype.primitive_bitwidth) > 32:
        offset_hi = (offset >> 32).to(core.uint32)
    else:
        offset_hi = _0
    return philox(seed, offset_lo, offset_hi, _0, _0, n_rounds)


@jit
def randint(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """A block of random uint32 for ``offset`` (see :func:`randint4x`)."""
    ret, _, _, _ = randint4x(seed, offset, n_rounds)
    return ret


@jit
def uint_to_uniform_float(x):
    """Random integers to floats uniform in [0, 1) (fp32)."""
    if core.constexpr(x.dtype == core.uint32) or core.constexpr(x.dtype == core.int32):
        # The largest scale with MAX_INT * scale < 1.0 in fp32.
        x = x.to(core.int32, bitcast=True)
        scale = 4.6566127342e-10
    else:
        core.static_assert(core.constexpr(x.dtype == core.uint64) or core.constexpr(x.dtype == core.int64),
                           "uint_to_uniform_float needs 32- or 64-bit integers")
        x = x.to(core.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    x = core.where(x < 0, -x - 1, x)
    return x * scale


@jit
def rand(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """A block of fp32 uniform in [0, 1) for ``offset`` and ``seed``."""
    source = randint(seed, offset, n_rounds)
    return uint_to_uniform_float(source)


@jit
def rand4x(seed, offsets, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of fp32 uniform in [0, 1)."""
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    u3 = uint_to_uniform_float(i3)
    u4 = uint_to_uniform_float(i4)
    return u1, u2, u3, u4


@jit
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform blocks to two standard normal blocks."""
    u1 = core.maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = core.sqrt(-2.0 * core.log(u1))
    return r * core.cos(th), r * core.sin(th)


@jit
def randn(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """A block of fp32 standard normal numbers for ``offset`` and ``seed``."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    n1, _ = pair_uniform_to_normal(u1, u2)
    return n1


@jit
def randn4x(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of fp32 standard normal numbers."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
