"""Unsigned integers in kernels, through ``kiln.reinterpret`` (torch has no
uint16/32/64 arithmetic): loads and stores, unsigned comparisons, division
and remainder, logical right shifts (and the arithmetic one a signed value
keeps when shifted by an unsigned amount), casts to and from floats,
minimum/maximum, reductions and atomics, on every backend present, against
Python integers on fresh random inputs (the seed is in the failure message).
"""

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl

N = 256
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
# Binary operators a kernel can apply to two unsigned values, and their
# exact result on Python integers in [0, 2**bits) (modulo 2**bits).
BINARY = {
    "add": lambda x, y, bits: (x + y) % 2**bits,
    "sub": lambda x, y, bits: (x - y) % 2**bits,
    "mul": lambda x, y, bits: (x * y) % 2**bits,
    "floordiv": lambda x, y, bits: x // y,
    "mod": lambda x, y, bits: x % y,
    "rshift": lambda x, y, bits: x >> (y % bits),
    "lt": lambda x, y, bits: int(x < y),
    "ge": lambda x, y, bits: int(x >= y),
    "minimum": lambda x, y, bits: min(x, y),
    "maximum": lambda x, y, bits: max(x, y),
}


@kiln.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask, other=1)
    y = kl.load(y_ptr + offs, mask=mask, other=1)
    if OP == "add":
        z = x + y
    elif OP == "sub":
        z = x - y
    elif OP == "mul":
        z = x * y
    elif OP == "floordiv":
        z = x // y
    elif OP == "mod":
        z = x % y
    elif OP == "rshift":
        z = x >> (y % x.dtype.primitive_bitwidth)
    elif OP == "lt":
        z = (x < y).to(x.dtype)
    elif OP == "ge":
        z = (x >= y).to(x.dtype)
    elif OP == "minimum":
        z = kl.minimum(x, y)
    else:
        z = kl.maximum(x, y)
    kl.store(out_ptr + offs, z, mask=mask)


def fresh_rng() -> tuple[np.random.Generator, int]:
    seed = int(np.random.SeedSequence().entropy % 2**32)
    return np.random.default_rng(seed), seed


