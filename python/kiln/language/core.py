"""The Kiln language: types, tensors and the builtins kernels call.

Users import this package as ``kl`` (``import kiln.language as kl``), the way
Triton users import ``triton.language as tl``, and the names and semantics
follow Triton's public API.

Builtins only make sense while the frontend is generating a kernel: it calls
them with a hidden ``_builder`` keyword argument (the ``kiln._C.ir.Builder``
in use). Called from ordinary Python they raise a ``KilnError`` that says so.
The type logic (promotion, broadcasting, casts) lives in ``semantic.py``.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import sys
from typing import Any, Callable, Optional, Sequence, TypeVar

from kiln.errors import CompilationError, CompileTimeAssertionFailure, KilnError

__all__ = [
    "constexpr", "constexpr_type", "dtype", "pointer_type", "block_type", "tensor",
    "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16",
    "void", "str_to_ty",
    "TRITON_MAX_TENSOR_NUMEL",
    "program_id", "num_programs", "arange", "load", "store", "cdiv", "minimum", "maximum",
    "where", "full", "zeros", "cast", "expand_dims", "broadcast_to", "static_print", "static_assert",
    "range", "static_range", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "abs",
    "floor", "ceil", "erf", "tanh", "builtin",
]
__all__ += ["PropagateNan", "sqrt_rn", "fma", "fdiv", "div_rn", "umulhi", "clamp", "sigmoid", "extern_elementwise",
            "inline_asm_elementwise"]

F = TypeVar("F", bound=Callable[..., Any])


def builtin(fn: F) -> F:
    """Marks ``fn`` as a kernel builtin: the frontend passes ``_builder``.

    Without a builder (called outside a kernel) it raises a clear error
    instead of failing somewhere inside the IR bindings.
    """

    signature = inspect.signature(fn)
    hidden = [name for name in signature.parameters if name in _HIDDEN_PARAMETERS]
    # What a kernel may pass: the parameters without the hidden ones, so a
    # wrong call is reported in the user's terms, never as a clash with
    # `_builder`.
    public = signature.replace(parameters=[p for p in signature.parameters.values()
                                           if p.name not in _HIDDEN_PARAMETERS])
    keywords = {p.name for p in public.parameters.values()
                if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    takes_any_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in public.parameters.values())

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("_builder") is None:
            raise KilnError(f"kiln.language.{fn.__name__}() can only be called inside a @kiln.jit function")
        internal = {name: kwargs.pop(name) for name in hidden if name in kwargs}
        try:
            # As a Python call would, an unknown keyword is named before a
            # missing argument.
            unknown = [name for name in kwargs if name not in keywords]
            if unknown and not takes_any_keyword:
                raise TypeError(f"got an unexpected keyword argument '{unknown[0]}'")
            public.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"bad arguments to {wrapper.__kiln_spelling__}: {e}") from None
        return fn(*args, **kwargs, **internal)

    wrapper.__kiln_builtin__ = True  # type: ignore[attr-defined]
    wrapper.__kiln_spelling__ = _call_spelling(fn, public)  # type: ignore[attr-defined]
    wrapper.__kiln_wants_generator__ = "_generator" in signature.parameters  # type: ignore
    return wrapper  # type: ignore[return-value]


# Parameters the frontend passes to builtins; a kernel never names them.
_HIDDEN_PARAMETERS = ("_builder", "_generator")


def check_kernel_keywords(fn: Any, keywords: Sequence[str]) -> None:
    """Refuses keywords a kernel passes to the builtin ``fn`` that name its
    hidden parameters (the frontend passes those itself).

    Raises:
        TypeError: naming the builtin and the keyword, as for any other
            keyword it does not take.
    """
    for name in keywords:
        if name in _HIDDEN_PARAMETERS:
            raise TypeError(f"bad arguments to {fn.__kiln_spelling__}: got an unexpected keyword argument '{name}'")


def _call_spelling(fn: Callable[..., Any], public: inspect.Signature) -> str:
    """How a kernel calls ``fn``, with its parameters: ``exp(x)``, or
    ``tensor.to(dtype, ...)`` for a method (without ``self``)."""
    parameters = [p.replace(annotation=inspect.Parameter.empty) for p in public.parameters.values()]
    name = fn.__name__
    qualified = getattr(fn, "__qualname__", name)
    if "." in qualified and "<locals>" not in qualified and parameters and parameters[0].name == "self":
        name = qualified
        parameters = parameters[1:]
    return f"{name}({', '.join(str(p) for p in parameters)})"


def wants_generator(fn: Any) -> bool:
    """True for builtins that take ``_generator``: the frontend's code
    generator, through which they call ``@kiln.jit`` functions."""
    return getattr(fn, "__kiln_wants_generator__", False)


def is_builtin(fn: Any) -> bool:
    """True for functions (and bound methods) made with :func:`builtin`."""
    return getattr(fn, "__kiln_builtin__", False)


# ---------------------------------------------------------------------------
# constexpr
# ---------------------------------------------------------------------------


class constexpr:
    """A compile-time constant.

    As an annotation (``BLOCK: kl.constexpr``) it marks a kernel parameter
    whose value is known when the kernel is compiled; as a wrapper
    (``FACTOR = kl.constexpr(4)`` at module level) it marks a global the
    kernel may read.
    """

    def __init__(self, value: Any) -> None:
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __eq__(self, other: Any) -> bool:
        return self.value == (other.value if isinstance(other, constexpr) else other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __index__(self) -> int:
        return self.value.__index__()

    def __int__(self) -> int:
        return int(self.value)

    @property
    def type(self) -> "constexpr_type":
        return constexpr_type(self.value)


class constexpr_type:
    """The type of a compile-time constant, as Triton's
    ``tl.constexpr_type``: ``kl.constexpr(5).type == kl.constexpr_type(5)``.
    Two are equal when their values are equal and of one Python type."""

    def __init__(self, value: Any) -> None:
        self.value = value.value if isinstance(value, constexpr) else value

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, constexpr_type) and type(self.value) is type(other.value)
                and self.value == other.value)

    def __hash__(self) -> int:
        return hash((type(self.value), self.value))

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value!r}]"


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, constexpr) else value


# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------


class dtype:
    """A scalar element type: ``kl.int32``, ``kl.float16``, ...

    ``name`` is Triton's spelling ("int32", "uint8", "fp16", "bf16", ...).
    Unsigned integers are a frontend notion: the IR is signless and the
    frontend picks signed or unsigned ops (divsi/divui, extsi/extui, ...).
    """

    _INT_WIDTHS = {"int1": 1, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
                   "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
    _FLOAT_WIDTHS = {"fp8e4nv": 8, "fp8e5": 8, "fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64,
                     "fp8e4b15": 8, "fp8e4b8": 8, "fp8e5b16": 8}
    # fp8 formats Triton names but no Kiln target computes with (see
    # docs/design/fp8.md): a kernel may name them; building a value of one
    # is an error.
    _UNSUPPORTED = ("fp8e4b15", "fp8e4b8", "fp8e5b16")

    # The scalar type names by kind, as Triton's class attributes (tests
    # parametrize over them: ``map(kl.dtype, kl.dtype.SINT_TYPES)``). As in
    # Triton, the boolean int1 counts as unsigned here (its bits extend with
    # zeros), though ``is_int_unsigned`` names only the uintN types.
    SINT_TYPES = ["int8", "int16", "int32", "int64"]
    UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES = ["fp8e4nv", "fp8e5", "fp16", "bf16", "fp32", "fp64"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES = ["void"]

    def __init__(self, name: str) -> None:
        if (name not in self._INT_WIDTHS and name not in self._FLOAT_WIDTHS and name not in self.OTHER_TYPES
                and name != "ptr" and name != "block"):
            raise KilnError(f"unknown dtype '{name}'")
        self.name = name

    # Predicates, as in Triton.
    def is_floating(self) -> bool:
        return self.name in self._FLOAT_WIDTHS

    def is_fp8(self) -> bool:
        return self.name in ("fp8e4nv", "fp8e5")

    def is_fp8e4nv(self) -> bool:
        return self.name == "fp8e4nv"

    def is_fp8e5(self) -> bool:
        return self.name == "fp8e5"

    def is_fp8e4b15(self) -> bool:
        return self.name == "fp8e4b15"

    def is_fp8e4b8(self) -> bool:
        return self.name == "fp8e4b8"

    def is_fp8e5b16(self) -> bool:
        return self.name == "fp8e5b16"

    def is_fp16(self) -> bool:
        return self.name == "fp16"

    def is_bf16(self) -> bool:
        return self.name == "bf16"

    def is_fp32(self) -> bool:
        return self.name == "fp32"

    def is_fp64(self) -> bool:
        return self.name == "fp64"

    def is_int(self) -> bool:
        return self.name in self._INT_WIDTHS

    def is_bool(self) -> bool:
        return self.name == "int1"

    def is_int_signed(self) -> bool:
        return self.is_int() and not self.name.startswith("u")

    def is_int_unsigned(self) -> bool:
        return self.name.startswith("uint")

    def is_standard_floating(self) -> bool:
        return self.name in self.STANDARD_FP_TYPES

    def is_void(self) -> bool:
        return self.name == "void"

    # One predicate per integer type, as Triton's (x.dtype.is_uint32(), ...).
    def is_int1(self) -> bool:
        return self.name == "int1"

    def is_int8(self) -> bool:
        return self.name == "int8"

    def is_int16(self) -> bool:
        return self.name == "int16"

    def is_int32(self) -> bool:
        return self.name == "int32"

    def is_int64(self) -> bool:
        return self.name == "int64"

    def is_uint8(self) -> bool:
        return self.name == "uint8"

    def is_uint16(self) -> bool:
        return self.name == "uint16"

    def is_uint32(self) -> bool:
        return self.name == "uint32"

    def is_uint64(self) -> bool:
        return self.name == "uint64"

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    @property
    def primitive_bitwidth(self) -> int:
        if self.name == "void":
            raise KilnError("void has no bit width")
        return self._INT_WIDTHS.get(self.name) or self._FLOAT_WIDTHS[self.name]

    @property
    def int_bitwidth(self) -> int:
        return self._INT_WIDTHS[self.name]

    # Each float format's (stored mantissa bits, exponent bias), as Triton's.
    _FLOAT_LAYOUTS = {"fp8e4nv": (3, 7), "fp8e4b8": (3, 8), "fp8e4b15": (3, 15), "fp8e5": (2, 15),
                      "fp8e5b16": (2, 16), "fp16": (10, 15), "bf16": (7, 127), "fp32": (23, 127),
                      "fp64": (52, 1023)}

    def _float_layout(self, what: str) -> tuple[int, int]:
        if self.name not in self._FLOAT_LAYOUTS:
            # AttributeError, as Triton's integer dtypes have no such
            # attribute (hasattr() then answers False).
            raise AttributeError(f"{what} is only defined for floating-point dtypes, not {self.name}")
        return self._FLOAT_LAYOUTS[self.name]

    @property
    def fp_mantissa_width(self) -> int:
        """The number of stored mantissa (fraction) bits: 23 for fp32."""
        return self._float_layout("fp_mantissa_width")[0]

    @property
    def exponent_bias(self) -> int:
        """The exponent bias: 127 for fp32, 7 for fp8e4nv."""
        return self._float_layout("exponent_bias")[1]

    @property
    def scalar(self) -> "dtype":
        return self

    def to_ir(self, builder: Any) -> Any:
        """This type as a ``kiln._C.ir.Type``."""
        if self.name == "void":
            raise KilnError("void is not the type of a value: kernels cannot make tensors or pointers of it")
        if self.name in self._UNSUPPORTED:
            raise CompilationError(f"type {self.name} is not supported in this architecture: the supported fp8 "
                                   f"dtypes are fp8e4nv and fp8e5")
        if self.is_int():
            return getattr(builder, f"i{self.int_bitwidth}_type")()
        if self.is_fp8():
            return builder.i8_type()  # bytes in the IR; see docs/design/fp8.md
        return getattr(builder, {"fp16": "f16_type", "bf16": "bf16_type", "fp32": "f32_type",
                                 "fp64": "f64_type"}[self.name])()

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return (self.name,)

    def __str__(self) -> str:
        return self.name

    def codegen_name(self) -> str:
        """This dtype's name in the language module: ``float32`` for fp32
        (Triton's ``dtype.codegen_name``)."""
        return _DTYPE_PUBLIC_NAMES.get(self.name, self.name)

    def __repr__(self) -> str:
        # An expression naming this dtype, as Triton's repr is: under the
        # Triton alias programs spell the module triton.language (and the
        # expression evaluates there), elsewhere Kiln's kl.
        return f"{_language_module_spelling()}.{self.codegen_name()}"


class const:
    """Marks a pointer parameter as pointing to constant data, as an
    annotation (``in_ptr: kl.const``), as Triton's ``tl.const``: the kernel
    sees a ``pointer_type(..., const=True)``, and storing through it (or an
    atomic on it) is a compile error."""


class pointer_type(dtype):
    """A pointer to ``element_ty`` elements in global memory (``*fp32``);
    ``const`` pointers (``*kfp32``) may only be read."""

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False) -> None:
        if not isinstance(element_ty, dtype) or isinstance(element_ty, block_type):
            raise KilnError(f"pointer_type needs a scalar element dtype, got {element_ty!r}")
        self.name = "ptr"
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = bool(const)

    def is_ptr(self) -> bool:
        return True

    def to_ir(self, builder: Any) -> Any:
        return builder.ptr_type(self.element_ty.to_ir(builder), self.address_space)

    def _key(self) -> tuple:
        return ("ptr", self.element_ty._key(), self.address_space, self.const)

    def __str__(self) -> str:
        return f"pointer<const {self.element_ty}>" if self.const else f"pointer<{self.element_ty}>"

    __repr__ = __str__


