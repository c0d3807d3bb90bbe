"""
What every tutorial needs besides its topic
===========================================

The six tutorials in this folder share their command line, the choice of
device, the comparison with Triton and the saving of benchmark results.
That code lives here once, so that each tutorial keeps only what teaches
its topic; it is not a tutorial itself and has nothing to run.

A tutorial run as ``python docs/tutorials/NN-name.py`` has its own folder
first on ``sys.path``, so it imports this file as ``tutorial_support``.
A tutorial ends with::

    def main(argv=None):
        run_tutorial(argv, "Kiln tutorial NN: its topic", check, make_benchmark)

and calls ``comparison_triton`` and ``triton_twin`` in its
``make_benchmark`` to add a Triton line to its benchmark.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import types
from typing import Any, Callable, Optional, Sequence

import torch

import kiln
import kiln.language as kl
from kiln.runtime import driver
from kiln.testing import Mark

# %%
# The device
# ----------
#
# A tutorial runs on a CUDA GPU when torch and Kiln can both use one, and
# otherwise on Kiln's CPU backend: where its tensors live decides where its
# kernels run.


def default_device() -> str:
    """"cuda" when torch and Kiln can both use a CUDA GPU here, else "cpu"."""
    return "cuda" if torch.cuda.is_available() and driver.is_available() else "cpu"


# %%
# Comparing with Triton
# ---------------------
#
# A tutorial's kernels name their language only through the global ``kl``,
# so Triton compiles the very same text once ``kl`` means
# ``triton.language``.


def comparison_triton(device: str) -> Optional[tuple[Any, Any]]:
    """``(triton, triton.language)`` to compare with on ``device``: the real
    Triton when it is installed and ``device`` is a GPU (Triton's kernels
    run on GPUs), else None. Imported only here, so that a CPU run never
    loads it; under ``python -m kiln.compat`` ``import triton`` names Kiln
    itself, which is no second compiler, so that gives None too."""
    if device != "cuda":
        return None
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None
    if triton.__name__ != "triton":
        return None
    return triton, tl


def triton_twin(kernel: Any, triton: Any, tl: Any) -> Any:
    """The Kiln kernel ``kernel`` compiled by Triton: a copy of its Python
    function (the same code, so Triton reads the same source text) whose
    global ``kl`` is ``triton.language``, and whose ``kl.constexpr``
    annotations are Triton's. Jit functions it calls are twinned too."""
    fn = kernel.fn
    scope = dict(fn.__globals__, kl=tl)
    for name in fn.__code__.co_names:
        if isinstance(scope.get(name), kiln.JITFunction):
            scope[name] = triton_twin(scope[name], triton, tl)
    twin = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    twin.__qualname__, twin.__doc__, twin.__module__ = fn.__qualname__, fn.__doc__, fn.__module__
    # The tutorials use ``from __future__ import annotations``, so an
    # annotation is usually the string "kl.constexpr", not the object.
    twin.__annotations__ = {name: tl.constexpr if kind is kl.constexpr or kind == "kl.constexpr" else kind
                            for name, kind in fn.__annotations__.items()}
    return triton.jit(twin)


# %%
# The command line
# ----------------


def parse_args(argv: Optional[Sequence[str]], description: str) -> argparse.Namespace:
    """The command line every tutorial takes: ``--device cuda|cpu`` (default:
    :func:`default_device`), ``--check-only`` and ``--save-path DIR``
    (default: ``$KILN_TUTORIAL_SAVE_PATH``). Exits with a usage error when
    ``--device cuda`` is asked for and no usable GPU is there."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--device", choices=["cuda", "cpu"], default=None,
                        help="cuda (a GPU) or cpu (Kiln's CPU backend, small sizes); default: cuda if usable")
    parser.add_argument("--check-only", action="store_true", help="check correctness, skip the benchmark")
    parser.add_argument("--save-path", default=os.environ.get("KILN_TUTORIAL_SAVE_PATH", ""),
                        help="folder for the benchmark's CSV table and PNG plot "
                             "(default: $KILN_TUTORIAL_SAVE_PATH; unset: print only)")
    args = parser.parse_args(argv)
    if args.device is None:
        args.device = default_device()
    elif args.device == "cuda" and default_device() != "cuda":
        parser.error("--device cuda: no CUDA GPU that both torch and Kiln can use")
    return args


def run_benchmark(benchmark: Mark, save_path: str) -> None:
    """Prints the benchmark's table and saves it (and its plot) under ``save_path``."""
    benchmark.run(print_data=True, save_path=save_path)
    if save_path:
        plotted = importlib.util.find_spec("matplotlib") is not None
        print(f"saved under {save_path}" + ("" if plotted else " (CSV only: matplotlib is not installed)"))


def run_tutorial(argv: Optional[Sequence[str]], description: str, check: Callable[[str], None],
                 make_benchmark: Callable[[str], Mark],
                 before_check: Optional[Callable[[], None]] = None) -> None:
    """A tutorial's ``main``: parses ``argv`` (``sys.argv[1:]`` when None),
    prints the device, calls ``before_check`` if given, runs ``check(device)``
    (which raises AssertionError on a wrong result), then, unless
    ``--check-only``, runs ``make_benchmark(device)`` and prints and saves it."""
    args = parse_args(argv, description)
    print(f"device: {args.device}")
    if before_check is not None:
        before_check()
    check(args.device)
    if not args.check_only:
        run_benchmark(make_benchmark(args.device), args.save_path)
