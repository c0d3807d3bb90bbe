"""Kiln kernels as PyTorch operators, so that ``torch.compile`` can call them.

``torch.compile`` cannot look inside a Kiln launch: a function that calls
``kernel[grid](...)`` directly breaks the graph there. Registered with
:func:`custom_op`, the function becomes an operator (``torch.library``'s
``custom_op``) that the compiled graph calls as one opaque node, with no
graph break, under ``fullgraph=True`` and ``mode="reduce-overhead"`` (CUDA
graphs) too. This is Kiln's counterpart of ``torch.library.triton_op``:

    @kiln.torch.custom_op("mylib::add", mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
        return out

As with ``triton_op``, the operator's fake implementation (what tracing
runs on tensors without data, to learn the outputs' shapes, dtypes and
devices) is the function itself, run with every Kiln launch skipped: it
must allocate its outputs with torch and read no tensor's values on the
host. A backward is added with the returned operator's
``register_autograd``, as for any ``torch.library`` operator.

Needs torch 2.4 or later (``torch.library.custom_op``).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Optional, Union

from kiln.runtime.launch_settings import launches_skipped, skipping_launches

__all__ = ["custom_op", "launches_skipped", "skipping_launches"]


def custom_op(name: str, fn: Optional[Callable[..., Any]] = None, /, *,
              mutates_args: Union[str, Iterable[str]],
              schema: Optional[str] = None) -> Any:
    """Registers ``fn``, a function that launches Kiln kernels, as the
    PyTorch operator ``name`` ("namespace::name"), as Triton's
    ``torch.library.triton_op`` does for Triton kernels.

    Args:
        name: the operator's qualified name, "namespace::name".
        fn: the function; without it, a decorator is returned.
        mutates_args: the names of the arguments the function writes to
            ("unknown" if it cannot say), as ``torch.library.custom_op``.
        schema: the operator's schema, if not inferred from ``fn``'s
            annotations.

    Returns:
        The operator (``torch.library.CustomOpDef``), callable as ``fn``.

    Raises:
        RuntimeError: when this torch has no ``torch.library.custom_op``
            (before 2.4).
    """
    import torch

    if not hasattr(getattr(torch, "library", None), "custom_op"):
        raise RuntimeError(f"kiln.torch.custom_op needs torch 2.4 or later (torch.library.custom_op); this is "
                           f"torch {torch.__version__}")

    def register(function: Callable[..., Any]) -> Any:
        operator = torch.library.custom_op(name, function, mutates_args=mutates_args, schema=schema)

        @functools.wraps(function)
        def fake(*args: Any, **kwargs: Any) -> Any:
            with skipping_launches():
                return function(*args, **kwargs)

        operator.register_fake(fake)
        return operator

    return register if fn is None else register(fn)