# The most elements one block may hold, as in Triton: larger blocks would
# make the lowering unroll millions of values per thread (LLVM runs out of
# memory after minutes) and could not run well anyway.
TRITON_MAX_TENSOR_NUMEL = 1048576


def validate_block_shape(shape: Sequence[int]) -> int:
    """The number of elements of a block of ``shape``.

    Raises:
        ValueError: when it exceeds ``TRITON_MAX_TENSOR_NUMEL`` (Triton's
            wording, which tuning scripts match to skip such configs).
    """
    numel = 1
    for d in shape:
        numel *= int(d)
    if numel > TRITON_MAX_TENSOR_NUMEL:
        raise ValueError(f"numel ({numel}) exceeds triton maximum tensor numel ({TRITON_MAX_TENSOR_NUMEL})")
    return numel


class block_type(dtype):
    """A block of ``element_ty`` with a static shape of powers of two, of at
    most ``TRITON_MAX_TENSOR_NUMEL`` elements: every op that makes a block
    makes its type here, so the cap holds for all of them."""

    def __init__(self, element_ty: dtype, shape: Sequence[int]) -> None:
        self.name = "block"
        self.element_ty = element_ty
        self.shape = [int(d) for d in shape]
        self.numel = validate_block_shape(self.shape)

    def is_block(self) -> bool:
        return True

    @property
    def scalar(self) -> dtype:
        return self.element_ty

    def to_ir(self, builder: Any) -> Any:
        return builder.block_type(self.element_ty.to_ir(builder), self.shape)

    def _key(self) -> tuple:
        return ("block", self.element_ty._key(), tuple(self.shape))

    def __str__(self) -> str:
        return f"<{self.shape}, {self.element_ty}>"

    __repr__ = __str__


