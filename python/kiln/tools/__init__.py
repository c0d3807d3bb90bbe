"""Host-side helpers for kernels (as ``triton.tools``)."""
