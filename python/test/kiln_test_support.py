"""Helpers shared by the test folders (their conftest files and tests)."""

import inspect
import os


def kiln_search_path():
    """The directory holding the `kiln` package under test (the checkout's
    python/ directory, or site-packages where a wheel is installed), for the
    PYTHONPATH of child processes: they must import the same Kiln."""
    import kiln

    return os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__)))


def cuda_skip_reason():
    """Why kernels cannot run on a CUDA GPU here, or None when they can."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    try:
        from kiln.runtime import driver
    except ImportError as error:
        return f"kiln cannot be imported: {error}"
    if not driver.is_available():
        return f"kiln's CUDA driver is unavailable: {driver.unavailable_reason()}"
    return None


def assert_located_error(build_ir, kernel, signature, constexprs, text, *fragments):
    """Builds ``kernel``'s IR (``build_ir``, the unit tests' fixture) and
    checks that it fails with a CompilationError located at the first line
    of the kernel's body holding ``text``, in the kernel's source file, and
    whose message holds each of ``fragments``."""
    import pytest

    from kiln.errors import CompilationError

    with pytest.raises(CompilationError) as info:
        build_ir(kernel, signature, constexprs)
    error = info.value
    fn = getattr(kernel, "fn", kernel)
    lines, first = inspect.getsourcelines(fn)
    line = next(first + i for i, source in enumerate(lines) if text in source and i > 0)
    assert (error.filename, error.lineno) == (inspect.getsourcefile(fn), line), str(error)
    for fragment in fragments:
        assert fragment in str(error), str(error)
