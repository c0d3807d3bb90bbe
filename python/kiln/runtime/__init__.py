"""Kiln's runtime: the JIT (specialization, cache, launch) and the CUDA driver
(``kiln.runtime.driver.active``, as ``triton.runtime.driver.active``).

``kiln.jit`` is :func:`kiln.runtime.jit.jit`; it is not re-exported here so
that ``kiln.runtime.jit`` stays the module.
"""

from kiln.runtime import driver
from kiln.runtime.autotuner import Autotuner, Config
from kiln.runtime.heuristics import Heuristics
from kiln.runtime.errors import InterpreterError, OutOfResources
from kiln.runtime.interface import KernelInterface, MockTensor
from kiln.runtime.jit import JITFunction, LoadedKernel
from kiln.runtime.tensor_wrapper import TensorWrapper, reinterpret

__all__ = ["Autotuner", "Config", "Heuristics", "InterpreterError", "JITFunction", "KernelInterface", "LoadedKernel",
           "MockTensor", "OutOfResources", "TensorWrapper", "driver", "reinterpret"]
