"""The builtins kernels call: program ids, ranges, loads and stores, element-wise
math and the compile-time helpers (``static_print``, ``static_assert``).

Part of :mod:`kiln.language.core`, which exports every name here; the type
logic they apply lives in ``semantic.py`` (imported where used: it imports
the core types).
"""

from __future__ import annotations

import builtins
import enum
from typing import Any, Callable, Optional, Sequence

from kiln.errors import CompilationError, CompileTimeAssertionFailure
from kiln.language.core import _constexpr_int, _unwrap, builtin, constexpr, dtype, tensor

__all__ = [
    "program_id", "num_programs", "arange", "load", "store", "cdiv", "minimum", "maximum", "where", "full",
    "zeros", "cast", "expand_dims", "broadcast_to", "static_print", "static_assert", "exp", "exp2", "log",
    "log2", "sqrt", "rsqrt", "sin", "cos", "floor", "ceil", "erf", "tanh", "abs", "add", "sub", "mul",
    "PropagateNan", "sqrt_rn", "fma", "fdiv", "div_rn", "umulhi", "clamp", "sigmoid", "extern_elementwise",
    "inline_asm_elementwise"
]


@builtin
def program_id(axis: int, _builder: Any = None) -> tensor:
    """Index of this program instance along grid axis 0, 1 or 2 (int32)."""
    from kiln.language import semantic
    return semantic.program_id(_constexpr_int(axis, "program_id axis"), _builder)


@builtin
def num_programs(axis: int, _builder: Any = None) -> tensor:
    """Number of program instances along grid axis 0, 1 or 2 (int32)."""
    from kiln.language import semantic
    return semantic.num_programs(_constexpr_int(axis, "num_programs axis"), _builder)


@builtin
def arange(start: int, end: int, _builder: Any = None) -> tensor:
    """The int32 block ``[start, ..., end - 1]``; ``end - start`` is a power of two."""
    from kiln.language import semantic
    return semantic.arange(_constexpr_int(start, "arange start"), _constexpr_int(end, "arange end"), _builder)


@builtin
def load(pointer: tensor, mask: Optional[tensor] = None, other: Any = None, boundary_check: Any = (),
         padding_option: str = "", cache_modifier: str = "", eviction_policy: str = "", volatile: bool = False,
         _builder: Any = None) -> tensor:
    """Loads the elements ``pointer`` points to; where ``mask`` is false the
    result is ``other`` (unspecified if ``other`` is None). Through a block
    pointer (``kl.make_block_ptr``), ``boundary_check`` names the dimensions
    to keep in bounds and ``padding_option`` ("", "zero", "nan") what
    out-of-bounds elements read as."""
    from kiln.language import block_pointer, semantic
    if block_pointer.is_block_pointer(pointer):
        return block_pointer.load(_unwrap(pointer), _unwrap(mask), _unwrap(other), boundary_check,
                                  padding_option, _unwrap(cache_modifier), _unwrap(eviction_policy),
                                  bool(_unwrap(volatile)), _builder)
    _no_block_pointer_options("load", boundary_check, padding_option)
    return semantic.load(pointer, _unwrap(mask), _unwrap(other), _unwrap(cache_modifier),
                         _unwrap(eviction_policy), bool(_unwrap(volatile)), _builder)


@builtin
def store(pointer: tensor, value: Any, mask: Optional[tensor] = None, boundary_check: Any = (),
          cache_modifier: str = "", eviction_policy: str = "", _builder: Any = None) -> None:
    """Stores ``value`` where ``pointer`` points, skipping masked-off elements
    (through a block pointer: skipping elements outside the dimensions named
    in ``boundary_check``)."""
    from kiln.language import block_pointer, semantic
    if block_pointer.is_block_pointer(pointer):
        block_pointer.store(_unwrap(pointer), _unwrap(value), _unwrap(mask), boundary_check,
                            _unwrap(cache_modifier), _unwrap(eviction_policy), _builder)
        return
    _no_block_pointer_options("store", boundary_check, "")
    semantic.store(pointer, _unwrap(value), _unwrap(mask), _unwrap(cache_modifier), _unwrap(eviction_policy),
                   _builder)


def _no_block_pointer_options(what: str, boundary_check: Any, padding_option: Any) -> None:
    """As Triton: boundary_check and padding_option need a block pointer."""
    if _unwrap(boundary_check) not in ((), None, []):
        raise CompilationError(f"{what}: boundary_check needs a block pointer (kl.make_block_ptr); use mask for "
                               f"a block of pointers")
    if _unwrap(padding_option) not in ("", None):
        raise CompilationError(f"{what}: padding_option needs a block pointer (kl.make_block_ptr); use other for "
                               f"a block of pointers")


@builtin
def cdiv(x: Any, div: Any, _builder: Any = None) -> Any:
    """Ceiling division ``(x + div - 1) // div``."""
    from kiln.language import semantic
    x, div = _unwrap(x), _unwrap(div)
    if not isinstance(x, tensor) and not isinstance(div, tensor):
        return (x + div - 1) // div
    return semantic.floordiv(semantic.sub(semantic.add(x, div, _builder), 1, _builder), div, _builder)


@builtin
def minimum(x: Any, y: Any, propagate_nan: Any = None, _builder: Any = None) -> tensor:
    """Element-wise minimum. With ``propagate_nan=kl.PropagateNan.ALL`` a NaN
    in either operand gives NaN; by default (``NONE``) NaNs are ignored."""
    from kiln.language import semantic
    return semantic.minimum(_unwrap(x), _unwrap(y), _builder, _propagate_nan(propagate_nan))


@builtin
def maximum(x: Any, y: Any, propagate_nan: Any = None, _builder: Any = None) -> tensor:
    """Element-wise maximum. With ``propagate_nan=kl.PropagateNan.ALL`` a NaN
    in either operand gives NaN; by default (``NONE``) NaNs are ignored."""
    from kiln.language import semantic
    return semantic.maximum(_unwrap(x), _unwrap(y), _builder, _propagate_nan(propagate_nan))


@builtin
def where(condition: Any, x: Any, y: Any, _builder: Any = None) -> tensor:
    """``x`` where ``condition`` is true, else ``y``, element-wise."""
    from kiln.language import semantic
    return semantic.where(_unwrap(condition), _unwrap(x), _unwrap(y), _builder)


@builtin
def full(shape: Sequence[int], value: Any, dtype: dtype, _builder: Any = None) -> tensor:
    """A block of ``shape`` filled with ``value`` converted to ``dtype``."""
    from kiln.language import semantic
    return semantic.full(_shape(shape), _unwrap(value), _unwrap(dtype), _builder)


@builtin
def zeros(shape: Sequence[int], dtype: dtype, _builder: Any = None) -> tensor:
    """A block of ``shape`` filled with zeros of ``dtype``."""
    from kiln.language import semantic
    return semantic.full(_shape(shape), 0, _unwrap(dtype), _builder)


@builtin
def cast(input: Any, dtype: dtype, fp_downcast_rounding: Optional[str] = None, bitcast: bool = False,
         _builder: Any = None) -> tensor:
    """``input`` converted to ``dtype`` (reinterpreting its bits if
    ``bitcast``); ``fp_downcast_rounding`` ("rtne", the default, or "rtz")
    rounds conversions to a narrower float type. Pointers cast to other
    pointer types and integers, and 64-bit integers to pointers, as in
    Triton (``tensor.to`` says how)."""
    from kiln.language import semantic
    return semantic.cast_with_rounding(semantic.to_tensor(_unwrap(input), _builder), _unwrap(dtype), _builder,
                                       _unwrap(fp_downcast_rounding), bitcast=bool(_unwrap(bitcast)))


@builtin
def expand_dims(input: tensor, axis: Any, _builder: Any = None) -> tensor:
    """``input`` with a new dimension of size one at ``axis``, or at each of
    the axes of a tuple (indices into the result, as in Triton)."""
    from kiln.language import semantic
    x = semantic.to_tensor(_unwrap(input), _builder)
    axis = _unwrap(axis)
    axes = [_constexpr_int(a, "axis") for a in axis] if isinstance(axis, (tuple, list)) else \
        [_constexpr_int(axis, "axis")]
    rank = len(x.shape) + len(axes)
    for a in axes:
        if not -rank <= a < rank:
            raise CompilationError(f"invalid axis {a}. Expected {-rank} <= axis < {rank}")
    axes = [a % rank for a in axes]
    if len(set(axes)) != len(axes):
        raise CompilationError(f"expand_dims received duplicate axes, normalized axes = {axes}")
    for a in sorted(axes):
        x = semantic.expand_dims(x, a, _builder)
    return x


@builtin
def broadcast_to(input: tensor, *shape: Any, _builder: Any = None) -> tensor:
    """``input`` broadcast (numpy rules) to ``shape``: a list or tuple, or the
    sizes as separate arguments (``x.broadcast_to(32, 32)``), as Triton's."""
    from kiln.language import semantic
    if len(shape) == 1 and isinstance(_unwrap(shape[0]), (list, tuple)):
        shape = _unwrap(shape[0])
    return semantic.broadcast_to(semantic.to_tensor(_unwrap(input), _builder), _shape(list(shape)), _builder)


@builtin
def static_print(*values: Any, _builder: Any = None) -> None:
    """Prints constants (and the types of runtime values) while compiling."""
    builtins.print(*[_unwrap(v) for v in values])


@builtin
def static_assert(cond: Any, msg: str = "", _builder: Any = None) -> None:
    """Fails compilation with ``msg`` unless the constant ``cond`` holds."""
    cond = _unwrap(cond)
    if isinstance(cond, tensor):
        raise CompilationError("static_assert needs a compile-time condition, got a runtime value")
    if not cond:
        raise CompileTimeAssertionFailure(f"static_assert failed: {_unwrap(msg)}" if msg else "static_assert failed")


def _shape(shape: Any) -> list[int]:
    shape = _unwrap(shape)
    if isinstance(shape, (int, constexpr)) and not isinstance(shape, bool):
        shape = [shape]
    if not isinstance(shape, (list, tuple)):
        raise CompilationError(f"a shape must be a list of constant integers, got {shape!r}")
    return [_constexpr_int(d, "a shape dimension") for d in shape]


def _math(name: str, op: str, doc: str) -> Callable[..., tensor]:
    def fn(x: Any, _builder: Any = None) -> tensor:
        from kiln.language import semantic
        return semantic.math_unary(op, name, _unwrap(x), _builder)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


exp = _math("exp", "exp", "Element-wise e**x.")
exp2 = _math("exp2", "exp2", "Element-wise 2**x.")
log = _math("log", "log", "Element-wise natural logarithm.")
log2 = _math("log2", "log2", "Element-wise base-2 logarithm.")
sqrt = _math("sqrt", "sqrt", "Element-wise square root.")
rsqrt = _math("rsqrt", "rsqrt", "Element-wise 1 / sqrt(x).")
sin = _math("sin", "sin", "Element-wise sine.")
cos = _math("cos", "cos", "Element-wise cosine.")
floor = _math("floor", "floor", "Element-wise floor.")
ceil = _math("ceil", "ceil", "Element-wise ceiling.")
erf = _math("erf", "erf", "Element-wise error function.")
tanh = _math("tanh", "tanh", "Element-wise hyperbolic tangent.")


@builtin
def abs(x: Any, _builder: Any = None) -> tensor:
    """Element-wise absolute value (integers and floats)."""
    from kiln.language import semantic
    return semantic.abs(_unwrap(x), _builder)


def _arithmetic(name: str, symbol: str) -> Callable[..., tensor]:
    def fn(x: Any, y: Any, sanitize_overflow: Any = True, _builder: Any = None) -> tensor:
        from kiln.language import semantic
        return getattr(semantic, name)(_unwrap(x), _unwrap(y), _builder)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``x {symbol} y`` (Triton's ``tl.{name}``): the operator's promotion and pointer rules. "
                  f"``sanitize_overflow`` is accepted for Triton's signature; Kiln's operator has no overflow "
                  f"check to turn off.")
    return builtin(fn)


add = _arithmetic("add", "+")
sub = _arithmetic("sub", "-")
mul = _arithmetic("mul", "*")


# ---------------------------------------------------------------------------
# Element-wise math beyond the basic functions (triton.language.math)
# ---------------------------------------------------------------------------


class PropagateNan(enum.Enum):
    """Whether kl.minimum, kl.maximum and kl.clamp return NaN when an operand
    is NaN (``ALL``) or the other operand (``NONE``, the default)."""

    NONE = 0x0000
    ALL = 0xFFFF


def _propagate_nan(value: Any) -> PropagateNan:
    value = _unwrap(value)
    if value is None:
        return PropagateNan.NONE
    if not isinstance(value, PropagateNan):
        raise CompilationError(f"propagate_nan must be kl.PropagateNan.NONE or kl.PropagateNan.ALL, got {value!r}")
    return value


def _check_dtypes(name: str, accepted: tuple[str, ...], *args: Any) -> None:
    """Triton's rule: every runtime argument must have one of `accepted`
    element types (Python numbers are converted later)."""
    for arg in args:
        if isinstance(arg, tensor) and arg.dtype.name not in accepted:
            raise CompilationError(f"kl.{name} expects {' or '.join(accepted)} arguments, got {arg.dtype}")


@builtin
def sqrt_rn(x: Any, _builder: Any = None) -> tensor:
    """Element-wise square root, rounded to nearest (IEEE); fp32 only."""
    from kiln.language import semantic
    x = _unwrap(x)
    _check_dtypes("sqrt_rn", ("fp32",), x)
    return semantic.math_unary("sqrt", "sqrt_rn", x, _builder)


@builtin
def fma(x: Any, y: Any, z: Any, _builder: Any = None) -> tensor:
    """Element-wise fused multiply-add ``x * y + z``, rounded once."""
    from kiln.language import semantic
    return semantic.fma(_unwrap(x), _unwrap(y), _unwrap(z), _builder)


@builtin
def fdiv(x: Any, y: Any, ieee_rounding: Any = False, _builder: Any = None) -> tensor:
    """Element-wise floating-point division ``x / y``: as ``/`` (fp32 may be
    approximate on the GPU, within 2 ulp, as Triton's), or correctly rounded
    with ``ieee_rounding``."""
    from kiln.language import semantic
    return semantic.fdiv(_unwrap(x), _unwrap(y), _builder, ieee_rounding=bool(_unwrap(ieee_rounding)))


@builtin
def div_rn(x: Any, y: Any, _builder: Any = None) -> tensor:
    """Element-wise division rounded to nearest (IEEE); fp32 only."""
    from kiln.language import semantic
    x, y = _unwrap(x), _unwrap(y)
    _check_dtypes("div_rn", ("fp32",), x, y)
    return semantic.fdiv(x, y, _builder, ieee_rounding=True)


@builtin
def umulhi(x: Any, y: Any, _builder: Any = None) -> tensor:
    """Element-wise high half of the full unsigned product of two 32- or
    64-bit integers (the operands' bits are read as unsigned)."""
    from kiln.language import semantic
    x, y = _unwrap(x), _unwrap(y)
    _check_dtypes("umulhi", ("int32", "int64", "uint32", "uint64"), x, y)
    return semantic.umulhi(x, y, _builder)


@builtin
def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = PropagateNan.NONE, _builder: Any = None) -> tensor:
    """Element-wise ``minimum(maximum(x, min), max)`` for floating-point
    values; the result is undefined where ``min > max``."""
    from kiln.language import semantic
    return semantic.clamp(_unwrap(x), _unwrap(min), _unwrap(max), _propagate_nan(propagate_nan), _builder)


@builtin
def sigmoid(x: Any, _builder: Any = None) -> tensor:
    """Element-wise ``1 / (1 + exp(-x))``, computed as Triton's
    ``tl.sigmoid`` is (so fp16 and bf16 inputs give fp32, as its division
    does)."""
    from kiln.language import semantic
    return semantic.sigmoid(_unwrap(x), _builder)


@builtin
def extern_elementwise(lib_name: str, lib_path: str, args: Sequence[Any], arg_type_symbol_dict: dict,
                       is_pure: bool = True, _builder: Any = None) -> tensor:
    """Applies an external scalar function element-wise (Triton's
    ``core.extern_elementwise``). ``arg_type_symbol_dict`` maps tuples of
    argument dtypes to ``(symbol, result dtype)``; arguments are broadcast,
    and promoted as arithmetic would when their types are not listed.
    ``lib_name`` and ``lib_path`` are ignored: each backend knows where its
    functions live."""
    from kiln.language import semantic
    if not _unwrap(is_pure):
        raise CompilationError("extern_elementwise supports pure functions only (is_pure=True)")
    return semantic.extern_elementwise("extern_elementwise", [_unwrap(a) for a in args],
                                       _unwrap(arg_type_symbol_dict), _builder)


@builtin
def inline_asm_elementwise(asm: str, constraints: str, args: Sequence[Any], dtype: Any, is_pure: bool, pack: int,
                           _builder: Any = None) -> Any:
    """Runs inline assembly on the elements of ``args`` (Triton's
    ``tl.inline_asm_elementwise``): a map whose function is the assembly
    text ``asm`` (PTX on NVIDIA GPUs).

    ``args`` (tensors, scalars or pointers) are broadcast to one shape
    (without type promotion). ``dtype`` is the element type of the result,
    or a tuple of them for several results (a tuple of tensors is
    returned). Each run of the text handles ``pack`` elements of every
    argument and result; which elements go together is unspecified.
    Elements narrower than 32 bits are packed into 32-bit registers, so
    ``pack=4`` on int8 values passes four of them in one ``r`` register.
    ``constraints`` is LLVM's inline-asm constraint string: the output
    registers first (``$0``, ...), then the inputs. ``is_pure`` says that the
    text has no effect besides its results, so it may be merged with an
    identical call or removed when its results are unused.

    The CPU backend cannot run inline assembly: compiling such a kernel for
    it is a ``CompilationError``.
    """
    from kiln.language import semantic
    from kiln.language.compile_time import current_launch_shape
    launch = current_launch_shape.get()
    if launch is not None and launch.target == "cpu":
        raise CompilationError("inline_asm_elementwise: inline assembly is GPU code (PTX) that the CPU backend "
                               "cannot run")
    asm, constraints, is_pure, pack = _unwrap(asm), _unwrap(constraints), _unwrap(is_pure), _unwrap(pack)
    dtype = _unwrap(dtype)
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise CompilationError("inline_asm_elementwise needs asm and constraints as constant strings")
    if not isinstance(is_pure, (bool, int)):
        raise CompilationError(f"inline_asm_elementwise needs is_pure as a constant bool, got {is_pure!r}")
    if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
        raise CompilationError(f"inline_asm_elementwise needs pack as a positive constant int, got {pack!r}")
    return semantic.inline_asm_elementwise(asm, constraints, [_unwrap(a) for a in _unwrap(args)], dtype,
                                           bool(is_pure), pack, _builder)
