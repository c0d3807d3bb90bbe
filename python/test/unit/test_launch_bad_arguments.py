"""Arrays a launch must refuse before running anything: read-only arrays
for parameters the kernel writes, and torch's data-less meta tensors. Each
used to crash the process (SIGSEGV) or write memory marked read-only.
Runs on the CPU backend; no GPU needed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl
from kiln.backends.nvidia import NvidiaBackend
from kiln.runtime import arrays, launch_settings


@kiln.jit
def copy_kernel(src, dst, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(dst + offs, kl.load(src + offs, mask=offs < n), mask=offs < n)


@kiln.jit
def atomic_kernel(src, dst, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.atomic_add(dst + offs, kl.load(src + offs, mask=offs < n), mask=offs < n)


class Interface:
    """An array seen only through ``__array_interface__``, whose ``data``
    tuple says whether it is read-only."""

    def __init__(self, array: np.ndarray, read_only: bool) -> None:
        self.array, self.read_only = array, read_only

    @property
    def __array_interface__(self) -> dict:
        return {**self.array.__array_interface__, "data": (self.array.ctypes.data, self.read_only)}


def read_only(array: np.ndarray) -> np.ndarray:
    array = array.copy()
    array.flags.writeable = False
    return array


WRITES_READ_ONLY = "kernel {}: argument 'dst' is a read-only array, but the kernel writes through it"


@pytest.mark.parametrize("kernel", [copy_kernel, atomic_kernel], ids=["store", "atomic"])
def test_a_read_only_array_the_kernel_writes_is_refused(kernel):
    src = np.arange(8, dtype=np.float32)
    dst = read_only(np.zeros(8, np.float32))
    # The writable launch first: a read-only array must not take its key.
    kernel[(1,)](src, np.zeros(8, np.float32), 8, BLOCK=8)
    with pytest.raises(ValueError, match=WRITES_READ_ONLY.format(kernel.__name__)):
        kernel[(1,)](src, dst, 8, BLOCK=8)
    assert not dst.any()


def test_a_read_only_memory_map_the_kernel_writes_is_refused(tmp_path):
    path = tmp_path / "zeros.bin"
    np.zeros(8, np.float32).tofile(path)
    mapped = np.memmap(path, dtype=np.float32, mode="r")
    with pytest.raises(ValueError, match=WRITES_READ_ONLY.format("copy_kernel")):
        copy_kernel[(1,)](np.ones(8, np.float32), mapped, 8, BLOCK=8)
    assert not np.fromfile(path, dtype=np.float32).any()


def test_a_read_only_array_the_kernel_only_reads_is_accepted(tmp_path):
    path = tmp_path / "values.bin"
    np.arange(8, dtype=np.float32).tofile(path)
    for src in (read_only(np.arange(8, dtype=np.float32)), np.memmap(path, dtype=np.float32, mode="r"),
                Interface(np.arange(8, dtype=np.float32), True)):
        dst = np.zeros(8, np.float32)
        copy_kernel[(1,)](src, dst, 8, BLOCK=8)
        assert np.array_equal(dst, np.arange(8, dtype=np.float32))


def test_array_interface_read_only_flag():
    src = np.arange(8, dtype=np.float32)
    dst = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match=WRITES_READ_ONLY.format("copy_kernel")):
        copy_kernel[(1,)](src, Interface(dst, True), 8, BLOCK=8)
    assert not dst.any()
    copy_kernel[(1,)](src, Interface(dst, False), 8, BLOCK=8)
    assert np.array_equal(dst, src)


def test_read_only_flags_by_kind():
    array = np.zeros(4, np.float32)
    assert not arrays.read_only(array, arrays.ArrayKind.NUMPY)
    assert arrays.read_only(read_only(array), arrays.ArrayKind.NUMPY)
    assert arrays.read_only(Interface(array, True), arrays.ArrayKind.INTERFACE)
    assert not arrays.read_only(Interface(array, False), arrays.ArrayKind.INTERFACE)
    assert not arrays.read_only(torch.zeros(4), arrays.ArrayKind.TORCH)


def test_a_dlpack_producer_that_refuses_to_export_is_named():
    class Producer:
        def __dlpack__(self, stream: Any = None) -> Any:
            raise BufferError("Cannot export readonly array")

        def __dlpack_device__(self) -> tuple[int, int]:
            return (1, 0)  # kDLCPU

    with pytest.raises(TypeError, match="kernel copy_kernel: argument 'dst': its DLPack export failed: Cannot "
                                        "export readonly array"):
        copy_kernel[(1,)](np.ones(8, np.float32), Producer(), 8, BLOCK=8)


# -- which parameters a kernel writes ----------------------------------------------------


@kiln.jit
def _store_through(p, x):
    kl.store(p, x)


@kiln.jit
def helper_kernel(a, b, c, n):
    _store_through(b + 1, kl.load(a))


@kiln.jit
def loop_kernel(a, b, c, n):
    p = a
    q = b
    for i in range(n):
        p = q + i  # carried: p comes from b after one iteration
    kl.store(p, kl.load(c))


@kiln.jit
def while_kernel(a, b, c, n):
    p = c
    i = 0
    while i < n:
        p = a + i  # the store writes a, or c when the loop does not run; b is only read
        i += 1
    kl.store(p, kl.load(b))


@kiln.jit
def if_kernel(a, b, c, n):
    p = b
    if n > 0:
        p = c
    kl.store(p + 1, kl.load(a))


@kiln.jit
def where_kernel(a, b, c, n):
    kl.store(kl.where(n > 0, a, b), kl.load(c))


@kiln.jit
def loaded_pointer_kernel(a, b, c, n):
    # A pointer read from memory may point anywhere.
    kl.store(kl.load(a), 1.0)


@kiln.jit
def tuple_kernel(t, c, n):
    kl.store(t[1], kl.load(t[0]) + kl.load(c))


@pytest.mark.parametrize("kernel,written", [
    (copy_kernel, ["dst"]), (atomic_kernel, ["dst"]), (helper_kernel, ["b"]), (loop_kernel, ["a", "b"]),
    (where_kernel, ["a", "b"]), (while_kernel, ["a", "c"]), (if_kernel, ["b", "c"]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_the_compiled_kernel_records_the_parameters_it_writes(kernel, written):
    signature = {name: "*fp32" for name in kernel.arg_names if name not in ("n", "BLOCK")}
    compiled = kiln.compile(kernel, signature={**signature, "n": "i32"}, constexprs={"BLOCK": 8} if
                            "BLOCK" in kernel.arg_names else {}, target="cpu")
    assert compiled.metadata["written_args"] == written


def test_a_tuple_element_written_is_named_by_its_path():
    src, dst = np.ones(4, np.float32), read_only(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match=r"argument 't\[1\]' is a read-only array"):
        tuple_kernel[(1,)]((src, dst), np.ones(4, np.float32), 4)
    out = np.zeros(4, np.float32)
    tuple_kernel[(1,)]((read_only(np.full(4, 2, np.float32)), out), read_only(np.ones(4, np.float32)), 4)
    assert out[0] == 3


def test_a_pointer_of_unknown_origin_cannot_be_written():
    # A pointer read from memory could point into any argument, so the
    # written-arguments analysis would have to count every pointer; such a
    # kernel is refused when it is built, at the line that loads the pointer.
    from kiln import _C
    from kiln.compiler.frontend import generate_kiln_ir
    from kiln.errors import CompilationError

    signature = {"a": "**fp32", "b": "*fp32", "c": "*fp32", "n": "i32"}
    with pytest.raises(CompilationError, match="loads and stores of pointer values are not supported"):
        generate_kiln_ir(loaded_pointer_kernel, signature, {}, None, _C.ir.Context())


# -- meta tensors ------------------------------------------------------------------------------

META = "kernel copy_kernel: argument '{}' is a tensor on the 'meta' device, which has no data"


@pytest.mark.parametrize("which", ["src", "dst"])
def test_a_meta_tensor_is_refused(which):
    src, dst = torch.ones(8), torch.zeros(8)
    copy_kernel[(1,)](src, dst, 8, BLOCK=8)  # the same key with real tensors first
    arguments = {"src": src, "dst": dst, which: torch.empty(8, device="meta")}
    with pytest.raises(ValueError, match=META.format(which)):
        copy_kernel[(1,)](arguments["src"], arguments["dst"], 8, BLOCK=8)
    with pytest.raises(ValueError, match=META.format(which)):
        copy_kernel[(1,)](arguments["src"], arguments["dst"], 8, BLOCK=8, backend="cpu")


def test_a_meta_tensor_is_refused_by_the_gpu_backend_too():
    meta = torch.empty(8, device="meta")
    assert launch_settings.array_device(meta) == launch_settings.META
    with pytest.raises(ValueError, match=META.format("x")):
        NvidiaBackend().check_array("copy_kernel", "x", meta, arrays.ArrayKind.TORCH, launch_settings.array_device(meta), 0)


@pytest.mark.parametrize("grid, error, message", [
    (("4",), TypeError, "kernel copy_kernel: grid x must be an int, got str"),
    ((1.5,), TypeError, "kernel copy_kernel: grid x must be an int, got float"),
    ((1, None), TypeError, "kernel copy_kernel: grid y must be an int, got NoneType"),
    ((-1,), ValueError, "kernel copy_kernel: grid x is -1; expected 0 <= x <= 2147483647"),
])
def test_bad_grid_names_the_kernel(grid, error, message):
    src, dst = torch.randn(8), torch.zeros(8)
    with pytest.raises(error) as info:
        copy_kernel[grid](src, dst, 8, BLOCK=8)
    assert str(info.value) == message
    assert torch.equal(dst, torch.zeros(8))
