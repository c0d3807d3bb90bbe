"""Array arguments: how the runtime recognizes them and reads their data.

Kernels see pointers; a backend needs, for each array argument, its element
type (for the signature), its data address (for the launch) and, in checked
mode, the extent of its memory. This module gets them from:

* torch tensors on the CPU, and any object with ``data_ptr()`` and a torch
  ``dtype`` (the fast path: one method call per launch);
* numpy arrays (``ndarray.ctypes.data``);
* any other object with ``__array_interface__`` (numpy's protocol: a
  ``typestr`` such as ``"<f4"`` and a ``data`` address);
* any other object with ``__dlpack__``, viewed through
  ``torch.utils.dlpack.from_dlpack`` (which knows bfloat16, and on a GPU
  passes the consumer's current stream to the producer) or, without torch,
  ``numpy.from_dlpack``;
* GPU arrays with ``__cuda_array_interface__`` (CuPy, Numba): the same
  ``typestr`` and ``data`` as numpy's protocol, in device memory, and maybe
  the producer's ``stream``, which a launch waits for (see
  :func:`cuda_interface_stream`).

:func:`out_of_bounds_error` turns a checked launch's out-of-bounds report
into :class:`kiln.errors.OutOfBoundsError` naming the parameter (for every
backend).
"""

from __future__ import annotations

import linecache
import re
import sys
from typing import Any, Callable, Optional, Sequence

from kiln.errors import OutOfBoundsError

__all__ = ["ArrayKind", "array_kind", "element_name", "read_only", "address_of", "extent_of",
           "out_of_bounds_error"]


class ArrayKind:
    """How an argument's data address and extent are read (one per class)."""

    TORCH = "torch"        # data_ptr(), dtype, stride(), element_size()
    NUMPY = "numpy"        # numpy.ndarray and its subclasses
    INTERFACE = "interface"  # __array_interface__
    DLPACK = "dlpack"      # __dlpack__
    CUDA_INTERFACE = "cuda_interface"  # __cuda_array_interface__ (device memory)


def array_kind(cls: type) -> Optional[str]:
    """The :class:`ArrayKind` of arguments of class ``cls``, or None for non-arrays."""
    if hasattr(cls, "data_ptr"):
        return ArrayKind.TORCH
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if issubclass(cls, numpy.ndarray):
            return ArrayKind.NUMPY
        if issubclass(cls, numpy.generic):
            # numpy scalars expose __array_interface__ too, but are values:
            # np.float64 is a float, the others stay unsupported as before.
            return None
    if hasattr(cls, "__cuda_array_interface__"):
        # Before __dlpack__, which CuPy arrays have too: the interface is
        # read without a conversion.
        return ArrayKind.CUDA_INTERFACE
    if hasattr(cls, "__array_interface__"):
        return ArrayKind.INTERFACE
    if hasattr(cls, "__dlpack__"):
        return ArrayKind.DLPACK
    return None


# Element types of __array_interface__ typestrs (without the byte order), by
# the names torch and numpy give them.
_TYPESTR_NAMES = {
    "b1": "bool", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
    "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
    "f2": "float16", "f4": "float32", "f8": "float64",
}


def _interface(value: Any, kind: str = ArrayKind.INTERFACE) -> dict:
    """The ``__array_interface__`` (or, for CUDA_INTERFACE,
    ``__cuda_array_interface__``) of ``value``, checked for what is read."""
    name = "__cuda_array_interface__" if kind == ArrayKind.CUDA_INTERFACE else "__array_interface__"
    interface = getattr(value, name)
    if not isinstance(interface, dict) or "typestr" not in interface or "data" not in interface:
        raise TypeError(f"{type(value).__name__}.{name} lacks 'typestr' or 'data'")
    return interface