int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float8e4b15 = dtype("fp8e4b15")
float8e4b8 = dtype("fp8e4b8")
float8e5b16 = dtype("fp8e5b16")
void = dtype("void")

def _language_module_spelling() -> str:
    """How programs in this process name the language module: ``kl``, or
    ``triton.language`` while ``import triton`` resolves to Kiln."""
    compat = sys.modules.get("kiln.compat")
    return "triton.language" if compat is not None and compat.installed() else "kl"


_DTYPE_PUBLIC_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
                       "fp8e4nv": "float8e4nv", "fp8e5": "float8e5", "fp8e4b15": "float8e4b15",
                       "fp8e4b8": "float8e4b8", "fp8e5b16": "float8e5b16"}

# Triton's signature strings ("*fp32", "i32", "u8") to dtypes.
_SIGNATURE_SCALARS = {
    "i1": int1, "i8": int8, "i16": int16, "i32": int32, "i64": int64,
    "u1": int1, "u8": uint8, "u16": uint16, "u32": uint32, "u64": uint64,
    "fp16": float16, "bf16": bfloat16, "fp32": float32, "fp64": float64,
    "fp8e4nv": float8e4nv, "fp8e5": float8e5,
}


_SIGNATURE_NAMES = {ty.name: text for text, ty in _SIGNATURE_SCALARS.items() if text != "u1"}


