"""``kiln.jit``: kernels as Python functions, compiled per specialization.

A :class:`JITFunction` wraps a Python function written in ``kiln.language``.
``kernel[grid](*args, num_warps=4, num_stages=3, **kwargs)`` binds the
arguments, computes the specialization key, looks the compiled kernel up in
an in-memory cache (per CUDA device, or the CPU), compiles and loads it on a
miss, and launches it: on torch's current stream for the GPU, on a thread
pool for the CPU backend. The contract is Triton's ``triton.jit``.

Everything backend-specific (targets, devices, which arrays a backend takes,
compile options, loading, the launch call) is asked of the chosen
:class:`kiln.backends.Backend`; this module only binds, keys, caches and
dispatches.

Which backend runs a launch is decided once per key (see
:mod:`kiln.runtime.launch_settings`): the ``backend=`` launch option, then
``kiln.jit(backend=...)``, then ``$KILN_BACKEND``, then the arrays (CPU arrays
run on the CPU, CUDA tensors on the GPU). The launch option and the raw
values of ``$KILN_BACKEND``, ``$KILN_CPU_CHECKED``, ``$KILN_DEBUG`` and
``$KILN_CHECKED`` are part of the key.

The key (see :mod:`kiln.runtime.jit_keys`) is computed per launch; the miss
path (see :mod:`kiln.runtime.jit_arguments`) validates and describes the
arguments.

Tuple arguments (Triton 3.x): a tuple (possibly nested) is flattened into one
kernel parameter per leaf, named by its index path (``t[0]``, ``t[1][0]``;
see :mod:`kiln.compiler.specialization`), each typed and specialized as a
plain argument would be; ``kl.constexpr`` objects, None, dtypes and strings
inside are compile-time leaves. The kernel sees the tuple rebuilt. A key
holding a tuple gets a launcher that flattens the arguments before the
backend's launch; keys without one launch exactly as before.

Host tensor descriptors (``kiln.tools.tensor_descriptor.TensorDescriptor``)
are flattened the same way: base pointer, shape and strides become
parameters, block shape and padding constexprs; their layout (last stride 1,
16-byte aligned base and strides) is part of the key and checked on a miss.

Validation (arrays on the wrong device or mixed devices, unsupported types,
integers out of range) happens only on a cache miss: a key holding a bad
argument (its device is in the key, an unsupported type gets a sentinel
piece) can never be in the cache, because the miss path raises before
inserting.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import textwrap
import threading
from typing import Any, Callable, Iterable, Optional, TypeVar, Union, overload

from kiln import _C
from kiln import backends as _registry
from kiln.backends.base import Backend, LoadedKernel
from kiln.compiler.specialization import Specialization
from kiln.errors import LaunchOptionError
from kiln.runtime import launch_settings as _settings
from kiln.runtime import _async_compile
from kiln.runtime.interface import KernelInterface, MockTensor
from kiln.runtime.tensor_wrapper import TensorWrapper, reinterpret, type_canonicalisation_dict

from kiln.runtime.jit_keys import (_SPECIALIZED, _PLAIN, _CONSTEXPR, _is_constexpr_annotation, _annotated_scalar_type,
                                   _AnnotatedTable, _is_const_annotation)
from kiln.runtime.jit_arguments import (JitFunctionInfo, _full_name, serialize_specialization_data, _DeviceCaches,
                                        _DeviceRoutes, _EMPTY, _FlatKernel, _array_leaves, _flattening_launch,
                                        _CompilePlan, ArgumentDescriber)

_native_launch = _C.launch
_native_launch.configure(*_settings.native_launch_environment(),
                         launches_skipped=_settings.launches_skipped_variable())

__all__ = ["JITFunction", "KernelInterface", "LoadedKernel", "MockTensor", "TensorWrapper", "jit", "reinterpret",
           "type_canonicalisation_dict"]

T = TypeVar("T")


def launch_compile_options(maxnreg: Optional[int] = None, enable_fp_fusion: Optional[bool] = None,
                           enable_reflect_ftz: Optional[bool] = None, arch: Optional[str] = None) -> tuple:
    """A launch's compile options as its cache key holds them (None: not
    given)."""
    return (maxnreg, enable_fp_fusion, enable_reflect_ftz, arch)


def _foreign_arch_launch(name: str, target: str, native_target: str, device: Any) -> Callable[..., None]:
    """The launch of a kernel compiled for `target`, another architecture
    than `device`'s: a clear error."""

    def launch(*_: Any) -> None:
        raise RuntimeError(f"kernel {name}: compiled for {target} (arch=), which device {device} ({native_target}) "
                           f"cannot run; warm it up only, or launch without arch")

    return launch


def _compile_jit_function(jit_fn: "JITFunction", signature: dict, constexprs: dict, attrs: Specialization,
                          target: str, num_warps: int, num_stages: int, **options: Any) -> Any:
    """Calls the compiler (a separate name so tests can replace it).

    ``options`` are the backend's :meth:`~kiln.backends.Backend.compile_options`
    (``checked=`` for the CPU, none for NVIDIA), with ``debug`` and
    ``checked`` added for every backend.
    """
    from kiln.compiler.compiler import compile_jit_function

    return compile_jit_function(jit_fn, signature, constexprs, attrs, target, num_warps, num_stages, **options)



class JITFunction(ArgumentDescriber, KernelInterface[T]):
    """A kernel: call it as ``kernel[grid](*args, num_warps=..., num_stages=..., **kwargs)``.

    Attributes used by the compiler's frontend: ``fn``, ``src``, ``__name__``,
    ``arg_names``, ``constexpr_names``, ``__globals__``,
    ``starting_line_number``, ``noinline``, ``debug``.

    ``cache`` maps a CUDA device index, or ``"cpu"``, to ``{key: LoadedKernel}``;
    ``runtime_positions`` / ``runtime_names`` are the non-constexpr parameters.
    ``backend`` is the kernel's forced backend (None: chosen per launch) and
    ``checked`` whether its launches are bounds-checked. ``repr`` (None, or
    a function of a :class:`~kiln.compiler.specialization.KernelSpecialization`)
    names each compiled kernel. ``params`` are the parameters'
    ``inspect.Parameter`` objects; ``src`` is read-only except through
    :meth:`_unsafe_update_src`.
    """

    def __init__(self, fn: T, do_not_specialize: Iterable[Union[str, int]] = (), debug: Optional[bool] = None,
                 noinline: bool = False, backend: Optional[str] = None, checked: bool = False,
                 repr: Optional[Callable[[Any], str]] = None):
        if not inspect.isfunction(fn):
            raise TypeError(f"kiln.jit expects a Python function, got {type(fn).__name__}")
        if backend is not None and not isinstance(backend, str):
            raise TypeError(f"kiln.jit: backend must be a str or None, got {type(backend).__name__}")
        if not isinstance(checked, bool):
            raise TypeError(f"kiln.jit: checked must be a bool, got {type(checked).__name__}")
        if repr is not None and not callable(repr):
            raise TypeError(f"kiln.jit: repr must be a function of the specialization, got {type(repr).__name__}")
        self.repr = repr
        self.backend = _settings.normalize(backend, f"kiln.jit({fn.__name__}): backend")
        self.checked = checked
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__globals__ = fn.__globals__
        self.starting_line_number = fn.__code__.co_firstlineno
        self.debug = debug
        self.noinline = noinline
        try:
            self._src = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError) as error:
            raise ValueError(f"kiln.jit cannot read the source of {fn.__qualname__} ({error}); "
                             f"kernels must be defined in a source file") from None
        self.cache_key = hashlib.sha256(self._src.encode()).hexdigest()
        # Whether ``fn.__code__`` is the compiled ``src``: the on-disk cache's
        # key then reads the names the kernel uses from the code.
        self._src_is_code = True

        signature = inspect.signature(fn)
        self.signature = signature
        self.params = list(signature.parameters.values())
        for param in self.params:
            if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.POSITIONAL_ONLY):
                raise TypeError(f"kernel {self.__name__}: parameter '{param.name}' is {param.kind.description}; "
                                f"kernel parameters must be plain positional-or-keyword parameters")
        self.arg_names = [param.name for param in self.params]
        self.constexpr_names = {param.name for param in self.params if _is_constexpr_annotation(param.annotation)}
        # Pointer parameters annotated kl.const: typed "*k<element>", read-only in the kernel.
        self.const_names = frozenset(param.name for param in self.params if _is_const_annotation(param.annotation))
        self._defaults = {param.name: param.default for param in self.params if param.default is not _EMPTY}
        # Scalar parameters typed by a dtype annotation (``v: kl.uint8``).
        self.annotated_types = {param.name: code for param in self.params
                                if param.name not in self.constexpr_names
                                and (code := _annotated_scalar_type(param.annotation)) is not None}

        names = []
        for entry in do_not_specialize:
            if isinstance(entry, int) and not isinstance(entry, bool):
                if not 0 <= entry < len(self.arg_names):
                    raise ValueError(f"kernel {self.__name__}: do_not_specialize index {entry} is out of range "
                                     f"(the kernel has {len(self.arg_names)} parameters)")
                names.append(self.arg_names[entry])
            elif isinstance(entry, str):
                if entry not in self.arg_names:
                    raise ValueError(f"kernel {self.__name__}: do_not_specialize names '{entry}', "
                                     f"which is not a parameter")
                names.append(entry)
            else:
                raise TypeError(f"kernel {self.__name__}: do_not_specialize entries must be parameter names or "
                                f"indices, got {type(entry).__name__}")
        self.do_not_specialize = frozenset(names)

        # One dispatch table per parameter: the hot path's only per-argument work.
        self._key_tables = tuple(
            _CONSTEXPR if name in self.constexpr_names else
            _AnnotatedTable(self.annotated_types[name], _PLAIN if name in self.do_not_specialize else _SPECIALIZED)
            if name in self.annotated_types else _PLAIN if name in self.do_not_specialize else _SPECIALIZED
            for name in self.arg_names)
        self._num_params = len(self.arg_names)
        # Parameters named like a launch option, by position (see run).
        self._option_params = {name: position for position, name in enumerate(self.arg_names)
                               if name in ("num_warps", "num_stages", "num_ctas", "maxnreg")}
        # kernel[grid]'s launchers by grid (kiln._C.launch keeps it).
        self._grid_launchers: dict[Any, Any] = {}
        # kernel[grid](*args) computes its key and finds its route in C++
        # (kiln._C.launch) for kernels whose keys it can compute exactly as
        # run does: which parameters are constexprs, their names and
        # defaults (to bind keyword arguments as _bind does); None turns it
        # off.
        self._native_signature = (
            None if self.do_not_specialize or self._option_params or self.annotated_types else
            (tuple(name in self.constexpr_names for name in self.arg_names), tuple(self.arg_names),
             tuple(self._defaults.get(name, _EMPTY) for name in self.arg_names), _EMPTY))
        # Positions and names of the parameters a compiled kernel takes (the
        # backends' loaders read them).
        self.runtime_positions = tuple(i for i, name in enumerate(self.arg_names)
                                       if name not in self.constexpr_names)
        self.runtime_names = tuple(self.arg_names[i] for i in self.runtime_positions)
        # Which parameters a launch with tuple arguments flattens (not the constexprs).
        self._flattened_params = tuple(name not in self.constexpr_names for name in self.arg_names)
        self.cache: dict[Any, dict[tuple, LoadedKernel]] = {}
        # The hot path's single lookup: key -> the LoadedKernel of a
        # single-device backend (the CPU), or, for a multi-device backend's
        # key (CUDA), its _DeviceRoutes.
        self._routes: dict[tuple, Union[LoadedKernel, _DeviceRoutes]] = {}
        # Compiled kernels by (target, options, key): a second device of the
        # same target only loads the binary again.
        self._compiled: dict[tuple, Any] = {}
        # Serializes the miss path, so that threads launching a new key at
        # once compile it once (reentrant, so that a nested miss of this
        # kernel cannot deadlock).
        self._miss_lock = threading.RLock()

    @property
    def src(self) -> str:
        """The kernel's source text, which the compiler parses."""
        return self._src

    @src.setter
    def src(self, value: str) -> None:
        raise AttributeError(f"kernel {self.__name__}: src cannot be set directly; use _unsafe_update_src()")

    def _unsafe_update_src(self, new_src: str) -> None:
        """Replaces the source the kernel compiles from (Triton's hook, which
        its tests use to patch a template kernel's text).

        Every compiled kernel of this function is dropped, so the next launch
        compiles ``new_src``. It must define the same parameters: binding and
        specialization still follow the original function's signature, and
        names are still looked up in its globals. Kernels of other jit
        functions that call this one keep what they compiled (as in Triton,
        where the caller must clear their hashes)."""
        if not isinstance(new_src, str):
            raise TypeError(f"kernel {self.__name__}: _unsafe_update_src expects the source as a str, got "
                            f"{type(new_src).__name__}")
        with self._miss_lock:
            self._src = new_src
            self._src_is_code = False
            self.cache_key = hashlib.sha256(new_src.encode()).hexdigest()
            self.cache = {}
            self._routes = {}
            self._compiled = {}

    # -- calling ---------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"kernel {self.__name__} cannot be called directly: launch it as "
                           f"{self.__name__}[grid](...), or call it from inside another kernel")

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        """``kernel[grid]``: a launcher taking the kernel's arguments (its
        calls with the kernel's arguments only, no launch options, take the
        native launch path)."""
        return _native_launch.grid_launcher(self, grid, self._native_signature, self._grid_launchers)

    def _launch_key(self, bound: tuple, backend: Optional[str], num_warps: int, num_stages: int,
                    compile_options: tuple) -> tuple:
        """The key of a launch in ``_routes``: the options, the environment
        variables that change a compile, and one piece per argument from its
        parameter's table (jit_keys.py)."""
        return (backend, _settings.environment(), num_warps, num_stages, compile_options,
                tuple([table[value.__class__](value) for table, value in zip(self._key_tables, bound)]))

    def _register_fast_route(self, native_key: tuple, bound: tuple) -> None:
        """Called by the native launch path after ``run`` launched ``bound``
        (positional arguments, default options): makes ``native_key`` (its
        own spelling of the launch's key) lead straight to the loaded
        kernel, when the route qualifies: a launch that reports nothing
        after running (not checked mode); a key that does not qualify is
        marked so (False). A key routed by the current device (no array
        chose one) gets the current device's route in a _DeviceRoutes of
        native routes."""
        found = self._native_route(bound, 4, 3, launch_compile_options())
        if found is None:
            return
        native, device = found
        if native is False or device is None:
            self._routes[native_key] = native
            return
        # The native key names no device either: {device: route}, as the
        # Python key's _DeviceRoutes.
        native_routes = self._routes.get(native_key)
        if native_routes.__class__ is not _DeviceRoutes:
            native_routes = self._routes[native_key] = _DeviceRoutes(_registry.get_backend(native[0].backend))
        native_routes[device] = native

    def _native_route(self, bound: tuple, num_warps: int, num_stages: int,
                      compile_options: tuple) -> Optional[tuple]:
        """The native path's route to the kernel ``run`` loaded for these
        arguments and options, ``((loaded, threads, direct, compiled),
        device)``, with ``device`` None unless the key is routed by the
        current device; ``(False, None)`` for a launch that must go through
        ``run`` every time (checked mode reports after running); None when
        ``run`` has no such route (an unhashable constexpr, a skipped
        launch)."""
        key = self._launch_key(bound, None, num_warps, num_stages, compile_options)
        try:
            route = self._routes.get(key)
        except TypeError:
            return None
        if route is None:
            return None
        device = None
        if route.__class__ is _DeviceRoutes:
            device = route.current_device()
            route = route.get(device)
            if route is None:
                return None
        if route.kernel.metadata.get("checked"):
            return False, None
        threads = _settings.parse_threads(_settings.threads_setting(), _settings.THREADS_ENV)
        return (route, threads, route.direct, route.kernel), device

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    def _with_option_arguments(self, args: tuple, kwargs: dict, options: dict[str, Any]) -> dict:
        """``kwargs`` with each launch option given (not None) that is also
        the name of a parameter not bound by position: Triton passes such a
        value to the kernel as well as to the compiler."""
        given = {name: options[name] for name, position in self._option_params.items()
                 if position >= len(args) and name not in kwargs and options[name] is not None}
        return {**kwargs, **given} if given else kwargs

    def _bind(self, args: tuple, kwargs: dict) -> tuple:
        """Binds arguments like a Python call, with defaults; returns them in order."""
        names = self.arg_names
        if len(args) > len(names):
            raise TypeError(f"kernel {self.__name__}() takes {len(names)} arguments but {len(args)} were given")
        values = list(args)
        missing = []
        for name in names[len(args):]:
            if name in kwargs:
                values.append(kwargs.pop(name))
            else:
                default = self._defaults.get(name, _EMPTY)
                if default is _EMPTY:
                    missing.append(name)
                values.append(default)
        for name in kwargs:  # left over: not a parameter, or given twice
            if name in names:
                raise TypeError(f"kernel {self.__name__}() got multiple values for argument '{name}'")
            raise TypeError(f"kernel {self.__name__}() got an unexpected keyword argument '{name}'")
        if missing:
            listed = ", ".join(f"'{name}'" for name in missing)
            raise TypeError(f"kernel {self.__name__}() missing required argument{'s' if len(missing) > 1 else ''}: "
                            f"{listed}")
        return tuple(values)

    def run(self, *args: Any, grid: Any, num_warps: Optional[int] = None, num_stages: Optional[int] = None,
            warmup: bool = False, backend: Optional[str] = None, num_threads: Optional[int] = None,
            maxnreg: Optional[int] = None, num_ctas: Optional[int] = None, enable_fp_fusion: Optional[bool] = None,
            enable_reflect_ftz: Optional[bool] = None, arch: Optional[str] = None, **kwargs: Any) -> Any:
        """Binds, specializes, compiles on a cache miss and launches.

        Args:
            grid: 1 to 3 ints, or a callable on the named arguments returning them.
            num_warps, num_stages: compile options (as Triton's; None: 4 and
                3). A kernel parameter of the same name receives the value too,
                as in Triton (its softmax tutorial passes ``num_stages`` so).
            warmup: compile and load only.
            backend: "cpu", "cuda" or "nvidia" (or another registered
                backend's name) forces a backend for this launch.
            num_threads: CPU backend threads (0: every core; default
                ``$KILN_CPU_THREADS``, else every core). GPU launches ignore it.
            maxnreg: the most registers per thread the kernel may use (as
                Triton's; NVIDIA only, the CPU backend ignores it). None
                leaves it to ptxas.
            num_ctas: Triton's thread-block cluster size; only 1 (the
                default) is supported, any other value is a ValueError on
                every backend.
            enable_fp_fusion: whether a multiply and an add may become one
                fma, rounded once (as Triton's option; None:
                ``knobs.language.default_fp_fusion``, on unless set). The
                CPU backend never fuses them.
            enable_reflect_ftz: whether single-precision math functions
                (libdevice's, and exp, exp2 and rsqrt's approximations) flush
                denormal inputs and results to zero (as Triton's option;
                None: on). NVIDIA only: the CPU backend keeps denormals.
            arch: the NVIDIA architecture to compile for instead of the
                device's ("sm80", "sm90", or Kiln's "sm_80", "sm_90a"; as
                Triton's option, and ``knobs.runtime.override_arch`` where
                not given). A kernel compiled for another architecture than
                the device's can be warmed up (compiled, not loaded), not
                launched.

        Returns the compiled kernel (the compiler's CompiledKernel), or None
        where launches are skipped (``launch_settings.skipping_launches``).
        """
        if _settings.launches_skipped():
            return None
        if self._option_params:
            kwargs = self._with_option_arguments(args, kwargs, {"num_warps": num_warps, "num_stages": num_stages,
                                                                "num_ctas": num_ctas, "maxnreg": maxnreg})
        if num_ctas is not None:
            _settings.check_num_ctas(num_ctas, f"kernel {self.__name__}")
        if num_warps is None:
            num_warps = 4
        if num_stages is None:
            num_stages = 3
        bound = args if not kwargs and len(args) == self._num_params else self._bind(args, kwargs)
        compile_options = launch_compile_options(maxnreg, enable_fp_fusion, enable_reflect_ftz, arch)
        key = self._launch_key(bound, backend, num_warps, num_stages, compile_options)
        # A new key or an unhashable constexpr take the miss path, which
        # validates and explains.
        try:
            route = self._routes[key]
        except (KeyError, TypeError):
            route = None
        if route.__class__ is _DeviceRoutes:
            loaded = route.get(route.current_device())
            if loaded is None:  # this key on another device
                loaded = self._miss(bound, key, backend, num_warps, num_stages, compile_options, warmup)
        elif route is None:
            loaded = self._miss(bound, key, backend, num_warps, num_stages, compile_options, warmup)
        else:
            loaded = route
        if loaded is None:
            return None  # knobs.runtime.jit_cache_hook took over (as in Triton)
        if grid.__class__ is tuple and len(grid) == 3:
            grid_x, grid_y, grid_z = grid
        else:
            grid_x, grid_y, grid_z = self._grid3(grid, bound)
        if num_threads is None:
            threads = _settings.parse_threads(_settings.threads_setting(), _settings.THREADS_ENV)
        elif num_threads.__class__ is int and num_threads >= 0:
            threads = num_threads
        else:
            threads = _settings.parse_threads(num_threads, f"kernel {self.__name__}: num_threads")  # raises
        if warmup:
            # A kernel compiling in an AsyncCompileMode is its FutureKernel.
            return loaded if loaded.__class__ is _async_compile.FutureKernel else loaded.kernel
        try:
            loaded.launch(grid_x, grid_y, grid_z, bound, threads)
        except (TypeError, ValueError) as error:
            # The launchers check the grid in C++, where the kernel has no name.
            if str(error).startswith("grid "):
                raise type(error)(f"kernel {self.__name__}: {error}") from None
            raise
        return loaded.kernel

    def warmup(self, *args: Any, grid: Any, num_warps: Optional[int] = None, num_stages: Optional[int] = None,
               backend: Optional[str] = None, maxnreg: Optional[int] = None, num_ctas: Optional[int] = None,
               enable_fp_fusion: Optional[bool] = None, enable_reflect_ftz: Optional[bool] = None,
               arch: Optional[str] = None, **kwargs: Any) -> Any:
        """Compiles and loads the kernel for these arguments without launching
        it (compiled for `arch`, when given, and then not loaded)."""
        return self.run(*args, grid=grid, num_warps=num_warps, num_stages=num_stages, warmup=True, backend=backend,
                        maxnreg=maxnreg, num_ctas=num_ctas, enable_fp_fusion=enable_fp_fusion,
                        enable_reflect_ftz=enable_reflect_ftz, arch=arch, **kwargs)

    def _grid3(self, grid: Any, bound: tuple) -> tuple:
        """Normalizes a grid (1-3 ints, or a callable on the named arguments)."""
        if callable(grid):
            grid = grid(dict(zip(self.arg_names, bound)))
        if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
            raise TypeError(f"kernel {self.__name__}: the grid must be a tuple of 1 to 3 ints, or a callable "
                            f"returning one; got {grid!r}")
        return (grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1)

    @staticmethod
    def _check_options(name: str, num_warps: Any, num_stages: Any) -> None:
        if (not isinstance(num_warps, int) or isinstance(num_warps, bool) or num_warps < 1 or num_warps > 32
                or num_warps & (num_warps - 1)):
            raise LaunchOptionError(f"kernel {name}: num_warps must be a power of 2 between 1 and 32, got "
                                    f"{num_warps!r}")
        if not isinstance(num_stages, int) or isinstance(num_stages, bool) or num_stages < 1:
            raise LaunchOptionError(f"kernel {name}: num_stages must be a positive int, got {num_stages!r}")

    def _argument_leaves(self, bound: tuple) -> tuple[list[str], list[Any]]:
        """The runtime arguments' leaves and their paths."""
        names: list[str] = []
        values: list[Any] = []
        for position in self.runtime_positions:
            _array_leaves(self.arg_names[position], bound[position], names, values)
        return names, values

    def _choose_backend(self, names: list[str], values: list[Any], backend_option: Any,
                        env_backend: Any) -> Backend:
        """The backend of a launch: the options in precedence order, else the arrays."""
        if backend_option is not None and not isinstance(backend_option, str):
            raise TypeError(f"kernel {self.__name__}: backend must be a str, got {type(backend_option).__name__}")
        option = _settings.normalize(backend_option, f"kernel {self.__name__}: backend")
        from_env = _settings.normalize(env_backend, _settings.BACKEND_ENV)
        forced = option or self.backend or from_env
        return _registry.get_backend(_settings.choose(self.__name__, names, values, forced))

    @staticmethod
    def _compile_key(signature: dict, constexprs: dict, attrs: Specialization, target: str, num_warps: int,
                     num_stages: int, options: dict) -> tuple:
        return (target, tuple(sorted(options.items())), num_warps, num_stages, tuple(signature.items()),
                tuple((name, type(value), value) for name, value in constexprs.items()), attrs)

    def _compile(self, signature: dict, constexprs: dict, attrs: Specialization, target: str, num_warps: int,
                 num_stages: int, options: dict) -> Any:
        """Compiles, unless another device of the same target already did."""
        compile_key = self._compile_key(signature, constexprs, attrs, target, num_warps, num_stages, options)
        compiled = self._compiled.get(compile_key)
        if compiled is None:
            compiled = _compile_jit_function(self, signature, constexprs, attrs, target, num_warps, num_stages,
                                             **options)
            self._compiled[compile_key] = compiled
        return compiled

    def _miss(self, bound: tuple, key: tuple, backend_option: Any, num_warps: int, num_stages: int,
              compile_options: tuple, warmup: bool = False,
              allow_async: bool = True) -> Union[LoadedKernel, _async_compile.FutureKernel, None]:
        """The kernel for a key the hot path did not find, loaded by the
        first thread to get here; the others wait for it and find it.

        In an AsyncCompileMode the compilation goes to its executor: a
        warmup gets the FutureKernel, a launch waits for it (the JIT hooks,
        when set, run with a compilation in the calling thread instead)."""
        mode = _async_compile.active_mode.get() if allow_async else None
        if mode is not None and not self._jit_hooks_set():
            future = self._compile_async(mode, bound, key, backend_option, num_warps, num_stages, compile_options,
                                         warmup)
            if warmup:
                return future
            future.result()
        with self._miss_lock:
            try:
                route = self._routes.get(key)
            except TypeError:  # an unhashable constexpr: the miss path explains
                route = None
            if route.__class__ is _DeviceRoutes:
                route = route.get(route.current_device())
            if route is not None:
                return route
            return self._load(bound, key, backend_option, num_warps, num_stages, compile_options, warmup)

    def _load(self, bound: tuple, key: tuple, backend_option: Any, num_warps: int, num_stages: int,
              compile_options: tuple, warmup: bool = False) -> Optional[LoadedKernel]:
        """Chooses the backend, validates, compiles (unless done before), loads and caches.

        None when ``knobs.runtime.jit_cache_hook`` returned a true value: as
        in Triton, the hook then takes over and nothing is compiled."""
        plan = self._plan(bound, key, backend_option, num_warps, num_stages, compile_options)
        if plan.backend.capturing():
            raise RuntimeError(f"kernel {self.__name__}: these arguments need a compile (or a load on this "
                               f"device), which cannot happen while a CUDA graph is being captured; launch the "
                               f"kernel once with such arguments before the capture (a warm-up run)")
        backend, device, described, options, attrs, target = (plan.backend, plan.device, plan.described,
                                                              plan.options, plan.attrs, plan.target)
        signature, constexprs = described.signature, described.constexprs
        from kiln import knobs  # imported late: knobs imports the autotuner, which imports this module
        cache_hook, post_compile_hook = knobs.runtime.jit_cache_hook, knobs.runtime.jit_post_compile_hook
        if cache_hook is not None or post_compile_hook is not None:
            hook_arguments = self._hook_arguments(key, signature, constexprs, attrs, target, device, num_warps,
                                                  num_stages, options, warmup)
            if cache_hook is not None and cache_hook(**hook_arguments):
                return None
        compiled = self._compile(signature, constexprs, attrs, target, num_warps, num_stages, options)
        if post_compile_hook is not None:
            post_compile_hook(**hook_arguments)
        written = [path for path in described.read_only if path in compiled.metadata["written_args"]]
        if written:
            raise ValueError(f"kernel {self.__name__}: argument '{written[0]}' is a read-only array, but the kernel "
                             f"writes through it (a store or an atomic); pass a writable array")
        if target != plan.native_target:
            # Compiled for another architecture (arch=): a warm-up's result,
            # which this device cannot load, let alone launch.
            loaded = LoadedKernel(compiled, _foreign_arch_launch(self.__name__, target, plan.native_target, device),
                                  backend.name, device, arg_codes="", num_warps=num_warps)
        elif not described.aggregate:
            loaded = backend.load(self, compiled, signature, described.kinds, device, num_warps, options)
        else:
            # The backend loads the kernel for its flattened parameters, and
            # every launch of this key flattens the bound arguments first.
            view = _FlatKernel(self, described.leaves, signature)
            loaded = backend.load(view, compiled, signature, described.kinds, device, num_warps, options)
            loaded.launch = _flattening_launch(loaded.launch, self._flatten_arguments)
            loaded.direct = None  # the flattening runs in Python
        # compiled[grid](...) launches again through this function.
        maxnreg, enable_fp_fusion, enable_reflect_ftz, arch = compile_options
        compiled.launched_by = (self, {"num_warps": num_warps, "num_stages": num_stages, "maxnreg": maxnreg,
                                       "enable_fp_fusion": enable_fp_fusion,
                                       "enable_reflect_ftz": enable_reflect_ftz, "arch": arch,
                                       "backend": backend_option})
        # First, so that a bad setting of the backend's bound caches nothing.
        backend.keep(loaded, functools.partial(self._forget, key, device, loaded))
        self.cache.setdefault(device, {})[key] = loaded
        if backend.multi_device and not plan.device_from_arrays:
            # The key names no device: each launch takes the current one's.
            routes = self._routes.get(key)
            if routes is None:
                routes = self._routes[key] = _DeviceRoutes(backend)
            routes[device] = loaded
        else:
            self._routes[key] = loaded
        return loaded

    def _plan(self, bound: tuple, key: tuple, backend_option: Any, num_warps: int, num_stages: int,
              compile_options: tuple) -> "_CompilePlan":
        """Chooses the backend and validates: what compiling this miss takes.
        ``compile_options`` is the launch's (maxnreg, enable_fp_fusion,
        enable_reflect_ftz, arch)."""
        maxnreg, enable_fp_fusion, enable_reflect_ftz, arch = compile_options
        self._check_options(self.__name__, num_warps, num_stages)
        _settings.check_maxnreg(maxnreg, f"kernel {self.__name__}")
        environment = key[1]
        names, values = self._argument_leaves(bound)
        backend = self._choose_backend(names, values, backend_option, environment[0])
        options = backend.compile_options(self, environment)
        # Debug mode (device assertions) is every backend's option.
        if self.debug or (len(environment) > 2 and _settings.parse_flag(environment[2], _settings.DEBUG_ENV)):
            options = {**options, "debug": True}
        # So is checked mode (KILN_CPU_CHECKED stays the CPU backend's alias).
        if self.checked or _settings.parse_all_checked(environment):
            options = {**options, "checked": True}
        if maxnreg is not None:
            options = {**options, "maxnreg": maxnreg}
        if enable_fp_fusion is not None and not isinstance(enable_fp_fusion, bool):
            raise TypeError(f"kernel {self.__name__}: enable_fp_fusion must be True, False or None, got "
                            f"{enable_fp_fusion!r}")
        if not (_settings.default_fp_fusion(environment) if enable_fp_fusion is None else enable_fp_fusion):
            # Only when off, so that the default's cache entries keep their keys.
            options = {**options, "enable_fp_fusion": False}
        if enable_reflect_ftz is not None and not isinstance(enable_reflect_ftz, bool):
            raise TypeError(f"kernel {self.__name__}: enable_reflect_ftz must be True, False or None, got "
                            f"{enable_reflect_ftz!r}")
        if enable_reflect_ftz is False:
            options = {**options, "enable_reflect_ftz": False}
        device, device_from_arrays = backend.launch_device(self.__name__, names, values)
        described = self._describe_arguments(bound, backend, device)
        attrs = Specialization(divisible_by_16=frozenset(described.divisible_by_16),
                               equal_to_1=frozenset(described.equal_to_1),
                               named_tuples=tuple(described.named_tuples))
        if arch is None:
            arch = _settings.override_arch(environment)
        native_target = backend.target_for(device)
        target = native_target if arch is None else backend.target_for_arch(arch, self.__name__)
        return _CompilePlan(backend, device, described, options, attrs, target, native_target, device_from_arrays)

    @staticmethod
    def _jit_hooks_set() -> bool:
        from kiln import knobs
        return knobs.runtime.jit_cache_hook is not None or knobs.runtime.jit_post_compile_hook is not None

    def _compile_async(self, mode: _async_compile.AsyncCompileMode, bound: tuple, key: tuple, backend_option: Any,
                       num_warps: int, num_stages: int, compile_options: tuple,
                       warmup: bool) -> _async_compile.FutureKernel:
        """Submits this miss's compilation to ``mode``'s executor; the
        future's result loads and caches the kernel in the thread that asks."""
        plan = self._plan(bound, key, backend_option, num_warps, num_stages, compile_options)
        compile_args = (plan.described.signature, plan.described.constexprs, plan.attrs, plan.target, num_warps,
                        num_stages, plan.options)

        def finalize(compiled: Any) -> Any:
            # The compiled kernel is in self._compiled now: this loads it.
            return self._miss(bound, key, backend_option, num_warps, num_stages, compile_options, warmup,
                              allow_async=False).kernel

        # One compilation per specialization while the mode lasts.
        return mode.submit((id(self), self._compile_key(*compile_args)), lambda: self._compile(*compile_args),
                           finalize)

    def _hook_arguments(self, key: tuple, signature: dict, constexprs: dict, attrs: Specialization, target: str,
                        device: Any, num_warps: int, num_stages: int, options: dict, warmup: bool) -> dict:
        """The keyword arguments of Triton's JIT hooks (``jit_cache_hook``,
        ``jit_post_compile_hook``) for one compile."""
        arguments = ", ".join(f"{path}: {ty}" for path, ty in signature.items())
        enable_fp_fusion = options.get("enable_fp_fusion", True)
        compile_arguments = {
            "key": key,
            "signature": dict(signature),
            "device": device,
            "constants": dict(constexprs),
            "num_warps": num_warps,
            "num_ctas": 1,
            "num_stages": num_stages,
            "enable_fp_fusion": enable_fp_fusion,
            "launch_cooperative_grid": False,
            "extern_libs": None,
            "configs": [attrs],
            "specialization_data": serialize_specialization_data(self, signature, constexprs, attrs, target,
                                                                 num_warps, num_stages, options),
            "is_warmup": warmup,
        }
        return {
            "key": key,
            "repr": (f"{self.__qualname__}[num_warps={num_warps}, num_ctas=1, num_stages={num_stages}, "
                     f"enable_fp_fusion={enable_fp_fusion}, launch_cooperative_grid=False]({arguments})"),
            "fn": JitFunctionInfo(self.__module__, self.__qualname__, self),
            "compile": compile_arguments,
            "is_manual_warmup": warmup,
            "already_compiled": False,
        }

    def preload(self, specialization_data: str) -> Any:
        """Compiles the specialization that a JIT hook's
        ``compile["specialization_data"]`` describes (as Triton's
        ``preload``), so that a later launch with such arguments only loads
        it. Returns the compiled kernel.

        Raises:
            ValueError: for data of another kernel, or that is not such data.
        """
        from kiln.runtime import disk_cache as _disk_cache
        try:
            data = json.loads(specialization_data)
            name = data["name"]
            signature = dict(data["signature"])
            constexprs = {path: _disk_cache.decode_constant(value) for path, value in data["constexprs"]}
            attrs = Specialization(divisible_by_16=frozenset(data["divisible_by_16"]),
                                   equal_to_1=frozenset(data["equal_to_1"]))
            options = {option: _disk_cache.decode_constant(value) for option, value in data["options"]}
            target, num_warps, num_stages = data["target"], data["num_warps"], data["num_stages"]
        except (TypeError, ValueError, KeyError) as error:
            raise ValueError(f"kernel {self.__name__}: not specialization data from a JIT hook ({error})") from None
        if name != _full_name(self):
            raise ValueError(f"kernel {self.__name__}: cannot preload the specialization data of {name}")
        return self._compile(signature, constexprs, attrs, target, num_warps, num_stages, options)

    @property
    def device_caches(self) -> "_DeviceCaches":
        """Triton's per-device caches: ``device_caches[device][0]`` maps the
        launch keys of the kernels loaded on ``device`` to their compiled
        kernels; its ``clear()`` drops them (and this function's compiled
        binaries), so that the next launch compiles again."""
        return _DeviceCaches(self)

    def _forget(self, key: tuple, device: Any, loaded: LoadedKernel) -> None:
        """Drops ``loaded`` from the caches (a backend evicting it); entries
        that another load replaced meanwhile stay. Each step is one atomic
        dict operation, so this takes no lock: the backend may call it while
        another kernel's miss path holds that kernel's lock."""
        per_device = self.cache.get(device)
        if per_device is not None and per_device.get(key) is loaded:
            del per_device[key]
        route = self._routes.get(key)
        if route is loaded:
            self._routes.pop(key, None)
        elif route.__class__ is _DeviceRoutes and route.get(device) is loaded:
            route.pop(device, None)
        # The native path's keys for it (list(): one step, safe while other
        # threads add routes).
        for native_key, native in list(self._routes.items()):
            if native.__class__ is tuple and native[0] is loaded:
                self._routes.pop(native_key, None)
            elif native.__class__ is _DeviceRoutes:
                native_route = native.get(device)
                if native_route.__class__ is tuple and native_route[0] is loaded:
                    native.pop(device, None)
        for compile_key in [k for k, compiled in self._compiled.items() if compiled is loaded.kernel]:
            self._compiled.pop(compile_key, None)


