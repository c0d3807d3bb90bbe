"""The launch key of a ``@kiln.jit`` kernel: one key piece per argument.

The key. Every launch computes one key piece per parameter through a
per-parameter dispatch table indexed by the argument's exact class, so the
hot path is one dict lookup and one small function call per argument:

* tensors (anything with ``data_ptr()`` and ``dtype``): (dtype, address
  divisible by 16, device index, -1 on the CPU); numpy arrays: (dtype,
  aligned, -1); other ``__array_interface__`` / ``__dlpack__`` objects:
  (class, element type, aligned, device); reinterpreted arrays
  (``kiln.reinterpret``'s TensorWrapper): (marker, the element type kernels
  see, the base's piece);
* ``int``: its type code ("i32", "i64", "u64"), suffixed ":1" when it equals 1
  and ":16" when it is divisible by 16; ``bool``: "i1"; ``float``: "fp32";
* constexpr parameters: (class, value); None for any parameter: a None
  marker (it is compiled in as the constexpr None, as Triton does);
* tuples: a marker followed by each element's piece, computed the same way
  (so the key covers the tuple's structure); ``kl.constexpr`` objects, dtypes
  and strings: (class, value), since they are compiled in;
* parameters in ``do_not_specialize`` drop the alignment/divisibility flags
  (of every element, for a tuple).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Optional

from kiln.compiler.specialization import is_named_tuple_class
from kiln.runtime import launch_settings as _settings
from kiln.runtime import arrays as _arrays


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT64_MAX = 2**64 - 1

# Key pieces for arguments the miss path must reject with a clear error.
_UNSUPPORTED = "<unsupported>"
_OVERFLOW = "<overflow>"
# The key piece of None (compiled in as the constexpr None).
_NONE = "<None>"
# The first item of a tuple argument's key piece.
_TUPLE = "<tuple>"
# The first item of a host tensor descriptor's key piece.
_DESCRIPTOR = "<tensordesc>"
# The first item of a reinterpreted array's (TensorWrapper's) key piece.
_WRAPPER = "<reinterpret>"

# Pointer element types by the dtype's name (the part after "torch.").
_DTYPE_CODES = {
    "bool": "i1",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
    "float64": "fp64",
    "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
    "float8_e4m3fnuz": "fp8e4b8",
    "float8_e5m2fnuz": "fp8e5b16",
}

def _int_code(value: int) -> Optional[str]:
    """The narrowest of i32, i64, u64 that holds ``value``, else None."""
    if _INT32_MIN <= value <= _INT32_MAX:
        return "i32"
    if _INT64_MIN <= value <= _INT64_MAX:
        return "i64"
    if 0 <= value <= _UINT64_MAX:
        return "u64"
    return None


# -- key pieces: specialized parameters --------------------------------------


def _int_key(value: int) -> str:
    if _INT32_MIN <= value <= _INT32_MAX:
        if value == 1:
            return "i32:1"
        return "i32" if value & 15 else "i32:16"
    code = _int_code(value)
    if code is None:
        return _OVERFLOW
    return code if value & 15 else code + ":16"


def _tensor_key(value: Any) -> tuple:
    address = value.data_ptr()
    # A null address (a meta tensor, or an empty one) gets its own key: the
    # miss path refuses meta tensors, which would launch on address 0.
    return (value.dtype, not address & 15 if address else None, value.get_device())


def _pointer_key(value: Any) -> tuple:
    """Duck-typed arrays: data_ptr() and dtype, maybe no get_device()."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return (_UNSUPPORTED, value.__class__)
    address = value.data_ptr()
    return (dtype, not address & 15 if address else None, _device_index(value))


# -- key pieces: do_not_specialize parameters ---------------------------------


def _int_key_plain(value: int) -> str:
    code = _int_code(value)
    return _OVERFLOW if code is None else code


def _tensor_key_plain(value: Any) -> tuple:
    return (value.dtype, value.get_device(), not value.data_ptr())


def _pointer_key_plain(value: Any) -> tuple:
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return (_UNSUPPORTED, value.__class__)
    return (dtype, _device_index(value), not value.data_ptr())


# Read-only arrays get their own keys: the miss path refuses them for
# parameters the kernel writes.
def _numpy_key(value: Any) -> tuple:
    return (value.dtype, not value.ctypes.data & 15, -1, value.flags.writeable)


def _numpy_key_plain(value: Any) -> tuple:
    return (value.dtype, -1, value.flags.writeable)