def dtype_from_signature(text: str) -> dtype:
    """Parses a signature type string: "*fp32" -> pointer_type(float32);
    "*kfp32" is a const pointer (Triton's spelling)."""
    if text.startswith("*k"):
        return pointer_type(dtype_from_signature(text[2:]), const=True)
    if text.startswith("*"):
        return pointer_type(dtype_from_signature(text[1:]))
    if text == "nvTmaDesc":
        # A TMA tensor map: opaque bytes in the parameter space, addressed
        # generically (see kiln.load's tensor map).
        return pointer_type(int8, address_space=0)
    if text not in _SIGNATURE_SCALARS:
        raise KilnError(f"unsupported signature type '{text}'; expected one of "
                        f"{', '.join(sorted(_SIGNATURE_SCALARS))}, or '*' followed by one")
    return _SIGNATURE_SCALARS[text]


def str_to_ty(name: str, c: Any = None) -> dtype:
    """The dtype a signature type string names, as Triton's ``str_to_ty``:
    ``"fp32"`` -> ``float32``, ``"*u8"`` -> ``pointer_type(uint8)``,
    ``"*kfp32"`` -> ``pointer_type(float32, const=True)``, ``"u1"`` /
    ``"i1"`` -> ``int1``, ``"void"`` -> ``void``. The canonical
    strings are the values of
    ``kiln.runtime.jit.type_canonicalisation_dict``.

    ``c`` is Triton's constexpr value for ``"constexpr"``, which Kiln does
    not type (a constexpr parameter is compiled in, not typed).

    Raises:
        KilnError: for a string that names no type Kiln supports.
    """
    if not isinstance(name, str):
        raise KilnError(f"str_to_ty expects a type string such as '*fp32' or 'i32', got {name!r}")
    if name == "void":
        return void
    return dtype_from_signature(name)


