"""``kiln.heuristics``, with Triton 3.x's contract: arguments computed from
the others before each launch."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from kiln.runtime.jit import launch_compile_options
from kiln.runtime.kernel_wrapper import _KernelWrapper, _Unbound, _check_names, _jit_function, _named_arguments

__all__ = ["Heuristics", "heuristics"]

_COMPUTED = _Unbound("computed by a heuristic")


class Heuristics(_KernelWrapper):
    """A kernel whose arguments in ``values`` are computed from the others at
    each launch. Built by :func:`heuristics`.

    Each function in ``values`` receives the launch's arguments by name (the
    parameters, defaults included, and the keyword options such as
    ``grid``), with the values computed before it in ``values``' order;
    its result replaces any value the caller passed by keyword, as in Triton.
    """

    def __init__(self, fn: Any, arg_names: Sequence[str], values: Mapping[str, Callable[[dict], Any]]) -> None:
        self.fn = fn
        self.kernel = _jit_function(fn, "kiln.heuristics")
        self.arg_names = list(arg_names)
        self.__name__ = self.kernel.__name__
        self.__qualname__ = self.kernel.__qualname__
        self.__module__ = self.kernel.__module__
        self.__doc__ = self.kernel.__doc__
        if not isinstance(values, Mapping):
            raise TypeError(f"kiln.heuristics({self.__name__}): values must be a dict of name -> function, got "
                            f"{type(values).__name__}")
        _check_names(self.kernel, values, f"kiln.heuristics({self.__name__}): values")
        for name, function in values.items():
            if not callable(function):
                raise TypeError(f"kiln.heuristics({self.__name__}): the value for '{name}' must be a function of "
                                f"the arguments, got {type(function).__name__}")
        self.values = dict(values)
        # The native launch path: the computed parameters are kind 4, keyed
        # by what their functions return (the path calls them on every
        # launch, in values' order).
        functions = tuple((self.kernel.arg_names.index(name), function) for name, function in self.values.items())
        self._set_native_signature(lambda name, kind: 4 if name in self.values else kind, _COMPUTED, functions)

    def _register_fast_route(self, native_key: tuple, bound: tuple) -> None:
        """Called by the native launch path after ``run`` launched ``bound``
        (the computed values included, which are part of ``native_key``):
        makes the key lead to the kernel ``run`` loaded. Keys routed by the
        current device, and checked mode, go to ``run``."""
        found = self.kernel._native_route(bound, 4, 3, launch_compile_options())
        if found is None:
            return
        native, device = found
        self._routes[native_key] = native if device is None else False

    def __repr__(self) -> str:
        return f"Heuristics({self.__module__}:{self.__qualname__}, {', '.join(self.values)})"

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Computes the heuristic arguments, then launches (or tunes) below."""
        named = _named_arguments(self.kernel, args, kwargs)
        for name, function in self.values.items():
            kwargs[name] = function({**named, **kwargs})
        return self.fn.run(*args, **kwargs)

    def warmup(self, *args: Any, **kwargs: Any) -> Any:
        """Compiles for these arguments without launching."""
        return self.run(*args, **{**kwargs, "warmup": True})


def heuristics(values: Mapping[str, Callable[[dict], Any]]) -> Callable[[Any], Heuristics]:
    """Computes constexpr arguments from the others at each launch, as
    ``triton.heuristics``::

        @kiln.heuristics(values={"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
        @kiln.jit
        def kernel(x_ptr, n, BLOCK: kl.constexpr, EVEN: kl.constexpr): ...

    Args:
        values: parameter name -> function of the arguments dict.
    """

    def decorator(fn: Any) -> Heuristics:
        kernel = _jit_function(fn, "kiln.heuristics")
        return Heuristics(fn, kernel.arg_names, values)

    return decorator
