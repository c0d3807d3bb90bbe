"""The registry of Kiln's backends: NVIDIA ("cuda", also "nvidia") and the CPU ("cpu").

The compiler asks :func:`backend_for_target` which backend owns a target
(``"cpu"``, ``"sm_90a"``, ...); the JIT asks :func:`get_backend` for the
backend a launch chose by name. Adding a backend is writing one module with a
:class:`~kiln.backends.base.Backend` subclass and registering an instance
(docs/design/backends.md).

The built-in backends are imported on first use, not when ``kiln.backends``
is: their modules import the compiler and the runtime, which import this one.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

from kiln.backends.base import Backend, LoadedKernel

__all__ = [
    "Backend",
    "LoadedKernel",
    "available_backends",
    "backend_for_target",
    "backend_names",
    "find_backend",
    "get_backend",
    "register_backend",
    "unregister_backend",
]

# Registered backends in registration order, and each one by every name it answers to.
_BACKENDS: list[Backend] = []
_BY_NAME: dict[str, Backend] = {}
_builtins_registered = False
# Guards the tables: the first launches may come from several threads at
# once, and none may see the registry before the built-ins are in it.
# Reentrant, because importing the built-ins' modules may ask for a backend.
_lock = threading.RLock()
_registering_builtins = False


def _register_builtins() -> None:
    global _builtins_registered, _registering_builtins
    if _builtins_registered:
        return
    with _lock:
        # Only the thread holding the lock can find the second flag set: a
        # call made while it imports the built-ins.
        if _builtins_registered or _registering_builtins:
            return
        _registering_builtins = True
        try:
            from kiln.backends.cpu import CpuBackend
            from kiln.backends.nvidia import NvidiaBackend

            for backend in (NvidiaBackend(), CpuBackend()):
                _add_backend(backend)
            _builtins_registered = True
        finally:
            _registering_builtins = False


def register_backend(backend: Backend) -> None:
    """Makes ``backend`` reachable by its name, its aliases and its targets.

    Raises:
        ValueError: when one of its names is taken by another backend.
    """
    _register_builtins()
    with _lock:
        _add_backend(backend)


def _add_backend(backend: Backend) -> None:
    names = (backend.name, *backend.aliases)
    for name in names:
        other = _BY_NAME.get(name)
        if other is not None and other is not backend:
            raise ValueError(f"backend name {name!r} is already registered by {other!r}")
    for name in names:
        _BY_NAME[name] = backend
    if backend not in _BACKENDS:
        _BACKENDS.append(backend)


def unregister_backend(name: str) -> None:
    """Removes the backend called ``name`` (and its aliases); nothing if none is."""
    _register_builtins()
    with _lock:
        backend = _BY_NAME.get(name)
        if backend is None:
            return
        _BACKENDS.remove(backend)
        for key in [key for key, value in _BY_NAME.items() if value is backend]:
            del _BY_NAME[key]


def find_backend(name: str) -> Optional[Backend]:
    """The backend called ``name`` (exactly, or one of its aliases), or None."""
    _register_builtins()
    return _BY_NAME.get(name)


def backend_names() -> str:
    """Every accepted backend name, sorted and quoted for error messages:
    ``'cpu', 'cuda' or 'nvidia'``."""
    _register_builtins()
    return _quoted_list([repr(name) for name in sorted(_BY_NAME)])


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (case and surrounding blanks ignored).

    Raises:
        ValueError: for a name no backend answers to.
    """
    backend = find_backend(name.strip().lower()) if isinstance(name, str) else None
    if backend is None:
        raise ValueError(f"unknown backend {name!r}; expected {backend_names()}")
    return backend


def available_backends() -> list[str]:
    """The names of the registered backends that can launch kernels here."""
    _register_builtins()
    return [backend.name for backend in _BACKENDS if backend.is_available()]


def backend_for_target(target: Any) -> Backend:
    """The backend that compiles for ``target``.

    Raises:
        ValueError: for a target no backend accepts, listing what they accept.
    """
    _register_builtins()
    for backend in _BACKENDS:
        if backend.accepts_target(target):
            return backend
    helps = [backend.target_help for backend in sorted(_BACKENDS, key=lambda backend: backend.name)]
    raise ValueError(f"unknown target {target!r}: expected {_quoted_list(helps)}")


def _quoted_list(items: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"