def signature_name(ty: dtype) -> str:
    """The inverse of :func:`dtype_from_signature` (used to mangle names)."""
    if isinstance(ty, pointer_type):
        return ("Pk" if ty.const else "P") + signature_name(ty.element_ty)
    if isinstance(ty, block_type):
        return signature_name(ty.element_ty) + "x" + "x".join(str(d) for d in ty.shape)
    if ty.name not in _SIGNATURE_NAMES:
        ty.to_ir(None)  # names the fp8 formats Kiln does not compute with
        raise CompilationError(f"values of type {ty!r} cannot be kernel arguments")
    return _SIGNATURE_NAMES[ty.name]


# ---------------------------------------------------------------------------
# tensor
# ---------------------------------------------------------------------------


class tensor:
    """A runtime value of a kernel: a scalar or a block, with its dtype.

    ``handle`` is the ``kiln._C.ir.Value``; ``type`` is the full type (a
    ``block_type`` for blocks); ``dtype`` is the element type.
    """

    def __init__(self, handle: Any, type: dtype) -> None:
        self.handle = handle
        self.type = type
        self.dtype = type.scalar
        self.shape = list(type.shape) if isinstance(type, block_type) else []

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self) -> str:
        return f"tensor({self.type})"

    def __bool__(self) -> bool:
        raise CompilationError("a runtime value cannot be used as a Python bool here; "
                               "use it in an `if` or kl.where, or make it a kl.constexpr")

    __hash__ = object.__hash__

    # Operators. The frontend applies them through semantic.py directly; these
    # exist so that builtins written in Python can use operators too.
    def _op(name: str, swap: bool = False) -> Callable[..., "tensor"]:  # noqa: N805
        def method(self: "tensor", other: Any, _builder: Any = None) -> "tensor":
            from kiln.language import semantic
            if _builder is None:
                raise KilnError("tensor operators can only be used inside a @kiln.jit function")
            lhs, rhs = (other, self) if swap else (self, other)
            return getattr(semantic, name)(lhs, rhs, _builder)
        method.__kiln_builtin__ = True  # type: ignore[attr-defined]
        return method

    __add__, __radd__ = _op("add"), _op("add", True)
    __sub__, __rsub__ = _op("sub"), _op("sub", True)
    __mul__, __rmul__ = _op("mul"), _op("mul", True)
    __truediv__, __rtruediv__ = _op("truediv"), _op("truediv", True)
    __floordiv__, __rfloordiv__ = _op("floordiv"), _op("floordiv", True)
    __mod__, __rmod__ = _op("mod"), _op("mod", True)
    __and__, __rand__ = _op("and_"), _op("and_", True)
    __or__, __ror__ = _op("or_"), _op("or_", True)
    __xor__, __rxor__ = _op("xor_"), _op("xor_", True)
    __lshift__, __rlshift__ = _op("lshift"), _op("lshift", True)
    __rshift__, __rrshift__ = _op("rshift"), _op("rshift", True)
    __lt__, __le__ = _op("less_than"), _op("less_equal")
    __gt__, __ge__ = _op("greater_than"), _op("greater_equal")
    __eq__, __ne__ = _op("equal"), _op("not_equal")  # type: ignore[assignment]
    del _op

    @builtin
    def __neg__(self, _builder: Any = None) -> "tensor":
        from kiln.language import semantic
        return semantic.minus(self, _builder)

    @builtin
    def __invert__(self, _builder: Any = None) -> "tensor":
        from kiln.language import semantic
        return semantic.invert(self, _builder)

    @builtin
    def to(self, dtype: dtype, fp_downcast_rounding: Optional[str] = None, bitcast: bool = False,
           _builder: Any = None) -> "tensor":
        """This value converted to ``dtype`` (a bit cast if ``bitcast``);
        ``fp_downcast_rounding`` ("rtne", "rtz") rounds narrowing float
        conversions. Pointers cast as in Triton: to another pointer type
        (the same addresses), to an integer (the address; to int1, whether
        it is not null), and from a 64-bit integer."""
        from kiln.language import semantic
        return semantic.cast_with_rounding(self, _unwrap(dtype), _builder, _unwrap(fp_downcast_rounding),
                                           bitcast=bool(_unwrap(bitcast)))

    @builtin
    def cast(self, dtype: dtype, fp_downcast_rounding: Optional[str] = None, bitcast: bool = False,
             _builder: Any = None) -> "tensor":
        """Another spelling of :meth:`to` (as Triton's ``tensor.cast``)."""
        from kiln.language import semantic
        return semantic.cast_with_rounding(self, _unwrap(dtype), _builder, _unwrap(fp_downcast_rounding),
                                           bitcast=bool(_unwrap(bitcast)))


