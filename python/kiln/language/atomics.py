"""Atomic builtins: ``kl.atomic_add``, ``kl.atomic_max``, ..., ``kl.atomic_cas``.

Signatures and semantics follow Triton's: each takes a pointer (scalar or
block), a value broadcast to its shape, an optional mask (not for
``atomic_cas``), a memory ordering ``sem`` ("acq_rel" by default, or
"acquire", "release", "relaxed") and a scope ``scope`` ("gpu" by default,
or "cta", "sys"), and returns what memory held before the operation.

Float ``atomic_max``/``atomic_min`` are the dialect's ``fmax``/``fmin``
kinds; each target lowers them its own way (the GPU with Triton's
sign-split integer trick, the CPU with LLVM's ``atomicrmw fmax``).
"""

from __future__ import annotations

from typing import Any, Optional

from kiln.errors import CompilationError
from kiln.language import semantic
from kiln.language.core import (_unwrap, bfloat16, builtin, dtype, float16, float32, float64, int16, int32, int64,
                                tensor, uint16, uint32, uint64)

__all__ = ["atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg",
           "atomic_cas"]

Builder = Any

_SEMANTICS = ("acq_rel", "acquire", "release", "relaxed")
_SCOPES = ("gpu", "cta", "sys")

_WIDE_INTS = (int32, uint32, int64, uint64)
# Element types each builtin accepts (Triton's lists).
_SUPPORTED = {
    "atomic_add": _WIDE_INTS + (float16, bfloat16, float32, float64),
    "atomic_max": _WIDE_INTS + (float32, float64),
    "atomic_min": _WIDE_INTS + (float32, float64),
    "atomic_and": _WIDE_INTS,
    "atomic_or": _WIDE_INTS,
    "atomic_xor": _WIDE_INTS,
    "atomic_xchg": _WIDE_INTS + (float32, float64),
    "atomic_cas": (int16, uint16, float16, bfloat16) + _WIDE_INTS + (float32, float64),
}


def _public(ty: dtype) -> str:
    return repr(ty)


def _option(value: Any, allowed: tuple[str, ...], what: str, name: str) -> str:
    value = _unwrap(value)
    if value is None:
        return allowed[0]
    if not isinstance(value, str) or value not in allowed:
        raise CompilationError(f"{name}: unsupported {what} {value!r}; expected one of "
                               f"{', '.join(repr(a) for a in allowed)}")
    return value


def _pointer(pointer: Any, name: str) -> tensor:
    pointer = _unwrap(pointer)
    if not isinstance(pointer, tensor) or not pointer.dtype.is_ptr():
        ty = pointer.type if isinstance(pointer, tensor) else type(pointer).__name__
        raise CompilationError(f"{name} needs a pointer argument, got {ty}")
    if pointer.dtype.const:
        raise CompilationError(f"{name} cannot write through a constant pointer (a kl.const parameter, or a "
                               f"pointer derived from one)")
    elem = pointer.dtype.element_ty
    if elem not in _SUPPORTED[name]:
        raise CompilationError(f"{name} does not support {_public(elem)} elements; expected one of "
                               f"{', '.join(_public(t) for t in _SUPPORTED[name])}")
    return pointer


def _value(value: Any, elem: dtype, b: Builder) -> tensor:
    value = _unwrap(value)
    if not isinstance(value, tensor):
        value = semantic._literal_like(value, tensor(None, elem), b)
    return semantic.cast(value, elem, b)


def _operands(pointer: Any, values: list[Any], mask: Any, name: str, b: Builder):
    """The pointer, values and mask broadcast to one shape, values converted
    to the pointee type."""
    ptr = _pointer(pointer, name)
    elem = ptr.dtype.element_ty
    vals = [_value(v, elem, b) for v in values]
    mask = _unwrap(mask)
    shape = list(ptr.shape)
    for v in vals:
        shape = semantic.broadcast_shapes(shape, v.shape)
    if isinstance(mask, tensor):
        shape = semantic.broadcast_shapes(shape, mask.shape)
    if shape:
        ptr = semantic.broadcast_to(ptr, shape, b)
        vals = [semantic.broadcast_to(v, shape, b) for v in vals]
    mask_t = semantic._mask(mask, ptr, b) if mask is not None else None
    return ptr, vals, mask_t


def _rmw(kind: str, ptr: tensor, val: tensor, mask: Optional[tensor], sem: str, scope: str, b: Builder) -> tensor:
    handle = b.atomic_rmw(kind, ptr.handle, val.handle, mask.handle if mask is not None else None, sem, scope)
    return tensor(handle, val.type)


def atomic_rmw(name: str, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any, b: Builder) -> tensor:
    sem = _option(sem, _SEMANTICS, "sem", name)
    scope = _option(scope, _SCOPES, "scope", name)
    ptr, (val,), mask_t = _operands(pointer, [val], mask, name, b)
    elem = ptr.dtype.element_ty
    op = name[len("atomic_"):]
    if op == "add":
        return _rmw("fadd" if elem.is_floating() else "add", ptr, val, mask_t, sem, scope, b)
    if op in ("max", "min"):
        if elem.is_floating():
            return _rmw("f" + op, ptr, val, mask_t, sem, scope, b)
        return _rmw(("u" if elem.is_int_unsigned() else "") + op, ptr, val, mask_t, sem, scope, b)
    return _rmw(op, ptr, val, mask_t, sem, scope, b)


def atomic_cas_impl(pointer: Any, cmp: Any, val: Any, sem: Any, scope: Any, b: Builder) -> tensor:
    sem = _option(sem, _SEMANTICS, "sem", "atomic_cas")
    scope = _option(scope, _SCOPES, "scope", "atomic_cas")
    ptr, (cmp, val), _ = _operands(pointer, [cmp, val], None, "atomic_cas", b)
    return semantic.ir_result(b.atomic_cas(ptr.handle, cmp.handle, val.handle, sem, scope), val.dtype)


def _make(name: str, doc: str):
    def fn(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None,
           _builder: Any = None) -> tensor:
        return atomic_rmw(name, pointer, val, mask, sem, scope, _builder)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + (" Returns the values memory held before; masked-off elements are not touched. "
                        "``sem`` is the memory ordering, ``scope`` the threads it orders with.")
    return builtin(fn)


atomic_add = _make("atomic_add", "Atomically adds ``val`` where ``pointer`` points.")
atomic_max = _make("atomic_max", "Atomically stores the maximum of memory and ``val``.")
atomic_min = _make("atomic_min", "Atomically stores the minimum of memory and ``val``.")
atomic_and = _make("atomic_and", "Atomic bitwise and of memory with ``val``.")
atomic_or = _make("atomic_or", "Atomic bitwise or of memory with ``val``.")
atomic_xor = _make("atomic_xor", "Atomic bitwise xor of memory with ``val``.")
atomic_xchg = _make("atomic_xchg", "Atomically stores ``val``.")


@builtin
def atomic_cas(pointer: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None, _builder: Any = None) -> tensor:
    """Atomically stores ``val`` where memory equals ``cmp``; returns what memory held."""
    return atomic_cas_impl(pointer, cmp, val, sem, scope, _builder)
