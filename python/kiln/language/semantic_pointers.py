"""Casts to and from pointers (``kl.cast`` and ``.to`` where a side is a
pointer), with Triton's rules; :func:`kiln.language.semantic.cast` calls
:func:`pointer_cast` for them."""

from __future__ import annotations

from kiln.language.core import dtype, int64, tensor, uint64
from kiln.language.semantic import Builder, _fail, _with_shape, cast, ir_result, not_equal

__all__ = ["pointer_cast"]


def pointer_cast(x: tensor, dst: dtype, b: Builder) -> tensor:
    """``x`` cast where ``x`` or ``dst`` is a pointer, as Triton casts:

    * pointer to pointer: the same addresses, of another element type (and
      constness); both in one address space;
    * pointer to a 64-bit integer: the address (Triton's ptr_to_int); to
      ``int1``: whether it is not null (Triton's rule). Narrower integers
      are the address truncated to their width, as C and LLVM's ptrtoint
      give it (Triton refuses them): the low bits, what an alignment test
      such as ``p.to(kl.int32) % 16 == 0`` reads;
    * a 64-bit integer to a pointer (Triton's int_to_ptr). A narrower one is
      refused, as Triton's IR does: no address fits in it, and widening it
      would have to guess a signedness.

    Anything else (floats to or from pointers) is a ``CompilationError``."""
    src = x.dtype
    out_ty = _with_shape(dst, x.shape)
    if src.is_ptr() and dst.is_ptr():
        if src.address_space != dst.address_space:
            raise _fail(f"cannot cast {src} to {dst}: the pointers are in different address spaces "
                        f"({src.address_space} and {dst.address_space})")
        ir_type = out_ty.to_ir(b)
        if x.handle.type == ir_type:
            # Constness, signedness and fp8 formats only live in the dtype.
            return tensor(x.handle, out_ty)
        return ir_result(b.ptr_bitcast(x.handle, ir_type), dst)
    if src.is_ptr():
        if dst.is_bool():
            return not_equal(cast(x, int64, b), 0, b)
        if not dst.is_int():
            raise _fail(f"cannot cast {src} to {dst}: a pointer converts to an integer type or another pointer "
                        f"type only")
        wide = uint64 if dst.is_int_unsigned() else int64
        address = ir_result(b.ptr_to_int(x.handle, _with_shape(wide, x.shape).to_ir(b)), wide)
        return cast(address, dst, b)
    if not src.is_int() or src.is_bool():
        raise _fail(f"cannot cast {src} to {dst}: only a 64-bit integer (kl.int64 or kl.uint64) converts to a "
                    f"pointer")
    if src.int_bitwidth != 64:
        raise _fail(f"cannot cast {src} to {dst}: only a 64-bit integer (kl.int64 or kl.uint64) holds an "
                    f"address; convert it to one first")
    return ir_result(b.int_to_ptr(x.handle, out_ty.to_ir(b)), dst)
