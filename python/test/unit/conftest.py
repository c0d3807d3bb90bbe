"""Fixtures for the frontend tests (no GPU needed).

``jit`` decorates a kernel: it is the real ``kiln.jit`` when the runtime's
JITFunction satisfies the frontend's ``KernelSource`` protocol, and otherwise
``FrontendTestFunction`` below, a test-only object with exactly the
attributes the protocol names. ``build_ir`` runs the frontend on a kernel.
"""

from __future__ import annotations

import inspect
import textwrap
from typing import Any, Callable, Optional

import pytest

from kiln import _C
from kiln.compiler.frontend import KernelSource, generate_kiln_ir
from kiln.compiler.specialization import Specialization


class FrontendTestFunction:
    """Test fixture only: the KernelSource attributes of a Python function."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.src = textwrap.dedent(inspect.getsource(fn))
        self.__name__ = fn.__name__
        self.__globals__ = fn.__globals__
        params = inspect.signature(fn).parameters.values()
        self.arg_names = [p.name for p in params]
        self.constexpr_names = {p.name for p in params if _is_constexpr(p.annotation)}


def _is_constexpr(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.rsplit(".", 1)[-1] == "constexpr"
    return getattr(annotation, "__name__", None) == "constexpr"


def _real_jit() -> Optional[Callable[[Callable[..., Any]], Any]]:
    try:
        import kiln
        jit = kiln.jit
    except (ImportError, AttributeError):
        return None

    import kiln.language as kl

    def probe(x, N: kl.constexpr):
        pass

    try:
        return jit if isinstance(jit(probe), KernelSource) else None
    except Exception:  # noqa: BLE001 - fall back to the fixture
        return None


@pytest.fixture(scope="session")
def jit() -> Callable[[Callable[..., Any]], Any]:
    return _real_jit() or FrontendTestFunction


@pytest.fixture
def build_ir() -> Callable[..., Any]:
    """build_ir(fn, signature, constexprs=None, divisible_by_16=(), equal_to_1=()) -> ir.Module"""

    def build(fn: Any, signature: dict[str, str], constexprs: Optional[dict[str, Any]] = None,
              divisible_by_16: tuple[str, ...] = (), equal_to_1: tuple[str, ...] = ()) -> Any:
        attrs = Specialization(frozenset(divisible_by_16), frozenset(equal_to_1))
        return generate_kiln_ir(fn, signature, constexprs or {}, attrs, _C.ir.Context())

    return build
