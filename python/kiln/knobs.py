"""Kiln's settings under Triton's ``triton.knobs`` names.

Kiln is configured through environment variables that it reads when it uses
them (``KILN_CACHE_DIR`` when a kernel is cached, ``KILN_DEBUG`` on every
launch, ...). A knob here is a typed view of one such variable: reading it
parses the variable (or gives the default), setting it writes the variable
(``None`` removes it), so the setting reaches Kiln at once, in this process
and in the processes it starts. ``knobs.cache.dir = path`` therefore does
what ``KILN_CACHE_DIR=path`` does.

Knobs of Triton's that have no Kiln counterpart (the interpreter, its
launch hooks, ...) are listed too, so that programs that
read them keep working: they read as Triton's default, setting one to that
default is accepted, and setting any other value raises
:class:`KnobNotSupported` naming the knob. Nothing is silently ignored.

A knob set (``knobs.cache``, ``knobs.runtime``, ...) offers Triton's
``scope()`` (restores every knob of the set on exit), ``copy()`` and
``reset()`` (clears every knob back to its default). See docs/compat.md.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, ClassVar, Generic, Iterator, Optional, TypeVar

from kiln.errors import KilnError
from kiln.runtime.autotuner import CACHE_ENV as AUTOTUNING_CACHE_ENV
from kiln.runtime.autotuner import PRINT_ENV as AUTOTUNING_PRINT_ENV
from kiln.runtime.launch_settings import DEBUG_ENV, FP_FUSION_ENV, parse_flag
from kiln.runtime.disk_cache import CACHE_DIR_ENV, DISABLE_ENV, default_cache_dir

__all__ = ["KnobNotSupported", "Knob", "base_knobs", "cache_knobs", "runtime_knobs", "language_knobs",
           "autotuning_knobs", "cache", "runtime", "language", "autotuning", "propagate_env"]

T = TypeVar("T")

#: Kept for Triton programs that set it. In Triton it decides whether
#: setting a knob also sets its environment variable; Kiln's settings *are*
#: environment variables, so a supported knob always writes its variable.
propagate_env: bool = False


class KnobNotSupported(KilnError):
    """A Triton knob was set to a value that Kiln cannot honour (Kiln has no
    counterpart of that setting)."""


class Knob(Generic[T]):
    """One setting of a knob set, as a descriptor.

    Attributes:
        key: the environment variable that holds the setting (Kiln's
            variable for a supported knob, Triton's for the others).
        default: the value when the variable is unset (a callable is called
            for it).
        supported: whether Kiln honours the setting; an unsupported knob
            reads as ``default`` and refuses other values.
        kind: ``bool``, ``str``, ``int`` or ``object`` (a Python value such
            as a hook, which has no environment spelling).
        why: for an unsupported knob, what Kiln does instead.
    """

    def __init__(self, key: str, default: Any, kind: type = str, supported: bool = True, why: str = "") -> None:
        self.key = key
        self.default = default
        self.kind = kind
        self.supported = supported
        self.why = why
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default

    def __get__(self, obj: Optional["base_knobs"], objtype: Optional[type] = None) -> Any:
        if obj is None:
            return self
        if not self.supported or self.kind is object:
            return obj._values.get(self.name, self.default_value())
        text = os.environ.get(self.key)
        if not text:  # unset or empty: Kiln reads both as unset
            return self.default_value()
        if self.kind is bool:
            return parse_flag(text, self.key)
        if self.kind is int:
            return int(text)
        return text

    def __set__(self, obj: "base_knobs", value: Any) -> None:
        if not self.supported:
            if value is None or value == self.default_value():
                obj._values.pop(self.name, None)
                return
            raise KnobNotSupported(
                f"knobs.{obj._name}.{self.name} cannot be set to {value!r}: {self.why or 'Kiln has no such setting'} "
                f"(see docs/compat.md)")
        if self.kind is object:
            obj._values[self.name] = value
            return
        if value is None:
            os.environ.pop(self.key, None)
        elif self.kind is bool:
            os.environ[self.key] = "1" if value else "0"
        else:
            os.environ[self.key] = str(value)

    def _snapshot(self, obj: "base_knobs") -> tuple[bool, Any]:
        """What :meth:`_restore` needs to put this knob back as it is now."""
        if not self.supported or self.kind is object:
            return (self.name in obj._values, obj._values.get(self.name))
        return (self.key in os.environ, os.environ.get(self.key))

    def _restore(self, obj: "base_knobs", state: tuple[bool, Any]) -> None:
        present, value = state
        store = obj._values if (not self.supported or self.kind is object) else os.environ
        key = self.name if store is obj._values else self.key
        if present:
            store[key] = value
        else:
            store.pop(key, None)


class base_knobs:
    """A set of knobs (``knobs.cache``, ``knobs.runtime``, ...).

    ``knob_descriptors`` maps each knob's attribute name to its :class:`Knob`
    (whose ``key`` is its environment variable)."""

    knob_descriptors: ClassVar[dict[str, Knob]] = {}
    _name: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.knob_descriptors = {name: value for klass in reversed(cls.__mro__)
                                for name, value in vars(klass).items() if isinstance(value, Knob)}

    def __init__(self) -> None:
        # Values of knobs that are not environment variables (hooks, and
        # the defaults of unsupported knobs).
        self._values: dict[str, Any] = {}

    def copy(self) -> "base_knobs":
        """A knob set of the same kind with the same Python-valued knobs
        (the environment-backed ones are shared: they live in the
        environment)."""
        other = type(self)()
        other._values = dict(self._values)
        return other

    def reset(self) -> "base_knobs":
        """Every knob back to its default (environment variables removed).
        Returns ``self``."""
        for knob in self.knob_descriptors.values():
            knob._restore(self, (False, None))
        return self

    @contextlib.contextmanager
    def scope(self) -> Iterator["base_knobs"]:
        """Within the block, knobs may be changed freely: each is restored on exit."""
        saved = {name: knob._snapshot(self) for name, knob in self.knob_descriptors.items()}
        try:
            yield self
        finally:
            for name, knob in self.knob_descriptors.items():
                knob._restore(self, saved[name])


class cache_knobs(base_knobs):
    """``knobs.cache``: the on-disk cache of compiled kernels."""

    _name = "cache"
    dir: Knob[str] = Knob(CACHE_DIR_ENV, default_cache_dir)
    disable: Knob[bool] = Knob(DISABLE_ENV, False, bool)
    dump_dir: Knob[Optional[str]] = Knob("TRITON_DUMP_DIR", None, supported=False,
                                         why="Kiln keeps every stage on the compiled kernel (kernel.asm)")
    override_dir: Knob[Optional[str]] = Knob("TRITON_OVERRIDE_DIR", None, supported=False,
                                             why="Kiln cannot replace a stage with a file")


class runtime_knobs(base_knobs):
    """``knobs.runtime``: the JIT and launches."""

    _name = "runtime"
    debug: Knob[bool] = Knob(DEBUG_ENV, False, bool)
    interpret: Knob[bool] = Knob("TRITON_INTERPRET", False, bool, supported=False,
                                 why="Kiln has no interpreter; its CPU backend runs compiled kernels (KILN_BACKEND=cpu)")
    # The NVIDIA architecture kernels launched without `arch=` compile for
    # ("sm80", "sm90"); such a kernel warms up but does not launch on a
    # device of another architecture.
    override_arch: Knob[Optional[str]] = Knob("TRITON_OVERRIDE_ARCH", None)
    # Called on a compile, with Triton's keyword arguments (key, repr, fn,
    # compile, is_manual_warmup, already_compiled); a true result from
    # jit_cache_hook skips the compile and the launch.
    jit_cache_hook: Knob[Optional[Callable[..., Any]]] = Knob("", None, object)
    jit_post_compile_hook: Knob[Optional[Callable[..., Any]]] = Knob("", None, object)
    launch_enter_hook: Knob[Optional[Callable[..., Any]]] = Knob("", None, object, supported=False,
                                                                 why="Kiln's launches have no hooks")
    launch_exit_hook: Knob[Optional[Callable[..., Any]]] = Knob("", None, object, supported=False,
                                                                why="Kiln's launches have no hooks")


class language_knobs(base_knobs):
    """``knobs.language``: defaults of the kernel language."""

    _name = "language"
    default_fp_fusion: Knob[bool] = Knob(FP_FUSION_ENV, True, bool)
    fp32_default: Knob[Optional[str]] = Knob("TRITON_F32_DEFAULT", None, supported=False,
                                             why="Kiln has no default input precision setting")


class autotuning_knobs(base_knobs):
    """``knobs.autotuning``: :func:`kiln.autotune`."""

    _name = "autotuning"
    cache: Knob[bool] = Knob(AUTOTUNING_CACHE_ENV, False, bool)
    print: Knob[bool] = Knob(AUTOTUNING_PRINT_ENV, False, bool)


cache = cache_knobs()
runtime = runtime_knobs()
language = language_knobs()
autotuning = autotuning_knobs()
