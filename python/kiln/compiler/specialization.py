"""Which kernel arguments a compiled kernel was specialized on.

The runtime computes this from the launch arguments (as Triton does): integer
arguments equal to 1, and integers divisible by 16 or pointers aligned to 16
bytes. The compiler uses it to fold constants and to prove alignment for
vectorized memory accesses; it is part of the kernel cache key.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Specialization:
    """Parameter names the kernel is specialized on.

    Attributes:
        divisible_by_16: integer parameters whose value is a multiple of 16,
            and pointer parameters whose address is 16-byte aligned.
        equal_to_1: integer parameters whose value is 1.
    """

    divisible_by_16: frozenset[str] = frozenset()
    equal_to_1: frozenset[str] = frozenset()
