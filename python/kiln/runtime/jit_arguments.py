"""The miss path's view of a launch's arguments: their description for the
compiler and loader (tuples and tensor descriptors flattened), the kernel
cache views and the JIT hooks' records."""

from __future__ import annotations

import inspect
import json
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional, Union

from kiln.backends.base import Backend
from kiln.compiler.specialization import (TENSOR_DESCRIPTOR_TYPE, TENSOR_MAP_TYPE, TUPLE_TYPE, Specialization, child_name,
                                          is_named_tuple_class)
from kiln.runtime import launch_settings as _settings
from kiln.runtime import arrays as _arrays

from kiln.runtime.jit_keys import (_DTYPE_CODES, _int_code, _is_compile_time_class, _is_jit_function_class,
                                   _constexpr_value, _annotated_range)

if TYPE_CHECKING:
    from kiln.runtime.jit import JITFunction


class JitFunctionInfo:
    """The kernel a JIT hook is called for (Triton's ``fn=`` argument of
    ``knobs.runtime.jit_cache_hook``): its module, name and jit function."""

    __slots__ = ("module", "name", "jit_function")

    def __init__(self, module: str, name: str, jit_function: "JITFunction") -> None:
        self.module = module
        self.name = name
        self.jit_function = jit_function


def _full_name(fn: "JITFunction") -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def serialize_specialization_data(fn: "JITFunction", signature: Mapping[str, str], constexprs: Mapping[str, Any],
                                  attrs: Specialization, target: str, num_warps: int, num_stages: int,
                                  options: Mapping[str, Any]) -> Optional[str]:
    """The JSON text of one specialization of ``fn``, which
    :meth:`JITFunction.preload` compiles again; None when a compile-time
    value has no JSON spelling (a jit function passed as an argument, a
    named tuple), as such a specialization cannot be rebuilt from text."""
    from kiln.runtime import disk_cache as _disk_cache
    if attrs.named_tuples:
        return None
    try:
        return json.dumps({
            "name": _full_name(fn),
            "signature": [[path, ty] for path, ty in signature.items()],
            "constexprs": [[path, _disk_cache.encode_constant(value)] for path, value in constexprs.items()],
            "divisible_by_16": sorted(attrs.divisible_by_16),
            "equal_to_1": sorted(attrs.equal_to_1),
            "options": [[option, _disk_cache.encode_constant(value)] for option, value in sorted(options.items())],
            "target": target,
            "num_warps": num_warps,
            "num_stages": num_stages,
        })
    except _disk_cache.Uncacheable:
        return None


class _KernelCacheView:
    """``device_caches[device][0]``: the kernels of one jit function loaded
    on one device, by launch key."""

    def __init__(self, fn: "JITFunction", device: Any) -> None:
        self._fn = fn
        self._device = device

    def __len__(self) -> int:
        return len(self._fn.cache.get(self._device, {}))

    def __iter__(self) -> Iterator[tuple]:
        return iter(list(self._fn.cache.get(self._device, {})))

    def __contains__(self, key: object) -> bool:
        return key in self._fn.cache.get(self._device, {})

    def __getitem__(self, key: tuple) -> Any:
        return self._fn.cache.get(self._device, {})[key].kernel

    def clear(self) -> None:
        fn = self._fn
        with fn._miss_lock:
            for key, loaded in list(fn.cache.get(self._device, {}).items()):
                fn._forget(key, self._device, loaded)
            fn._compiled.clear()


class _DeviceCaches:
    """``JITFunction.device_caches``: ``[device]`` gives a tuple whose first
    element is that device's :class:`_KernelCacheView` (Triton's tuple holds
    its binder's internals after it; Kiln has none to show)."""

    def __init__(self, fn: "JITFunction") -> None:
        self._fn = fn

    def __getitem__(self, device: Any) -> tuple:
        return (_KernelCacheView(self._fn, device),)


class _DeviceRoutes(dict):
    """A multi-device backend's route for one key: {device: LoadedKernel}.

    ``current_device`` is the backend's, so the hot path picks the current
    device's kernel without knowing which backend it is.
    """

    __slots__ = ("current_device",)

    def __init__(self, backend: Backend):
        super().__init__()
        self.current_device = backend.current_device


