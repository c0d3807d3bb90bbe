"""What the decorators above ``@kiln.jit`` (``kiln.autotune``,
``kiln.heuristics``) share: their common base, which launches like the
kernel itself (``kernel[grid](...)``, on the native launch path where it
can), and the helpers both use to read the kernel under them and a launch's
arguments by name."""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Mapping, Optional

from kiln import _C
from kiln.runtime.jit import JITFunction, KernelInterface


def _jit_function(fn: Any, decorator: str) -> JITFunction:
    """The ``@kiln.jit`` kernel under ``fn`` (through autotuners and heuristics)."""
    inner = fn
    while not isinstance(inner, JITFunction):
        if not isinstance(inner, _KernelWrapper):
            raise TypeError(f"{decorator} must decorate a @kiln.jit kernel (or a @kiln.autotune or "
                            f"@kiln.heuristics above one), got {type(fn).__name__}")
        inner = inner.fn
    return inner


class _Unbound:
    """The native launch path's stand-in for a parameter a wrapper sets, not
    the caller."""

    def __init__(self, description: str) -> None:
        self.description = description

    def __repr__(self) -> str:
        return f"<{self.description}>"




def _named_arguments(kernel: JITFunction, args: tuple, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The kernel's parameters by name: the positional arguments, the keyword
    arguments that are parameters, and the defaults of the others that have one."""
    named = dict(zip(kernel.arg_names, args))
    for param in kernel.params:
        if param.name in named:
            continue
        if param.name in kwargs:
            named[param.name] = kwargs[param.name]
        elif param.default is not param.empty:
            named[param.name] = param.default
    return named


def _check_names(kernel: JITFunction, names: Iterable[str], what: str) -> list[str]:
    """``names`` as a list, each checked to be a parameter of ``kernel``."""
    if isinstance(names, str):
        raise TypeError(f"{what} must be a list of parameter names, got the string {names!r}")
    names = list(names)
    for name in names:
        if name not in kernel.arg_names:
            raise ValueError(f"{what} names '{name}', which is not a parameter of kernel {kernel.__name__} "
                             f"(parameters: {', '.join(kernel.arg_names)})")
    return names


class _KernelWrapper(KernelInterface):
    """What a decorator above ``@kiln.jit`` offers like the kernel itself:
    its source and ``kernel[grid](...)`` launches through ``run``.
    Subclasses set ``kernel``, ``__name__`` and define ``run``."""

    kernel: Any
    __name__: str
    #: What kiln._C.launch needs to launch this wrapper's calls itself (see
    #: the subclasses), or None: every call goes to ``run``.
    _native_signature: Optional[tuple] = None

    @property
    def src(self) -> str:
        """The kernel's source."""
        return self.kernel.src

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"kernel {self.__name__} cannot be called directly: launch it as "
                           f"{self.__name__}[grid](...)")

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        """``kernel[grid]``: a launcher taking the kernel's arguments (with a
        native signature, its calls with the kernel's arguments only, no
        launch options, take the native launch path once ``run`` has
        registered their key)."""
        if self._native_signature is None:
            return functools.partial(self.run, grid=grid)
        return _C.launch.grid_launcher(self, grid, self._native_signature, self._grid_launchers)

    @property
    def _routes(self) -> dict:
        """Where the native path finds this wrapper's routes: the kernel's
        own dict (so that a kernel the backend evicts takes its routes
        along, whoever registered them)."""
        return self.kernel._routes

    def _set_native_signature(self, kinds: Callable[[str, int], int], unbound: _Unbound,
                              heuristics: Optional[tuple] = None) -> None:
        """Enables the native path when this wrapper sits directly over a jit
        function whose launches it covers: ``kinds(name, kernel_kind)`` is
        each parameter's kind (see kiln._C.launch), parameters of kind 2
        or 4 take ``unbound`` as their default, and the wrapper itself
        prefixes its keys."""
        self._grid_launchers: dict[Any, Any] = {}
        signature = self.kernel._native_signature
        if signature is None or self.fn is not self.kernel:
            return
        names = self.kernel.arg_names
        kinds_by_name = tuple(kinds(name, kind) for name, kind in zip(names, signature[0]))
        defaults = tuple(unbound if kind in (2, 4) else default
                         for kind, default in zip(kinds_by_name, signature[2]))
        self._native_signature = (kinds_by_name, signature[1], defaults, signature[3], self, heuristics)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError
