"""Kiln's implementation of ``triton._internal_testing``: the helpers that
Triton's own test suite imports (device queries, random inputs, conversions
between numpy, torch and kernel arguments).

Under :mod:`kiln.compat`, ``import triton._internal_testing`` gives this
module."""

from __future__ import annotations