_EMPTY = inspect.Parameter.empty


class _Description:
    """What the miss path learns of a launch's arguments.

    Attributes:
        signature: the type of every runtime leaf, and the marker type of
            every aggregate, by path.
        constexprs: the constexpr parameters' values, and those of
            compile-time leaves of aggregates, by path.
        divisible_by_16, equal_to_1: the specialized leaves' paths.
        leaves: every leaf path (constexprs included), in launch order.
        kinds: each runtime leaf's ArrayKind (None for scalars), in order.
        aggregate: whether any argument was flattened (or compiled in).
        read_only: the paths of the read-only array leaves.
    """

    __slots__ = ("signature", "constexprs", "divisible_by_16", "equal_to_1", "leaves", "kinds", "aggregate",
                 "read_only", "named_tuples")

    def __init__(self) -> None:
        self.signature: dict[str, str] = {}
        self.constexprs: dict[str, Any] = {}
        self.divisible_by_16: list[str] = []
        self.equal_to_1: list[str] = []
        self.leaves: list[str] = []
        self.kinds: list[Optional[str]] = []
        self.aggregate = False
        self.named_tuples: list[tuple[str, type]] = []
        self.read_only: list[str] = []


class _FlatKernel:
    """A JITFunction seen by a backend's loader with its tuple arguments
    flattened: ``arg_names`` are the leaf paths, ``runtime_positions`` and
    ``runtime_names`` the runtime leaves; everything else is the kernel's."""

    def __init__(self, kernel: "JITFunction", leaves: list[str], signature: dict[str, str]) -> None:
        self._kernel = kernel
        self.__name__ = kernel.__name__
        self.arg_names = list(leaves)
        self.runtime_positions = tuple(i for i, name in enumerate(leaves) if name in signature)
        self.runtime_names = tuple(leaves[i] for i in self.runtime_positions)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kernel, name)


def _flatten_into(value: Any, out: list) -> None:
    """Appends the leaves of an argument, depth first (the order of
    :meth:`JITFunction._describe_value`)."""
    if isinstance(value, tuple):
        for item in value:
            _flatten_into(item, out)
    elif getattr(value.__class__, "__kiln_tensor_descriptor__", False):
        _flatten_into(value.kernel_fields(), out)
        # The tensor map's leaf: the backend's launcher encodes it from the
        # descriptor (or skips it, where the target has no TMA unit).
        out.append(value)
    else:
        out.append(value)


def _array_leaves(path: str, value: Any, names: list[str], values: list[Any]) -> None:
    """The leaves of an argument with their paths (for choosing the backend)."""
    if isinstance(value, tuple):
        for index, item in enumerate(value):
            _array_leaves(child_name(path, index), item, names, values)
    elif getattr(value.__class__, "__kiln_tensor_descriptor__", False):
        _array_leaves(child_name(path, 0), value.base, names, values)
    else:
        names.append(path)
        values.append(value)


def _flattening_launch(launch: Callable[..., None], flatten: Callable[[tuple], tuple]) -> Callable[..., None]:
    """``launch`` taking the kernel's bound arguments instead of the leaves."""

    def flattened(grid_x: int, grid_y: int, grid_z: int, bound: tuple, num_threads: int) -> None:
        launch(grid_x, grid_y, grid_z, flatten(bound), num_threads)

    return flattened


class _CompilePlan:
    """What compiling one miss takes: the backend, device (and whether the
    arrays chose it rather than it being the current device), described
    arguments, compile options, specialization and target, and the
    device's own target (another one when the launch asks for an ``arch``)."""

    __slots__ = ("backend", "device", "device_from_arrays", "described", "options", "attrs", "target",
                 "native_target")

    def __init__(self, backend: Backend, device: Any, described: "_Description", options: dict,
                 attrs: Specialization, target: str, native_target: str, device_from_arrays: bool = False) -> None:
        self.backend = backend
        self.device = device
        self.device_from_arrays = device_from_arrays
        self.described = described
        self.options = options
        self.attrs = attrs
        self.target = target
        self.native_target = native_target