def _array_key(value: Any) -> tuple:
    """Other array protocols: slow, but their users are not benchmarks."""
    cls = value.__class__
    kind = _arrays.array_kind(cls)
    try:
        device = _settings.array_device(value)
        if device == _settings.META or device is not None and device.startswith("dlpack device"):
            return (cls, device)  # refused by the miss path, which explains
        return (cls, device, _arrays.element_name(value, kind), not _arrays.address_of(value, kind) & 15,
                _arrays.read_only(value, kind))
    except Exception:  # noqa: BLE001 - the miss path re-examines it and explains
        return (_UNSUPPORTED, cls)


def _array_key_plain(value: Any) -> tuple:
    key = _array_key(value)
    return key[:3] + key[4:]  # without the alignment


def _bool_key(value: bool) -> str:
    return "i1"


def _float_key(value: float) -> str:
    return "fp32"


def _none_key(value: None) -> str:
    return _NONE


def _device_index(value: Any) -> Optional[int]:
    """A duck-typed array's CUDA device index, -1 on the CPU, None if unknown."""
    get_device = getattr(value, "get_device", None)
    if get_device is not None:
        return get_device()
    device = getattr(value, "device", None)
    if device is None:
        return None
    if getattr(device, "type", None) == "cpu" or device == "cpu":
        return -1
    return getattr(device, "index", None)


class _KeyTable(dict):
    """Maps an argument's class to the function computing its key piece.

    Classes are added on first sight (``__missing__``), so each later lookup
    is a plain dict hit.
    """

    def __init__(self, entries: dict, tensor_key: Callable, pointer_key: Callable, numpy_key: Callable,
                 array_key: Callable):
        super().__init__(entries)
        self._tensor_key = tensor_key
        self._pointer_key = pointer_key
        self._numpy_key = numpy_key
        self._array_key = array_key

    def _tuple_key(self, value: tuple) -> tuple:
        """A tuple's piece: its elements' pieces (so its structure too)."""
        return (_TUPLE, *[self[item.__class__](item) for item in value])

    def _named_tuple_key(self, value: tuple) -> tuple:
        """A named tuple's piece: its class (the kernel reads fields by
        name) and its elements' pieces."""
        return (_TUPLE, value.__class__, *[self[item.__class__](item) for item in value])

    def _descriptor_key(self, value: Any) -> tuple:
        """A host TensorDescriptor's piece: its base's, shape's and strides'
        pieces, its block shape and padding, and what is wrong with its
        layout (so a bad one never hits a key that was checked)."""
        base = value.base
        return (_DESCRIPTOR, self[base.__class__](base), self._tuple_key(value.shape),
                self._tuple_key(value.strides), tuple(value.block_shape), value.padding, value.layout_problem())

    def _wrapper_key(self, value: Any) -> tuple:
        """A reinterpreted array's piece: the element type kernels see, and
        its base's piece (address alignment, device, read-only)."""
        base = value.base
        return (_WRAPPER, value.dtype, self[base.__class__](base))

    def __missing__(self, cls: type) -> Callable[[Any], Any]:
        kind = _arrays.array_kind(cls)
        if getattr(cls, "__kiln_tensor_descriptor__", False):
            key = self._descriptor_key
        elif getattr(cls, "__kiln_tensor_wrapper__", False):
            key = self._wrapper_key
        elif _is_compile_time_class(cls):
            # Compile-time leaves of tuples: their value is compiled in.
            key = _constexpr_key
        elif is_named_tuple_class(cls):
            key = self._named_tuple_key
        elif issubclass(cls, tuple):
            key = self._tuple_key
        elif kind == _arrays.ArrayKind.TORCH:
            key = self._tensor_key if hasattr(cls, "get_device") else self._pointer_key
        elif kind == _arrays.ArrayKind.NUMPY:
            key = self._numpy_key
        elif kind is not None:
            key = self._array_key
        elif issubclass(cls, bool):
            key = _bool_key
        elif issubclass(cls, int):
            key = self[int]
        elif issubclass(cls, float):
            key = _float_key
        else:
            return _unsupported_key  # not cached: unsupported classes stay rare
        self[cls] = key
        return key


def _unsupported_key(value: Any) -> tuple:
    return (_UNSUPPORTED, value.__class__)


def _is_compile_time_class(cls: type) -> bool:
    """Classes of values that are compile-time leaves inside tuples:
    ``kl.constexpr`` objects, dtypes, strings and jit functions."""
    if cls.__name__ == "constexpr" or issubclass(cls, str) or _is_jit_function_class(cls):
        return True
    try:
        from kiln.language.core import dtype  # imported late: language imports the runtime
    except ImportError:
        return False
    return issubclass(cls, dtype)