@overload
def jit(fn: T) -> JITFunction[T]:
    ...


@overload
def jit(*, do_not_specialize: Iterable[Union[str, int]] = (), debug: Optional[bool] = None,
        noinline: bool = False, backend: Optional[str] = None, checked: bool = False,
        repr: Optional[Callable[[Any], str]] = None) -> Callable[[T], JITFunction[T]]:
    ...


def jit(fn: Optional[T] = None, *, do_not_specialize: Iterable[Union[str, int]] = (), debug: Optional[bool] = None,
        noinline: bool = False, backend: Optional[str] = None, checked: bool = False,
        repr: Optional[Callable[[Any], str]] = None) -> Union[JITFunction[T], Callable[[T], JITFunction[T]]]:
    """Decorates a kernel written in ``kiln.language``, like ``triton.jit``.

    Usable as ``@kiln.jit`` or ``@kiln.jit(do_not_specialize=["n"], ...)``.

    Args:
        fn: the kernel function.
        do_not_specialize: parameter names or indices whose values must not
            specialize the kernel (no equal-to-1 / divisible-by-16 variants).
        debug: compile with device-side assertions enabled.
        noinline: when called from another kernel, keep it a separate function.
        backend: "cpu", "cuda" or "nvidia" (or another registered backend's
            name) runs every launch on that backend (a launch's ``backend=``
            option still wins); None lets the arrays decide (see
            :mod:`kiln.runtime.launch_settings`).
        checked: bounds-check every load, store and atomic of every launch
            (CPU and GPU) and raise :class:`kiln.errors.OutOfBoundsError`
            naming the faulting source line, parameter and index (as
            ``KILN_CHECKED=1``; see docs/design/checked_mode.md).
        repr: names each compiled kernel, as Triton's option: called with a
            :class:`~kiln.compiler.specialization.KernelSpecialization`
            (``.signature``, ``.constants``), it returns the kernel's symbol
            (``CompiledKernel.name``). None: the function's name.
    """

    def decorator(fn: T) -> JITFunction[T]:
        return JITFunction(fn, do_not_specialize=do_not_specialize, debug=debug, noinline=noinline, backend=backend,
                           checked=checked, repr=repr)

    if fn is not None:
        return decorator(fn)
    return decorator