def cuda_interface_stream(value: Any) -> Optional[int]:
    """The stream a ``__cuda_array_interface__`` producer says its data is
    written on (version 3's ``stream``: an integer handle, 1 and 2 being
    CUDA's legacy and per-thread default streams), or None when it names
    none (the data is ready).

    Raises:
        TypeError: for a stream that is not None or a positive integer (0
            is forbidden by the protocol: it would be ambiguous).
    """
    stream = _interface(value, ArrayKind.CUDA_INTERFACE).get("stream")
    if stream is None:
        return None
    if isinstance(stream, bool) or not isinstance(stream, int) or stream <= 0:
        raise TypeError(f"{type(value).__name__}.__cuda_array_interface__ has stream {stream!r}; the protocol "
                        f"allows None or a positive integer")
    return stream


def _typestr_name(typestr: str) -> str:
    order, body = typestr[:1], typestr[1:]
    little = sys.byteorder == "little"
    if order == ">" and little or order == "<" and not little:
        raise TypeError(f"byte-swapped array (typestr {typestr!r}): kernels read native byte order")
    name = _TYPESTR_NAMES.get(body)
    if name is None:
        raise TypeError(f"unsupported array element type (typestr {typestr!r})")
    return name


def _from_dlpack(value: Any) -> Any:
    """A torch tensor (or numpy array) viewing a CPU DLPack producer's memory.

    Raises:
        TypeError: when the producer refuses to export (numpy refuses
            read-only arrays: DLPack before 1.0 cannot say read-only).
    """
    try:
        from torch.utils.dlpack import from_dlpack
    except ImportError:
        from numpy import from_dlpack  # type: ignore[no-redef]
    try:
        return from_dlpack(value)
    except BufferError as error:
        raise TypeError(f"its DLPack export failed: {error}") from None


def element_name(value: Any, kind: str) -> str:
    """The element type of an array argument, by torch's/numpy's name
    (``"float32"``, ``"bfloat16"``, ...).

    Raises:
        TypeError: for an element type no name is known for.
    """
    if kind in (ArrayKind.INTERFACE, ArrayKind.CUDA_INTERFACE):
        return _typestr_name(_interface(value, kind)["typestr"])
    if kind == ArrayKind.DLPACK:
        value = _from_dlpack(value)
    return str(value.dtype).rsplit(".", 1)[-1]


def read_only(value: Any, kind: str) -> bool:
    """Whether an array argument's memory must not be written: a numpy array
    that is not writeable (a read-only view, a memory-mapped file opened
    for reading), or an ``__array_interface__`` whose ``data`` says
    read-only. torch tensors have no such flag, and DLPack producers (before
    DLPack 1.0) refuse to export read-only memory instead of flagging it."""
    if getattr(value.__class__, "__kiln_tensor_wrapper__", False):
        # A reinterpreted array (kiln.reinterpret) is as writable as its base.
        base = value.base
        return read_only(base, array_kind(base.__class__))
    if kind == ArrayKind.NUMPY:
        return not value.flags.writeable
    if kind in (ArrayKind.INTERFACE, ArrayKind.CUDA_INTERFACE):
        data = _interface(value, kind)["data"]
        return isinstance(data, tuple) and len(data) > 1 and bool(data[1])
    return False


def address_of(value: Any, kind: str) -> int:
    """The address of an array argument's first element."""
    if kind == ArrayKind.TORCH:
        return value.data_ptr()
    if kind == ArrayKind.NUMPY:
        return value.ctypes.data
    if kind in (ArrayKind.INTERFACE, ArrayKind.CUDA_INTERFACE):
        return int(_interface(value, kind)["data"][0])
    view = _from_dlpack(value)
    return view.data_ptr() if hasattr(view, "data_ptr") else view.ctypes.data


def _span(address: int, shape: Sequence[int], strides: Sequence[int], itemsize: int) -> tuple[int, int]:
    """(lowest address, bytes) of the memory a strided array can reach."""
    if any(size == 0 for size in shape):
        return address, 0
    low = high = 0
    for size, stride in zip(shape, strides):
        reach = (size - 1) * stride
        if reach < 0:
            low += reach
        else:
            high += reach
    return address + low, high - low + itemsize


