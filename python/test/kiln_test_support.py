"""Helpers shared by the test folders' conftest files."""


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
