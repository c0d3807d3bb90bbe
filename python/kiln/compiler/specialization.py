"""Which kernel arguments a compiled kernel was specialized on.

The runtime computes this from the launch arguments (as Triton does): integer
arguments equal to 1, and integers divisible by 16 or pointers aligned to 16
bytes. The compiler uses it to fold constants and to prove alignment for
vectorized memory accesses; it is part of the kernel cache key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class Specialization:
    """Parameter names the kernel is specialized on.

    Attributes:
        divisible_by_16: integer parameters whose value is a multiple of 16,
            and pointer parameters whose address is 16-byte aligned.
        equal_to_1: integer parameters whose value is 1.
        named_tuples: the class of each tuple argument (or tuple element)
            that is a named tuple, by path: the kernel reads its fields by
            name, so the compiled code depends on it.
    """

    divisible_by_16: frozenset[str] = frozenset()
    equal_to_1: frozenset[str] = frozenset()
    named_tuples: tuple[tuple[str, type], ...] = ()


@dataclass(frozen=True)
class KernelSpecialization:
    """One specialization of a kernel, as a ``jit(repr=...)`` function sees it
    when it names the compiled kernel (Triton passes an object with the same
    ``signature`` and ``constants``).

    Attributes:
        fn: the jit function.
        signature: each runtime parameter's type string, by name (or path).
        constants: the compile-time values by name (or path): the constexpr
            parameters, None arguments, and the integer parameters equal to 1
            (as 1: Triton compiles those in as constants).
        attrs: the full :class:`Specialization`.
    """

    fn: Any
    signature: Mapping[str, str]
    constants: Mapping[str, Any]
    attrs: Specialization


# -- aggregate kernel arguments ------------------------------------------------
#
# A kernel argument that is a tuple (or a host TensorDescriptor) reaches the
# compiler flattened: the runtime names each leaf by its index path from the
# parameter, ``t[1][0]`` for the first element of the second element of ``t``,
# and the aggregate itself gets one of the marker types below in the
# signature. Leaves are typed like plain parameters (in ``signature``) or are
# compile-time values (in ``constexprs``, under their path); they appear in
# ``Specialization`` under their path too. The frontend rebuilds the value
# from the markers, taking children ``[0], [1], ...`` while they exist, and
# the launcher passes the runtime leaves in the same depth-first order.

#: Signature type of a tuple argument.
TUPLE_TYPE = "tuple"
#: Signature type of a host TensorDescriptor argument; its children are the
#: base pointer, the shape tuple, the strides tuple, the block shape tuple
#: (constexpr leaves), the padding option (a constexpr leaf) and the TMA
#: tensor map (a TENSOR_MAP_TYPE leaf where the target has the TMA unit,
#: else the constexpr None).
TENSOR_DESCRIPTOR_TYPE = "tensordesc"
#: Signature type of a TMA tensor map: 128 bytes the launcher encodes from a
#: host TensorDescriptor, passed by value (Triton's name for it).
TENSOR_MAP_TYPE = "nvTmaDesc"
#: The marker types, which are not types of IR values.
AGGREGATE_TYPES = frozenset({TUPLE_TYPE, TENSOR_DESCRIPTOR_TYPE})


def is_named_tuple_class(cls: Any) -> bool:
    """Whether ``cls`` is a ``typing.NamedTuple`` / ``collections.namedtuple``
    class (a tuple subclass with named fields), which kernels take apart and
    build as Triton's do."""
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


def child_name(path: str, index: int) -> str:
    """The path of element ``index`` of the aggregate argument at ``path``."""
    return f"{path}[{index}]"


def root_name(path: str) -> str:
    """The parameter a (possibly flattened) argument path belongs to."""
    return path.split("[", 1)[0]


def kernel_parameters(arg_names: Sequence[str], signature: Mapping[str, str],
                      constexprs: Mapping[str, Any]) -> list[str]:
    """The paths of the compiled kernel's parameters, in order: the runtime
    leaves of ``signature``, parameter by parameter and element by element,
    as the frontend lays them out (whatever order ``signature`` lists them
    in)."""
    params: list[str] = []

    def add(path: str) -> None:
        text = signature.get(path)
        if text is None:
            return  # a constexpr (compiled in)
        if text not in AGGREGATE_TYPES:
            params.append(path)
            return
        index = 0
        while child_name(path, index) in signature or child_name(path, index) in constexprs:
            add(child_name(path, index))
            index += 1

    for name in arg_names:
        add(name)
    return params
