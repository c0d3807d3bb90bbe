"""Checked mode on the GPU, without a GPU: the PTX of a checked kernel
compares each access with its parameter's extent and records faults with a
compare-and-swap, assembles with ptxas for sm_80 and sm_90a, and lists its
access sites; its launcher passes each argument's extent and turns the
error record into the same OutOfBoundsError as the CPU's. Launches on a
device are in python/test/gpu/test_gpu_checked.py."""

from __future__ import annotations

import inspect
import re

import pytest

import kiln
import kiln.language as kl
from kiln.backends.nvidia import CheckedLaunch, find_ptxas
from kiln.compiler.specialization import Specialization


@kiln.jit
def copy_kernel(x_ptr, out_ptr, bins_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    x = kl.load(x_ptr + offs, mask=mask)  # site 0
    kl.store(out_ptr + offs, x, mask=mask)  # site 1
    kl.atomic_add(bins_ptr + (x.to(kl.int32) & 7), 1, mask=mask)  # site 2


SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "bins_ptr": "*i32", "n": "i32"}
# As the launcher specializes 16-byte aligned tensors and a multiple of 16.
ALIGNED = Specialization(divisible_by_16=frozenset({"x_ptr", "out_ptr", "bins_ptr", "n"}))


def line_of(marker: str) -> int:
    lines, first = inspect.getsourcelines(copy_kernel.fn)
    return first + next(i for i, line in enumerate(lines) if marker in line)


def kernel_params(ptx: str) -> list[str]:
    """The kernel's parameters: "ptr" for a global pointer, else the PTX type."""
    entry = ptx[ptx.index(".entry"):]
    lines = re.findall(r"\.param (.*) \w+_param_\d+", entry[:entry.index(")")])
    return ["ptr" if ".ptr" in line else line.lstrip(".") for line in lines]


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_checked_ptx_compares_and_records(target: str) -> None:
    checked = kiln.compile(copy_kernel, SIGNATURE, {"BLOCK": 1024}, attrs=ALIGNED, target=target, checked=True)
    plain = kiln.compile(copy_kernel, SIGNATURE, {"BLOCK": 1024}, attrs=ALIGNED, target=target)
    ptx = checked.asm["ptx"]
    # Three pointers: three (base, bytes) pairs of u64 and the record pointer follow n.
    assert kernel_params(plain.asm["ptx"]) == ["ptr", "ptr", "ptr", "u32"]
    assert kernel_params(ptx) == ["ptr", "ptr", "ptr", "u32"] + ["u64"] * 6 + ["ptr"]
    # The first fault is claimed with a 64-bit compare-and-swap, its index lowered with a min.
    assert re.search(r"atom\.(\w+\.)*cas\.b64", ptx)
    assert re.search(r"atom\.(\w+\.)*min\.s64", ptx)
    assert "cas.b64" not in plain.asm["ptx"]
    # The accesses themselves are as wide as unchecked ones.
    assert ptx.count("ld.global.v4.b32") == plain.asm["ptx"].count("ld.global.v4.b32") > 0
    assert ptx.count("st.global.v4.b32") == plain.asm["ptx"].count("st.global.v4.b32") > 0
    assert checked.metadata["checked"] is True and "checked" not in plain.metadata
    assert "checked=true" in checked.metadata["pipelines"][1]
    assert checked.asm.get("cubin") is not None or find_ptxas() is None


def test_checked_sites_name_lines_parameters_and_kinds() -> None:
    compiled = kiln.compile(copy_kernel, SIGNATURE, {"BLOCK": 1024}, target="sm_80", checked=True)
    sites = compiled.metadata["checked_sites"]
    assert [(site["param"], site["store"], site["element_bytes"]) for site in sites] == [
        (0, False, 4), (1, True, 4), (2, True, 4)]
    for site, marker in zip(sites, ["site 0", "site 1", "site 2"]):
        assert site["loc"].startswith(f"{__file__}:{line_of(marker)}:")


def test_checked_tensor_descriptor_loads_are_checked_not_copied_by_tma() -> None:
    """On sm_90a a descriptor matmul's operands are copied by the TMA unit,
    which a per-thread check cannot see; checked mode keeps them loads off
    each descriptor's base pointer, checked against its tensor's memory."""
    from matmul_kernels import descriptor_matmul_kernel
    from test_dot_codegen import compile_descriptor_matmul, descriptor_signature

    unchecked = compile_descriptor_matmul("sm_90a")
    assert "cp.async.bulk.tensor" in unchecked.asm["ptx"]
    signature = {**descriptor_signature("a_desc", "fp16"), **descriptor_signature("b_desc", "fp16"),
                 **descriptor_signature("c_desc", "fp16"), "K": "i32"}
    constexprs = {"BLOCK_K": 64, "B_TRANSPOSED": False}
    for path in ("a_desc", "b_desc", "c_desc"):
        constexprs.update({f"{path}[3][0]": 64, f"{path}[3][1]": 64, f"{path}[4]": "zero"})
    compiled = kiln.compile(descriptor_matmul_kernel, signature, constexprs, target="sm_90a", checked=True)
    ptx = compiled.asm["ptx"]
    assert "cp.async" not in ptx and re.search(r"atom\.(\w+\.)*cas\.b64", ptx)
    sites = compiled.metadata["checked_sites"]
    # Kernel parameters: a's base pointer, shape and strides, its tensor map, then b's and c's.
    kinds = {(site["param"], site["store"]) for site in sites}
    assert len(kinds) == 3 and sum(store for _, store in kinds) == 1
    assert compiled.asm.get("cubin") is not None or find_ptxas() is None


