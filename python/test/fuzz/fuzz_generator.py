"""Random `@kiln.jit` kernels for the fuzzer, seeded and deterministic.

`generate(seed)` returns a `Case`: the text of a Python module holding one
kernel (and the jit helpers it calls), the arguments to launch it with and,
for a valid kernel, what it must write (from `fuzz_reference`). A case is
either valid, built from typed expression trees over blocks and scalars
(arithmetic, comparisons, bitwise ops, casts, math functions, `kl.where`,
reductions, `kl.full`/`kl.zeros`, broadcasting in 1-D and 2-D blocks,
masked loads with `other`, constexprs, runtime and constexpr `if`, `for`
and `while` loops, helper calls, every integer and float dtype), or a
valid kernel with one deliberate mistake (a type error, a shape mismatch, an
unsupported construct, a wrong arity, an undefined name, a bad constexpr or
bad launch arguments), which must end in a clean error.
"""

from __future__ import annotations

import operator
import random
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

import fuzz_reference as ref
from fuzz_reference import DType, Value

KERNEL_NAME = "fuzz_kernel"


# ---------------------------------------------------------------------------
# Expression trees
# ---------------------------------------------------------------------------


class Node:
    """An expression: its kl type, shape, source text and reference value."""

    dtype: DType
    shape: tuple[int, ...]

    def source(self) -> str:
        raise NotImplementedError

    def evaluate(self, env: dict[str, Value]) -> Value:
        raise NotImplementedError


@dataclass
class Var(Node):
    name: str
    dtype: DType
    shape: tuple[int, ...]
    text: Optional[str] = None  # e.g. "xr[:, None]" for a broadcast view

    def source(self) -> str:
        return self.text or self.name

    def evaluate(self, env: dict[str, Value]) -> Value:
        value = env[self.name]
        if self.text is not None and value.shape != self.shape:
            value = ref.expand(value, 1 if self.text.endswith("[:, None]") else 0)
        return value


@dataclass
class Binary(Node):
    """`a op b`, with an optional Python literal on one side."""

    op: str
    a: Node
    b: Node
    dtype: DType = field(init=False)
    shape: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.dtype = binary_type(self.op, self.a.dtype, self.b.dtype)
        self.shape = tuple(np.broadcast_shapes(self.a.shape, self.b.shape))

    def source(self) -> str:
        return f"({self.a.source()} {self.op} {self.b.source()})"

    def evaluate(self, env: dict[str, Value]) -> Value:
        a, b = self.a.evaluate(env), self.b.evaluate(env)
        if self.op in COMPARISONS:
            return ref.compare(self.op, a, b, ref.computation_type(a.dtype, b.dtype))
        if self.op == "/" and a.dtype.is_int and b.dtype.is_int:
            a, b = ref.cast(a, ref.FLOAT32), ref.cast(b, ref.FLOAT32)
        ty = ref.computation_type(a.dtype, b.dtype, self.op in ("/", "//", "%"))
        return ref.binary(self.op, a, b, ty)


@dataclass
class Literal(Node):
    """A Python number written in the kernel, typed by its neighbour."""

    value: object
    dtype: DType
    shape: tuple[int, ...] = ()
    text: Optional[str] = None  # a constexpr parameter's name

    def source(self) -> str:
        return self.text or repr(self.value)

    def evaluate(self, env: dict[str, Value]) -> Value:
        # An unrolled loop's variable takes its value from the iteration.
        value = int(env[self.text].v) if self.text in env else self.value
        return ref.make(self.dtype, np.array(value, dtype=object if not self.dtype.is_float else np.float64))


@dataclass
class Call(Node):
    """`kl.fn(args...)` or a method; `evaluate_fn` gives the reference."""

    text: str  # format string over the arguments' sources: "kl.exp({0})"
    args: list[Node]
    dtype: DType
    shape: tuple[int, ...]
    evaluate_fn: Callable[..., Value]

    def source(self) -> str:
        return self.text.format(*(a.source() for a in self.args))

    def evaluate(self, env: dict[str, Value]) -> Value:
        return self.evaluate_fn(*(a.evaluate(env) for a in self.args))


COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
PYTHON_COMPARISONS: dict[str, Callable[[int, int], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
# Conditions on a loop's variable, as written and as evaluated.
LOOP_TESTS: tuple[tuple[str, Callable[[int], bool]], ...] = (
    ("{0} % 2 == 0", lambda i: i % 2 == 0), ("{0} > 0", lambda i: i > 0), ("{0} == 1", lambda i: i == 1))
ARITHMETIC = ("+", "-", "*", "/", "//", "%")
BITWISE = ("&", "|", "^", "<<", ">>")


def binary_type(op: str, a: DType, b: DType) -> DType:
    if op in COMPARISONS:
        return ref.INT1
    if op == "/" and a.is_int and b.is_int:
        return ref.FLOAT32
    return ref.computation_type(a, b, op in ("/", "//", "%"))


def literal_node(value: object, other: Node) -> Literal:
    ty = other.dtype
    if isinstance(value, int) and ty.is_int and ty.kind != "b":
        # A literal takes an integer neighbour's type and must fit it (as in
        # Triton): one that would not is wrapped into its range.
        lo, hi = ty.bounds
        value = lo + (value - lo) % (hi - lo + 1)
    return Literal(value, ref.literal_type(value, ty))


def same_signedness(a: Node, b: Node) -> tuple[Node, Node]:
    """Operands of /, // or % made both signed or both unsigned: the
    language refuses to divide a signed integer by an unsigned one (or the
    reverse). A literal becomes 7, which fits every type; otherwise b is
    cast to a's type."""
    ta, tb = a.dtype, b.dtype
    if not (ta.is_int and tb.is_int) or "b" in (ta.kind, tb.kind) or (ta.kind == "u") == (tb.kind == "u"):
        return a, b
    if isinstance(a, Literal):
        return literal_node(7, b), b
    if isinstance(b, Literal):
        return a, literal_node(7, a)
    return a, cast_node(b, ta)


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------


@dataclass
class Argument:
    """One kernel argument: an array (pointer), a scalar or a constexpr."""

    name: str
    kind: str  # "array", "int", "float", "constexpr"
    dtype: Optional[DType] = None
    values: Optional[np.ndarray] = None  # arrays: float64 or object (ints)
    scalar: object = None


@dataclass
class Case:
    """A generated kernel and how to launch and check it."""

    seed: int
    source: str
    arguments: list[Argument]
    grid: object
    expect: str  # "ok", "error" (compile or launch), "ok-or-error"
    what: str  # the mutation of an invalid case, or "valid"
    # Expected contents of each output array, by argument name: (dtype, Value).
    outputs: dict[str, tuple[DType, Value]] = field(default_factory=dict)
    known: Optional[str] = None  # a known issue the case may run into
    unchecked: Optional[str] = None  # why the output is not compared, if it is not
    checked: bool = False  # launch with bounds checks (KILN_CPU_CHECKED)
    launch_extra: dict = field(default_factory=dict)  # extra keyword arguments
    launch_drop: Optional[str] = None  # an argument left out of the launch
    # Lines of `source` that a compile error of an invalid case may name
    # (None: any line of the kernel or its helpers).
    error_lines: Optional[list[int]] = None


def _data(rng: random.Random, ty: DType, size: int) -> np.ndarray:
    """Random elements exactly representable in `ty`: mostly small, with
    the type's extremes now and then (integers) to exercise wrapping."""
    if ty.kind == "b":
        return np.array([rng.randint(0, 1) for _ in range(size)], dtype=object)
    if ty.is_float:
        scale = rng.choice((0.25, 0.5, 1.0))
        span = 8 if ty.bits == 16 else rng.choice((8, 64))
        values = np.array([rng.randint(-span * 4, span * 4) * scale / 4 for _ in range(size)], dtype=np.float64)
        if ty.name == "bfloat16":
            import torch
            values = torch.tensor(values).to(torch.bfloat16).to(torch.float64).numpy()
        elif ty.name == "float16":
            values = values.astype(np.float16).astype(np.float64)
        return values
    lo, hi = ty.bounds
    out = []
    for _ in range(size):
        roll = rng.random()
        if roll < 0.05:
            out.append(lo)
        elif roll < 0.10:
            out.append(hi)
        else:
            out.append(max(lo, min(hi, rng.randint(-100, 100))))
    return np.array(out, dtype=object)


class Generator:
    """Builds one case from a seeded random source."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.lines: list[str] = []
        self.helpers: list[str] = []
        self.helper_count = 0
        self.temp_count = 0

    # -- leaves -------------------------------------------------------------

    def pick_dtype(self, floats: Optional[bool] = None) -> DType:
        if floats is None:
            return self.rng.choice(ref.ALL)
        return self.rng.choice(ref.FLOATS if floats else ref.INTEGERS)

    def leaf(self, scope: list[Var], shape: tuple[int, ...]) -> Node:
        fitting = [v for v in scope if _broadcasts(v.shape, shape)]
        # Favour the temporaries, so that statements build on each other.
        temporaries = [v for v in fitting if v.name.startswith("t")]
        if temporaries and self.rng.random() < 0.5:
            return self.rng.choice(temporaries)
        return self.rng.choice(fitting)

    # -- expressions --------------------------------------------------------

    def expression(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        """A random valid expression whose shape broadcasts to `shape`."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.2:
            return self.leaf(scope, shape)
        roll = rng.random()
        if roll < 0.35:
            return self.arithmetic(scope, shape, depth)
        if roll < 0.45:
            return self.bitwise(scope, shape, depth)
        if roll < 0.55:
            return self.conversion(scope, shape, depth)
        if roll < 0.65:
            return self.math(scope, shape, depth)
        if roll < 0.75:
            return self.select(scope, shape, depth)
        if roll < 0.82:
            return self.extreme(scope, shape, depth)
        if roll < 0.88:
            return self.unary(scope, shape, depth)
        if roll < 0.93:
            return self.reduction(scope, shape, depth)
        if roll < 0.97:
            return self.rearrangement(scope, depth)
        return self.creation(shape)

    def operand(self, scope: list[Var], shape: tuple[int, ...], depth: int, other: Optional[Node] = None) -> Node:
        if other is not None and self.rng.random() < 0.25:
            return self.literal_for(other)
        return self.expression(scope, shape, depth - 1)

    def literal_for(self, other: Node) -> Literal:
        rng = self.rng
        if other.dtype.is_float or rng.random() < 0.15:
            return literal_node(rng.choice((0.5, 1.0, 2.0, -3.0, 0.25, 1.5)), other)
        value = rng.choice((0, 1, 2, 3, 5, 7, -1, -2, 16, 100, 127, 255, 300, 40000, 2**31 + 5))
        return literal_node(value, other)

    def arithmetic(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        rng = self.rng
        op = rng.choice(ARITHMETIC + ("+", "-", "*"))
        a = self.expression(scope, shape, depth - 1)
        if op in ("//", "%"):
            b = self.divisor(scope, shape, depth, a)
            if op == "//" and (a.dtype.is_float or b.dtype.is_float):
                a = self.as_int(a)
                b = self.divisor(scope, shape, depth, a, ints=True)
        else:
            b = self.operand(scope, shape, depth, a)
        if op not in ("//", "%") and rng.random() < 0.5:
            a, b = b, a
        if isinstance(a, Literal) and isinstance(b, Literal):
            a = self.leaf(scope, shape)
        if op in ("/", "//", "%"):
            a, b = same_signedness(a, b)
        return Binary(op, a, b)

    def divisor(self, scope: list[Var], shape: tuple[int, ...], depth: int, dividend: Node,
                ints: bool = False) -> Node:
        """A divisor that is mostly never zero (a zero gives an unspecified
        value, which the reference does not compare, but must not trap)."""
        rng = self.rng
        if rng.random() < 0.3:
            return literal_node(rng.choice((1, 2, 3, 7, 16, -5)), dividend)
        base = self.expression(scope, shape, depth - 1)
        if base.dtype.is_float and not ints:
            return base
        base = self.as_int(base)
        if rng.random() < 0.1:
            return base
        # (b | 1) is odd, never zero; for a signed type -1 is still possible,
        # so INT_MIN // -1 stays reachable.
        odd = Binary("|", base, literal_node(1, base))
        if rng.random() < 0.5:
            shifted = Binary("&", base, literal_node(6, base))
            return Binary("+", shifted, literal_node(1, shifted))
        return odd

    def as_int(self, node: Node) -> Node:
        if node.dtype.is_int and node.dtype.kind != "b":
            return node
        ty = self.pick_dtype(floats=False)
        return cast_node(node, ty)

    def bitwise(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        rng = self.rng
        op = rng.choice(BITWISE)
        a = self.as_int(self.expression(scope, shape, depth - 1))
        if op in ("<<", ">>"):
            amount = rng.choice((0, 1, 3, 7))
            if rng.random() < 0.5:
                return Binary(op, a, literal_node(amount, a))
            b = self.as_int(self.expression(scope, shape, depth - 1))
            width = ref.computation_type(a.dtype, b.dtype).bits
            # Keep the amount in range so the result is defined (an
            # out-of-range amount is undefined and merely not compared).
            return Binary(op, a, Binary("&", b, literal_node(width - 1 if rng.random() < 0.9 else 127, b)))
        b = self.operand(scope, shape, depth, a)
        if not b.dtype.is_int or isinstance(b, Literal) and isinstance(b.value, float):
            b = self.as_int(self.expression(scope, shape, depth - 1))
        return Binary(op, a, b)

    def conversion(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        node = self.expression(scope, shape, depth - 1)
        target = ref.INT1 if self.rng.random() < 0.08 else self.pick_dtype()
        return cast_node(node, target, style=self.rng.choice(("to", "cast")))

    def math(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        rng = self.rng
        name = rng.choice(tuple(ref.MONOTONE) + tuple(ref.PERIODIC))
        x = self.expression(scope, shape, depth - 1)
        if not x.dtype.is_float:
            x = cast_node(x, self.pick_dtype(floats=True))
        if name in ("exp", "exp2", "sigmoid"):
            # Keep exp's argument small enough that the result is finite in
            # the narrow types more often than not.
            x = Call("kl.minimum({0}, 8.0)", [x], x.dtype, x.shape,
                     lambda a: ref.binary("min", a, ref.make(a.dtype, np.array(8.0)), a.dtype))
        return Call(f"kl.{name}({{0}})", [x], x.dtype, x.shape, lambda a, name=name: ref.math_function(name, a))

    def select(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        condition = self.condition(scope, shape, depth - 1)
        a = self.expression(scope, shape, depth - 1)
        b = self.operand(scope, shape, depth, a)
        if isinstance(b, Literal) and isinstance(a, Literal):
            a = self.leaf(scope, shape)
        ty = ref.computation_type(a.dtype, b.dtype)
        shape_out = tuple(np.broadcast_shapes(condition.shape, a.shape, b.shape))
        return Call("kl.where({0}, {1}, {2})", [condition, a, b], ty, shape_out,
                    lambda c, x, y: ref.where(c, x, y, ref.computation_type(x.dtype, y.dtype)))

    def condition(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        rng = self.rng
        a = self.expression(scope, shape, depth - 1)
        b = self.operand(scope, shape, depth, a)
        if isinstance(a, Literal) and isinstance(b, Literal):
            a = self.leaf(scope, shape)
        node: Node = Binary(rng.choice(COMPARISONS), a, b)
        if rng.random() < 0.2:
            other = Binary(rng.choice(COMPARISONS), self.leaf(scope, shape), self.literal_for_int(3))
            node = Binary(rng.choice(("&", "|", "^")), node, other)
        return node

    def literal_for_int(self, value: int) -> Literal:
        return Literal(value, ref.INT32)

    def extreme(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        name = self.rng.choice(("maximum", "minimum"))
        a = self.expression(scope, shape, depth - 1)
        b = self.expression(scope, shape, depth - 1)
        ty = ref.computation_type(a.dtype, b.dtype)
        shape_out = tuple(np.broadcast_shapes(a.shape, b.shape))
        op = "max" if name == "maximum" else "min"
        return Call(f"kl.{name}({{0}}, {{1}})", [a, b], ty, shape_out,
                    lambda x, y, op=op: ref.binary(op, x, y, ref.computation_type(x.dtype, y.dtype)))

    def unary(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        rng = self.rng
        a = self.expression(scope, shape, depth - 1)
        kind = rng.choice(("-", "~", "abs"))
        if a.dtype.kind == "b":
            a = cast_node(a, ref.INT32)
        if kind == "-":
            return Call("(-{0})", [a], a.dtype, a.shape, ref.negate)
        if kind == "~":
            a = self.as_int(a)
            return Call("(~{0})", [a], a.dtype, a.shape, ref.invert)
        return Call("kl.abs({0})", [a], a.dtype, a.shape, ref.absolute)

    def reduction(self, scope: list[Var], shape: tuple[int, ...], depth: int) -> Node:
        """kl.sum/max/min of a full block, broadcast back to `shape`."""
        rng = self.rng
        full = self.block_shape
        x = self.expression(scope, full, depth - 1)
        x = self.fit(x, full)
        kind = rng.choice(("sum", "max", "min", "argmax", "argmin", "cumsum"))
        if x.dtype.kind == "b":
            x = cast_node(x, ref.INT32)
        if kind == "cumsum":
            axis = rng.choice(range(len(full)))
            return Call(f"kl.cumsum({{0}}, axis={axis})", [x], ref._sum_type(x.dtype), full,
                        lambda a, axis=axis: ref.cumsum(a, axis))
        if kind.startswith("arg"):
            return self.arg_reduction(kind, x)
        probe = ref.reduce(kind, ref.make(x.dtype, np.zeros((2,))), 0, False).dtype
        if len(full) == 1:
            text = f"kl.{kind}({{0}}, axis=0)" if rng.random() < 0.7 else f"kl.{kind}({{0}})"
            return Call(text, [x], probe, (), lambda a, kind=kind: ref.reduce(kind, a, 0, False))
        axis = rng.choice((0, 1))
        keep = rng.random() < 0.3
        out_shape = (1, full[1]) if axis == 0 else (full[0], 1)
        if keep:
            text = f"kl.{kind}({{0}}, axis={axis}, keep_dims=True)"
        else:
            text = f"kl.{kind}({{0}}, axis={axis})" + ("[None, :]" if axis == 0 else "[:, None]")
        return Call(text, [x], probe, out_shape, lambda a, kind=kind, axis=axis: ref.reduce(kind, a, axis, True))

    def rearrangement(self, scope: list[Var], depth: int) -> Node:
        """A shape op on a full block that gives a block of the same shape:
        flips, reshapes and transposes."""
        full = self.block_shape
        x = self.fit(self.expression(scope, full, depth - 1), full)
        forms: list[tuple[str, Callable[[np.ndarray], np.ndarray]]]
        if len(full) == 1:
            (b,) = full
            forms = [("kl.flip({0}, 0)", lambda v: np.flip(v, 0)),
                     ("kl.ravel(kl.expand_dims({0}, 0))", lambda v: v)]
            if b >= 2:
                half = (2, b // 2)
                forms += [(f"kl.reshape(kl.reshape({{0}}, {half}), ({b},))", lambda v: v),
                          (f"kl.ravel(kl.trans(kl.reshape({{0}}, {half})))", lambda v: v.reshape(half).T.ravel())]
        else:
            bm, bn = full
            forms = [("kl.flip({0}, 0)", lambda v: np.flip(v, 0)), ("kl.flip({0}, 1)", lambda v: np.flip(v, 1)),
                     (f"kl.reshape(kl.trans({{0}}), ({bm}, {bn}))", lambda v: v.T.reshape(full)),
                     (f"kl.reshape(kl.ravel({{0}}), ({bm}, {bn}))", lambda v: v),
                     (f"kl.reshape({{0}}, ({bm * bn},)).reshape({bm}, {bn})", lambda v: v)]
            if bm == bn:
                forms += [("kl.trans({0})", lambda v: v.T), ("kl.permute({0}, (1, 0))", lambda v: v.T)]
        text, fn = self.rng.choice(forms)
        return Call(text, [x], x.dtype, full, lambda a, fn=fn: ref.rearrange(a, fn))

    def arg_reduction(self, kind: str, x: Node) -> Node:
        full = self.block_shape
        axis = self.rng.choice(range(len(full)))
        if len(full) == 1:
            return Call(f"kl.{kind}({{0}}, axis=0)", [x], ref.INT32, (),
                        lambda a, kind=kind: ref.arg_extreme(kind, a, 0, False))
        out_shape = (1, full[1]) if axis == 0 else (full[0], 1)
        text = f"kl.{kind}({{0}}, axis={axis})" + ("[None, :]" if axis == 0 else "[:, None]")
        return Call(text, [x], ref.INT32, out_shape, lambda a, kind=kind, axis=axis: ref.arg_extreme(kind, a, axis, True))

    def creation(self, shape: tuple[int, ...]) -> Node:
        rng = self.rng
        ty = self.pick_dtype()
        shape = self.block_shape if rng.random() < 0.5 or not shape else shape
        dims = "[" + ", ".join(str(d) for d in shape) + "]"
        if rng.random() < 0.3:
            return Call(f"kl.zeros({dims}, kl.{ty.name})", [], ty, shape,
                        lambda ty=ty, shape=shape: ref.make(ty, np.zeros(shape, dtype=object if ty.is_int else float)))
        value = rng.choice((1, 2, -3, 7)) if ty.is_int else rng.choice((0.5, -2.0, 3.0))
        if ty.kind == "u" and value < 0:
            value = 5
        return Call(f"kl.full({dims}, {value!r}, kl.{ty.name})", [], ty, shape,
                    lambda ty=ty, shape=shape, value=value: ref.make(
                        ty, np.full(shape, value, dtype=object if ty.is_int else float)))

    def fit(self, node: Node, shape: tuple[int, ...]) -> Node:
        """`node` broadcast to exactly `shape`."""
        if node.shape == shape:
            return node
        dims = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
        return Call(f"kl.broadcast_to({{0}}, {dims})", [node], node.dtype, shape,
                    lambda a, shape=shape: ref.broadcast_to(a, shape))

    block_shape: tuple[int, ...] = ()


@dataclass
class HelperCall(Node):
    """`name(args...)`: a call of a generated helper whose body (over its
    parameters `a` and `b`) is `body`."""

    name: str
    args: list[Node]
    body: Node

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.body.dtype

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.body.shape

    def source(self) -> str:
        return f"{self.name}({', '.join(a.source() for a in self.args)})"

    def evaluate(self, env: dict[str, Value]) -> Value:
        return self.body.evaluate({"a": self.args[0].evaluate(env), "b": self.args[1].evaluate(env)})


def _broadcasts(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return tuple(np.broadcast_shapes(shape, target)) == tuple(target)
    except ValueError:
        return False


def cast_node(node: Node, ty: DType, style: str = "to") -> Node:
    text = f"{{0}}.to(kl.{ty.name})" if style == "to" else f"kl.cast({{0}}, kl.{ty.name})"
    if isinstance(node, Literal):
        text = f"kl.full([], {{0}}, kl.{node.dtype.name}).to(kl.{ty.name})"
    return Call(text, [node], ty, node.shape, lambda a, ty=ty: ref.cast(a, ty))


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


@dataclass
class Statement:
    """Lines of the kernel body and how they change the reference's
    environment (`run(env)` for one program)."""

    lines: list[str]
    run: Callable[[dict[str, Value]], None]


def _literal_text(values: np.ndarray, ty: DType) -> str:
    if ty.is_float:
        return "[" + ", ".join(repr(float(v)) for v in values.ravel()) + "]"
    return "[" + ", ".join(str(int(v)) for v in values.ravel()) + "]"


def _array_text(values: np.ndarray, ty: DType) -> str:
    """Python text making a CPU array of `ty` holding `values`."""
    if ty.name == "bfloat16":
        return f"torch.tensor({_literal_text(values, ty)}, dtype=torch.bfloat16)"
    if ty.kind == "b":
        return f"np.array({_literal_text(values, ty)}, dtype=np.bool_)"
    return f"np.array({_literal_text(values, ty)}, dtype=np.{ty.name})"


class KernelBuilder(Generator):
    """A valid kernel: loads, a few statements, one or two stores."""

    def build(self) -> Case:
        rng = self.rng
        self.two_d = rng.random() < 0.35
        self.programs = rng.choice((1, 1, 2, 3))
        if self.two_d:
            bm, bn = rng.choice((1, 2, 4, 8, 16, 32)), rng.choice((1, 2, 4, 8, 16, 32))
            self.block_shape = (bm, bn)
            self.block_params = {"BM": bm, "BN": bn}
        else:
            block = rng.choice((1, 2, 4, 16, 32, 64, 128, 256, 1024))
            self.block_shape = (block,)
            self.block_params = {"BLOCK": block}
        self.size = int(np.prod(self.block_shape)) * self.programs
        self.n = rng.randint(max(self.size - int(np.prod(self.block_shape)), 0), self.size)
        self.arguments: list[Argument] = []
        self.body: list[Statement] = []
        self.scope: list[Var] = []
        self.constexprs: dict[str, int] = {}
        # Names the kernel may write where a literal goes: constexprs and
        # arguments specialized to 1.
        self.literals: dict[str, int] = {}
        self.in_helper = False
        self.helper_calls: list[HelperCall] = []

        self.prologue()
        for _ in range(rng.randint(1, 5)):
            self.statement(depth=rng.randint(1, 4))
        outputs = self.epilogue()
        return self.finish(outputs)

    # -- the kernel's parts --------------------------------------------------

    def prologue(self) -> None:
        rng = self.rng
        full = self.block_shape
        if self.two_d:
            lines = ["pid = kl.program_id(0)", "rows = pid * BM + kl.arange(0, BM)", "cols = kl.arange(0, BN)",
                     "offs = rows[:, None] * BN + cols[None, :]", "mask = offs < n"]
        else:
            lines = ["pid = kl.program_id(0)", "offs = pid * BLOCK + kl.arange(0, BLOCK)", "mask = offs < n"]
        if rng.random() < 0.3:
            lines.append("npg = kl.num_programs(0)")
            self.scope.append(Var("npg", ref.INT32, ()))
        # The grid: a tuple of one to three axes, or a function of the
        # meta-parameters; the second axis's program id is always 0.
        self.grid_text = rng.choice(("({P},)", "({P}, 1)", "({P}, 1, 1)", "lambda meta: ({P},)",
                                     "lambda meta: (kiln.cdiv(meta['{B}'] * {P}, meta['{B}']), 1)"))
        self.grid_text = self.grid_text.replace("{P}", str(self.programs)).replace(
            "{B}", next(iter(self.block_params)))
        if "1)" in self.grid_text and rng.random() < 0.5:
            lines.append("pid1 = kl.program_id(1)")
            self.scope.append(Var("pid1", ref.INT32, ()))
        self.body.append(Statement(lines, lambda env: None))
        self.scope += [Var("pid", ref.INT32, ()), Var("offs", ref.INT32, full)]
        for number in range(rng.randint(1, 3)):
            ty = ref.INT1 if rng.random() < 0.05 else self.pick_dtype()
            name, var = f"x{number}", f"v{number}"
            data = _data(rng, ty, self.size)
            self.arguments.append(Argument(name, "array", ty, data))
            if rng.random() < 0.5:
                other = rng.choice((0, 1, 2, 7)) if ty.is_int else rng.choice((0.5, -1.0, 2.0))
                if ty.kind == "b":
                    other = rng.choice((0, 1))
                text = f"{var} = kl.load({self.pointer(name)}, mask=mask, other={other!r})"
                self.body.append(Statement([text], self._masked_load(var, name, ty, other)))
            else:
                self.body.append(Statement([f"{var} = kl.load({self.pointer(name)})"], self._load(var, name, ty)))
            self.scope.append(Var(var, ty, full))
        if self.two_d and rng.random() < 0.6:
            for name, var, index, view in (("xr", "vr", "rows", "[:, None]"), ("xc", "vc", "cols", "[None, :]")):
                ty = self.pick_dtype()
                length = self.block_shape[0] * self.programs if name == "xr" else self.block_shape[1]
                self.arguments.append(Argument(name, "array", ty, _data(rng, ty, length)))
                self.body.append(Statement([f"{var} = kl.load({name} + {index})"], self._vector_load(var, name, index, ty)))
                shape = (full[0], 1) if name == "xr" else (1, full[1])
                self.scope.append(Var(var, ty, shape, text=f"{var}{view}"))
        self.arguments.append(Argument("n", "int", ref.INT32, scalar=self.n))
        for number in range(rng.randint(0, 2)):
            value = rng.choice((0, 1, 2, 3, 5, 16, 100, -7))
            self.arguments.append(Argument(f"s{number}", "int", ref.INT32, scalar=value))
            if value == 1:
                # An integer argument equal to 1 is specialized to the
                # Python int 1 (as in Triton): a literal, not an int32.
                self.literals[f"s{number}"] = 1
            else:
                self.scope.append(Var(f"s{number}", ref.INT32, ()))
        if rng.random() < 0.4:
            value = rng.choice((0.5, -2.25, 3.0, 1.0))
            self.arguments.append(Argument("f0", "float", ref.FLOAT32, scalar=value))
            self.scope.append(Var("f0", ref.FLOAT32, ()))
        if rng.random() < 0.5:
            self.constexprs["C0"] = rng.choice((0, 1, 2, 3, 4, 8))
            self.literals["C0"] = self.constexprs["C0"]

    def pointer(self, name: str) -> str:
        """`name + offs`, written one of several equivalent ways."""
        rng = self.rng
        forms = [f"{name} + offs", f"offs + {name}", f"({name} + 3) + (offs - 3)", f"({name} - 1) + (offs + 1)",
                 f"{name} + offs.to(kl.int64)", f"({name} + pid * 0) + offs"]
        if not self.two_d:
            forms.append(f"({name} + pid * BLOCK) + kl.arange(0, BLOCK)")
        return rng.choice(forms)

    def _load(self, var: str, name: str, ty: DType) -> Callable[[dict[str, Value]], None]:
        def run(env: dict[str, Value]) -> None:
            env[var] = ref.make(ty, self.buffer(name)[env["offs"].v.astype(np.int64)])
        return run

    def _masked_load(self, var: str, name: str, ty: DType, other: object) -> Callable[[dict[str, Value]], None]:
        def run(env: dict[str, Value]) -> None:
            offs = env["offs"].v.astype(np.int64)
            inside = offs < self.n
            data = self.buffer(name)[np.where(inside, offs, 0)]
            values = np.where(inside, data, other)
            env[var] = ref.make(ty, values if ty.is_float else values.astype(object))
        return run

    def _vector_load(self, var: str, name: str, index: str, ty: DType) -> Callable[[dict[str, Value]], None]:
        def run(env: dict[str, Value]) -> None:
            pid = int(env["pid"].v)
            if index == "rows":
                positions = pid * self.block_shape[0] + np.arange(self.block_shape[0])
            else:
                positions = np.arange(self.block_shape[1])
            env[var] = ref.make(ty, self.buffer(name)[positions])
        return run

    def buffer_dtype(self, name: str) -> DType:
        return next(a.dtype for a in self.arguments if a.name == name)

    def buffer(self, name: str) -> np.ndarray:
        return next(a.values for a in self.arguments if a.name == name)

    def scope_leaves(self) -> list[Var]:
        return list(self.scope)

    def new_temp(self) -> str:
        self.temp_count += 1
        return f"t{self.temp_count}"

    def constexpr_operand(self, other: Node) -> Node:
        """A constexpr parameter written where a literal may go."""
        name = self.rng.choice(sorted(self.literals))
        value = self.literals[name]
        return Literal(value, ref.literal_type(value, other.dtype), text=name)

    def operand(self, scope: list[Var], shape: tuple[int, ...], depth: int, other: Optional[Node] = None) -> Node:
        if other is not None and self.literals and not self.in_helper and self.rng.random() < 0.1:
            return self.constexpr_operand(other)
        return super().operand(scope, shape, depth, other)

    def statement(self, depth: int) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.4:
            self.assign(depth)
        elif roll < 0.55:
            self.branch(depth, runtime=True)
        elif roll < 0.62 and self.constexprs:
            self.branch(depth, runtime=False)
        elif roll < 0.77:
            self.loop(depth)
        elif roll < 0.83:
            self.while_loop(depth)
        elif roll < 0.9:
            self.augmented(depth)
        else:
            self.helper_call(depth)

    def assign(self, depth: int) -> None:
        node = self.expression(self.scope_leaves(), self.block_shape, depth)
        name = self.new_temp()
        self.body.append(Statement([f"{name} = {node.source()}"], self._bind(name, node)))
        self.scope.append(Var(name, node.dtype, node.shape))

    @staticmethod
    def _bind(name: str, node: Node) -> Callable[[dict[str, Value]], None]:
        def run(env: dict[str, Value]) -> None:
            env[name] = node.evaluate(env)
        return run

    def typed_full(self, depth: int, ty: DType, extra: Optional[list[Var]] = None) -> Node:
        """A random expression of exactly the block's shape, cast to `ty`."""
        node = self.expression(self.scope_leaves() + (extra or []), self.block_shape, depth)
        return cast_node(self.fit(node, self.block_shape), ty)

    def scalar_condition(self) -> tuple[str, Callable[[dict[str, Value]], bool]]:
        rng = self.rng
        scalars = [v for v in self.scope if v.shape == () and v.name != "pid"]
        choice = rng.random()
        if scalars and choice < 0.6:
            var = rng.choice(scalars)
            op, bound = rng.choice(COMPARISONS), rng.choice((0, 1, 2, 3))
            node = Binary(op, var, literal_node(bound, var))
        elif choice < 0.8:
            node = Binary(rng.choice(COMPARISONS), Var("pid", ref.INT32, ()), Literal(rng.choice((0, 1)), ref.INT32))
        else:
            # A scalar computed from a block: a reduction.
            full = [v for v in self.scope if v.shape == self.block_shape]
            var = rng.choice(full)
            if var.dtype.kind == "b":
                return "pid == 0", lambda env: int(env["pid"].v) == 0
            reduced = Call("kl.max({0}, axis=None)", [var], ref.reduce("max", ref.make(var.dtype, np.zeros(2)), 0,
                                                                        False).dtype, (),
                           lambda a: ref.reduce("max", ref.Value(a.dtype, a.v.ravel(), a.err.ravel(),
                                                                 a.undef.ravel()), 0, False))
            node = Binary(">", reduced, literal_node(0, reduced))

        def decide(env: dict[str, Value]) -> bool:
            value = node.evaluate(env)
            if bool(np.any(value.undef)):
                raise ref.Trap("undecidable branch")
            return bool(value.v)
        return node.source(), decide

    def branch(self, depth: int, runtime: bool) -> None:
        rng = self.rng
        ty = self.pick_dtype()
        name = self.new_temp()
        then = self.typed_full(depth, ty)
        otherwise = self.typed_full(depth, ty)
        if runtime:
            condition, decide = self.scalar_condition()
        else:
            constexpr = rng.choice(sorted(self.constexprs))
            bound = rng.choice((0, 1, 2, 3))
            op = rng.choice(COMPARISONS)
            condition = f"{constexpr} {op} {bound}"
            value = self.constexprs[constexpr]
            outcome = bool(PYTHON_COMPARISONS[op](value, bound))
            decide = lambda env: outcome  # noqa: E731
        otherwise_first = rng.random() < 0.5
        if otherwise_first:
            lines = [f"{name} = {otherwise.source()}", f"if {condition}:", f"    {name} = {then.source()}"]
        else:
            lines = [f"if {condition}:", f"    {name} = {then.source()}", "else:",
                     f"    {name} = {otherwise.source()}"]

        def run(env: dict[str, Value]) -> None:
            # Written before the `if`, `otherwise` always runs (and may trap).
            first = otherwise.evaluate(env) if otherwise_first else None
            env[name] = then.evaluate(env) if decide(env) else first or otherwise.evaluate(env)
        self.body.append(Statement(lines, run))
        self.scope.append(Var(name, ty, self.block_shape))

    def loop(self, depth: int) -> None:
        rng = self.rng
        ty = self.pick_dtype()
        acc = self.new_temp()
        init = self.typed_full(depth - 1, ty)
        counter = f"i{self.temp_count}"
        forms = [("range({0})", lambda k: range(k)), ("range(1, {0})", lambda k: range(1, k)),
                 ("range(0, {0}, 2)", lambda k: range(0, k, 2)), ("kl.range(0, {0})", lambda k: range(k))]
        scalars = [v for v in self.scope if v.shape == () and v.name.startswith("s")]
        if scalars and rng.random() < 0.5:
            bound_name = rng.choice(scalars).name
            bound_value: Callable[[dict[str, Value]], int] = lambda env: int(env[bound_name].v)  # noqa: E731
        else:
            literal = rng.choice((0, 1, 3))
            bound_name = str(literal)
            bound_value = lambda env: literal  # noqa: E731
            forms.append(("kl.static_range({0})", lambda k: range(k)))
        text, iterate = rng.choice(forms)
        extra = [Var(acc, ty, self.block_shape)]
        if text.startswith("kl.static_range"):
            # The unrolled loop's variable is a Python int in each copy.
            self.literals[counter] = 0
        else:
            extra.append(Var(counter, ref.INT32, ()))
        body = self.typed_full(depth, ty, extra=extra)
        # Sometimes an if/else on the loop variable inside the loop.
        nested = self.typed_full(depth, ty, extra=extra) if rng.random() < 0.3 else None
        test, holds = rng.choice(LOOP_TESTS)
        self.literals.pop(counter, None)
        lines = [f"{acc} = {init.source()}", f"for {counter} in {text.format(bound_name)}:"]
        if nested is None:
            lines.append(f"    {acc} = {body.source()}")
        else:
            lines += [f"    if {test.format(counter)}:", f"        {acc} = {body.source()}", "    else:",
                      f"        {acc} = {nested.source()}"]

        def run(env: dict[str, Value]) -> None:
            env[acc] = init.evaluate(env)
            count = bound_value(env)
            if count > 64:
                raise ref.Trap("long loop")
            for i in iterate(count):
                env[counter] = ref.make(ref.INT32, np.array(i, dtype=object))
                taken = nested is None or holds(i)
                env[acc] = (body if taken else nested).evaluate(env)
        self.body.append(Statement(lines, run))
        self.scope.append(Var(acc, ty, self.block_shape))

    def while_loop(self, depth: int) -> None:
        rng = self.rng
        ty = self.pick_dtype()
        acc = self.new_temp()
        counter = f"j{self.temp_count}"
        init = self.typed_full(depth - 1, ty)
        body = self.typed_full(depth, ty, extra=[Var(acc, ty, self.block_shape), Var(counter, ref.INT32, ())])
        scalars = [v for v in self.scope if v.shape == () and v.name.startswith("s")]
        if scalars and rng.random() < 0.4:
            bound = rng.choice(scalars).name
        else:
            bound = str(rng.choice((0, 1, 2, 4)))
        lines = [f"{acc} = {init.source()}", f"{counter} = pid * 0", f"while {counter} < {bound}:",
                 f"    {acc} = {body.source()}", f"    {counter} += 1"]

        def run(env: dict[str, Value]) -> None:
            env[acc] = init.evaluate(env)
            limit = int(env[bound].v) if bound in env else int(bound)
            if limit > 64:
                raise ref.Trap("long loop")
            limit = max(limit, 0)
            for j in range(limit):
                env[counter] = ref.make(ref.INT32, np.array(j, dtype=object))
                env[acc] = body.evaluate(env)
            env[counter] = ref.make(ref.INT32, np.array(limit, dtype=object))
        self.body.append(Statement(lines, run))
        self.scope.append(Var(acc, ty, self.block_shape))

    def helper_call(self, depth: int) -> None:
        """A `@kiln.jit` helper of two parameters, called once: it returns
        one value or a tuple of two, and may call an earlier helper."""
        rng = self.rng
        full = [v for v in self.scope if v.shape == self.block_shape]
        earlier = [h for h in self.helper_calls if rng.random() < 0.5]
        if earlier:
            # Called with arguments of the types the earlier helper was
            # generated for, it may call that helper in turn.
            inner = earlier[0]
            a, b = inner.args
            params = [Var("a", a.dtype, a.shape), Var("b", b.dtype, b.shape)]
            extra: list[Node] = [HelperCall(inner.name, params, inner.body)]
        else:
            a, b = rng.choice(full), rng.choice(self.scope)
            params = [Var("a", a.dtype, a.shape), Var("b", b.dtype, b.shape)]
            extra = []
        self.in_helper = True
        results = [self.expression(params + extra, self.block_shape, depth)]
        if rng.random() < 0.3:
            results.append(self.expression(params + extra, self.block_shape, depth))
        self.in_helper = False
        name = f"helper_{self.helper_count}"
        self.helper_count += 1
        self.helpers.append("\n".join(["@kiln.jit", f"def {name}(a, b):",
                                       f"    return {', '.join(r.source() for r in results)}"]))
        names = [self.new_temp() for _ in results]
        call = HelperCall(name, [a, b], results[0])
        if len(results) == 1:
            self.helper_calls.append(call)

        def run(env: dict[str, Value]) -> None:
            inner_env = {"a": a.evaluate(env), "b": b.evaluate(env)}
            for target, node in zip(names, results):
                env[target] = node.evaluate(inner_env)
        self.body.append(Statement([f"{', '.join(names)} = {call.source()}"], run))
        for target, node in zip(names, results):
            self.scope.append(Var(target, node.dtype, node.shape))

    def augmented(self, depth: int) -> None:
        """`t op= expr` on an earlier temporary (its type may change)."""
        rng = self.rng
        temporaries = [v for v in self.scope if v.name.startswith("t") and v.shape == self.block_shape]
        if not temporaries:
            return self.assign(depth)
        target = rng.choice(temporaries)
        op = rng.choice(("+", "-", "*", "&", "|", "^", "//"))
        value = self.expression(self.scope_leaves(), self.block_shape, depth - 1)
        if op in ("&", "|", "^", "//"):
            if not target.dtype.is_int or target.dtype.kind == "b":
                op = "+"
            else:
                value = self.as_int(value) if op != "//" else self.divisor(self.scope_leaves(), self.block_shape,
                                                                            depth, target, ints=True)
                if op == "//":
                    _, value = same_signedness(target, value)
        node = Binary(op, target, value)
        self.body.append(Statement([f"{target.name} {op}= {value.source()}"], self._bind(target.name, node)))
        self.scope.remove(target)
        self.scope.append(Var(target.name, node.dtype, node.shape))

    def epilogue(self) -> dict[str, DType]:
        rng = self.rng
        result = self.fit(self.expression(self.scope_leaves(), self.block_shape, rng.randint(1, 3)), self.block_shape)
        out_ty = self.pick_dtype()
        self.result, self.out_ty = result, out_ty
        self.arguments.insert(0, Argument("out", "array", out_ty, _data(rng, out_ty, self.size)))
        value = result.source() if rng.random() < 0.5 else f"{result.source()}.to(kl.{out_ty.name})"
        if rng.random() < 0.15:
            # An early return: the program stores nothing.
            condition, decide = self.scalar_condition()

            def leave(env: dict[str, Value]) -> None:
                env["returned"] = ref.make(ref.INT1, np.array(int(decide(env)), dtype=object))
            self.body.append(Statement([f"if {condition}:", "    return"], leave))
        self.store_condition: Optional[Node] = None
        if rng.random() < 0.3:
            self.store_condition = self.condition(self.scope_leaves(), self.block_shape, 1)
            self.body.append(Statement([f"kl.store(out + offs, {value}, mask=mask & {self.store_condition.source()})"],
                                       lambda env: None))
        else:
            self.body.append(Statement([f"kl.store(out + offs, {value}, mask=mask)"], lambda env: None))
        outputs = {"out": out_ty}
        if rng.random() < 0.3:
            full = [v for v in self.scope if v.shape == self.block_shape and v.dtype.kind != "b"]
            var = rng.choice(full)
            kind = rng.choice(("sum", "max", "min"))
            reduced_ty = ref.reduce(kind, ref.make(var.dtype, np.zeros(2)), 0, False).dtype
            self.reduced = (var, kind)
            self.arguments.insert(1, Argument("red", "array", reduced_ty, _data(rng, reduced_ty, self.programs)))
            self.body.append(Statement([f"kl.store(red + pid, kl.{kind}({var.source()}))"], lambda env: None))
            outputs["red"] = reduced_ty
        return outputs

    # -- the reference ---------------------------------------------------------

    def expected(self, outputs: dict[str, DType]) -> dict[str, tuple[DType, Value]]:
        results: dict[str, tuple[DType, Value]] = {}
        out_ty = outputs["out"]
        out = ref.make(out_ty, self.buffer("out"))
        red = ref.make(outputs["red"], self.buffer("red")) if "red" in outputs else None
        for pid in range(self.programs):
            env: dict[str, Value] = {"pid": ref.make(ref.INT32, np.array(pid, dtype=object)),
                                     "npg": ref.make(ref.INT32, np.array(self.programs, dtype=object)),
                                     "pid1": ref.make(ref.INT32, np.array(0, dtype=object))}
            if self.two_d:
                bm, bn = self.block_shape
                rows = pid * bm + np.arange(bm)
                offs = rows[:, None] * bn + np.arange(bn)[None, :]
            else:
                offs = pid * self.block_shape[0] + np.arange(self.block_shape[0])
            env["offs"] = ref.make(ref.INT32, offs.astype(object))
            for argument in self.arguments:
                if argument.kind in ("int", "float"):
                    env[argument.name] = ref.make(argument.dtype, np.array(argument.scalar,
                                                                          dtype=float if argument.kind == "float"
                                                                          else object))
            for statement in self.body:
                statement.run(env)
            if "returned" in env and int(env["returned"].v):
                continue
            value = ref.cast(self.result.evaluate(env), out_ty)
            inside = offs < self.n
            unknown = np.zeros(offs.shape, dtype=bool)
            if self.store_condition is not None:
                chosen = ref.broadcast_to(self.store_condition.evaluate(env), offs.shape)
                # Where the condition is undefined, so is the element.
                unknown = inside & chosen.undef
                inside = inside & (chosen.v.astype(bool) | chosen.undef)
            flat = offs[inside]
            out.v[flat] = value.v[inside]
            out.err[flat] = value.err[inside]
            out.undef[flat] = value.undef[inside] | unknown[inside]
            if red is not None:
                var, kind = self.reduced
                x = var.evaluate(env)
                reduced = ref.reduce(kind, ref.Value(x.dtype, x.v.ravel(), x.err.ravel(), x.undef.ravel()), 0, False)
                red.v[pid], red.err[pid], red.undef[pid] = reduced.v[()], reduced.err[()], reduced.undef[()]
        results["out"] = (out_ty, out)
        if red is not None:
            results["red"] = (outputs["red"], red)
        return results

    # -- the module text -------------------------------------------------------

    def signature(self) -> list[str]:
        names = [a.name for a in self.arguments]
        names += [f"{name}: kl.constexpr" for name in self.constexprs]
        names += [f"{name}: kl.constexpr" for name in self.block_params]
        return names

    def launch_lines(self, drop: Optional[str] = None, extra: Optional[dict] = None,
                     grid: Optional[str] = None, replace: Optional[dict[str, str]] = None) -> list[str]:
        """The body of the module's `launch()`: makes the arrays, launches,
        returns the outputs as numpy arrays."""
        lines = []
        for argument in self.arguments:
            if argument.kind == "array":
                lines.append(f"{argument.name} = {_array_text(argument.values, argument.dtype)}")
        arguments = []
        for argument in self.arguments:
            if argument.name == drop:
                continue
            text = argument.name if argument.kind == "array" else repr(argument.scalar)
            arguments.append((replace or {}).get(argument.name, text))
        keywords = {**{k: repr(v) for k, v in self.constexprs.items()},
                    **{k: repr(v) for k, v in self.block_params.items()}}
        for key, value in (extra or {}).items():
            keywords[key] = value
        for key in list(keywords):
            if key == drop:
                del keywords[key]
            elif replace and key in replace:
                keywords[key] = replace[key]
        call = ", ".join(arguments + [f"{k}={v}" for k, v in keywords.items()])
        lines.append(f"{KERNEL_NAME}[{grid or self.grid_text}]({call})")
        outputs = ", ".join(f'"{a.name}": _numpy({a.name})' for a in self.arguments
                            if a.name in ("out", "red"))
        lines.append(f"return {{{outputs}}}")
        return lines

    def module(self, body: list[str], launch: list[str], decorator: str) -> str:
        header = [f'"""Kiln fuzzer case, seed {self.seed}: run this file to compile and launch the kernel."""',
                  "import numpy as np", "import torch", "", "import kiln", "import kiln.language as kl", "", ""]
        parts = header + [h + "\n\n" for h in self.helpers]
        parts += [decorator, f"def {KERNEL_NAME}({', '.join(self.signature())}):"]
        parts += ["    " + line for line in body]
        parts += ["", "", "def _numpy(array):",
                  "    if isinstance(array, torch.Tensor):",
                  "        return array.to(torch.float64).numpy()",
                  "    return array", "", "",
                  "def launch():"]
        parts += ["    " + line for line in launch]
        parts += ["", "", 'if __name__ == "__main__":', "    print(launch())", ""]
        return "\n".join(parts)

    def body_lines(self) -> list[str]:
        return [line for statement in self.body for line in statement.lines]

    def finish(self, outputs: dict[str, DType]) -> Case:
        checked = self.rng.random() < 0.3
        decorator = "@kiln.jit(checked=True)" if checked else "@kiln.jit"
        source = self.module(self.body_lines(), self.launch_lines(), decorator)
        case = Case(self.seed, source, self.arguments, (self.programs,), "ok", "valid", checked=checked)
        try:
            case.outputs = self.expected(outputs)
        except ref.Trap as trap:
            case.unchecked = trap.reason
            case.outputs = {}
        self.decorator = decorator
        return case


def generate(seed: int) -> Case:
    """The case of `seed`: three in four are valid kernels, the others
    valid kernels with one mistake (`fuzz_invalid`)."""
    builder = KernelBuilder(seed)
    case = builder.build()
    if random.Random(seed * 7919 + 1).random() < 0.25:
        import fuzz_invalid
        return fuzz_invalid.mutate(builder, case)
    return case
