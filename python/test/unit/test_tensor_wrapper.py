"""``kiln.reinterpret`` and ``kiln.runtime.jit.TensorWrapper`` on the host
(Triton's API), the dtype lists and ``kl.str_to_ty``, and the launch checks
that must treat a wrapper as its base (read-only, meta, checked bounds)."""

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl
from kiln.errors import KilnError, OutOfBoundsError
from kiln.runtime.jit import TensorWrapper, reinterpret, type_canonicalisation_dict


def test_reinterpret_wraps_and_unwraps() -> None:
    base = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    wrapped = kiln.reinterpret(base, kl.uint32)
    assert isinstance(wrapped, TensorWrapper) and kiln.TensorWrapper is TensorWrapper
    assert kiln.runtime.reinterpret is reinterpret is kiln.reinterpret
    assert wrapped.base is base and wrapped.dtype == kl.uint32
    assert wrapped.data_ptr() == base.data_ptr()
    assert tuple(wrapped.shape) == (2, 3) and wrapped.stride() == (3, 1) and wrapped.stride(0) == 3
    assert wrapped.numel() == 6 and wrapped.element_size() == 4 and wrapped.dim() == 2
    assert str(wrapped.device) == "cpu" and wrapped.get_device() == -1
    assert str(wrapped).startswith("TensorWrapper[uint32](tensor(")
    # Again: a wrapper of the same base, of the new type.
    again = reinterpret(wrapped, kl.float32)
    assert again.base is base and again.dtype == kl.float32
    # The base's own dtype undoes it.
    assert reinterpret(wrapped, torch.int32) is base


def test_wrapper_copies_keep_the_type() -> None:
    base = torch.tensor([1, -2, 3], dtype=torch.int16)
    wrapped = kiln.reinterpret(base, kl.uint16)
    copy = wrapped.clone()
    assert copy.dtype == kl.uint16 and copy.base is not base and copy.base.tolist() == [1, -2, 3]
    target = kiln.reinterpret(torch.zeros(3, dtype=torch.int16), kl.uint16)
    assert target.copy_(wrapped) is target and target.base.tolist() == [1, -2, 3]
    assert wrapped.cpu().base.tolist() == [1, -2, 3]
    empty = wrapped.new_empty((4,))
    assert empty.dtype == kl.uint16 and empty.base.dtype == torch.int16 and tuple(empty.shape) == (4,)


def test_numpy_base() -> None:
    base = np.arange(4, dtype=np.int64)[::2]
    wrapped = kiln.reinterpret(base, kl.uint64)
    assert wrapped.data_ptr() == base.ctypes.data
    assert wrapped.stride() == (2,) and wrapped.element_size() == 8 and wrapped.numel() == 2
    assert wrapped.get_device() == -1
    assert reinterpret(wrapped, base.dtype) is base
    assert wrapped.clone().base.tolist() == [0, 2]


@pytest.mark.parametrize("bad", [kl.pointer_type(kl.int32), "uint32", kl.void])
def test_reinterpret_refuses_non_element_types(bad) -> None:
    with pytest.raises(TypeError, match="reinterpret"):
        kiln.reinterpret(torch.zeros(2, dtype=torch.int32), bad)


def test_reinterpret_refuses_non_arrays() -> None:
    with pytest.raises(TypeError, match="cannot reinterpret a list"):
        kiln.reinterpret([1, 2], kl.uint8)


def test_dtype_lists_and_str_to_ty() -> None:
    assert kl.dtype.SINT_TYPES == ["int8", "int16", "int32", "int64"]
    assert kl.dtype.UINT_TYPES == ["int1", "uint8", "uint16", "uint32", "uint64"]
    assert kl.dtype.STANDARD_FP_TYPES == ["fp16", "bf16", "fp32", "fp64"]
    assert kl.dtype.OTHER_TYPES == ["void"]
    for name in kl.dtype.SINT_TYPES + kl.dtype.UINT_TYPES + kl.dtype.FP_TYPES + kl.dtype.OTHER_TYPES:
        assert kl.dtype(name).name == name
    assert kl.dtype("uint32").is_uint32() and not kl.dtype("int32").is_uint32() and kl.int1.is_int1()
    assert kl.bfloat16.is_standard_floating() and not kl.float8e5.is_standard_floating() and kl.void.is_void()
    assert kl.str_to_ty("*fp32", None) == kl.pointer_type(kl.float32)
    assert kl.str_to_ty("u64") == kl.uint64 and kl.str_to_ty("void") == kl.void
    for name, ty in [("uint8", kl.uint8), ("bool", kl.int1), ("float", kl.float32), ("bfloat16", kl.bfloat16),
                     ("int", kl.int32), ("u16", kl.uint16), ("float8_e5m2", kl.float8e5)]:
        assert kl.str_to_ty(type_canonicalisation_dict[name], None) == ty
    with pytest.raises(KilnError, match="unsupported signature type 'q7'"):
        kl.str_to_ty("q7")
    assert kl.str_to_ty("*ki32") == kl.pointer_type(kl.int32, const=True) != kl.pointer_type(kl.int32)


@kiln.jit
def store_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_wrapper_of_read_only_numpy_array_is_refused_as_output() -> None:
    source = kiln.reinterpret(np.arange(4, dtype=np.int32), kl.uint32)
    out = np.zeros(4, dtype=np.int32)
    store_kernel[(1,)](source, kiln.reinterpret(out, kl.uint32), 4, BLOCK=4)
    assert out.tolist() == [0, 1, 2, 3]
    out.flags.writeable = False
    with pytest.raises(ValueError, match="argument 'out_ptr' is a read-only array"):
        store_kernel[(1,)](source, kiln.reinterpret(out, kl.uint32), 4, BLOCK=4)


def test_wrapper_of_meta_tensor_is_refused() -> None:
    meta = kiln.reinterpret(torch.empty(4, dtype=torch.int32, device="meta"), kl.uint32)
    with pytest.raises(ValueError, match="argument 'x_ptr' is a tensor on the 'meta' device"):
        store_kernel[(1,)](meta, kiln.reinterpret(torch.zeros(4, dtype=torch.int32), kl.uint32), 4, BLOCK=4,
                           backend="cpu")


def test_wrapper_mixed_with_gpu_arrays_names_both() -> None:
    class FakeCuda:
        """An array that says it lives on cuda:0 (never launched)."""
        dtype = torch.int32

        def data_ptr(self) -> int:
            return 1 << 20

        def get_device(self) -> int:
            return 0

    with pytest.raises(ValueError, match="'x_ptr' is on the CPU but argument 'out_ptr' is on cuda:0"):
        store_kernel[(1,)](kiln.reinterpret(torch.zeros(4, dtype=torch.int32), kl.uint32),
                           kiln.reinterpret(FakeCuda(), kl.uint32), 4, BLOCK=4)


def test_checked_mode_bounds_a_wrapper_by_its_base_bytes() -> None:
    """A uint32 view of 4 bytes holds one element: reading a second is out of bounds."""
    checked = kiln.jit(checked=True)(store_kernel.fn)
    small = kiln.reinterpret(torch.zeros(4, dtype=torch.int8), kl.uint32)
    out = kiln.reinterpret(torch.zeros(2, dtype=torch.int32), kl.uint32)
    with pytest.raises(OutOfBoundsError, match="'x_ptr'.*element index 1") as error:
        checked[(1,)](small, out, 2, BLOCK=2)
    assert error.value.parameter == "x_ptr"
    checked[(1,)](small, out, 1, BLOCK=2)