def record_reader(sites: list, names: list) -> CheckedLaunch:
    """A CheckedLaunch without a device: only what turns a record into an error."""
    launch = CheckedLaunch.__new__(CheckedLaunch)
    launch.kernel_name = "copy_kernel"
    launch.names = tuple(names)
    launch.sites = sites
    launch.extent_slot = {0: 0, 1: 1}
    return launch


def test_device_record_becomes_the_cpu_error() -> None:
    line = line_of("site 1")
    sites = [{"loc": f"{__file__}:{line_of('site 0')}:10", "param": 0, "store": False, "element_bytes": 4},
             {"loc": f"{__file__}:{line}:5", "param": 1, "store": True, "element_bytes": 4}]
    launch = record_reader(sites, ["x_ptr", "out_ptr", "n"])
    error = launch.fault((1 << 32) | 2, 500, [0x1000, 4000, 0x9000, 2000])
    assert isinstance(error, kiln.errors.OutOfBoundsError) and isinstance(error, IndexError)
    assert (error.parameter, error.index, error.lineno, error.col) == ("out_ptr", 500, line, 5)
    assert str(error).startswith(f"{__file__}:{line}:5: out-of-bounds store to 'out_ptr' at element index 500 "
                                 f"(the buffer has 500 elements) in kernel copy_kernel\n")
    assert "kl.store(out_ptr + offs, x, mask=mask)" in str(error)
    # Negative indices are reported as they are.
    assert launch.fault(1, -3, [0x1000, 4000, 0x9000, 2000]).index == -3


def test_checked_launch_passes_extents_and_raises_the_recorded_fault() -> None:
    """The launch side with a host record: each pointer argument's extent
    and the record's address follow the arguments; a record the kernel
    filled becomes the error, and is cleared for the next launch."""
    import torch

    sites = [{"loc": "kernel.py:3:4", "param": 1, "store": True, "element_bytes": 4}]
    seen = []

    def kernel_launch(grid_x: int, grid_y: int, grid_z: int, bound: tuple, num_threads: int) -> None:
        seen.append(bound)
        if bound[3] == 99:  # this launch's kernel faults: site 0, parameter 1, element 19
            launch.record[0] = (1 << 32) | 1
            launch.record[1] = 19

    # x_ptr, out_ptr, a constexpr, n.
    launch = CheckedLaunch(kernel_launch, "copy", "pp-i", ["x_ptr", "out_ptr", "n"], sites, "cpu")
    x, out = torch.zeros(10), torch.zeros(40)[::2]  # out: 20 elements 2 apart
    launch(1, 1, 1, (x, out, 16, 5), 0)
    assert seen[-1] == (x, out, 16, 5, x.data_ptr(), 40, out.data_ptr(), (19 * 2 + 1) * 4, launch.record.data_ptr())
    with pytest.raises(kiln.errors.OutOfBoundsError) as info:
        launch(1, 1, 1, (x, out, 16, 99), 0)
    assert (info.value.parameter, info.value.index, info.value.lineno) == ("out_ptr", 19, 3)
    assert str(info.value).startswith("kernel.py:3:4: out-of-bounds store to 'out_ptr' at element index 19 "
                                      "(the buffer has 39 elements) in kernel copy")
    assert launch.record.tolist() == [0, (1 << 63) - 1]
    launch(1, 1, 1, (x, out, 16, 5), 0)


@kiln.jit
def host_descriptor_add_kernel(x_desc, out_desc):
    BM: kl.constexpr = x_desc.block_shape[0]
    BN: kl.constexpr = x_desc.block_shape[1]
    off_m = kl.program_id(0) * BM
    out_desc.store([off_m, 0], x_desc.load([off_m, 0]) + 1.0)


def host_descriptor_signature(names: list[str], block: tuple[int, int]) -> tuple[dict, dict]:
    """The flattened signature and constexprs the launcher makes for host
    tensor descriptors on a GPU with TMA: base, shape, strides, block shape,
    padding and the tensor map."""
    signature, constexprs = {}, {}
    for name in names:
        signature.update({name: "tensordesc", f"{name}[0]": "*fp32", f"{name}[1]": "tuple", f"{name}[1][0]": "i32",
                          f"{name}[1][1]": "i32", f"{name}[2]": "tuple", f"{name}[2][0]": "i64",
                          f"{name}[2][1]": "i64", f"{name}[3]": "tuple", f"{name}[5]": "nvTmaDesc"})
        constexprs.update({f"{name}[3][0]": block[0], f"{name}[3][1]": block[1], f"{name}[4]": "zero"})
    return signature, constexprs


def test_checked_host_descriptors_get_extents_for_their_bases_only() -> None:
    """A tensor map is a pointer-typed parameter but no global buffer: the
    launcher passes extents for the descriptors' bases alone, so the kernel
    must add exactly one (base, bytes) pair per base and the record."""
    signature, constexprs = host_descriptor_signature(["x_desc", "out_desc"], (32, 16))
    plain = kiln.compile(host_descriptor_add_kernel, signature, constexprs, target="sm_90a")
    checked = kiln.compile(host_descriptor_add_kernel, signature, constexprs, target="sm_90a", checked=True)
    own = kernel_params(plain.asm["ptx"])
    assert own.count("ptr") == 2 and len(own) == 12  # per descriptor: base, 2 shape, 2 strides, tensor map
    assert kernel_params(checked.asm["ptx"]) == own + ["u64"] * 4 + ["ptr"]