def _constexpr_int(value: Any, what: str) -> int:
    value = _unwrap(value)
    if isinstance(value, tensor):
        raise CompilationError(f"{what} must be a compile-time constant (kl.constexpr), got a runtime value")
    if isinstance(value, bool) or not isinstance(value, int):
        raise CompilationError(f"{what} must be an integer constant, got {value!r}")
    return value


# ---------------------------------------------------------------------------
# Loop iterators (the frontend interprets them in `for` statements)
# ---------------------------------------------------------------------------


class range:
    """``for i in kl.range(start, end, step)``: a loop compiled to ``scf.for``.

    Same as Python's ``range`` inside kernels. Only meaningful as the
    iterator of a ``for`` statement in a kernel. ``num_stages`` overrides
    the kernel's software-pipelining depth for this loop (a constexpr
    integer of at least 1). ``warp_specialize=True`` (a constexpr bool)
    asks, on sm_90a, for a warpgroup of producer warps that issues the
    loop's TMA copies while the kernel's warps compute, and ``False``
    declines one; left at None, the compiler decides (it specializes
    attention's loop on 8 warps). A loop that cannot be split runs as it
    would without the request, and other targets ignore it (see
    docs/design/warp_specialization.md).
    """

    def __init__(self, arg1: Any, arg2: Any = None, step: Any = None, num_stages: Any = None,
                 loop_unroll_factor: Any = None, disallow_acc_multi_buffer: Any = False, flatten: Any = False,
                 warp_specialize: Any = None, disable_licm: Any = False) -> None:
        # num_stages sets this loop's pipelining depth (as the kernel's
        # num_stages does for every loop) and warp_specialize asks for a
        # producer warpgroup; Triton's other scheduling hints are accepted
        # and ignored: Kiln's pipeline makes those choices.
        del loop_unroll_factor, disallow_acc_multi_buffer, flatten, disable_licm
        self.num_stages = num_stages
        self.warp_specialize = warp_specialize
        if arg2 is None:
            self.start, self.end = 0, arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = 1 if step is None else step

    def __iter__(self):
        raise KilnError("kl.range can only be used as the iterator of a for loop inside a @kiln.jit function")