def _is_jit_function_class(cls: type) -> bool:
    """A ``@kiln.jit`` function passed as an argument is compiled in (as a
    Triton constexpr): the kernel calls it like a global jit function."""
    from kiln.runtime.jit import JITFunction  # jit imports this module

    return issubclass(cls, JITFunction)


_SPECIALIZED = _KeyTable(
    {int: _int_key, bool: _bool_key, float: _float_key, type(None): _none_key},
    _tensor_key,
    _pointer_key,
    _numpy_key,
    _array_key,
)
_PLAIN = _KeyTable(
    {int: _int_key_plain, bool: _bool_key, float: _float_key, type(None): _none_key},
    _tensor_key_plain,
    _pointer_key_plain,
    _numpy_key_plain,
    _array_key_plain,
)

# Constexpr values whose class alone makes (class, value) a faithful key.
_PLAIN_CONSTEXPR_CLASSES = frozenset({int, bool, float, str, type(None)})


def _constexpr_value(value: Any) -> Any:
    """Unwraps ``kl.constexpr(v)`` objects passed as arguments."""
    if value.__class__.__name__ == "constexpr" and hasattr(value, "value"):
        return value.value
    return value


def _constexpr_key(value: Any) -> tuple:
    cls = value.__class__
    if cls in _PLAIN_CONSTEXPR_CLASSES:
        return (cls, value)
    value = _constexpr_value(value)
    return (value.__class__, value)


class _ConstexprTable(dict):
    """Every class maps to the constexpr key function."""

    def __missing__(self, cls: type) -> Callable[[Any], Any]:
        return _constexpr_key


_CONSTEXPR = _ConstexprTable()


def _is_constexpr_annotation(annotation: Any) -> bool:
    """True for ``kl.constexpr`` or its spelling as a string annotation."""
    if annotation is inspect.Parameter.empty:
        return False
    if isinstance(annotation, str):
        return annotation.strip().rsplit(".", 1)[-1] == "constexpr"
    try:
        from kiln.language import constexpr  # imported late: language imports the runtime
    except ImportError:
        constexpr = None
    if constexpr is not None and (annotation is constexpr or isinstance(annotation, constexpr)):
        return True
    return getattr(annotation, "__name__", None) == "constexpr"


# Scalar dtype annotations by the name a kernel spells (``v: kl.uint8`` or
# the string ``"tl.uint8"``): the parameter's signature type, as Triton's
# annotated parameters. Other annotations (``torch.Tensor``, ``int``) are
# ignored, as in Triton.
_ANNOTATION_TYPES = {
    "int1": "i1", "uint1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
}
_ANNOTATED = "<annotated>"


def _annotated_scalar_type(annotation: Any) -> Optional[str]:
    """The signature type a scalar dtype annotation gives its parameter, or
    None for any other annotation."""
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        return _ANNOTATION_TYPES.get(annotation.strip().rsplit(".", 1)[-1])
    try:
        import kiln.language as language  # imported late: language imports the runtime
    except ImportError:
        return None
    for name, code in _ANNOTATION_TYPES.items():
        if getattr(language, name, None) is annotation:
            return code
    return None


def _annotated_range(code: str) -> Optional[tuple[int, int]]:
    """The values an integer signature type holds (None for a float type
    and for i1, which takes any int's truth value)."""
    if code == "i1":
        return None  # any int: the launcher takes its truth value, as for a bool
    if code.startswith("i"):
        width = int(code[1:])
        return (-(1 << (width - 1)), (1 << (width - 1)) - 1)
    if code.startswith("u"):
        return (0, (1 << int(code[1:])) - 1)
    return None


class _AnnotatedTable(dict):
    """Key pieces of a parameter with a scalar dtype annotation: a Python
    scalar's piece is the annotated type alone (the launcher converts the
    value to it); any other value keeps the usual piece."""

    def __init__(self, code: str, other: _KeyTable):
        super().__init__()
        self._piece = (_ANNOTATED, code)
        self._other = other

    def __missing__(self, cls: type) -> Callable[[Any], Any]:
        if issubclass(cls, (int, float)):
            piece = self._piece
            key = lambda value: piece  # noqa: E731 - one constant per parameter
        else:
            key = self._other[cls]
        self[cls] = key
        return key


def _is_const_annotation(annotation: Any) -> bool:
    """True for ``kl.const`` (a pointer to constant data) or its spelling as
    a string annotation."""
    if annotation is inspect.Parameter.empty:
        return False
    if isinstance(annotation, str):
        return annotation.strip().rsplit(".", 1)[-1] == "const"
    try:
        from kiln.language import const  # imported late: language imports the runtime
    except ImportError:
        return False
    return annotation is const