class ArgumentDescriber:
    """The miss path's argument validation and description (mixed into
    JITFunction)."""

    def _describe_arguments(self, bound: tuple, backend: Backend, device: Any) -> "_Description":
        """Validates the arguments for a launch of ``backend`` on ``device``
        and describes them to the compiler and the loader (tuples flattened)."""
        description = _Description()
        for name, value in zip(self.arg_names, bound):
            if name in self.constexpr_names:
                value = _constexpr_value(value)
                try:
                    hash(value)
                except TypeError:
                    raise TypeError(f"kernel {self.__name__}: constexpr argument '{name}' must be hashable, got "
                                    f"{type(value).__name__}") from None
                description.constexprs[name] = value
                description.leaves.append(name)
                continue
            self._describe_value(description, name, value, name not in self.do_not_specialize, False, backend,
                                 device)
        return description

    def _describe_value(self, description: "_Description", path: str, value: Any, specialize: bool, nested: bool,
                        backend: Backend, device: Any) -> None:
        """Adds the argument (or tuple element) at ``path`` to ``description``."""
        signature = description.signature
        if getattr(value.__class__, "__kiln_tensor_descriptor__", False):
            self._describe_descriptor(description, path, value, specialize, backend, device)
            return
        if not nested and path in self.annotated_types and isinstance(value, (int, float)):
            self._describe_annotated(description, path, value)
            return
        if isinstance(value, tuple):
            description.aggregate = True
            signature[path] = TUPLE_TYPE
            if is_named_tuple_class(value.__class__):
                description.named_tuples.append((path, value.__class__))
            for index, item in enumerate(value):
                self._describe_value(description, child_name(path, index), item, specialize, True, backend, device)
            return
        if value is None or value.__class__.__name__ == "constexpr" or _is_jit_function_class(value.__class__) or (
                nested and _is_compile_time_class(value.__class__)):
            # Compiled in, as Triton does: the parameter list no longer holds
            # it. None is a compile-time value for any parameter (Triton
            # specializes it as the constexpr None), so a kernel can test
            # ``if scale is None:`` and the branch not taken is never built.
            value = _constexpr_value(value)
            try:
                hash(value)
            except TypeError:
                raise TypeError(f"kernel {self.__name__}: constexpr argument '{path}' must be hashable, got "
                                f"{type(value).__name__}") from None
            description.aggregate = True
            description.constexprs[path] = value
            description.leaves.append(path)
            return
        kind = _arrays.array_kind(value.__class__)
        if kind == _arrays.ArrayKind.TORCH and not hasattr(value, "dtype"):
            kind = None  # data_ptr() without a dtype: not an array Kiln understands
        if kind is not None:
            signature[path] = ("*k" if path in self.const_names else "*") + self._pointer_element(path, value, kind)
            address = backend.check_array(self.__name__, path, value, kind, _settings.array_device(value), device)
            if specialize and address is not None and address % 16 == 0:
                description.divisible_by_16.append(path)
            if _arrays.read_only(value, kind):
                description.read_only.append(path)
        elif isinstance(value, bool):
            signature[path] = "i1"
        elif isinstance(value, int):
            code = _int_code(value)
            if code is None:
                raise OverflowError(f"kernel {self.__name__}: integer argument '{path}' = {value} does not fit "
                                    f"in 64 bits")
            signature[path] = code
            if specialize and value == 1:
                description.equal_to_1.append(path)
            elif specialize and value % 16 == 0:
                description.divisible_by_16.append(path)
        elif isinstance(value, float):
            signature[path] = "fp32"
        else:
            raise TypeError(f"kernel {self.__name__}: argument '{path}' has unsupported type "
                            f"{type(value).__name__}; expected a tensor or array, int, float, bool or tuple")
        description.leaves.append(path)
        description.kinds.append(kind)

    def _describe_annotated(self, description: "_Description", path: str, value: Union[int, float]) -> None:
        """Adds a Python scalar passed for a parameter with a dtype annotation:
        it has the annotated type (not specialized on its value); an integer
        type takes only integers it holds, a float type any int or float
        (rounded to nearest even; out-of-range values become infinities)."""
        code = self.annotated_types[path]
        limits = _annotated_range(code)
        if code == "i1" and isinstance(value, float):
            raise TypeError(f"kernel {self.__name__}: argument '{path}' is annotated {code} but got the float "
                            f"{value!r}")
        if limits is not None:
            if isinstance(value, float):
                raise TypeError(f"kernel {self.__name__}: argument '{path}' is annotated {code} but got the float "
                                f"{value!r}")
            if not limits[0] <= value <= limits[1]:
                raise OverflowError(f"kernel {self.__name__}: argument '{path}' = {value} does not fit in its "
                                    f"annotated type {code} ({limits[0]} to {limits[1]})")
        description.signature[path] = code
        description.leaves.append(path)
        description.kinds.append(None)

    def _flatten_arguments(self, bound: tuple) -> tuple:
        """The launch's leaves of the bound arguments, for a key with tuples
        (the key fixes every tuple's structure, so the leaves match what the
        kernel was compiled for). Constexpr parameters stay whole."""
        out: list[Any] = []
        for value, flatten in zip(bound, self._flattened_params):
            if flatten:
                _flatten_into(value, out)
            else:
                out.append(value)
        return tuple(out)

    def _describe_descriptor(self, description: "_Description", path: str, value: Any, specialize: bool,
                             backend: Backend, device: Any) -> None:
        """Adds a host TensorDescriptor argument: base, shape and strides as
        runtime leaves, block shape and padding compiled in (the order of
        ``TensorDescriptor.kernel_fields``)."""
        where = f"kernel {self.__name__}: TensorDescriptor argument '{path}'"
        problem = value.layout_problem()
        if problem is not None:
            raise ValueError(f"{where}: {problem}")
        base, shape, strides, block_shape, padding = value.kernel_fields()
        kind = _arrays.array_kind(base.__class__)
        if kind is None or (kind == _arrays.ArrayKind.TORCH and not hasattr(base, "dtype")):
            raise TypeError(f"{where}: its base must be a tensor or array, got {type(base).__name__}")
        description.aggregate = True
        description.signature[path] = TENSOR_DESCRIPTOR_TYPE
        self._describe_value(description, child_name(path, 0), base, specialize, True, backend, device)
        if _arrays.address_of(base, kind) % 16:
            raise ValueError(f"{where}: its base address must be a multiple of 16 bytes (as for the TMA unit), "
                             f"got {_arrays.address_of(base, kind):#x}")
        self._describe_value(description, child_name(path, 1), tuple(shape), specialize, True, backend, device)
        self._describe_value(description, child_name(path, 2), tuple(strides), specialize, True, backend, device)
        block_path = child_name(path, 3)
        description.signature[block_path] = TUPLE_TYPE
        for index, size in enumerate(block_shape):
            description.constexprs[child_name(block_path, index)] = size
            description.leaves.append(child_name(block_path, index))
        description.constexprs[child_name(path, 4)] = padding
        description.leaves.append(child_name(path, 4))
        map_path = child_name(path, 5)
        if backend.has_tensor_maps(device):
            description.signature[map_path] = TENSOR_MAP_TYPE
            description.kinds.append(None)
        else:
            description.constexprs[map_path] = None
        description.leaves.append(map_path)

    def _pointer_element(self, name: str, value: Any, kind: str = _arrays.ArrayKind.TORCH) -> str:
        if getattr(value.__class__, "__kiln_tensor_wrapper__", False):
            from kiln.language.core import signature_name  # imported late: language imports the runtime
            return signature_name(value.dtype)
        try:
            dtype_name = _arrays.element_name(value, kind)
        except TypeError as error:
            raise TypeError(f"kernel {self.__name__}: argument '{name}': {error}") from None
        code = _DTYPE_CODES.get(dtype_name)
        if code is None:
            dtype = getattr(value, "dtype", dtype_name)
            raise TypeError(f"kernel {self.__name__}: argument '{name}' has unsupported element type {dtype}")
        return code