def random_unsigned(rng: np.random.Generator, name: str, n: int, low: int = 0) -> np.ndarray:
    """Values over the whole range, with the top bit set in about half (the
    values a signed reading would get wrong) and some extremes."""
    info = np.iinfo(name)
    values = rng.integers(low, int(info.max), size=n, dtype=name, endpoint=True)
    values[:3] = [max(low, 1), info.max, info.max // 2 + 1]
    return values


def to_kernel(values: np.ndarray, arrays) -> kiln.TensorWrapper:
    """The unsigned numpy array as a kernel argument: its bits in a signed
    torch tensor of the same width, reinterpreted."""
    signed = torch.from_numpy(values.view(values.dtype.name[1:]).copy())
    return kiln.reinterpret(arrays.to_backend(signed), getattr(kl, values.dtype.name))


def from_kernel(wrapper: kiln.TensorWrapper) -> np.ndarray:
    return wrapper.base.cpu().numpy().view(wrapper.dtype.name)


@pytest.mark.parametrize("name", UNSIGNED)
@pytest.mark.parametrize("op", list(BINARY))
def test_unsigned_binary_ops(arrays, name, op) -> None:
    rng, seed = fresh_rng()
    x = random_unsigned(rng, name, N)
    y = random_unsigned(rng, name, N, low=1)
    # Small divisors too, so that quotients are not almost all 0.
    y[N // 2:] = rng.integers(1, 17, size=N - N // 2)
    out = to_kernel(np.zeros(N, dtype=name), arrays)
    binary_kernel[(kiln.cdiv(N, 128),)](to_kernel(x, arrays), to_kernel(y, arrays), out, N, OP=op, BLOCK=128)
    bits = np.iinfo(name).bits
    expected = np.array([BINARY[op](int(a), int(b), bits) for a, b in zip(x, y)], dtype=name)
    np.testing.assert_array_equal(from_kernel(out), expected, err_msg=f"{name} {op}, seed {seed}")


@kiln.jit
def shift_signed_kernel(x_ptr, s_ptr, out_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs) >> kl.load(s_ptr + offs))


@pytest.mark.parametrize("signed, amount", [("int8", "uint8"), ("int8", "uint32"), ("int32", "uint32"),
                                            ("int16", "uint64")])
def test_signed_value_shifted_by_unsigned_amount(arrays, signed, amount) -> None:
    """The operands promote to the unsigned type, but the signed value's own
    type picks the shift: arithmetic, as in C and Triton."""
    rng, seed = fresh_rng()
    bits = max(np.iinfo(signed).bits, np.iinfo(amount).bits)
    x = rng.integers(np.iinfo(signed).min, np.iinfo(signed).max, size=128, dtype=signed, endpoint=True)
    s = rng.integers(0, np.iinfo(signed).bits, size=128, dtype=amount)
    out = to_kernel(np.zeros(128, dtype=f"uint{bits}"), arrays)
    shift_signed_kernel[(1,)](arrays.to_backend(torch.from_numpy(x)), to_kernel(s, arrays), out, BLOCK=128)
    expected = np.array([(int(a) >> int(b)) % 2**bits for a, b in zip(x, s)], dtype=f"uint{bits}")
    np.testing.assert_array_equal(from_kernel(out), expected, err_msg=f"{signed} >> {amount}, seed {seed}")


@kiln.jit
def float_casts_kernel(u_ptr, f_ptr, to_float_ptr, to_unsigned_ptr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(to_float_ptr + offs, kl.load(u_ptr + offs).to(kl.float64))
    kl.store(to_unsigned_ptr + offs, kl.load(f_ptr + offs).to(to_unsigned_ptr.dtype.element_ty))


@pytest.mark.parametrize("name", UNSIGNED)
def test_unsigned_float_casts(arrays, name) -> None:
    """uitofp: values with the top bit set stay positive; fptoui: floats up
    to the type's maximum convert exactly (truncating toward zero)."""
    rng, seed = fresh_rng()
    u = random_unsigned(rng, name, 128)
    bits = np.iinfo(name).bits
    # Floats that the unsigned type holds, many past the signed maximum;
    # float64 holds every value below 2**53 exactly.
    top = min(2.0**bits - 1, 2.0**53)
    f = rng.uniform(0, top, size=128)
    f[:2] = [top, 2.0**(bits - 1) + 0.5 if bits < 53 else 2.0**(bits - 1)]
    to_float = arrays.to_backend(torch.zeros(128, dtype=torch.float64))
    to_unsigned = to_kernel(np.zeros(128, dtype=name), arrays)
    float_casts_kernel[(1,)](to_kernel(u, arrays), arrays.to_backend(torch.from_numpy(f)), to_float, to_unsigned,
                             BLOCK=128)
    np.testing.assert_array_equal(to_float.cpu().numpy(), np.array([float(int(v)) for v in u]),
                                  err_msg=f"{name} -> float64, seed {seed}")
    np.testing.assert_array_equal(from_kernel(to_unsigned), np.array([int(v) for v in f], dtype=name),
                                  err_msg=f"float64 -> {name}, seed {seed}")


@kiln.jit
def reductions_kernel(x_ptr, out_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.arange(0, BLOCK))
    kl.store(out_ptr, kl.max(x, axis=0).to(kl.uint64))
    kl.store(out_ptr + 1, kl.min(x, axis=0).to(kl.uint64))
    kl.store(out_ptr + 2, kl.sum(x, axis=0).to(kl.uint64))
    kl.store(out_ptr + 3, kl.argmax(x, axis=0).to(kl.uint64))
    kl.store(out_ptr + 4, kl.argmin(x, axis=0).to(kl.uint64))


@pytest.mark.parametrize("name", UNSIGNED)
def test_unsigned_reductions(arrays, name) -> None:
    """max/min/argmax/argmin compare as unsigned; sum accumulates small
    types in uint32 (as Triton) and wraps modulo the accumulator's width."""
    rng, seed = fresh_rng()
    x = random_unsigned(rng, name, 128)
    out = to_kernel(np.zeros(5, dtype="uint64"), arrays)
    reductions_kernel[(1,)](to_kernel(x, arrays), out, BLOCK=128)
    values = [int(v) for v in x]
    sum_bits = max(32, np.iinfo(name).bits)
    expected = [max(values), min(values), sum(values) % 2**sum_bits, values.index(max(values)),
                values.index(min(values))]
    np.testing.assert_array_equal(from_kernel(out), np.array(expected, dtype="uint64"),
                                  err_msg=f"{name}, seed {seed}")


@kiln.jit
def atomic_minmax_kernel(x_ptr, max_ptr, min_ptr, BLOCK: kl.constexpr):
    x = kl.load(x_ptr + kl.program_id(0) * BLOCK + kl.arange(0, BLOCK))
    kl.atomic_max(max_ptr + kl.arange(0, BLOCK) % 4, x)
    kl.atomic_min(min_ptr + kl.arange(0, BLOCK) % 4, x)


@pytest.mark.parametrize("name", ["uint32", "uint64"])
def test_unsigned_atomic_min_max(arrays, name) -> None:
    """atomic_max/atomic_min on unsigned words compare as unsigned."""
    rng, seed = fresh_rng()
    x = random_unsigned(rng, name, 4 * 64)
    maxima = to_kernel(np.zeros(4, dtype=name), arrays)
    minima = to_kernel(np.full(4, np.iinfo(name).max, dtype=name), arrays)
    atomic_minmax_kernel[(4,)](to_kernel(x, arrays), maxima, minima, BLOCK=64)
    lanes = x.reshape(-1, 4)
    np.testing.assert_array_equal(from_kernel(maxima), lanes.max(axis=0), err_msg=f"{name} max, seed {seed}")
    np.testing.assert_array_equal(from_kernel(minima), lanes.min(axis=0), err_msg=f"{name} min, seed {seed}")


@kiln.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_reinterpreted_pointer_type_and_cache_key(arrays) -> None:
    """The kernel's pointer has the reinterpreted type; launches with the
    plain tensor and with its reinterpretation compile apart."""
    base = arrays.to_backend(torch.tensor([-1, 5, -128], dtype=torch.int8))
    out = arrays.full(3, 0, torch.int16)
    copy_kernel[(1,)](base, out, 3, BLOCK=4)
    assert out.cpu().tolist() == [-1, 5, -128]  # int8 sign-extends
    compiled = copy_kernel[(1,)](kiln.reinterpret(base, kl.uint8), out, 3, BLOCK=4)
    assert out.cpu().tolist() == [255, 5, 128]  # uint8 zero-extends
    assert compiled.metadata["signature"]["x_ptr"] == "*u8"


@kiln.jit
def mixed_division_kernel(x_ptr, y_ptr, out_ptr, OP: kl.constexpr):
    x = kl.load(x_ptr)
    y = kl.load(y_ptr)
    if OP == "/":
        z = x / y
    elif OP == "//":
        z = x // y
    else:
        z = x % y
    kl.store(out_ptr, z)


@pytest.mark.parametrize("op", ["/", "//", "%"])
@pytest.mark.parametrize("signed, unsigned", [("int32", "uint32"), ("int8", "uint64")])
def test_division_of_mixed_signedness_is_refused(op, signed, unsigned) -> None:
    """As in Triton: C's promotion would divide a negative value as a huge
    unsigned one, so the kernel must cast one operand itself."""
    x = torch.full((1,), -7, dtype=getattr(torch, signed))
    y = kiln.reinterpret(torch.full((1,), 2, dtype=getattr(torch, unsigned[1:])), getattr(kl, unsigned))
    out = torch.zeros(1, dtype=torch.float32)
    with pytest.raises(kiln.CompilationError, match=f"Cannot use /, // or % with {signed} and {unsigned} because "
                                                    f"they have different signedness") as error:
        mixed_division_kernel[(1,)](x, y, out, OP=op, backend="cpu")
    assert f"x {op} y" in str(error.value)


@kiln.jit
def bitwise_kernel(x_ptr, y_ptr, out_ptr):
    kl.store(out_ptr, kl.load(x_ptr) ^ kl.load(y_ptr))


def test_bitwise_operator_on_a_float_names_both_types() -> None:
    """Triton's wording, with the operands' own types (not the promoted one)."""
    x = kiln.reinterpret(torch.ones(1, dtype=torch.int16), kl.uint16)
    y = torch.ones(1, dtype=torch.float32)
    with pytest.raises(kiln.CompilationError, match="invalid operands of type uint16 and fp32"):
        bitwise_kernel[(1,)](x, y, torch.zeros(1, dtype=torch.float32), backend="cpu")
