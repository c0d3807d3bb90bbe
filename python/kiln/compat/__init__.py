"""Run Triton programs on Kiln unchanged: ``import triton`` resolves to Kiln.

Porting a Triton kernel to Kiln is meant to be an import change; this module
makes it no change at all. After :func:`install`, ``import triton`` gives
:mod:`kiln`, ``import triton.language as tl`` gives :mod:`kiln.language`, and
every other ``triton.<name>`` module a Triton program imports gives the Kiln
module of the same role (``triton.testing``, ``triton.runtime.driver``,
``triton.language.extra.libdevice``, ``triton.tools.tensor_descriptor``,
``triton._internal_testing``, ...). They are the same module objects, not
copies: ``triton.language is kiln.language``.

Three ways to use it::

    python -m kiln.compat script.py args...      # a program
    python -m kiln.compat -m pytest tests/ ...   # a module (a test suite)

    import kiln.compat
    kiln.compat.install()                        # in code, before importing triton

The command-line forms also put a small ``triton`` package first on the
``PYTHONPATH`` of the process and of its child processes (pytest-xdist
workers, ``multiprocessing``), whose import installs the alias there, and
load :mod:`kiln.compat.pytest_plugin` into pytest, which makes Triton's
``--device cpu`` test option select Kiln's CPU backend. See docs/compat.md.

The real Triton cannot share a process with the alias: :func:`install`
raises :class:`CompatError` if it was already imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import Optional, Sequence

__all__ = ["CompatError", "install", "installed", "kiln_module_name", "shim_directory"]


class CompatError(RuntimeError):
    """The alias cannot be installed (the real Triton is already imported)."""


#: Triton modules whose Kiln counterpart has a different name. Every other
#: ``triton.<path>`` resolves to ``kiln.<path>``.
RENAMED_MODULES: dict[str, str] = {
    "triton": "kiln",
    "triton._internal_testing": "kiln.compat.internal_testing",
}


def kiln_module_name(triton_name: str) -> Optional[str]:
    """The Kiln module that stands for the Triton module ``triton_name``
    (``"triton.language"`` -> ``"kiln.language"``), or None for a name
    outside the ``triton`` package."""
    if triton_name in RENAMED_MODULES:
        return RENAMED_MODULES[triton_name]
    if triton_name.startswith("triton."):
        return "kiln." + triton_name[len("triton."):]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Loads a ``triton.*`` name as the already-imported Kiln module.

    The import system creates a placeholder module from the spec; executing
    it replaces the ``sys.modules`` entry with the Kiln module, which the
    import statement then returns (the placeholder is dropped). So Kiln's
    modules keep their own ``__name__`` and ``__spec__``."""

    def __init__(self, kiln_name: str) -> None:
        self.kiln_name = kiln_name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        sys.modules[module.__name__] = importlib.import_module(self.kiln_name)


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``triton`` and ``triton.*`` as Kiln modules, before any other
    finder (so an installed Triton is never reached)."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[types.ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        kiln_name = kiln_module_name(fullname)
        if kiln_name is None:
            return None
        if importlib.util.find_spec(kiln_name) is None:
            return None  # the import fails as a plain ModuleNotFoundError for `fullname`
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(kiln_name))


def installed() -> bool:
    """Whether this process resolves ``import triton`` to Kiln."""
    return any(isinstance(finder, _AliasFinder) for finder in sys.meta_path)


def _real_triton_modules() -> list[str]:
    """The names of ``triton`` modules in ``sys.modules`` that are not Kiln's."""
    real = []
    for name, module in list(sys.modules.items()):
        if (name == "triton" or name.startswith("triton.")) and module is not None:
            if not getattr(module, "__name__", "").startswith("kiln"):
                real.append(name)
    return sorted(real)


def install() -> None:
    """Resolve ``import triton`` and its submodules to Kiln in this process.

    Idempotent. Raises :class:`CompatError` if the real Triton (any module
    of the ``triton`` package that is not Kiln's) is already imported: two
    compilers cannot share the names, and kernels already decorated with
    Triton's ``jit`` would not run on Kiln."""
    if installed():
        return
    real = _real_triton_modules()
    if real:
        raise CompatError(
            "kiln.compat cannot alias 'triton' to Kiln: the real Triton is already imported in "
            f"this process ({', '.join(real[:3])}{', ...' if len(real) > 3 else ''}). Install the "
            "alias before anything imports triton: run the program with `python -m kiln.compat`, "
            "or call kiln.compat.install() first.")
    # The placeholder `triton` package of the shim directory may be importing
    # right now (a child process): it is replaced like any alias.
    sys.meta_path.insert(0, _AliasFinder())
    importlib.import_module("kiln")


def shim_directory() -> str:
    """A directory holding a ``triton`` package whose import installs the
    alias: put it first on ``PYTHONPATH`` to alias child processes too."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_shim")