def extent_of(value: Any, kind: str) -> tuple[int, int]:
    """(lowest address, size in bytes) of the memory an array argument covers,
    for checked mode's bounds.

    Raises:
        TypeError: when the argument does not say its shape and strides.
    """
    if kind == ArrayKind.DLPACK:
        value, kind = _from_dlpack(value), ArrayKind.TORCH
        if not hasattr(value, "stride"):  # numpy.from_dlpack's result
            kind = ArrayKind.NUMPY
    if kind == ArrayKind.TORCH:
        try:
            itemsize = value.element_size()
            # torch counts strides in elements, numpy and the interface in bytes.
            strides = tuple(stride * itemsize for stride in value.stride())
            return _span(value.data_ptr(), tuple(value.shape), strides, itemsize)
        except AttributeError:
            raise TypeError(f"{type(value).__name__} has data_ptr() but not shape, stride() and element_size(); "
                            f"checked mode cannot tell its size") from None
    if kind == ArrayKind.NUMPY:
        return _span(value.ctypes.data, value.shape, value.strides, value.itemsize)
    interface = _interface(value, kind)
    shape = tuple(interface.get("shape", ()))
    typestr = interface["typestr"]
    _typestr_name(typestr)  # rejects what element_name would
    itemsize = int(typestr[2:])
    strides = interface.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], itemsize
        for size in reversed(shape):
            strides.insert(0, step)
            step *= size
    return _span(int(interface["data"][0]), shape, tuple(strides), itemsize)


# What kiln._C.cpu reports for a checked access outside a buffer.
_OUT_OF_BOUNDS = re.compile(r"^(?:(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): )?(?P<what>.*?)"
                            r"\bparameter (?P<param>\d+)(?P<rest>.*)$", re.S)
_ELEMENT_INDEX = re.compile(r"element index (-?\d+)")


def out_of_bounds_error(report: str, kernel_name: str, names: Sequence[str]) -> OutOfBoundsError:
    """The OutOfBoundsError for a checked launch's report (``"file:line:col:
    out-of-bounds load from parameter N at element index I (...)"``, as every
    backend words it), parameter N named from ``names``, the kernel's
    runtime parameters."""
    match = _OUT_OF_BOUNDS.match(report)
    if match is None:
        return OutOfBoundsError(f"kernel {kernel_name}: {report}")
    index = int(match["param"])
    parameter = names[index] if 0 <= index < len(names) else None
    who = f"'{parameter}'" if parameter is not None else f"parameter {index}"
    message = f"{match['what']}{who}{match['rest']} in kernel {kernel_name}"
    element = _ELEMENT_INDEX.search(report)
    filename = match["file"]
    lineno = int(match["line"]) if match["line"] else None
    source = linecache.getline(filename, lineno) if filename and lineno else ""
    return OutOfBoundsError(message, filename, lineno, int(match["col"]) if match["col"] else None,
                            parameter, int(element.group(1)) if element else None, source or None)


def _torch_address(value: Any) -> int:
    return value.data_ptr()


def _numpy_address(value: Any) -> int:
    return value.ctypes.data


def _interface_address(value: Any) -> int:
    return address_of(value, ArrayKind.INTERFACE)


def _cuda_interface_address(value: Any) -> int:
    return address_of(value, ArrayKind.CUDA_INTERFACE)


def _dlpack_address(value: Any) -> int:
    # The producer (still referenced by the bound arguments) owns the memory,
    # so the address stays valid after the temporary view is dropped.
    return address_of(value, ArrayKind.DLPACK)


_GETTERS: dict[str, Callable[[Any], int]] = {
    ArrayKind.TORCH: _torch_address,
    ArrayKind.NUMPY: _numpy_address,
    ArrayKind.INTERFACE: _interface_address,
    ArrayKind.DLPACK: _dlpack_address,
    ArrayKind.CUDA_INTERFACE: _cuda_interface_address,
}