class condition:
    """``while kl.condition(cond, disable_licm=False):``: the condition of a
    ``while`` loop with hints for the compiler, as Triton's ``tl.condition``.

    The loop runs while ``cond`` holds, exactly as ``while cond:``.
    ``disable_licm=True`` asks that loop-invariant code not be hoisted out
    of the loop; Kiln accepts the hint (a constexpr bool) and does not act
    on it yet, as it does ``kl.range``'s ``disable_licm``: the result is the
    same either way. Only meaningful as the test of a ``while`` statement in
    a kernel.
    """

    def __init__(self, arg: Any, disable_licm: Any = False) -> None:
        self.condition = arg
        self.disable_licm = disable_licm

    def __bool__(self) -> bool:
        raise KilnError("kl.condition(...) can only be the test of a while loop")


class slice:  # noqa: A001 - Triton's name
    """A slice written in a kernel, as Triton's ``tl.slice``: ``t[1:3]``
    builds one (``kl.slice(1, 3, None)``), and so may a kernel itself.

    Its bounds are compile-time values. It indexes tuples as Python's slice
    does (``t[kl.slice(1, None, None)]`` is ``t[1:]``), and a block with all
    three None, as ``:`` (a whole axis)."""

    def __init__(self, start: Any, stop: Any, step: Any) -> None:
        self.start = _unwrap(start)
        self.stop = _unwrap(stop)
        self.step = _unwrap(step)

    def to_python(self) -> builtins.slice:
        """The Python slice with the same bounds."""
        return builtins.slice(self.start, self.stop, self.step)

    def __repr__(self) -> str:
        return f"slice({self.start!r}, {self.stop!r}, {self.step!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, slice) and (self.start, self.stop, self.step) == (other.start, other.stop, other.step)

    def __hash__(self) -> int:
        return hash((self.start, self.stop, self.step))


class static_range(range):
    """``for i in kl.static_range(start, end, step)``: a loop unrolled while
    compiling; its bounds must be compile-time constants and ``i`` is one."""

    def __iter__(self):
        raise KilnError("kl.static_range can only be used as the iterator of a for loop inside a @kiln.jit "
                        "function")


# The builtins (program ids, memory, element-wise math) live in
# core_builtins.py, which builds on the types above; they are this module's
# names too, as in Triton's ``triton.language.core``.
from kiln.language.core_builtins import (program_id, num_programs, arange, load, store, cdiv, minimum, maximum, where,
                                         full, zeros, cast, expand_dims, broadcast_to, static_print, static_assert,
                                         exp, exp2, log, log2, sqrt, rsqrt, sin, cos, floor, ceil, erf, tanh, abs, add,
                                         sub, mul, PropagateNan, sqrt_rn, fma, fdiv, div_rn, umulhi, clamp, sigmoid,
                                         extern_elementwise, inline_asm_elementwise)  # noqa: E402
